//! From a call and its outcome to the messages that record it (R20–R22).

use crate::clock::stamp;
use crate::{Call, Clock, Error, Result};
use agent_core::json::{Map, Value};
use agent_core::{Instance, MAX_DEPTH, Method, TooDeep, drop_deep, within_depth};
use agent_data::{DataMessage, Message, MessageFault};

/// How a call finished (R20, R22).
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Success with a value: written to outcome 0.
    Success(Value),
    /// Failure with a value: written to outcome 1, or an unhandled failure
    /// when there is only one outcome.
    Failure(Value),
    /// An outcome chosen explicitly by the executor.
    Chosen {
        /// Which outcome (0-based).
        index: usize,
        /// The value written.
        value: Value,
    },
    /// A whole data message returned by an activity, appended as given (R22).
    Message(Value),
}

/// Builds the messages that record `outcome` of `call` (R20–R22), without
/// appending them. A call without `_outputPath` yields none (R21). An
/// erase's messages hold `null` at their paths, not the outcome's value
/// (R10b). The
/// call is recorded once per result (D36: fan-out recorded once): the first message carries it as
/// `_call`, each later destination's message `_callAt`, how many messages
/// back that one is (`-1`, `-2`, …), since a result's messages are appended
/// together.
///
/// # Errors
///
/// [`Error::UnhandledFailure`], [`Error::NoSuchOutcome`] (R20),
/// [`Error::BadMessage`] and [`Error::WrongInstance`] for returned
/// messages (R22, R6), [`Error::TooDeep`] (R33) and [`Error::Record`] when
/// the recording message cannot be built.
///
/// ```
/// use agent_output::{messages_for, Call, FixedClock, Outcome};
/// use agent_core::json;
///
/// let written = json!({"_tool": "updateUserStatus", "newStatus": "inactive", "_outputPath": "†data.user.status"});
/// let call = Call::parse(written.clone())?;
/// let clock = FixedClock::parse("2025-10-26T12:00:00Z")?;
/// let messages = messages_for(&call, Outcome::Success(json!("inactive")), &clock)?;
/// assert_eq!(messages[0].to_value(), json!({
///     "type": "data", "kind": "data", "data": {"user": {"status": "inactive"}},
///     "_outputPath": "†data.user.status", "_outputMethod": "set",
///     "_call": written, "_date": "2025-10-26T12:00:00Z"
/// }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn messages_for(call: &Call, outcome: Outcome, clock: &dyn Clock) -> Result<Vec<Message>> {
    // `_call` sits one level below the message object: refuse a call that
    // could not fit before anything copies it.
    if !within_depth(call.as_value(), MAX_DEPTH - 1) {
        return Err(too_deep());
    }
    let instance = call.instance().cloned();
    let method = call.method();
    let Some(path) = call.output_path() else {
        return Ok(Vec::new());
    };
    let outcomes = path.outcomes();
    let (index, value) = match outcome {
        Outcome::Success(value) => (0, value),
        Outcome::Failure(value) if outcomes.len() < 2 => {
            return Err(Error::UnhandledFailure { value });
        }
        Outcome::Failure(value) => (1, value),
        Outcome::Chosen { index, value } => (index, value),
        Outcome::Message(message) => {
            return returned_message(call.as_value(), message, instance, clock).map(|m| vec![m]);
        }
    };
    let destinations = outcomes.get(index).ok_or(Error::NoSuchOutcome {
        index,
        count: outcomes.len(),
    })?;
    // An erase records no value, whatever the call returned: its message
    // holds null at its path (R10b).
    let value = if method == Method::Erase {
        drop_deep(value);
        Value::Null
    } else {
        value
    };
    // The value lands in `data` (one level below the message) nested one
    // level per path segment: refuse what could not fit before copying it.
    // The longest path leaves the least room, so one walk of the value
    // decides for every destination.
    let longest = destinations.iter().map(|d| d.path.len()).max();
    if let Some(longest) = longest {
        let room = (MAX_DEPTH - 1).checked_sub(longest);
        if !room.is_some_and(|room| within_depth(&value, room)) {
            drop_deep(value);
            return Err(too_deep());
        }
    }
    let date = stamp(clock.now())?;
    destinations
        .iter()
        .enumerate()
        .map(|(position, destination)| {
            let mut fields = Map::new();
            fields.insert("type".into(), "data".into());
            fields.insert("kind".into(), destination.kind.as_str().into());
            fields.insert("data".into(), destination.path.nest(value.clone()));
            fields.insert("_outputPath".into(), destination.to_string().into());
            fields.insert("_outputMethod".into(), method.as_str().into());
            // The call once per result (D36: fan-out recorded once): the first message carries it,
            // each later one says how many messages back that one is.
            if position == 0 {
                fields.insert("_call".into(), call.as_value().clone());
            } else {
                fields.insert("_callAt".into(), call_at(position));
            }
            fields.insert("_date".into(), date.clone().into());
            if let Some(x) = &instance {
                fields.insert("_instance".into(), x.as_str().into());
            }
            DataMessage::from_value(Value::Object(fields))
                .map(Message::from)
                .map_err(Error::Record)
        })
        .collect()
}

/// `_callAt` of the message at `position` (0-based) among one result's
/// messages: the (negative) offset back to the first, which carries `_call`
/// (D36: fan-out recorded once).
fn call_at(position: usize) -> Value {
    // A `Vec` holds fewer than `i64::MAX` messages; saturate rather than
    // panic all the same.
    let back = i64::try_from(position).unwrap_or(i64::MAX);
    Value::from(-back)
}

fn too_deep() -> Error {
    Error::TooDeep(TooDeep { limit: MAX_DEPTH })
}

/// R22: the activity's own message, with `_call` and `_date` added when
/// missing and its instance forced to the call's (R6).
fn returned_message(
    call: &Value,
    message: Value,
    instance: Option<Instance>,
    clock: &dyn Clock,
) -> Result<Message> {
    if !within_depth(&message, MAX_DEPTH) {
        drop_deep(message);
        return Err(Error::BadMessage(MessageFault::TooDeep(TooDeep {
            limit: MAX_DEPTH,
        })));
    }
    let data = DataMessage::from_value(message).map_err(Error::BadMessage)?;
    if data.instance().is_some() && data.instance() != instance.as_ref() {
        return Err(Error::WrongInstance {
            expected: instance.map(|x| x.as_str().to_owned()),
            found: data.instance().map(|x| x.as_str().to_owned()),
        });
    }
    let mut fields = data.into_fields();
    if !fields.contains_key("_call") {
        fields.insert("_call".into(), call.clone());
    }
    if !fields.contains_key("_date") {
        fields.insert("_date".into(), stamp(clock.now())?.into());
    }
    if let Some(x) = instance {
        fields.insert("_instance".into(), x.as_str().into());
    }
    DataMessage::from_value(Value::Object(fields))
        .map(Message::from)
        .map_err(Error::Record)
}
