//! The one error type of this crate.

/// Everything that can go wrong talking to a model.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A tool definition that is not a tool (spec R35). `at` says where it
    /// came from: `message 3` of the context, or `caller tool 0`.
    #[error("{at}: {reason}")]
    BadTool {
        /// Where the definition came from.
        at: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
