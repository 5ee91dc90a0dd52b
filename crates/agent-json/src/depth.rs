//! How deep a value nests, measured one way everywhere: nested arrays and
//! objects, the outermost included (a scalar is 0 deep, `{}` is 1,
//! `{"a": [1]}` is 2).

use crate::Value;

/// How deep [`from_str`](crate::from_str) lets a value nest, the outermost
/// array or object counted: 128, agentctx's limit for one message (the
/// spec's R33).
pub const MAX_DEPTH: usize = 128;

/// True when `value` nests at most `limit` arrays and objects deep (a
/// scalar is 0 deep). Iterative, so it is safe on any value — including one
/// built in memory far deeper than a parser would accept.
///
/// ```
/// use agent_json::{json, within_depth};
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
            // (D85: held objects; D86: held arrays).
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

fn is_container(value: &Value) -> bool {
    matches!(value, Value::Array(_) | Value::Object(_))
}
