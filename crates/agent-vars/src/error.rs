//! The one error type of this crate.

use std::fmt;

/// An expression that does not parse (R15): where, why, and the source to
/// point at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    /// The text that was parsed.
    pub source: String,
    /// Byte offset of the fault in `source`.
    pub offset: usize,
    /// What was expected or found there.
    pub reason: String,
}

impl SyntaxError {
    /// The source on one line and a caret under the fault:
    ///
    /// ```text
    /// †state.a || || †b
    ///             ^
    /// ```
    pub fn caret(&self) -> String {
        // One column per character (tabs and newlines shown as spaces), so
        // the caret lines up under multi-byte characters like `†`.
        let line: String = self
            .source
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        let column = self
            .source
            .get(..self.offset)
            .map_or(0, |before| before.chars().count());
        format!("{line}\n{}^", " ".repeat(column))
    }
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "syntax error at byte {}: {}", self.offset, self.reason)
    }
}

impl std::error::Error for SyntaxError {}

/// Everything that can go wrong in `agent-vars`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An expression does not parse. `at` is the JSON Pointer of the string
    /// inside the call (`""` for a lone expression).
    #[error("{}{error}", if at.is_empty() { String::new() } else { format!("{at}: ") })]
    Syntax {
        /// Where the expression sits in the call.
        at: String,
        /// The fault.
        error: SyntaxError,
    },
    /// A call that is not a JSON object (R18).
    #[error("a call must be a JSON object, found {found}")]
    CallNotObject {
        /// The JSON type found instead.
        found: &'static str,
    },
    /// A call's `_instance` that is not a string.
    #[error("`_instance` must be a string")]
    InstanceNotString,
    /// A call's `_instance` that R2 does not allow.
    #[error("`_instance`: {0}")]
    Instance(#[source] agent_core::Error),
    /// A call nested deeper than the limit, its own object counted (R33).
    #[error("the call is {0}")]
    TooDeep(#[source] agent_core::TooDeep),
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
