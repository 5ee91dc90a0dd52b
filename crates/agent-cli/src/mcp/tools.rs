//! The tools `agentctx mcp` serves: each one the command of the same name,
//! on the one context the server was started with, its result as
//! structured content (an object) and a short text.
//!
//! A tool's arguments come from the peer: every one is checked (its type,
//! no unknown names) before anything runs, and text never names a file
//! (the commands' `@path` forms are not reachable: values are sent as
//! JSON text, which never starts with `@`).

use crate::Failure;

use serde_json::{Map, Value, json};

/// One tool: its name, what it does, its input schema, whether it writes.
pub(crate) struct Tool {
    pub(crate) name: &'static str,
    pub(crate) description: &'static str,
    pub(crate) writes: bool,
    schema: fn() -> Value,
}

impl Tool {
    /// The JSON Schema of its arguments (an object schema).
    pub(crate) fn input_schema(&self) -> Map<String, Value> {
        match (self.schema)() {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }
}

/// What a call of a tool came to.
#[derive(Debug)]
pub(crate) enum Called {
    /// Its result: structured content and the text beside it.
    Done { structured: Value, text: String },
    /// The command refused or failed: a tool error (`isError`), its text
    /// the command's message, so the calling model can correct itself.
    Refused(String),
    /// No such tool (or a writing one on a read-only server).
    Unknown(String),
}

/// The most messages `log` returns at once.
pub(crate) const LOG_LIMIT: u64 = crate::log::MOST;

/// How long the text beside a structured result may be before it says
/// only how long it is.
const TEXT_LIMIT: usize = 4096;

/// Every tool; `read_only` leaves out those that write.
pub(crate) fn tools(read_only: bool) -> Vec<Tool> {
    let all = [
        Tool {
            name: "view",
            description: "The folded view of a kind (¶KIND), as the log's messages of that kind \
                          make it; in an instance, over the global view; at a past point with \
                          `at` (the first `at` messages).",
            writes: false,
            schema: || {
                json!({"type": "object", "properties": {
                    "kind": {"type": "string", "description": "the kind, e.g. state"},
                    "instance": {"type": "string", "description": "an instance id"},
                    "at": {"type": "integer", "minimum": 0,
                           "description": "the context after its first `at` messages"}},
                    "required": ["kind"], "additionalProperties": false})
            },
        },
        Tool {
            name: "resolve",
            description: "The value an expression names: a reference such as \
                          †state.user.name, with || (first present) and && (all present).",
            writes: false,
            schema: || {
                json!({"type": "object", "properties": {
                    "expression": {"type": "string", "description": "e.g. †state.user.name"},
                    "instance": {"type": "string"},
                    "at": {"type": "integer", "minimum": 0}},
                    "required": ["expression"], "additionalProperties": false})
            },
        },
        Tool {
            name: "instances",
            description: "The context's instance ids, in the order they first appear.",
            writes: false,
            schema: || json!({"type": "object", "properties": {}, "additionalProperties": false}),
        },
        Tool {
            name: "apply",
            description: "Writes a call's result where its _outputPath says, durably: one \
                          append, validated against the context as it is when it lands. With \
                          `key`, at most once per key.",
            writes: true,
            schema: || {
                json!({"type": "object", "properties": {
                    "call": {"type": "object",
                             "description": "the call, e.g. {\"_tool\": \"t\", \"_outputPath\": \"†state.x\"}"},
                    "result": {"description": "the value the call succeeded with"},
                    "key": {"type": "string", "minLength": 1, "maxLength": 128}},
                    "required": ["call", "result"], "additionalProperties": false})
            },
        },
        Tool {
            name: "append",
            description: "Appends a message or a list of messages, all or none, durably and \
                          validated (schemas, methods, instances). With `key`, at most once.",
            writes: true,
            schema: || {
                json!({"type": "object", "properties": {
                    "messages": {"type": ["object", "array"],
                                 "description": "e.g. {\"type\": \"state\", \"data\": {\"n\": 1}}"},
                    "key": {"type": "string", "minLength": 1, "maxLength": 128}},
                    "required": ["messages"], "additionalProperties": false})
            },
        },
        Tool {
            name: "render",
            description: "What the model sees: the context rendered as a provider's payload.",
            writes: false,
            schema: || {
                json!({"type": "object", "properties": {
                    "provider": {"type": "string", "enum": ["plain", "openai", "anthropic", "text"]},
                    "mode": {"type": "string", "enum": ["merged", "append"]}},
                    "additionalProperties": false})
            },
        },
        Tool {
            name: "verify",
            description: "Recomputes the log's chain of SHA-256 digests and compares every digest \
                          kept beside it; with `expect`, the head too. A finding is a tool error.",
            writes: false,
            schema: || {
                json!({"type": "object", "properties": {
                    "expect": {"type": "string", "description": "the head (64 hex digits) kept elsewhere"}},
                    "additionalProperties": false})
            },
        },
        Tool {
            name: "log",
            description: "The log's messages in their normal form, a page at a time: from \
                          `start`, at most `limit` (50 by default, 500 at most) of those \
                          matching `kind` and `instance`; `next` is where the next page starts.",
            writes: false,
            schema: || {
                json!({"type": "object", "properties": {
                    "start": {"type": "integer", "minimum": 0},
                    "limit": {"type": "integer", "minimum": 1, "maximum": LOG_LIMIT},
                    "kind": {"type": "string"},
                    "instance": {"type": "string"}},
                    "additionalProperties": false})
            },
        },
    ];
    all.into_iter()
        .filter(|tool| !(read_only && tool.writes))
        .collect()
}

/// Calls tool `name` with `arguments` on `context`.
pub(crate) fn call(
    context: &str,
    read_only: bool,
    name: &str,
    arguments: &Map<String, Value>,
) -> Called {
    let Some(tool) = tools(read_only).into_iter().find(|t| t.name == name) else {
        return Called::Unknown(agent_core::quoted(name));
    };
    let outcome = check_arguments(&tool, arguments)
        .and_then(|()| crate::input::captured(|| run(context, name, arguments)));
    match outcome {
        Ok(structured) => {
            let text = structured.to_string();
            let text = if text.len() <= TEXT_LIMIT {
                text
            } else {
                format!(
                    "{name}: {} bytes of JSON (see the structured content)",
                    text.len()
                )
            };
            Called::Done { structured, text }
        }
        Err(failure) if failure.stdout.is_empty() => Called::Refused(failure.message),
        Err(failure) => Called::Refused(format!(
            "{}\n{}",
            failure.message,
            failure.stdout.trim_end()
        )),
    }
}

/// Refuses an argument the schema does not name, or of the wrong type.
fn check_arguments(tool: &Tool, arguments: &Map<String, Value>) -> Result<(), Failure> {
    let schema = tool.input_schema();
    let properties = schema.get("properties").and_then(Value::as_object);
    for (key, value) in arguments {
        let Some(property) = properties.and_then(|p| p.get(key)) else {
            let known: Vec<&str> = properties
                .map(|p| p.keys().map(String::as_str).collect())
                .unwrap_or_default();
            return Err(Failure::usage(format!(
                "{}: unknown argument {} (it takes: {})",
                tool.name,
                agent_core::quoted(key),
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            )));
        };
        let fits = match property.get("type") {
            None => true,
            Some(Value::String(kind)) => fits(kind, value),
            Some(Value::Array(kinds)) => kinds
                .iter()
                .filter_map(Value::as_str)
                .any(|k| fits(k, value)),
            Some(_) => true,
        };
        if !fits {
            return Err(Failure::usage(format!(
                "{}: argument {key} must be {}",
                tool.name, property["type"]
            )));
        }
    }
    for required in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(name) = required.as_str()
            && !arguments.contains_key(name)
        {
            return Err(Failure::usage(format!(
                "{}: argument {name} is required",
                tool.name
            )));
        }
    }
    Ok(())
}

