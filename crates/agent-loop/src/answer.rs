//! The answer a request asks for (spec R37), and reading it back (R40).

use crate::Tools;
use agent_core::Instance;
use agent_core::{
    json,
    json::{Map, Value},
};

/// The schema of a `^†` reference string: what every parameter also
/// accepts, and `_outputPath` when the tool does not declare it.
fn reference_string() -> Value {
    json!({"type": "string", "pattern": "^†"})
}

/// The instances a model's call may name in `_instance` (R37, R39b).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallInstances<'a> {
    /// One of these, the context's instances; none when it has none.
    Existing(&'a [Instance]),
    /// Any valid instance id: the application lets the model start new
    /// instances (`agentctx loop --new-instances`).
    Any,
}

/// The schema of the one JSON object a request asks for (R37):
/// `{"calls": [CALL, …], "output": OUTPUT | null}`, each CALL one of the
/// tools (`anyOf`).
///
/// In each tool, every parameter also accepts a reference string;
/// `_outputPath` is as the tool declares it, else an optional reference
/// string; `_instance` is one of `instances` (offered only when there is
/// one to name, or any string for [`CallInstances::Any`]); `_outputMethod` one of the six methods unless declared. An
/// explicit tool (`explicit(name)`, R36) loses `_output`. OUTPUT is
/// `output` (any JSON value when `None`).
///
/// ```
/// use agent_loop::{answer_schema, CallInstances, Tool, Tools};
/// use agent_core::json;
///
/// let mut tools = Tools::new();
/// tools.add(Tool::new(json!({"type": "object",
///     "properties": {"_tool": {"const": "weather"}, "city": {"type": "string"},
///                    "_output": {"type": "string"}},
///     "required": ["_tool", "city"]}), "example")?);
/// let schema = answer_schema(&tools, |_| false, CallInstances::Existing(&[]), None);
/// let weather = &schema["properties"]["calls"]["items"]["anyOf"][0];
/// assert_eq!(weather["properties"]["city"]["anyOf"][0], json!({"type": "string"}));
/// assert_eq!(weather["properties"]["_output"], json!({"type": "string"}));
/// # Ok::<(), agent_loop::Error>(())
/// ```
pub fn answer_schema(
    tools: &Tools,
    explicit: impl Fn(&str) -> bool,
    instances: CallInstances<'_>,
    output: Option<&Value>,
) -> Value {
    let variants: Vec<Value> = tools
        .iter()
        .map(|tool| {
            Value::Object(call_schema(
                tool.for_model(crate::Execution::of(explicit(tool.name()))),
                instances,
            ))
        })
        .collect();
    let calls = if variants.is_empty() {
        json!({"type": "array", "maxItems": 0})
    } else {
        json!({"type": "array", "items": {"anyOf": variants}})
    };
    let output = output.cloned().unwrap_or_else(|| json!({}));
    json!({
        "type": "object",
        "properties": {
            "calls": calls,
            "output": {"anyOf": [{"type": "null"}, output]}
        },
        "required": ["calls", "output"],
        "additionalProperties": false
    })
}

/// One tool's schema as a call in the answer.
fn call_schema(mut schema: Map, instances: CallInstances<'_>) -> Map {
    schema
        .entry("type")
        .or_insert_with(|| Value::String("object".into()));
    let properties = schema
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(properties) = properties {
        for (key, property) in properties.iter_mut() {
            if !key.starts_with('_') {
                *property = json!({"anyOf": [property.take(), reference_string()]});
            }
        }
        properties
            .entry("_outputPath")
            .or_insert_with(reference_string);
        properties
            .entry("_outputMethod")
            .or_insert_with(|| json!({"enum": agent_core::Method::ALL.map(|m| m.as_str())}));
        let instance = match instances {
            CallInstances::Any => Some(json!({"type": "string"})),
            CallInstances::Existing([]) => None,
            CallInstances::Existing(ids) => {
                let ids: Vec<&str> = ids.iter().map(Instance::as_str).collect();
                Some(json!({"type": "string", "enum": ids}))
            }
        };
        if let Some(instance) = instance {
            properties.entry("_instance").or_insert(instance);
        }
    }
    schema
}

