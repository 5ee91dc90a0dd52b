//! `agentctx append` and `agentctx copy`: writing messages into a stored
//! context (spec §10).

use crate::Failure;
use crate::input::{Reading, json_arg, load_context, open_store, open_stored};
use crate::keyed::Noting;
use agent_core::json::Value;
use agent_data::{Append, AppendKey};
use agent_data::{Context, Format, Message};

/// `agentctx append CONTEXT MESSAGES`: MESSAGES is a JSON object, a JSON
/// array of them, or `@file` holding a JSON array or JSONL. They are
/// validated against the context as it is when they land (R13, R25) and
/// appended all or none, durably; a missing CONTEXT is created. With
/// `key`, at most once per key: when it had landed, nothing is appended and
/// stderr says so. With `json`, stdout says it too, as JSON.
pub(crate) fn append(
    context: &str,
    messages: &[String],
    key: Option<&AppendKey>,
    if_empty: bool,
    json: bool,
) -> Result<String, Failure> {
    let mut batch = Vec::new();
    for argument in messages {
        batch.extend(parse_messages(argument)?);
    }
    let done = append_batch(context, batch, key, if_empty)?;
    // stdout stays empty (spec §10) unless JSON is asked for; stderr says
    // what happened.
    if done.kept_out {
        eprintln!(
            "not appended: {} already holds {} message(s) (--if-empty)",
            done.name, done.length
        );
    } else {
        eprintln!(
            "appended {} message(s); {} now has {} message(s)",
            done.appended, done.name, done.length
        );
    }
    if crate::input::PRINT_HEAD.load(std::sync::atomic::Ordering::Relaxed) {
        eprintln!("head: {} ({} messages)", done.head, done.length);
    }
    if !json {
        return Ok(String::new());
    }
    let report = agent_core::json!({
        "name": done.name,
        "appended": done.appended,
        "length": done.length,
        "head": done.head,
        "keptOut": done.kept_out,
    });
    Ok(format!("{report}\n"))
}

/// What [`append_counted`] did.
pub(crate) struct Appended {
    /// Messages appended now (none when the key's append had landed).
    pub(crate) appended: usize,
    /// The context's name (a URL without its password).
    pub(crate) name: String,
    /// Its length after.
    pub(crate) length: usize,
    /// Its head after, as hex.
    pub(crate) head: String,
    /// Nothing was appended because the context held messages
    /// (`--if-empty`).
    pub(crate) kept_out: bool,
}

/// [`append`]'s work, without printing: MESSAGES as one argument.
pub(crate) fn append_counted(
    context: &str,
    messages: &str,
    key: Option<&AppendKey>,
) -> Result<Appended, Failure> {
    append_batch(context, parse_messages(messages)?, key, false)
}

/// Appends `messages` as one batch, all or none; with `if_empty`, only
/// to a context holding no messages when they land (decided under the
/// store's compare-and-append, so of two such appends at once one lands).
fn append_batch(
    context: &str,
    messages: Vec<Message>,
    key: Option<&AppendKey>,
    if_empty: bool,
) -> Result<Appended, Failure> {
    crate::hints::check_messages(&messages, "MESSAGES")?;
    let mut stored = open_stored(context, true, Reading::Views)?;
    let mut kept_out = false;
    let appended = match key {
        None if if_empty => {
            let landed = stored
                .append_built(&mut |now: &Context| {
                    kept_out = !now.is_empty();
                    Ok(if kept_out {
                        Vec::new()
                    } else {
                        messages.clone()
                    })
                })
                .map_err(Failure::invalid)?;
            landed.len()
        }
        None => {
            stored.append_all(&messages).map_err(Failure::invalid)?;
            messages.len()
        }
        Some(key) => {
            let mut noting = Noting::new(&mut stored, key)?;
            noting
                .append_once(&messages, key)
                .map_err(Failure::invalid)?;
            let landed_before = noting.already_landed();
            noting.report();
            if landed_before { 0 } else { messages.len() }
        }
    };
    Ok(Appended {
        appended,
        name: stored.store().name().to_owned(),
        length: stored.context().len(),
        head: stored.context().head().to_string(),
        kept_out,
    })
}

/// `agentctx assign CONTEXT INPUTS [--write]`: each input of the JSON
/// array INPUTS into a new instance (agent-instancing), printed as JSONL.
pub(crate) fn assign(context: &str, inputs: &str, write: bool) -> Result<String, Failure> {
    let inputs = match json_arg("INPUTS", inputs)? {
        Value::Array(inputs) => inputs.into_vec(),
        other => {
            return Err(Failure::invalid(format!(
                "INPUTS must be a JSON array of inputs, found {}",
                agent_core::json_type(&other)
            )));
        }
    };
    let (_, messages) = if write {
        let mut stored = open_stored(context, true, Reading::Views)?;
        let assigned = agent_instancing::assign_inputs(&mut stored, inputs);
        crate::input::print_head(stored.context());
        assigned
    } else {
        agent_instancing::assign_inputs(&mut load_context(context, Reading::Views)?, inputs)
    }
    .map_err(Failure::invalid)?;
    Ok(messages
        .iter()
        .map(|m| format!("{}\n", m.to_value()))
        .collect())
}

/// The messages of a MESSAGES argument, normalised (R1).
fn parse_messages(arg: &str) -> Result<Vec<Message>, Failure> {
    let (bytes, format) = match arg.strip_prefix('@') {
        Some(path) => {
            let bytes = std::fs::read(path)
                .map_err(|e| Failure::invalid(format!("cannot read MESSAGES from {path}: {e}")))?;
            let format = Format::detect(Some(std::path::Path::new(path)), &bytes);
            (bytes, format)
        }
        None => {
            let value: Value = agent_core::json::from_str(arg)
                .map_err(|e| Failure::invalid(format!("MESSAGES is not valid JSON: {e}")))?;
            let array = match value {
                Value::Array(_) => value,
                other => Value::Array(vec![other].into()),
            };
            (array.to_string().into_bytes(), Format::Json)
        }
    };
    // Loading applies R1 to every message, all or nothing, with indexes.
    let loaded =
        Context::load(&bytes, format).map_err(|e| Failure::invalid(format!("MESSAGES: {e}")))?;
    if let Some(warning) = loaded.warnings.first() {
        return Err(Failure::invalid(format!("MESSAGES: {warning}")));
    }
    Ok(loaded.context.messages().collect())
}

/// `agentctx copy FROM TO`: every message of FROM into TO, which must be
/// missing or empty (R3 holds).
pub(crate) fn copy(from: &str, to: &str) -> Result<String, Failure> {
    if to == "-" {
        return Err(Failure::usage(
            "copy needs a TO file or PostgreSQL URL, not stdout",
        ));
    }
    let mut target = open_store(to)?;
    let copied = if from == "-" {
        agent_store::copy_context(&load_context(from, Reading::Whole)?, &mut target)
    } else {
        agent_store::copy(&mut open_store(from)?, &mut target)
    };
    copied.map_err(Failure::invalid)?;
    Ok(String::new())
}
