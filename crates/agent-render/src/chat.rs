//! The chat message model: what the model sees, before a provider's format.

/// One chat message: a role and its text parts, in order.
///
/// Rendering produces one part per message; the Anthropic payload merges
/// runs of one role into one message with several parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatMessage {
    /// `user`, `assistant`, `system`, …
    pub role: String,
    /// The texts.
    pub parts: Vec<String>,
}

impl ChatMessage {
    /// A message of one text part.
    pub fn new(role: impl Into<String>, text: impl Into<String>) -> Self {
        ChatMessage {
            role: role.into(),
            parts: vec![text.into()],
        }
    }

    /// The parts joined by blank lines: the text of a one-string message.
    pub fn text(&self) -> String {
        self.parts.join("\n\n")
    }
}
