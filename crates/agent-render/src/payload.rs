//! Payloads in each provider's format (R31) and token counts.

use crate::{ChatMessage, Error, Result};
use agent_core::{json, json::Value};

/// Where the chat messages go (R31).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum PayloadFormat {
    /// `[{"role", "content"}]`, one element per chat message.
    #[default]
    Plain,
    /// OpenAI Chat Completions: `{"messages": [{"role", "content"}]}`.
    OpenAi,
    /// Anthropic Messages: `{"system"?, "messages": [{"role", "content": [blocks]}]}`.
    Anthropic,
    /// A readable transcript.
    Text,
}

impl PayloadFormat {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            PayloadFormat::Plain => "plain",
            PayloadFormat::OpenAi => "openai",
            PayloadFormat::Anthropic => "anthropic",
            PayloadFormat::Text => "text",
        }
    }
}

impl std::str::FromStr for PayloadFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        [
            PayloadFormat::Plain,
            PayloadFormat::OpenAi,
            PayloadFormat::Anthropic,
            PayloadFormat::Text,
        ]
        .into_iter()
        .find(|p| p.name() == s)
        .ok_or_else(|| {
            format!(
                "unknown provider {}: expected plain, openai, anthropic or text",
                agent_core::quoted(s)
            )
        })
    }
}

/// A rendered payload: JSON for the API providers, text for the transcript.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Payload {
    /// `plain`, `openai` and `anthropic`.
    Json(Value),
    /// `text`.
    Text(String),
}

impl Payload {
    /// The payload as one JSON value: the JSON payloads as they are, the
    /// `text` transcript as a JSON string.
    ///
    /// ```
    /// use agent_render::{payload, ChatMessage, PayloadFormat};
    /// use agent_core::json;
    ///
    /// let chat = [ChatMessage::new("user", "hi")];
    /// assert_eq!(payload(&chat, PayloadFormat::Plain)?.into_value(), json!([{"role": "user", "content": "hi"}]));
    /// assert_eq!(payload(&chat, PayloadFormat::Text)?.into_value(), json!("[user]\nhi\n\n"));
    /// # Ok::<(), agent_render::Error>(())
    /// ```
    pub fn into_value(self) -> Value {
        match self {
            Payload::Json(value) => value,
            Payload::Text(text) => Value::String(text),
        }
    }

    /// The payload as text: JSON (pretty or compact) or the transcript.
    pub fn to_text(&self, pretty: bool) -> String {
        match self {
            Payload::Json(v) if pretty => agent_core::json::to_string_pretty(v),
            Payload::Json(v) => v.to_string(),
            Payload::Text(t) => t.clone(),
        }
    }
}

/// Serialises chat messages for `provider` (R31).
///
/// # Errors
///
/// [`Error::AssistantFirst`] when an Anthropic conversation would open with
/// an assistant turn, and [`Error::UnsupportedRole`] for a role the provider
/// has no place for.
///
/// ```
/// use agent_render::{payload, ChatMessage, Payload, PayloadFormat};
/// use agent_core::json;
///
/// let chat = [ChatMessage::new("system", "Be brief."), ChatMessage::new("user", "a"), ChatMessage::new("user", "b")];
/// let Payload::Json(p) = payload(&chat, PayloadFormat::Anthropic)? else { unreachable!() };
/// assert_eq!(p, json!({
///     "system": "Be brief.",
///     "messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]
/// }));
/// # Ok::<(), agent_render::Error>(())
/// ```
pub fn payload(messages: &[ChatMessage], provider: PayloadFormat) -> Result<Payload> {
    let simple = || -> Vec<Value> {
        messages
            .iter()
            .map(|m| json!({"role": m.role(), "content": m.text()}))
            .collect()
    };
    Ok(match provider {
        PayloadFormat::Plain => Payload::Json(Value::Array(simple().into())),
        PayloadFormat::OpenAi => {
            let mut out = Vec::with_capacity(messages.len());
            for m in messages {
                match m.native_fields() {
                    Some(fields) => out.extend(crate::native::to_openai(fields)),
                    None => out.push(json!({"role": m.role(), "content": m.text()})),
                }
            }
            Payload::Json(json!({"messages": out}))
        }
        PayloadFormat::Anthropic => Payload::Json(anthropic(messages)?),
        PayloadFormat::Text => Payload::Text(
            messages
                .iter()
                .map(|m| format!("[{}]\n{}\n\n", m.role(), m.text()))
                .collect(),
        ),
    })
}

fn anthropic(messages: &[ChatMessage]) -> Result<Value> {
    let mut system: Vec<&str> = Vec::new();
    let mut turns: Vec<(&str, Vec<Value>)> = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        let (role, blocks) = match message.native_fields() {
            // A provider's own message: in its role, tool results as user
            // turns (R31).
            Some(fields) => match crate::native::to_anthropic(fields) {
                (role, blocks) if role == "assistant" => ("assistant", blocks),
                (_, blocks) => ("user", blocks),
            },
            None => {
                let role = match message.role() {
                    "system" | "developer" => {
                        system.push(message.text());
                        continue;
                    }
                    "user" => "user",
                    "assistant" => "assistant",
                    other => {
                        return Err(Error::UnsupportedRole {
                            index,
                            role: other.to_owned(),
                            provider: "anthropic",
                        });
                    }
                };
                (role, vec![json!({"type": "text", "text": message.text()})])
            }
        };
        if turns.is_empty() && role == "assistant" {
            return Err(Error::AssistantFirst { index });
        }
        match turns.last_mut() {
            Some((last, content)) if *last == role => content.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    let mut out = agent_core::json::Map::new();
    if !system.is_empty() {
        out.insert("system".into(), system.join("\n\n").into());
    }
    let turns = turns
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}));
    out.insert("messages".into(), Value::Array(turns.collect()));
    Ok(Value::Object(out))
}

/// Tokens in `text` under the `o200k_base` encoding (GPT-4o family), for
/// sizing contexts. Special-token text is counted as ordinary text. Only
/// with the `tiktoken` feature (a default): a build without the tokenizer
/// has no count rather than an estimate that looks like one (D61: features cut).
#[cfg(feature = "tiktoken")]
#[cfg_attr(docsrs, doc(cfg(feature = "tiktoken")))]
pub fn count_tokens(text: &str) -> usize {
    tiktoken_rs::o200k_base_singleton()
        .encode_ordinary(text)
        .len()
}
