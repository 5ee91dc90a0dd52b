//! How deep JSON may nest (R33), measured one way everywhere.
//!
//! Depth counts nested arrays and objects, the outermost included: a scalar
//! is 0 deep, `{}` is 1, `{"a": [1]}` is 2. A *message* may be
//! [`MAX_DEPTH`] deep, its own object counted (the outer array of a JSON
//! context file is not, D6: depth per message). Everything that becomes part of a message is
//! measured by the message it becomes — a call recorded as `_call` sits one
//! level down, a result written at a path `|path| + 1` levels down — and
//! checked where it becomes one; a call the engine only reads is held to the
//! same limit, its own object counted.

use crate::json::Value;

/// How deep one message may nest, its own object counted (R33): the JSON
/// reader's own limit ([`json::MAX_DEPTH`](crate::json::MAX_DEPTH)).
pub const MAX_DEPTH: usize = agent_json::MAX_DEPTH;

/// A value that nests deeper than a limit (R33).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("nested deeper than {limit} levels")]
pub struct TooDeep {
    /// The limit it exceeds.
    pub limit: usize,
}

/// True when `value` nests at most `limit` arrays and objects deep (the
/// same function as [`json::within_depth`](crate::json::within_depth)).
pub use agent_json::within_depth;

/// Drops `value` without recursion: dropping a value recurses once per
/// level, so a value nested tens of thousands deep — which a caller can
/// build in memory — would overflow the stack when dropped after being
/// refused; this takes it apart level by level instead (the same function
/// as [`json::drop_deep`](crate::json::drop_deep)).
///
/// ```
/// use agent_core::json::Value;
/// let deep = (0..100_000).fold(Value::Null, |inner, _| Value::from(vec![inner]));
/// agent_core::drop_deep(deep);
/// ```
pub use crate::json::drop_deep;

/// The name of a JSON value's type as error messages say it: `null`, `a
/// boolean`, `a number`, `a string`, `an array`, `an object`.
/// ([`Value::type_name`] as a function).
///
/// ```
/// assert_eq!(agent_core::json_type(&agent_core::json!([1])), "an array");
/// ```
pub fn json_type(value: &Value) -> &'static str {
    value.type_name()
}
