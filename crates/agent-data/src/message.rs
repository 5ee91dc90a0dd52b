//! The three kinds of message (R1) and the data message's fields (R2, R9).

use crate::{MessageFault, NativeMessage, OpaqueMessage};
use agent_core::json::{Map, Value};
use agent_core::{DisplayPath, Instance, Kind, Method, Path, Reference, json_type};

/// One message of a context, normalised (R1).
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// Plain text with a role.
    Text(TextMessage),
    /// Structured data: a write to one layer.
    Data(DataMessage),
    /// Any other `type` (`plan`, `tool`, …), kept verbatim.
    Opaque(OpaqueMessage),
    /// A provider's own chat message that carries tool calls or tool
    /// results, kept verbatim (R1): an OpenAI message with `tool_calls` or
    /// `tool_call_id`, or an Anthropic message whose content holds
    /// `tool_use` / `tool_result` blocks. It renders in its role (R28) and
    /// reaches its own provider's payload as it is (R31).
    Native(NativeMessage),
}

impl Message {
    /// The normalised message as JSON, every field in its original order (R3).
    pub fn to_value(&self) -> Value {
        Value::Object(self.fields().clone())
    }

    /// The message's fields.
    pub fn fields(&self) -> &Map {
        match self {
            Message::Text(t) => &t.fields,
            Message::Data(d) => &d.fields,
            Message::Opaque(o) => &o.fields,
            Message::Native(n) => &n.fields,
        }
    }

    /// Refuses a `_` key the engine does not read and `allowed` does not
    /// name (D63: typos refused): in a data message, any but R2's; in a `plan`
    /// message, any in a call (of `plan` in a loop plan, of `calls` in a
    /// worker plan, decision D69) but the keys of R18–R20 and R36. Text and
    /// other messages are the application's. For messages being appended;
    /// loading never refuses an unknown field (R2).
    ///
    /// ```
    /// use agent_data::Message;
    /// use agent_core::json;
    /// let typo = Message::from_value(json!({"type": "state", "x": 1, "_instanse": "①"}))?;
    /// let err = typo[0].check_keys(&[]).unwrap_err();
    /// assert_eq!(err.to_string(), r#"unknown key "_instanse"; did you mean "_instance"?"#);
    /// assert!(typo[0].check_keys(&["_instanse".into()]).is_ok());
    /// # Ok::<(), agent_data::MessageFault>(())
    /// ```
    ///
    /// # Errors
    /// [`MessageFault::UnknownKey`] for the first `_` key neither the engine nor `allowed`
    /// knows: in a data message (`call` is `None`), or in a call of a `plan` message (`call` is
    /// its index).
    pub fn check_keys(&self, allowed: &[String]) -> Result<(), MessageFault> {
        let fields = match self {
            Message::Data(d) => &d.fields,
            Message::Opaque(opaque) if opaque.type_name() == "plan" => {
                // A loop plan's calls are under `plan`, a worker plan's
                // under `calls` (D69: loop and worker plans); both are checked.
                let key = match opaque.plan_sort() {
                    Some(crate::PlanSort::Loop) => "plan",
                    _ => "calls",
                };
                let calls = opaque.fields().get(key).and_then(Value::as_array);
                for (i, call) in calls.into_iter().flatten().enumerate() {
                    let keys = call.as_object().into_iter().flat_map(|c| c.keys());
                    agent_core::check_keys(keys, &agent_core::CALL_KEYS, allowed)
                        .map_err(|key| MessageFault::UnknownKey { call: Some(i), key })?;
                }
                return Ok(());
            }
            _ => return Ok(()),
        };
        agent_core::check_keys(fields.keys(), &agent_core::MESSAGE_KEYS, allowed)
            .map_err(|key| MessageFault::UnknownKey { call: None, key })
    }

    /// The data message inside, if this is one.
    pub fn as_data(&self) -> Option<&DataMessage> {
        match self {
            Message::Data(d) => Some(d),
            _ => None,
        }
    }
}

impl From<DataMessage> for Message {
    fn from(data: DataMessage) -> Self {
        Message::Data(data)
    }
}

impl From<OpaqueMessage> for Message {
    fn from(opaque: OpaqueMessage) -> Self {
        Message::Opaque(opaque)
    }
}

impl From<NativeMessage> for Message {
    fn from(native: NativeMessage) -> Self {
        Message::Native(native)
    }
}

impl From<TextMessage> for Message {
    fn from(text: TextMessage) -> Self {
        Message::Text(text)
    }
}

/// A text message: `{"type":"text","role":…,"text":…}`.
#[derive(Debug, Clone, PartialEq)]
pub struct TextMessage {
    fields: Map,
}

