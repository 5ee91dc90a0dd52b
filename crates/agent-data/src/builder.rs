//! Building a data message field by field (R2, R9), checked as loading
//! checks it.

use crate::{DataMessage, MessageFault};
use agent_core::json::{Map, Value};
use agent_core::{Instance, Kind, Method, Path, Reference};

/// Builds a [`DataMessage`]: a kind, the value written, and optionally an
/// instance, a destination (`_outputPath`), a method, a schema and a
/// description. [`build`](Self::build) checks the message exactly as
/// loading it would, so what it builds always loads back the same.
///
/// ```
/// use agent_data::{DataMessage, Instance, Kind, Method, Path};
/// use agent_core::json;
///
/// let msg = DataMessage::builder(Kind::new("state")?)
///     .instance(Instance::new("①")?)
///     .at(".todo".parse::<Path>()?)
///     .method(Method::Push)
///     .value(json!("buy milk"))
///     .build()?;
/// assert_eq!(msg.data(), &json!({"todo": "buy milk"}));
/// assert_eq!(msg.fields()["_outputPath"], json!("†state.todo"));
/// assert_eq!(msg.method(), Method::Push);
/// assert_eq!(msg.instance().map(Instance::as_str), Some("①"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct DataMessageBuilder {
    kind: Kind,
    instance: Option<Instance>,
    at: Option<Path>,
    method: Option<Method>,
    value: Value,
    schema: Option<Value>,
    description: Option<String>,
}

impl DataMessage {
    /// A builder for a data message of `kind`; without
    /// [`at`](DataMessageBuilder::at) it writes its value into the whole
    /// view (method `merge`, R9).
    pub fn builder(kind: Kind) -> DataMessageBuilder {
        DataMessageBuilder {
            kind,
            instance: None,
            at: None,
            method: None,
            value: Value::Object(Map::new()),
            schema: None,
            description: None,
        }
    }
}

impl DataMessageBuilder {
    /// Writes to this instance's layer (`_instance`, R4) instead of the
    /// global one.
    pub fn instance(mut self, instance: Instance) -> Self {
        self.instance = Some(instance);
        self
    }

    /// Writes at this path of the view: an output message (`_outputPath`
    /// `†kind.path`, R9), whose method defaults to `set`. The value is
    /// nested under the path in `data`.
    pub fn at(mut self, path: Path) -> Self {
        self.at = Some(path);
        self
    }

    /// How the value combines with the view (`_outputMethod`, R10, R10b);
    /// an erase needs a `null` value.
    pub fn method(mut self, method: Method) -> Self {
        self.method = Some(method);
        self
    }

    /// The value written (an empty object unless set).
    pub fn value(mut self, value: Value) -> Self {
        self.value = value;
        self
    }

    /// The layer's JSON Schema (`schema`, R24).
    pub fn schema(mut self, schema: Value) -> Self {
        self.schema = Some(schema);
        self
    }

    /// The layer's description (`description`).
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The message, checked as loading checks it (R2, R9, R10b, R33).
    ///
    /// # Errors
    ///
    /// [`MessageFault`] for what loading would refuse: a schema that is
    /// not an object or boolean, an erase of a value other than `null`, a
    /// value nested too deep.
    pub fn build(self) -> Result<DataMessage, MessageFault> {
        let data = match &self.at {
            Some(path) => path.nest(self.value),
            None => self.value,
        };
        let mut fields = Map::new();
        fields.insert("type".into(), "data".into());
        fields.insert("kind".into(), self.kind.as_str().into());
        fields.insert("data".into(), data);
        if let Some(schema) = self.schema {
            fields.insert("schema".into(), schema);
        }
        if let Some(description) = self.description {
            fields.insert("description".into(), description.into());
        }
        if let Some(instance) = self.instance {
            fields.insert("_instance".into(), instance.as_str().into());
        }
        if let Some(path) = self.at {
            let reference = Reference::new(self.kind, path);
            fields.insert("_outputPath".into(), reference.to_string().into());
        }
        if let Some(method) = self.method {
            fields.insert("_outputMethod".into(), method.as_str().into());
        }
        let fields = crate::verbatim::within_depth(fields)?;
        DataMessage::from_fields(fields)
    }
}
