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
/// stderr says so.
pub(crate) fn append(
    context: &str,
    messages: &str,
    key: Option<&AppendKey>,
) -> Result<String, Failure> {
    let done = append_counted(context, messages, key)?;
    // stdout stays empty (spec §10); stderr says what happened.
    eprintln!(
        "appended {} message(s); {} now has {} message(s)",
        done.appended, done.name, done.length
    );
    if crate::input::PRINT_HEAD.load(std::sync::atomic::Ordering::Relaxed) {
        eprintln!("head: {} ({} messages)", done.head, done.length);
    }
    Ok(String::new())
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
}

/// [`append`]'s work, without printing.
pub(crate) fn append_counted(
    context: &str,
    messages: &str,
    key: Option<&AppendKey>,
) -> Result<Appended, Failure> {
    let messages = parse_messages(messages)?;
    crate::hints::check_messages(&messages, "MESSAGES")?;
    let mut stored = open_stored(context, true, Reading::Views)?;
    let appended = match key {
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