impl TextMessage {
    /// A text message with a role (`user`, `assistant`, `system`, …).
    pub fn new(role: &str, text: &str) -> Self {
        let mut fields = Map::new();
        fields.insert("type".into(), "text".into());
        fields.insert("role".into(), role.into());
        fields.insert("text".into(), text.into());
        TextMessage { fields }
    }

    /// Wraps fields already checked to hold a string `text` and, if any, a string `role`.
    pub(crate) fn from_checked(fields: Map) -> Self {
        TextMessage { fields }
    }

    /// Replaces the role (a chat wrapper's role applies to its text, R1).
    pub(crate) fn set_role(&mut self, role: &str) {
        self.fields.insert("role".into(), role.into());
    }

    /// The role; `user` when the message has none (R1).
    pub fn role(&self) -> &str {
        self.fields
            .get("role")
            .and_then(Value::as_str)
            .unwrap_or("user")
    }

    /// The text.
    pub fn text(&self) -> &str {
        self.fields
            .get("text")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
}

/// A data message (R2): a write of a value to one layer (R9).
///
/// Always valid: construction checks the kind, instance, method, output path
/// and that `data` holds a value at the destination.
///
/// ```
/// use agent_data::DataMessage;
/// use agent_core::json;
///
/// let msg = DataMessage::from_value(json!({
///     "type": "data", "kind": "state",
///     "data": {"user": {"status": "inactive"}},
///     "_outputPath": "†state.user.status"
/// }))?;
/// assert_eq!(msg.destination().to_string(), ".user.status");
/// assert_eq!(msg.method().as_str(), "set"); // an output message defaults to set
/// assert_eq!(msg.value(), &json!("inactive"));
/// # Ok::<(), agent_data::MessageFault>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct DataMessage {
    fields: Map,
    kind: Kind,
    instance: Option<Instance>,
    destination: Path,
    method: Method,
    is_output: bool,
}

impl DataMessage {
    /// A plain data message (method `merge` at the whole view).
    pub fn new(kind: Kind, data: Value) -> Self {
        let mut fields = Map::new();
        fields.insert("type".into(), "data".into());
        fields.insert("kind".into(), kind.as_str().into());
        fields.insert("data".into(), data);
        DataMessage {
            fields,
            kind,
            instance: None,
            destination: Path::root(),
            method: Method::Merge,
            is_output: false,
        }
    }

    /// Normalises (R1) and validates a JSON value that must be exactly one
    /// data message, in any of its wire forms.
    ///
    /// # Errors
    /// [`MessageFault::NotData`] when `value` normalises to anything but exactly one data
    /// message; otherwise the faults of [`Message::from_value`].
    pub fn from_value(value: Value) -> Result<Self, MessageFault> {
        let mut messages = Message::from_value(value)?;
        match (messages.pop(), messages.is_empty()) {
            (Some(Message::Data(data)), true) => Ok(data),
            _ => Err(MessageFault::NotData),
        }
    }

    /// Validates the fields of a normalised data message (R2, R9, R10, R10b).
    pub(crate) fn from_fields(fields: Map) -> Result<Self, MessageFault> {
        let known = Known::of(&fields);
        let kind = match known.kind {
            None => Kind::data(),
            Some(Value::String(k)) => Kind::new(k.as_str()).map_err(|_| {
                MessageFault::InvalidKind(agent_core::InvalidKind { kind: k.clone() })
            })?,
            Some(_) => return Err(field_type("kind", "a string")),
        };
        let instance = match known.instance {
            None => None,
            Some(Value::String(id)) => Some(
                id.parse::<Instance>()
                    .map_err(MessageFault::InvalidInstance)?,
            ),
            Some(_) => return Err(field_type("_instance", "a string")),
        };
        if known.description.is_some_and(|d| !d.is_string()) {
            return Err(field_type("description", "a string"));
        }
        if known
            .schema
            .is_some_and(|s| !s.is_object() && !s.is_boolean())
        {
            return Err(field_type("schema", "a JSON Schema (object or boolean)"));
        }
        let explicit_method = match known.method {
            None => None,
            Some(Value::String(name)) => Some(
                name.parse::<Method>()
                    .map_err(MessageFault::UnknownMethod)?,
            ),
            Some(_) => return Err(field_type("_outputMethod", "a string")),
        };
        let output = output_destination(&known, &kind)?;
        let is_output = output.is_some();
        let destination = output.unwrap_or_default();
        let method = explicit_method.unwrap_or(if is_output {
            Method::Set
        } else {
            Method::Merge
        });
        let data = known.data.ok_or(MessageFault::DataWithoutData)?;
        match destination.get(data) {
            None => {
                return Err(MessageFault::ValueAbsent {
                    path: destination.to_string(),
                });
            }
            // An erase writes nothing; a value there would read as if it did.
            Some(value) if method == Method::Erase && !value.is_null() => {
                return Err(MessageFault::EraseValue {
                    path: DisplayPath(destination),
                    found: json_type(value),
                });
            }
            Some(_) => {}
        }
        Ok(DataMessage {
            fields,
            kind,
            instance,
            destination,
            method,
            is_output,
        })
    }

