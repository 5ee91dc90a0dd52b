//! What the page shows beside the log and the views: what the model sees
//! at a point (`/api/prompt`), and which messages made a value
//! (`/api/provenance`). Each is a function of the context as it was at the
//! point asked; the routes in `api.rs` take it there.

use agent_core::json;
use agent_core::json::Value;
use agent_core::{Instance, Kind, Method, Path, Segment};
use agent_data::Context;
use agent_render::{RenderMode, Renderer};

/// What the model sees of `context` in `mode`: each chat message with its
/// role, text and tokens, and the tokens of the whole OpenAI payload (the
/// count `agentctx render --tokens` prints).
pub(super) fn prompt(context: &Context, mode: &str) -> Result<Value, String> {
    let mode_name = mode;
    let mode = match mode {
        "merged" => RenderMode::Merged,
        "append" => RenderMode::Append,
        other => {
            return Err(format!(
                "mode {}: expected merged or append",
                agent_core::quoted(other)
            ));
        }
    };
    let chat = Renderer::new().render(context, mode);
    let payload =
        agent_render::payload(&chat, agent_render::Provider::OpenAi).map_err(|e| e.to_string())?;
    let messages: Vec<Value> = chat
        .iter()
        .map(|m| {
            json!({
                "role": m.role(),
                "text": m.text(),
                "tokens": agent_render::count_tokens(m.text()),
            })
        })
        .collect();
    Ok(json!({
        "mode": mode_name,
        "tokens": agent_render::count_tokens(&payload.to_text(false)),
        "encoding": "o200k_base",
        "messages": messages,
    }))
}

/// Where a value is asked about: a kind's view, global or as one instance
/// reads it, and a path into it given as its segments (a JSON array of
/// keys and indices, so no key needs escaping).
pub(super) struct Place {
    /// The view's kind.
    pub(super) kind: Kind,
    /// The instance reading it; `None` for the global view.
    pub(super) instance: Option<Instance>,
    /// The path into the view.
    pub(super) path: Path,
}

impl Place {
    /// Reads `kind`, `instance` and `path` as the query gives them.
    pub(super) fn parse(kind: &str, instance: Option<&str>, path: &str) -> Result<Place, String> {
        let kind = Kind::new(kind).map_err(|e| format!("kind: {e}"))?;
        let instance = instance
            .filter(|i| !i.is_empty())
            .map(Instance::new)
            .transpose()
            .map_err(|e| format!("instance: {e}"))?;
        let segments = match json::from_str(path) {
            Ok(Value::Array(segments)) => segments,
            _ => {
                return Err(format!(
                    "path {}: expected a JSON array of keys (strings) and indices (integers), \
                     such as [\"user\",\"tags\",0]",
                    agent_core::quoted(path)
                ));
            }
        };
        let segments = segments
            .iter()
            .map(|s| match s {
                Value::String(key) => Ok(Segment::Key(key.as_str().to_owned())),
                Value::Number(n) if n.as_i64().is_some_and(|i| i >= 0) => {
                    Ok(Segment::Index(n.as_i64().unwrap_or_default()))
                }
                other => Err(format!(
                    "path: {} is neither a key nor an index",
                    agent_core::json_type(other)
                )),
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Place {
            kind,
            instance,
            path: Path::from_segments(segments),
        })
    }
}

/// The numbers of the messages among the first `end` of `context` that
/// made what `place` holds: each data message of its kind in the layers
/// the view reads (the global one, and the instance's own) that wrote
/// there — into it, or over it.
pub(super) fn provenance(context: &Context, place: &Place, end: usize) -> Vec<usize> {
    (0..end.min(context.len()))
        .filter(|&index| {
            let Some(identity) = context.message_identity(index) else {
                return false;
            };
            identity.kind == place.kind
                && (identity.instance.is_none() || identity.instance == place.instance)
                && context
                    .message(index)
                    .and_then(|m| m.as_data().map(|d| wrote(d, &place.path)))
                    .unwrap_or(false)
        })
        .collect()
}

/// True when `message` wrote at `path`: at or under it, or over it with a
/// value that reaches it. A `set` or `erase` over it replaces or removes
/// what was there, a `push` or `concat` changes the array it is in, an
/// `assign` the top-level key it is under when it names that key, and a
/// `merge` wherever its value goes along the path (or stops being an
/// object, which replaces what was below).
fn wrote(message: &agent_data::DataMessage, path: &Path) -> bool {
    let destination = message.destination();
    if !destination.overlaps(path) {
        return false;
    }
    let Some(below) = path
        .segments()
        .get(destination.len()..)
        .filter(|b| !b.is_empty())
    else {
        return true;
    };
    match message.method() {
        Method::Assign => holds(message.value(), &below[..1]),
        Method::Merge => holds(message.value(), below),
        // Set, erase, push, concat, and any method to come: it replaced
        // what the path is in.
        _ => true,
    }
}

/// True when `value` reaches along `segments`, or replaces what is there
/// by not being an object somewhere on the way.
fn holds(value: &Value, segments: &[Segment]) -> bool {
    let mut here = value;
    for segment in segments {
        let Value::Object(fields) = here else {
            return true;
        };
        match fields.get(&segment.as_key()) {
            Some(next) => here = next,
            None => return false,
        }
    }
    true
}
