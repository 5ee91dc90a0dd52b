//! The one error type of this crate.

/// Everything that can go wrong when building a provider payload (R31).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Anthropic conversations must start with a user turn (R31).
    #[error("the anthropic payload cannot start with an assistant turn (chat message {index})")]
    AssistantFirst {
        /// Index of the chat message that would open the conversation.
        index: usize,
    },
    /// A role the provider has no place for.
    #[error(
        "chat message {index} has role {}, which the {provider} payload cannot carry",
        agent_core::quoted(role)
    )]
    UnsupportedRole {
        /// Index of the chat message.
        index: usize,
        /// Its role.
        role: String,
        /// The provider.
        provider: &'static str,
    },
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
