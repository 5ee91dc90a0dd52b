//! The messages kept verbatim (R1): opaque ones and a provider's native
//! tool-call messages. Their fields are private so that every one that
//! exists, however it was built, loads back as the same kind of message.

use crate::MessageFault;
use crate::normalise::is_native;
use agent_core::json::{Map, Value};
use agent_core::{MAX_DEPTH, TooDeep};

/// The `type`s loading turns into text or data messages (R1): an opaque
/// message of one of these would not load back as itself.
const NOT_OPAQUE: [&str; 4] = ["text", "data", "input", "state"];

/// A message of any other `type` (`plan`, `tool`, …), kept verbatim (R1).
///
/// ```
/// use agent_data::OpaqueMessage;
/// use agent_core::json;
///
/// let plan = OpaqueMessage::new(json!({"type": "plan", "calls": []}))?;
/// assert_eq!(plan.type_name(), "plan");
/// // A data message is not opaque: it would load back as data.
/// assert_eq!(
///     OpaqueMessage::new(json!({"type": "data", "data": 1})).unwrap_err().to_string(),
///     "type \"data\" is not an opaque message's: it loads as a text or data message"
/// );
/// # Ok::<(), agent_data::MessageFault>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct OpaqueMessage {
    pub(crate) fields: Map,
}

impl OpaqueMessage {
    /// An opaque message: a JSON object whose `type` is a string other than
    /// `text`, `data`, `input` and `state`, nested at most `MAX_DEPTH` deep.
    ///
    /// # Errors
    /// [`MessageFault::TooDeep`] for a value nested past R33's limit;
    /// [`MessageFault::NotObject`] for one that is not an object; [`MessageFault::NotOpaque`]
    /// when its `type` is `text`, `data`, `input` or `state`; [`MessageFault::TypeNotString`]
    /// when `type` is not a string; [`MessageFault::Unrecognised`] when it has no `type`.
    pub fn new(value: Value) -> Result<Self, MessageFault> {
        let fields = object(value)?;
        match fields.get("type") {
            Some(Value::String(t)) if NOT_OPAQUE.contains(&t.as_str()) => {
                Err(MessageFault::NotOpaque { found: t.clone() })
            }
            Some(Value::String(_)) => Ok(OpaqueMessage { fields }),
            Some(_) => Err(MessageFault::TypeNotString),
            None => Err(MessageFault::Unrecognised),
        }
    }

    /// Wraps fields the normaliser found to have another `type`.
    pub(crate) fn from_checked(fields: Map) -> Self {
        OpaqueMessage { fields }
    }

    /// Its `type`.
    pub fn type_name(&self) -> &str {
        // Construction checked `type` is a string.
        self.fields
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// All fields, in their original order.
    pub fn fields(&self) -> &Map {
        &self.fields
    }

    /// Which plan this is, when its `type` is `plan` (D69: loop and worker plans): a
    /// *loop plan* has a top-level `plan` key (the calls of one of the
    /// model's answers, carried by the loop); any other plan message is a
    /// *worker plan* (`calls`, run by `agentctx worker`). A worker never
    /// runs a loop plan, and each sort supersedes only its own.
    ///
    /// ```
    /// use agent_data::{OpaqueMessage, PlanSort};
    /// use agent_core::json;
    /// let carried = OpaqueMessage::new(json!({"type": "plan", "plan": []}))?;
    /// assert_eq!(carried.plan_sort(), Some(PlanSort::Loop));
    /// let worked = OpaqueMessage::new(json!({"type": "plan", "calls": []}))?;
    /// assert_eq!(worked.plan_sort(), Some(PlanSort::Worker));
    /// # Ok::<(), agent_data::MessageFault>(())
    /// ```
    pub fn plan_sort(&self) -> Option<PlanSort> {
        plan_sort(&self.fields)
    }

    /// Consumes the message, returning its fields.
    pub fn into_fields(self) -> Map {
        self.fields
    }
}

/// The `type` of the message a runner appends for a call without
/// `_outputPath` it ran (R21b): the call as `_call`, when it started and
/// ended (`_started`, `_date`), `"_failed": true` when it failed, and the
/// worker and attempt when a worker ran it. Bookkeeping: the model never
/// sees it (R28), and it writes no view.
///
/// ```
/// use agent_data::{Message, RAN_TYPE};
/// use agent_core::json;
/// let ran = Message::from_value(json!({"type": RAN_TYPE, "_call": {"_tool": "notify"}}))?;
/// assert!(matches!(&ran[0], Message::Opaque(m) if m.type_name() == "ran"));
/// # Ok::<(), agent_data::MessageFault>(())
/// ```
pub const RAN_TYPE: &str = "ran";

/// The two sorts of `plan` message (D69: loop and worker plans).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PlanSort {
    /// `{"type":"plan","plan":[CALL, …]}`: an answer's calls, carried
    /// across the loop's turns and runs.
    Loop,
    /// Any other plan message (`{"type":"plan","calls":[CALL, …]}`): run
    /// by workers (R34d).
    Worker,
}

