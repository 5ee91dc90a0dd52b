//! R1: every accepted wire shape, normalised to [`Message`]s.

use crate::message::TextMessage;
use crate::verbatim::{NativeMessage, OpaqueMessage};
use crate::{DataMessage, Message, MessageFault, json_type};
use agent_core::json::{Map, Value};
use agent_core::{MAX_DEPTH, TooDeep};

// Here rather than in `message.rs`, so the message types do not depend on
// the normalising that builds them.
impl Message {
    /// Normalises one input message (R1). A chat wrapper whose `content` is
    /// an array yields one message per element.
    ///
    /// # Errors
    /// [`MessageFault::TooDeep`] for a value nested past R33's limit;
    /// [`MessageFault::NotObject`] for a value that is not an object;
    /// [`MessageFault::TypeNotString`], [`MessageFault::Unrecognised`],
    /// [`MessageFault::TextWithoutText`], [`MessageFault::InputAndData`],
    /// [`MessageFault::BadContent`] or [`MessageFault::FieldType`] for a shape R1 does not
    /// accept; and for a data message, the fault of a field (R2, R9, R10, R10b):
    /// [`MessageFault::InvalidKind`], [`MessageFault::InvalidInstance`],
    /// [`MessageFault::UnknownMethod`], [`MessageFault::DataWithoutData`],
    /// [`MessageFault::BadOutputPath`], [`MessageFault::OutputPathKind`],
    /// [`MessageFault::ValueAbsent`] or [`MessageFault::EraseValue`].
    pub fn from_value(value: Value) -> Result<Vec<Message>, MessageFault> {
        if !agent_core::within_depth(&value, MAX_DEPTH) {
            // Refuse before anything clones or walks it recursively — and
            // drop it without recursion too: serde_json's drop recurses per
            // level and would overflow the stack on a value built deep in
            // memory.
            agent_core::drop_deep(value);
            return Err(MessageFault::TooDeep(TooDeep { limit: MAX_DEPTH }));
        }
        let mut out = Vec::with_capacity(1);
        let _verbatim = normalise(value, &mut out)?;
        Ok(out)
    }
}

/// Normalises one input message; a chat wrapper with a content array may
/// yield several. True when it yielded one message holding the input's
/// fields as they were (a `text`, `data` or opaque message, a native one):
/// then the input's compact text is the message's.
pub(crate) fn normalise(value: Value, out: &mut Vec<Message>) -> Result<bool, MessageFault> {
    let Value::Object(mut fields) = value else {
        return Err(MessageFault::NotObject {
            found: json_type(&value),
        });
    };
    match fields.get("type") {
        Some(Value::String(t)) => {
            // Copied, though a borrow would do: without this copy, glibc
            // left the heap of loading 200,000 `state` shorthands 30 MB
            // larger (where each instance id landed; D79: lines stored as read).
            let t = t.clone();
            let (message, verbatim) = typed(Typed::of(&t), fields)?;
            out.push(message);
            Ok(verbatim)
        }
        Some(_) => Err(MessageFault::TypeNotString),
        None if fields.contains_key("data") => {
            let mut normalised = Map::with_capacity(fields.len() + 1);
            normalised.insert("type".into(), "data".into());
            normalised.append(&mut fields);
            out.push(Message::Data(DataMessage::from_fields(normalised)?));
            Ok(false)
        }
        None if fields.contains_key("role") && fields.contains_key("content") => {
            wrapper(fields, out)
        }
        // OpenAI's assistant message may leave `content` out when it only
        // calls tools.
        None if fields.contains_key("role") && fields.contains_key("tool_calls") => {
            wrapper(fields, out)
        }
        None => Err(MessageFault::Unrecognised),
    }
}

