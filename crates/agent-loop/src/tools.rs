//! Tools (spec R35) and what the model sees of them (R36).

use crate::{Error, Result};
use agent_core::json::{Map, Value};
use agent_data::{Context, Message};
use indexmap::IndexMap;

/// A tool: a JSON Schema object whose `properties._tool.const` is its name
/// (R35). Its other non-`_` properties are the call's parameters;
/// `properties._output` is the schema of its result, and
/// `properties._outputPath` fixes or constrains where results go.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    name: String,
    schema: Map,
}

impl Tool {
    /// Checks that `schema` defines a tool. `at` names where it came from,
    /// for the error.
    ///
    /// # Errors
    /// [`Error::BadTool`], naming `at`, when `schema` is not an object, or its
    /// `properties._tool.const` is not a string or is empty.
    pub fn new(schema: Value, at: &str) -> Result<Tool> {
        let bad = |reason: &str| Error::BadTool {
            at: at.to_owned(),
            reason: reason.to_owned(),
        };
        let Value::Object(schema) = schema else {
            return Err(bad("a tool must be a JSON Schema object"));
        };
        let name = schema
            .get("properties")
            .and_then(|p| p.get("_tool"))
            .and_then(|t| t.get("const"))
            .and_then(Value::as_str)
            .ok_or_else(|| bad("a tool's `properties._tool.const` must be its name, a string"))?;
        if name.is_empty() {
            return Err(bad(
                "a tool's name (`properties._tool.const`) must not be empty",
            ));
        }
        Ok(Tool {
            name: name.to_owned(),
            schema,
        })
    }

    /// The tool's name (`properties._tool.const`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The tool's schema as defined.
    pub fn schema(&self) -> &Map {
        &self.schema
    }

    /// `properties`, the call's keys.
    pub(crate) fn properties(&self) -> Option<&Map> {
        self.schema.get("properties").and_then(Value::as_object)
    }

    /// The schema of the tool's result (`properties._output`), if it has one.
    pub fn output_schema(&self) -> Option<&Value> {
        self.properties().and_then(|p| p.get("_output"))
    }

    /// The schema the model sees (R36): an explicit tool's `_output` is
    /// removed (its activity computes the result), also from `required`; a
    /// latent tool's stays, for the model to fill in.
    pub fn for_model(&self, execution: Execution) -> Map {
        let mut schema = self.schema.clone();
        if execution == Execution::Explicit {
            if let Some(Value::Object(properties)) = schema.get_mut("properties") {
                properties.shift_remove("_output");
            }
            if let Some(Value::Array(required)) = schema.get_mut("required") {
                required.retain(|key| key != "_output");
            }
        }
        schema
    }
}

/// Who computes a tool's result (R36): an activity the application runs
/// (explicit), or the model itself, writing `_output` (latent).
///
/// ```
/// use agent_loop::{Execution, Tool};
/// use agent_core::json;
/// let tool = Tool::new(json!({"type": "object", "properties": {
///     "_tool": {"const": "sum"}, "_output": {"type": "number"}}}), "example")?;
/// assert!(tool.for_model(Execution::Latent)["properties"].get("_output").is_some());
/// assert!(tool.for_model(Execution::Explicit)["properties"].get("_output").is_none());
/// assert_eq!(Execution::of(true), Execution::Explicit);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Execution {
    /// An activity computes the result: the model does not write `_output`.
    Explicit,
    /// The model writes the result as the call's `_output`.
    Latent,
}

impl Execution {
    /// [`Execution::Explicit`] when the tool has an activity.
    pub fn of(has_activity: bool) -> Self {
        if has_activity {
            Execution::Explicit
        } else {
            Execution::Latent
        }
    }
}

/// The tools of a request, by name, in order of first definition; a later
/// definition of a name replaces the earlier one (R35).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tools {
    by_name: IndexMap<String, Tool>,
}

impl Tools {
    /// No tools.
    pub fn new() -> Self {
        Tools::default()
    }

    /// The tools the context defines: each `{"type": "tool", "tool":
    /// SCHEMA}` message, in context order.
    ///
    /// # Errors
    /// [`Error::BadTool`], naming the message, when a `tool` message has no `tool` field or its
    /// schema is not a tool ([`Tool::new`]).
    pub fn from_context(context: &Context) -> Result<Tools> {
        let mut tools = Tools::new();
        for (index, message) in context.messages().enumerate() {
            let Message::Opaque(opaque) = message else {
                continue;
            };
            if opaque.type_name() != "tool" {
                continue;
            }
            let fields = opaque.fields();
            let at = format!("message {index}");
            let schema = fields.get("tool").cloned().ok_or_else(|| Error::BadTool {
                at: at.clone(),
                reason: "a tool message needs a `tool` field holding the tool's schema".into(),
            })?;
            tools.add(Tool::new(schema, &at)?);
        }
        Ok(tools)
    }

    /// Adds `tool`; it replaces a tool of the same name.
    pub fn add(&mut self, tool: Tool) {
        self.by_name.insert(tool.name.clone(), tool);
    }

    /// The tool named `name`.
    pub fn get(&self, name: &str) -> Option<&Tool> {
        self.by_name.get(name)
    }

    /// Every tool, in order of first definition.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &Tool> {
        self.by_name.values()
    }

    /// How many tools there are.
    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }
}
