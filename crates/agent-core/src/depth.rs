//! How deep JSON may nest (R33), measured one way everywhere.
//!
//! Depth counts nested arrays and objects, the outermost included: a scalar
//! is 0 deep, `{}` is 1, `{"a": [1]}` is 2. A *message* may be
//! [`MAX_DEPTH`] deep, its own object counted (the outer array of a JSON
//! context file is not, D6). Everything that becomes part of a message is
//! measured by the message it becomes — a call recorded as `_call` sits one
//! level down, a result written at a path `|path| + 1` levels down — and
//! checked where it becomes one; a call the engine only reads is held to the
//! same limit, its own object counted.

use crate::json::Value;

/// How deep one message may nest, its own object counted (R33).
pub const MAX_DEPTH: usize = 128;

/// A value that nests deeper than a limit (R33).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("nested deeper than {limit} levels")]
pub struct TooDeep {
    /// The limit it exceeds.
    pub limit: usize,
}

/// True when `value` nests at most `limit` arrays and objects deep (a
/// scalar is 0 deep). Iterative, so it is safe on any value — including one
/// built in memory far deeper than a parser would accept.
///
/// ```
/// use agent_core::within_depth;
/// use agent_core::json;
/// assert!(within_depth(&json!([[1]]), 2));
/// assert!(!within_depth(&json!([[1]]), 1));
/// assert!(within_depth(&json!("scalar"), 0));
/// ```
pub fn within_depth(value: &Value, limit: usize) -> bool {
    // One explicit stack instead of recursion; scalars are never pushed.
    let mut stack: Vec<(&Value, usize)> = Vec::new();
    let mut current = (value, 0);
    loop {
        let (value, depth) = current;
        let children: &mut dyn Iterator<Item = &Value> = match value {
            // A held container knows its depth: it is not read for it
            // (D85, D86).
            value if value.held_depth().is_some() => &mut std::iter::empty(),
            Value::Array(items) => &mut items.iter(),
            Value::Object(map) => &mut map.values(),
            _ => &mut std::iter::empty(),
        };
        let below = match value {
            Value::Array(_) | Value::Object(_) => value.held_depth().unwrap_or(1),
            _ => 0,
        };
        if below > 0 && depth + below > limit {
            return false;
        }
        stack.extend(children.filter(|v| is_container(v)).map(|v| (v, depth + 1)));
        match stack.pop() {
            Some(next) => current = next,
            None => return true,
        }
    }
}

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
pub fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn is_container(value: &Value) -> bool {
    matches!(value, Value::Array(_) | Value::Object(_))
}
