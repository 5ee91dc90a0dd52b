//! `agentctx log`: the log's messages a page at a time, filtered by kind
//! and instance — the same pages the MCP `log` tool serves.

use crate::Failure;
use crate::input::{Reading, load_context};
use agent_core::json::{Value, json};

/// The most messages one page holds.
pub(crate) const MOST: u64 = 500;

/// Which messages a page holds: from `start`, at most `limit` of those
/// matching `kind` and `instance`.
pub(crate) struct Page<'a> {
    pub(crate) start: usize,
    pub(crate) limit: usize,
    pub(crate) kind: Option<&'a str>,
    pub(crate) instance: Option<&'a str>,
}

/// The page as JSON: `{"start", "messages": [{"index", "message"}], "next",
/// "total"}`, each message in its normal form; `next` is where the next
/// page starts (`null` after the last).
pub(crate) fn page(context: &str, page: &Page<'_>) -> Result<Value, Failure> {
    let ctx = load_context(context, Reading::Whole)?;
    let mut messages = Vec::new();
    let mut next = None;
    for at in page.start..ctx.len() {
        let Some(message) = ctx.message(at) else {
            continue;
        };
        let value = message.to_value();
        let field = |name: &str| value.get(name).and_then(Value::as_str);
        if page.kind.is_some_and(|k| field("kind") != Some(k))
            || page.instance.is_some_and(|x| field("_instance") != Some(x))
        {
            continue;
        }
        if messages.len() == page.limit {
            next = Some(at);
            break;
        }
        messages.push(json!({"index": at, "message": value}));
    }
    Ok(json!({"start": page.start, "messages": messages, "next": next, "total": ctx.len()}))
}

/// `agentctx log CONTEXT [--from N] [--limit N] [--kind K] [--instance I]
/// [--json]`: a page as JSON, or a line per message (`#INDEX` and the
/// message's compact JSON) with where the next page starts on stderr.
pub(crate) fn log(context: &str, page_asked: &Page<'_>, as_json: bool) -> Result<String, Failure> {
    let found = page(context, page_asked)?;
    if as_json {
        return Ok(crate::input::print_value(&found, false));
    }
    let mut text = String::new();
    let messages = found["messages"].as_array().map_or(&[][..], Vec::as_slice);
    for entry in messages {
        let index = entry["index"].as_u64().unwrap_or_default();
        text.push_str(&format!("#{index}  {}\n", entry["message"]));
    }
    let total = found["total"].as_u64().unwrap_or_default();
    match found["next"].as_u64() {
        Some(next) => eprintln!(
            "{} shown; the next page: --from {next} (the log holds {total})",
            messages.len()
        ),
        None if messages.is_empty() => eprintln!(
            "no message{} from {} on (the log holds {total})",
            filtered(page_asked),
            page_asked.start
        ),
        None => {}
    }
    Ok(text)
}

/// What the page was filtered by, for a message saying none matched.
fn filtered(page: &Page<'_>) -> String {
    let mut by = String::new();
    if let Some(kind) = page.kind {
        by.push_str(&format!(" of kind {}", agent_core::quoted(kind)));
    }
    if let Some(instance) = page.instance {
        by.push_str(&format!(" of instance {}", agent_core::quoted(instance)));
    }
    by
}