/// A model's answer, read structurally (R40): an object whose `calls` is an
/// array and whose `output` is present (`null` while work remains). Each
/// call is judged on its own when the turn runs it (R39).
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The calls, as the model wrote them.
    pub calls: Vec<Value>,
    /// The final output, or `None` for `null`.
    pub output: Option<Value>,
}

impl Answer {
    /// Reads an answer; the error says what is wrong, for the model to see
    /// on its next turn.
    ///
    /// ```
    /// use agent_loop::Answer;
    /// use agent_core::json;
    /// let answer = Answer::from_value(json!({"calls": [], "output": {"done": true}}))?;
    /// assert_eq!(answer.output, Some(json!({"done": true})));
    /// assert_eq!(
    ///     Answer::from_value(json!([1])).unwrap_err(),
    ///     "the answer must be a JSON object {\"calls\": [...], \"output\": ...}, found an array"
    /// );
    /// # Ok::<(), String>(())
    /// ```
    ///
    /// # Errors
    /// A sentence for the model when `value` is not an object, its `calls` is missing or not an
    /// array, its `output` is missing, or it has a key besides the two.
    pub fn from_value(value: Value) -> Result<Answer, String> {
        let Value::Object(mut fields) = value else {
            return Err(format!(
                "the answer must be a JSON object {{\"calls\": [...], \"output\": ...}}, found {}",
                agent_core::json_type(&value)
            ));
        };
        let calls = match fields.shift_remove("calls") {
            Some(Value::Array(calls)) => calls.into_vec(),
            Some(other) => {
                return Err(format!(
                    "the answer's \"calls\" must be an array, found {}",
                    agent_core::json_type(&other)
                ));
            }
            None => return Err("the answer has no \"calls\" (use [] for none)".into()),
        };
        let output = match fields.shift_remove("output") {
            Some(Value::Null) => None,
            Some(output) => Some(output),
            None => return Err("the answer has no \"output\" (use null while work remains)".into()),
        };
        if let Some(key) = fields.keys().next() {
            return Err(format!(
                "the answer has a key besides \"calls\" and \"output\": {}",
                agent_core::quoted(key)
            ));
        }
        Ok(Answer { calls, output })
    }

    /// Reads an answer from its JSON text — also when the whole text is one
    /// Markdown code fence around it (`` ```json `` … `` ``` ``), as local
    /// servers and proxies often answer.
    ///
    /// ```
    /// use agent_loop::Answer;
    /// let fenced = "```json\n{\"calls\": [], \"output\": 7}\n```";
    /// assert_eq!(Answer::from_text(fenced)?.output, Some(agent_core::json!(7)));
    /// # Ok::<(), String>(())
    /// ```
    ///
    /// # Errors
    /// As [`Answer::from_value`], and when the text (unfenced) is not JSON.
    pub fn from_text(text: &str) -> Result<Answer, String> {
        let value: Value = agent_core::json::from_str(unfenced(text))
            .map_err(|e| format!("the answer is not JSON ({e}): {}", excerpt(text)))?;
        Answer::from_value(value)
    }
}

/// The JSON inside `text` when `text` is one fenced code block whose info
/// string is empty or `json`; else `text` itself. Only a fence around the
/// whole text is taken: prose around JSON is not searched for an answer.
fn unfenced(text: &str) -> &str {
    let trimmed = text.trim();
    let Some(rest) = trimmed.strip_prefix("```") else {
        return text;
    };
    let Some((info, body)) = rest.split_once('\n') else {
        return text;
    };
    let info = info.trim();
    if !(info.is_empty() || info.eq_ignore_ascii_case("json")) {
        return text;
    }
    match body.trim_end().strip_suffix("```") {
        Some(inner) if !inner.contains("```") => inner,
        _ => text,
    }
}

/// The start of `text`, for an error (at most 200 characters).
fn excerpt(text: &str) -> String {
    let mut cut: String = text.chars().take(200).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    agent_core::quoted(&cut)
}