fn fits(kind: &str, value: &Value) -> bool {
    match kind {
        "string" => value.is_string(),
        "integer" => value.is_u64() || value.is_i64(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        _ => true,
    }
}

fn text<'a>(arguments: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    arguments.get(key).and_then(Value::as_str)
}

fn index(arguments: &Map<String, Value>, key: &str) -> Result<Option<usize>, Failure> {
    arguments
        .get(key)
        .and_then(Value::as_u64)
        .map(|n| usize::try_from(n).map_err(|_| Failure::usage(format!("{key}: {n} is too large"))))
        .transpose()
}

/// An argument as JSON text: what the commands take (never `@path`:
/// JSON text does not start with `@`).
fn json_text(arguments: &Map<String, Value>, key: &str) -> String {
    arguments.get(key).map(Value::to_string).unwrap_or_default()
}

/// The `key` argument, checked as the command line checks `--key`.
fn append_key(arguments: &Map<String, Value>) -> Result<Option<agent_data::AppendKey>, Failure> {
    text(arguments, "key")
        .map(crate::keyed::parse_key)
        .transpose()
        .map_err(Failure::usage)
}

/// The JSON a command printed, as a value.
fn parsed(printed: &str) -> Result<Value, Failure> {
    serde_json::from_str(printed)
        .map_err(|e| Failure::invalid(format!("the command's output: {e}")))
}

