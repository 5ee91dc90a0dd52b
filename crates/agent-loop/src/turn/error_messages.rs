//! The `error` messages a turn appends (spec R39), bounded (R39b): what the
//! loop records of one turn's failures grows at most linearly with the
//! answer, and stays readable when the answer is hostile.

use crate::{Error, Result};
use agent_core::{
    json,
    json::{Map, Value},
};
use agent_data::Message;

/// The longest error text recorded, in characters; the rest is cut.
pub(crate) const ERROR_CHARS: usize = 1_000;

/// The largest call recorded whole, in bytes of JSON; a larger one is
/// recorded by its meta keys only.
pub(crate) const CALL_BYTES: usize = 4_096;

/// The bytes of per-call errors recorded in one turn; the failures past
/// it are counted in one last error. Errors of the whole answer (`"call":
/// null`, a few per turn) are always recorded.
pub(crate) const TURN_BYTES: usize = 64 * 1024;

/// The messages recording one turn's failures, in order: one per failed
/// call until [`TURN_BYTES`] are spent, then one counting the rest.
/// `restart` (the `error` view holds something other than a list) starts
/// a new list with an error saying so, where pushing would fail.
pub(crate) fn error_messages(
    errors: Vec<(Value, String)>,
    restart: Option<&str>,
) -> Result<Vec<Message>> {
    let mut messages = Vec::new();
    if let Some(found) = restart {
        let entry = json!([{"call": null, "error": format!(
            "the error view held {found}, not a list of errors; the loop starts a new list here"
        )}]);
        messages.push(message(entry, "set")?);
    }
    let mut spent = 0;
    let mut unrecorded: Option<(usize, String)> = None;
    for (call, text) in errors {
        let text = shortened(&text, ERROR_CHARS);
        if call.is_null() {
            messages.push(error_message(call, &text)?);
            continue;
        }
        let (call, text) = recordable(call, text);
        // As written: a control character costs six bytes escaped.
        let size = json!({"call": &call, "error": &text}).to_string().len();
        if let Some((count, _)) = &mut unrecorded {
            *count += 1;
            continue;
        }
        if spent > 0 && spent + size > TURN_BYTES {
            unrecorded = Some((1, text));
            continue;
        }
        spent += size;
        messages.push(error_message(call, &text)?);
    }
    if let Some((count, first)) = unrecorded {
        let text = format!(
            "{count} more call(s) failed; their errors are not recorded (at most {} KiB of errors per turn). The first of them: {}",
            TURN_BYTES / 1024,
            shortened(&first, 200)
        );
        messages.push(error_message(Value::Null, &text)?);
    }
    Ok(messages)
}

/// The call as it will be recorded, with its text: whole when small, else
/// its short meta keys and a note in the text.
fn recordable(call: Value, text: String) -> (Value, String) {
    let size = call.to_string().len();
    if size <= CALL_BYTES {
        return (call, text);
    }
    let mut meta = Map::new();
    if let Value::Object(fields) = &call {
        for key in ["_tool", "_instance", "_outputPath", "_outputMethod"] {
            if let Some(Value::String(value)) = fields.get(key)
                && value.len() <= 200
            {
                meta.insert(key.into(), Value::String(value.clone()));
            }
        }
    }
    let text =
        format!("{text} (the call, {size} bytes of JSON, is recorded by its meta keys only)");
    (Value::Object(meta), text)
}

/// `text` cut to `max` characters, saying how long it was.
pub(crate) fn shortened(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((cut, _)) => format!(
            "{}… ({} characters in all)",
            &text[..cut],
            text.chars().count()
        ),
    }
}

/// The `error` message for a failed call (R39): `data` is `{"call": CALL,
/// "error": TEXT}`, pushed onto the `error` view so every error stays
/// visible in merged rendering (D32: errors pushed). A call too deep to record
/// is replaced by `null` and the text says so.
pub(crate) fn error_message(call: Value, error: &str) -> Result<Message> {
    let entry = |call: Value, error: String| json!({"call": call, "error": error});
    match message(entry(call, error.to_owned()), "push") {
        Ok(built) => Ok(built),
        Err(_) => message(
            entry(
                Value::Null,
                format!("{error} (the call is too deep to record)"),
            ),
            "push",
        ),
    }
}

/// One data message of kind `error` writing `data` by `method`.
fn message(data: Value, method: &str) -> Result<Message> {
    Message::from_value(json!({
        "type": "data",
        "kind": "error",
        "data": data,
        "_outputMethod": method
    }))
    .map_err(Error::Record)?
    .into_iter()
    .next()
    .ok_or_else(|| Error::Request("an error message normalised to nothing".into()))
}