/// What a message's `type` makes of it, told apart without copying it.
#[derive(Clone, Copy)]
enum Typed {
    Text,
    Data,
    /// `input` or `state`: the shorthand of a data message of that kind.
    Shorthand(&'static str),
    Opaque,
}

impl Typed {
    fn of(t: &str) -> Typed {
        match t {
            "text" => Typed::Text,
            "data" => Typed::Data,
            "input" => Typed::Shorthand("input"),
            "state" => Typed::Shorthand("state"),
            _ => Typed::Opaque,
        }
    }
}

/// The message of a `type`d input, and whether it holds the input's fields
/// unchanged.
fn typed(t: Typed, mut fields: Map) -> Result<(Message, bool), MessageFault> {
    match t {
        Typed::Text => {
            if !fields.get("text").is_some_and(Value::is_string) {
                return Err(MessageFault::TextWithoutText);
            }
            if fields.get("role").is_some_and(|r| !r.is_string()) {
                return Err(MessageFault::FieldType {
                    field: "role",
                    expected: "a string",
                });
            }
            Ok((Message::Text(TextMessage::from_checked(fields)), true))
        }
        Typed::Data => Ok((Message::Data(DataMessage::from_fields(fields)?), true)),
        Typed::Shorthand(t) => {
            let data = if t == "input" && fields.contains_key("input") {
                if fields.contains_key("data") {
                    return Err(MessageFault::InputAndData);
                }
                fields.shift_remove("input")
            } else {
                fields.shift_remove("data")
            };
            let data = match data {
                Some(data) => data,
                None => {
                    // Shorthand: every field that is not metadata is the data.
                    let (meta, data) =
                        std::mem::take(&mut fields).partition(|k, _| is_meta_field(k));
                    fields = meta;
                    Value::Object(data)
                }
            };
            fields.shift_remove("type");
            fields.shift_remove("kind");
            let mut normalised = Map::with_capacity(fields.len() + 3);
            normalised.insert("type".into(), "data".into());
            normalised.insert("kind".into(), t.into());
            normalised.insert("data".into(), data);
            normalised.append(&mut fields);
            let message = Message::Data(DataMessage::from_fields(normalised)?);
            Ok((message, false))
        }
        Typed::Opaque => Ok((Message::Opaque(OpaqueMessage::from_checked(fields)), true)),
    }
}

fn is_meta_field(key: &str) -> bool {
    matches!(key, "type" | "kind" | "schema" | "description") || key.starts_with('_')
}

/// `{"role":R,"content":S|M|[…]}`; true for a native message, kept as it
/// came.
fn wrapper(mut fields: Map, out: &mut Vec<Message>) -> Result<bool, MessageFault> {
    let role = match fields.get("role") {
        Some(Value::String(role)) => role.clone(),
        _ => {
            return Err(MessageFault::FieldType {
                field: "role",
                expected: "a string",
            });
        }
    };
    if is_native(&fields)? {
        out.push(Message::Native(NativeMessage::from_checked(fields)));
        return Ok(true);
    }
    let content = fields.shift_remove("content").unwrap_or(Value::Null);
    match content {
        Value::Array(items) => items
            .into_iter()
            .try_for_each(|item| content_item(&role, item, out)),
        item @ (Value::String(_) | Value::Object(_)) => content_item(&role, item, out),
        _ => Err(MessageFault::BadContent),
    }
    .map(|()| false)
}

/// True for a provider's own message with tool calls or results (kept
/// verbatim, [`Message::Native`]): OpenAI's `tool_calls` (an array) or
/// `tool_call_id` (a string), or Anthropic content blocks of type
/// `tool_use` or `tool_result`.
pub(crate) fn is_native(fields: &Map) -> Result<bool, MessageFault> {
    match fields.get("tool_calls") {
        Some(Value::Array(_)) => return Ok(true),
        Some(_) => {
            return Err(MessageFault::FieldType {
                field: "tool_calls",
                expected: "an array",
            });
        }
        None => {}
    }
    match fields.get("tool_call_id") {
        Some(Value::String(_)) => return Ok(true),
        Some(_) => {
            return Err(MessageFault::FieldType {
                field: "tool_call_id",
                expected: "a string",
            });
        }
        None => {}
    }
    Ok(fields
        .get("content")
        .and_then(Value::as_array)
        .is_some_and(|blocks| {
            blocks.iter().any(|block| {
                matches!(
                    block.get("type").and_then(Value::as_str),
                    Some("tool_use" | "tool_result")
                )
            })
        }))
}

fn content_item(role: &str, item: Value, out: &mut Vec<Message>) -> Result<(), MessageFault> {
    match item {
        Value::String(text) => {
            out.push(Message::Text(TextMessage::new(role, &text)));
            Ok(())
        }
        Value::Object(_) => {
            let start = out.len();
            // A wrapped message is never its input's own text.
            let _verbatim = normalise(item, out)?;
            for message in &mut out[start..] {
                if let Message::Text(text) = message {
                    text.set_role(role);
                }
            }
            Ok(())
        }
        _ => Err(MessageFault::BadContent),
    }
}