fn run(context: &str, name: &str, arguments: &Map<String, Value>) -> Result<Value, Failure> {
    let instance = text(arguments, "instance");
    match name {
        "view" => {
            let kind = text(arguments, "kind").unwrap_or_default();
            let view =
                crate::commands::view(context, kind, instance, index(arguments, "at")?, false)?;
            Ok(json!({"kind": kind, "instance": instance, "view": parsed(&view)?}))
        }
        "resolve" => {
            let expression = text(arguments, "expression").unwrap_or_default();
            let value = crate::commands::resolve(
                context,
                expression,
                instance,
                index(arguments, "at")?,
                false,
            )?;
            Ok(json!({"expression": expression, "value": parsed(&value)?}))
        }
        "instances" => {
            Ok(json!({"instances": parsed(&crate::commands::instances(context, false, false)?)?}))
        }
        "apply" => {
            let (call, result) = (json_text(arguments, "call"), json_text(arguments, "result"));
            let key = append_key(arguments)?;
            let printed =
                crate::apply::apply(crate::apply::ApplyArgs::written(context, call, result, key))?;
            let appended = printed.lines().map(parsed).collect::<Result<Vec<_>, _>>()?;
            Ok(json!({"appended": appended}))
        }
        "append" => {
            let messages = json_text(arguments, "messages");
            let key = append_key(arguments)?;
            let done = crate::write::append_counted(context, &messages, key.as_ref())?;
            Ok(json!({"appended": done.appended, "messages": done.length, "head": done.head}))
        }
        "render" => {
            let provider = text(arguments, "provider").unwrap_or("plain");
            let mode = text(arguments, "mode").unwrap_or("merged");
            let payload = crate::commands::render(context, provider, mode, false, false)?;
            Ok(json!({"provider": provider, "mode": mode, "payload": parsed(&payload)?}))
        }
        "verify" => parsed(&crate::commands::verify(
            context,
            text(arguments, "expect"),
            false,
            false,
        )?),
        "log" => log(context, arguments),
        _ => Err(Failure::usage(format!(
            "no tool {}",
            agent_core::quoted(name)
        ))),
    }
}

/// A page of the log, filtered by kind and instance (`agentctx log`'s).
fn log(context: &str, arguments: &Map<String, Value>) -> Result<Value, Failure> {
    let start = index(arguments, "start")?.unwrap_or(0);
    let limit = arguments
        .get("limit")
        .and_then(Value::as_u64)
        .unwrap_or(50)
        .clamp(1, LOG_LIMIT);
    let page = crate::log::Page {
        start,
        limit: usize::try_from(limit).unwrap_or(50),
        kind: text(arguments, "kind"),
        instance: text(arguments, "instance"),
    };
    Ok(Value::from(&crate::log::page(context, &page)?))
}