    /// The message's kind (R2; `data` when it has none).
    pub fn kind(&self) -> &Kind {
        &self.kind
    }

    /// The message's instance; `None` is global (R4).
    pub fn instance(&self) -> Option<&Instance> {
        self.instance.as_ref()
    }

    /// The whole `data` field.
    pub fn data(&self) -> &Value {
        // Construction guarantees `data` exists; `Null` is never observed.
        self.fields.get("data").unwrap_or(&Value::Null)
    }

    /// Where in the view this message writes (R9).
    pub fn destination(&self) -> &Path {
        &self.destination
    }

    /// The value written: what `data` holds at the destination (R9).
    pub fn value(&self) -> &Value {
        self.destination.get(self.data()).unwrap_or(&Value::Null)
    }

    /// True for an output message: its destination comes from `_outputPath`
    /// or `_call._outputPath`, and its default method is `set` (R9).
    pub fn is_output(&self) -> bool {
        self.is_output
    }

    /// How the value combines with the view (R9, R10).
    pub fn method(&self) -> Method {
        self.method
    }

    /// The message's own `schema`, if any.
    pub fn schema(&self) -> Option<&Value> {
        self.fields.get("schema")
    }

    /// The message's own `description`, if any.
    pub fn description(&self) -> Option<&str> {
        self.fields.get("description").and_then(Value::as_str)
    }

    /// All fields, in their original order.
    pub fn fields(&self) -> &Map {
        &self.fields
    }

    /// Consumes the message, returning its fields.
    pub fn into_fields(self) -> Map {
        self.fields
    }

    /// Consumes the message, returning its write: destination, method and
    /// the value (moved out of `data`, not cloned).
    pub(crate) fn into_write(self) -> (Path, Method, Value) {
        let mut value = self
            .fields
            .into_iter()
            .find_map(|(key, value)| (key == "data").then_some(value))
            .unwrap_or(Value::Null);
        // Construction checked the value exists along this path (R9), so
        // each step finds what `Path::get` found.
        for segment in self.destination.segments() {
            value = match value {
                Value::Object(mut map) => map
                    .swap_remove(segment.as_key().as_ref())
                    .unwrap_or(Value::Null),
                Value::Array(mut items) => match segment.array_index(items.len()) {
                    Some(i) => items.swap_remove(i),
                    None => Value::Null,
                },
                _ => Value::Null,
            };
        }
        (self.destination, self.method, value)
    }
}

fn field_type(field: &'static str, expected: &'static str) -> MessageFault {
    MessageFault::FieldType { field, expected }
}

/// The destination path from `_outputPath`, or from a one-reference
/// `_call._outputPath` when there is no own `_outputPath` (R9).
/// The fields a data message is read by, found in one pass over its
/// members rather than a search for each.
#[derive(Default)]
struct Known<'a> {
    kind: Option<&'a Value>,
    instance: Option<&'a Value>,
    description: Option<&'a Value>,
    schema: Option<&'a Value>,
    method: Option<&'a Value>,
    output_path: Option<&'a Value>,
    call: Option<&'a Value>,
    data: Option<&'a Value>,
}

impl<'a> Known<'a> {
    fn of(fields: &'a Map) -> Known<'a> {
        let mut known = Known::default();
        for (key, value) in fields {
            let slot = match key {
                "kind" => &mut known.kind,
                "_instance" => &mut known.instance,
                "description" => &mut known.description,
                "schema" => &mut known.schema,
                "_outputMethod" => &mut known.method,
                "_outputPath" => &mut known.output_path,
                "_call" => &mut known.call,
                "data" => &mut known.data,
                _ => continue,
            };
            *slot = Some(value);
        }
        known
    }
}

fn output_destination(known: &Known<'_>, kind: &Kind) -> Result<Option<Path>, MessageFault> {
    match known.output_path {
        Some(Value::String(text)) => {
            let reference =
                Reference::parse(text.trim()).map_err(|e| MessageFault::BadOutputPath {
                    text: text.clone(),
                    reason: e.to_string(),
                })?;
            if &reference.kind != kind {
                return Err(MessageFault::OutputPathKind {
                    path: reference.to_string(),
                    found: reference.kind.to_string(),
                    kind: kind.to_string(),
                });
            }
            Ok(Some(reference.path))
        }
        Some(_) => Err(field_type("_outputPath", "a string")),
        None => Ok(known
            .call
            .and_then(|call| call.get("_outputPath"))
            .and_then(Value::as_str)
            .and_then(|text| Reference::parse(text.trim()).ok())
            .filter(|reference| &reference.kind == kind)
            .map(|reference| reference.path)),
    }
}
