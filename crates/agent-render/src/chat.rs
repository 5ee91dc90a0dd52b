//! The chat message model: what the model sees, before a provider's format.

/// One chat message: a role and its text. Rendering makes one per block;
/// a provider payload may merge runs of one role (Anthropic's alternating
/// turns become one message of several text blocks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatMessage {
    role: String,
    text: String,
}

impl ChatMessage {
    /// A message of `role` (`user`, `assistant`, `system`, …) saying `text`.
    pub fn new(role: impl Into<String>, text: impl Into<String>) -> Self {
        ChatMessage {
            role: role.into(),
            text: text.into(),
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
}
