//! Native tool-call messages in each provider's format (spec R31): a
//! message passes unchanged to its own provider and is converted for the
//! other one, so a context captured from either renders for both.

use agent_core::{
    json,
    json::{Map, Value},
};

/// The messages of OpenAI's Chat Completions format for `fields`.
pub(crate) fn to_openai(fields: &Map) -> Vec<Value> {
    let Some(blocks) = anthropic_blocks(fields) else {
        return vec![Value::Object(fields.clone())];
    };
    let role = fields.get("role").and_then(Value::as_str).unwrap_or("user");
    let text = texts(blocks);
    if role == "assistant" {
        let calls: Vec<Value> = blocks
            .iter()
            .filter(|b| b["type"] == "tool_use")
            .map(|b| {
                json!({"id": b["id"], "type": "function",
                       "function": {"name": b["name"], "arguments": b["input"].to_string()}})
            })
            .collect();
        let content = if text.is_empty() {
            Value::Null
        } else {
            Value::String(text)
        };
        return vec![json!({"role": "assistant", "content": content, "tool_calls": calls})];
    }
    // A user turn: each tool result its own `tool` message, then any text.
    let mut out: Vec<Value> = blocks
        .iter()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| json!({"role": "tool", "tool_call_id": b["tool_use_id"], "content": result_text(&b["content"])}))
        .collect();
    if !text.is_empty() {
        out.push(json!({"role": role, "content": text}));
    }
    out
}

/// The role and content blocks of Anthropic's Messages format for `fields`.
pub(crate) fn to_anthropic(fields: &Map) -> (String, Vec<Value>) {
    let role = fields.get("role").and_then(Value::as_str).unwrap_or("user");
    if let Some(blocks) = anthropic_blocks(fields) {
        return (role.to_owned(), blocks.clone());
    }
    if let Some(id) = fields.get("tool_call_id") {
        let content = result_text(fields.get("content").unwrap_or(&Value::Null));
        return (
            "user".into(),
            vec![json!({"type": "tool_result", "tool_use_id": id, "content": content})],
        );
    }
    let mut blocks = Vec::new();
    let text = result_text(fields.get("content").unwrap_or(&Value::Null));
    if !text.is_empty() {
        blocks.push(json!({"type": "text", "text": text}));
    }
    for call in fields
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let arguments = call["function"]["arguments"].as_str().unwrap_or("{}");
        // Anthropic's input is an object; arguments that are not one are
        // kept as text under `arguments`.
        let input = match agent_core::json::from_str(arguments) {
            Ok(Value::Object(input)) => Value::Object(input),
            _ => json!({"arguments": arguments}),
        };
        blocks.push(json!({"type": "tool_use", "id": call["id"], "name": call["function"]["name"], "input": input}));
    }
    (role.to_owned(), blocks)
}

/// Anthropic content blocks, when the message is Anthropic-shaped.
fn anthropic_blocks(fields: &Map) -> Option<&Vec<Value>> {
    if fields.contains_key("tool_calls") || fields.contains_key("tool_call_id") {
        return None;
    }
    fields.get("content").and_then(Value::as_array)
}

/// The text blocks of `blocks`, joined by blank lines.
fn texts(blocks: &[Value]) -> String {
    let parts: Vec<&str> = blocks
        .iter()
        .filter(|b| b["type"] == "text")
        .filter_map(|b| b["text"].as_str())
        .collect();
    parts.join("\n\n")
}

/// A tool result's content as text: a string as is, text blocks joined,
/// anything else as JSON.
fn result_text(content: &Value) -> String {
    match content {
        Value::Null => String::new(),
        Value::String(text) => text.clone(),
        Value::Array(blocks) => texts(blocks),
        other => other.to_string(),
    }
}
