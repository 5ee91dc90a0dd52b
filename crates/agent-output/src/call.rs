//! [`Call`]: a tool call as the model wrote it, its meta keys parsed once.

use crate::{Error, OutputPath, Result};
use agent_core::json::Value;
use agent_core::{Instance, Method, json_type};
use agent_data::Context;
use agent_vars::{Resolution, Scope};

/// A tool call (R18–R20): a JSON object whose `_`-keys the engine reads —
/// `_tool`, `_instance`, `_outputPath`, `_outputMethod` — and whose other
/// keys are the tool's parameters. Parsed and checked once, here; the
/// value as written is kept, since it is what the engine records as
/// `_call`.
///
/// ```
/// use agent_output::Call;
/// use agent_core::Method;
/// use agent_core::json;
///
/// let call = Call::parse(json!({
///     "_tool": "summarize", "text": "†state.profile",
///     "_outputPath": "†state.summary || †state.error", "_outputMethod": "merge"
/// }))?;
/// assert_eq!(call.tool(), Some("summarize"));
/// assert_eq!(call.method(), Method::Merge);
/// assert_eq!(call.output_path().map(|p| p.outcomes().len()), Some(2));
/// assert_eq!(call.parameters().map(|(k, _)| k).collect::<Vec<_>>(), ["text"]);
///
/// let err = Call::parse(json!({"_outputMethod": "upsert"})).unwrap_err();
/// assert_eq!(err.to_string(), r#"`_outputMethod`: unknown method "upsert": expected set, merge, assign, push, concat or erase"#);
/// # Ok::<(), agent_output::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    value: Value,
    tool: Option<String>,
    instance: Option<Instance>,
    output_path: Option<OutputPath>,
    method: Method,
}

impl Call {
    /// Parses a call: a JSON object with a string `_tool` (if any), an
    /// `_instance` R2 allows, an `_outputPath` that parses (R19) and one of
    /// the six `_outputMethod`s (R20, default `set`).
    ///
    /// # Errors
    ///
    /// [`Error::Call`] for a value that is not an object or a bad `_instance`,
    /// [`Error::ToolNotString`], [`Error::OutputPathNotString`],
    /// [`Error::OutputPathNotExpression`], [`Error::OutputPathSyntax`],
    /// [`Error::OutputMethodNotString`] and [`Error::UnknownMethod`] for the
    /// field they name.
    pub fn parse(value: Value) -> Result<Call> {
        let instance = agent_vars::call_instance(&value)?;
        let fields = value
            .as_object()
            .ok_or(Error::Call(agent_vars::Error::CallNotObject {
                found: json_type(&value),
            }))?;
        let tool = match fields.get("_tool") {
            None => None,
            Some(Value::String(tool)) => Some(tool.clone()),
            Some(other) => {
                return Err(Error::ToolNotString {
                    found: json_type(other),
                });
            }
        };
        let output_path = match fields.get("_outputPath") {
            None => None,
            Some(Value::String(text)) => Some(OutputPath::parse(text)?),
            Some(_) => return Err(Error::OutputPathNotString),
        };
        let method = match fields.get("_outputMethod") {
            None => Method::Set,
            Some(Value::String(name)) => name.parse().map_err(Error::UnknownMethod)?,
            Some(other) => {
                return Err(Error::OutputMethodNotString {
                    found: json_type(other),
                });
            }
        };
        Ok(Call {
            value,
            tool,
            instance,
            output_path,
            method,
        })
    }

    /// Refuses a `_` key the engine does not read ([`agent_core::CALL_KEYS`])
    /// unless `allowed` names it: a misspelt `_outputPath` would otherwise
    /// be a parameter nobody reads, and the result would go nowhere
    /// (D63: typos refused). For calls being applied, run or answered; a call
    /// recorded in a log is never judged again.
    ///
    /// ```
    /// use agent_output::Call;
    /// use agent_core::json;
    /// let call = Call::parse(json!({"_tool": "t", "_outputpath": "†state.x"}))?;
    /// assert_eq!(
    ///     call.check_keys(&[]).unwrap_err().to_string(),
    ///     r#"unknown key "_outputpath"; did you mean "_outputPath"?"#
    /// );
    /// assert!(call.check_keys(&["_outputpath".into()]).is_ok());
    /// # Ok::<(), agent_output::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::UnknownKey`](crate::Error::UnknownKey) naming the first `_` key of the call
    /// that the engine does not read and `allowed` does not list.
    pub fn check_keys(&self, allowed: &[String]) -> Result<()> {
        let keys = self.value.as_object().into_iter().flat_map(|c| c.keys());
        Ok(agent_core::check_keys(
            keys,
            &agent_core::CALL_KEYS,
            allowed,
        )?)
    }

    /// `_tool`, if the call names one.
    pub fn tool(&self) -> Option<&str> {
        self.tool.as_deref()
    }

    /// `_instance`: the scope the call reads and writes in (R5, R6).
    pub fn instance(&self) -> Option<&Instance> {
        self.instance.as_ref()
    }

    /// `_outputPath`, parsed; `None` when the result goes nowhere (R21).
    pub fn output_path(&self) -> Option<&OutputPath> {
        self.output_path.as_ref()
    }

    /// `_outputMethod`, `set` when absent (R20).
    pub fn method(&self) -> Method {
        self.method
    }

    /// The tool's parameters: every key not starting with `_`, as written.
    pub fn parameters(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.value
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(key, _)| !key.starts_with('_'))
    }

    /// The call as written (what the engine records as `_call`).
    pub fn as_value(&self) -> &Value {
        &self.value
    }

    /// The call as written.
    pub fn into_value(self) -> Value {
        self.value
    }

    /// The call with its parameters' references replaced by their values,
    /// read in its instance (R18).
    ///
    /// # Errors
    ///
    /// [`Error::Call`] when a parameter's expression does not parse or the
    /// call nests too deep; a missing reference is an unresolved
    /// [`Resolution::Pending`], not an error.
    pub fn resolve(&self, context: &Context) -> Result<Resolution> {
        let scope = Scope::new(context, self.instance());
        Ok(agent_vars::resolve_call_with(&self.value, &scope)?)
    }
}

impl TryFrom<Value> for Call {
    type Error = Error;
    fn try_from(value: Value) -> Result<Call> {
        Call::parse(value)
    }
}
