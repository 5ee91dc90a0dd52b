//! The chat message model: what the model sees, before a provider's format.

use agent_core::json::{Map, Value};

/// One chat message: a role and its text. Rendering makes one per block;
/// a provider payload may merge runs of one role (Anthropic's alternating
/// turns become one message of several text blocks). A provider's own
/// message with tool calls or results (`Message::Native`) also keeps its
/// fields, so a payload can pass it on as the provider defines it.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatMessage {
    role: String,
    text: String,
    native: Option<Map>,
}

impl ChatMessage {
    /// A message of `role` (`user`, `assistant`, `system`, …) saying `text`.
    pub fn new(role: impl Into<String>, text: impl Into<String>) -> Self {
        ChatMessage {
            role: role.into(),
            text: text.into(),
            native: None,
        }
    }

    /// A provider's own chat message (tool calls, tool results), without
    /// its top-level `_` keys (R29). Its text, for the `plain` and `text`
    /// formats, is the message's JSON without `role`.
    pub fn native(mut fields: Map) -> Self {
        fields.retain(|key, _| !key.starts_with('_'));
        let role = fields
            .get("role")
            .and_then(Value::as_str)
            .unwrap_or("user")
            .to_owned();
        let mut shown = fields.clone();
        shown.shift_remove("role");
        ChatMessage {
            role,
            text: Value::Object(shown).to_string(),
            native: Some(fields),
        }
    }

    /// `user`, `assistant`, `system`, …
    pub fn role(&self) -> &str {
        &self.role
    }

    /// The text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The provider's own message, for a native message.
    pub fn native_fields(&self) -> Option<&Map> {
        self.native.as_ref()
    }
}