/// The sort of the plan message whose fields are `fields`; `None` when
/// its `type` is not `plan`.
pub fn plan_sort(fields: &Map) -> Option<PlanSort> {
    if fields.get("type").and_then(Value::as_str) != Some("plan") {
        return None;
    }
    Some(if fields.contains_key("plan") {
        PlanSort::Loop
    } else {
        PlanSort::Worker
    })
}

/// A provider's own chat message with tool calls or tool results, kept
/// verbatim (R1, decision D33).
///
/// ```
/// use agent_data::NativeMessage;
/// use agent_core::json;
///
/// let result = NativeMessage::new(json!({
///     "role": "tool", "tool_call_id": "call_1", "content": "42"
/// }))?;
/// assert_eq!(result.role(), "tool");
/// // A plain chat message is not native: it would load back as text.
/// assert!(NativeMessage::new(json!({"role": "user", "content": "hi"})).is_err());
/// # Ok::<(), agent_data::MessageFault>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct NativeMessage {
    pub(crate) fields: Map,
}

impl NativeMessage {
    /// A native message: a JSON object with no `type` and no `data`, a
    /// string `role`, and OpenAI's `tool_calls` (an array) or `tool_call_id`
    /// (a string), or Anthropic `content` blocks of type `tool_use` or
    /// `tool_result`; nested at most `MAX_DEPTH` deep.
    ///
    /// # Errors
    /// [`MessageFault::TooDeep`] for a value nested past R33's limit;
    /// [`MessageFault::NotObject`] for one that is not an object; [`MessageFault::NotNative`]
    /// when it has a `type` or `data`, or neither tool calls nor tool results;
    /// [`MessageFault::FieldType`] when `role` is not a string, `tool_calls` not an array or
    /// `tool_call_id` not a string.
    pub fn new(value: Value) -> Result<Self, MessageFault> {
        let fields = object(value)?;
        if fields.contains_key("type") || fields.contains_key("data") {
            return Err(MessageFault::NotNative);
        }
        if !fields.get("role").is_some_and(Value::is_string) {
            return Err(MessageFault::FieldType {
                field: "role",
                expected: "a string",
            });
        }
        if !is_native(&fields)? {
            return Err(MessageFault::NotNative);
        }
        Ok(NativeMessage { fields })
    }

    /// Wraps fields the normaliser found to be native.
    pub(crate) fn from_checked(fields: Map) -> Self {
        NativeMessage { fields }
    }

    /// Its `role`.
    pub fn role(&self) -> &str {
        // Construction checked `role` is a string.
        self.fields
            .get("role")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// All fields, in their original order.
    pub fn fields(&self) -> &Map {
        &self.fields
    }

    /// Consumes the message, returning its fields.
    pub fn into_fields(self) -> Map {
        self.fields
    }
}

/// `fields`, refused when nested too deep to be appended (R33).
pub(crate) fn within_depth(fields: Map) -> Result<Map, MessageFault> {
    object(Value::Object(fields))
}

/// The object's fields, refused when `value` is not an object or is nested
/// too deep to be appended (R33).
fn object(value: Value) -> Result<Map, MessageFault> {
    if !agent_core::within_depth(&value, MAX_DEPTH) {
        agent_core::drop_deep(value);
        return Err(MessageFault::TooDeep(TooDeep { limit: MAX_DEPTH }));
    }
    match value {
        Value::Object(fields) => Ok(fields),
        other => Err(MessageFault::NotObject {
            found: crate::json_type(&other),
        }),
    }
}
