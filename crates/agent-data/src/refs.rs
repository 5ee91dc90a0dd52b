//! How deep `$ref`s reach (spec R33): the schema compiler follows them
//! recursively, so a chain of 50,000 `$ref`s overflowed the stack. A schema
//! is checked first, without recursion, and refused when a `$ref` leads
//! through more than [`MAX_REF_DEPTH`] others.

use agent_core::json::Value;
use std::collections::HashMap;

/// The most `$ref`s one `$ref` may lead through, itself included.
pub const MAX_REF_DEPTH: usize = 256;

/// The longest chain of `$ref`s in `schema`, counting each `$ref` and
/// every `$ref` inside the schema it points to, and so on; local
/// references (`#…` JSON Pointers) only — others are the compiler's to
/// resolve. A reference back into a chain in progress (a recursive schema)
/// does not lengthen it. Stops early once past `limit`.
pub(crate) fn ref_depth(schema: &Value, limit: usize) -> usize {
    // Each distinct target's depth, computed once: 1 + the deepest target
    // of the `$ref`s inside it. `None` while in progress.
    let mut depth: HashMap<String, Option<usize>> = HashMap::new();
    let mut deepest = 0;
    for start in local_refs(schema) {
        if depth.contains_key(&start) {
            continue;
        }
        // An explicit stack instead of recursion: (target, refs inside it,
        // next to visit, deepest found so far).
        let mut stack: Vec<(String, Vec<String>, usize, usize)> = Vec::new();
        push(&mut stack, &mut depth, schema, start);
        while let Some(top) = stack.last_mut() {
            if top.2 < top.1.len() {
                let next = top.1[top.2].clone();
                top.2 += 1;
                match depth.get(&next) {
                    Some(Some(d)) => top.3 = top.3.max(*d),
                    Some(None) => {} // recursion: no longer
                    None if stack.len() > limit => return limit + 1,
                    None => push(&mut stack, &mut depth, schema, next),
                }
                continue;
            }
            let Some((target, _, _, inner)) = stack.pop() else {
                break;
            };
            let d = inner + 1;
            depth.insert(target, Some(d));
            deepest = deepest.max(d);
            if let Some(parent) = stack.last_mut() {
                parent.3 = parent.3.max(d);
            }
            if deepest > limit {
                return deepest;
            }
        }
    }
    deepest
}

fn push(
    stack: &mut Vec<(String, Vec<String>, usize, usize)>,
    depth: &mut HashMap<String, Option<usize>>,
    schema: &Value,
    target: String,
) {
    depth.insert(target.clone(), None);
    let inner = resolve(schema, &target).map(local_refs).unwrap_or_default();
    stack.push((target, inner, 0, 0));
}

/// The subschema a local reference points to.
fn resolve<'s>(schema: &'s Value, reference: &str) -> Option<&'s Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(schema);
    }
    schema.pointer(pointer)
}

/// Every local `$ref` string inside `value`, found without recursion.
fn local_refs(value: &Value) -> Vec<String> {
    let mut found = Vec::new();
    let mut todo = vec![value];
    while let Some(value) = todo.pop() {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(reference)) = map.get("$ref")
                    && reference.starts_with('#')
                {
                    found.push(reference.clone());
                }
                todo.extend(map.values());
            }
            Value::Array(items) => todo.extend(items),
            _ => {}
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_core::json;

    fn chain(n: usize, nested: bool) -> Value {
        let mut defs = agent_core::json::Map::new();
        for i in 0..n {
            let next = json!({"$ref": format!("#/$defs/d{}", i + 1)});
            let def = if nested {
                json!({"properties": {"a": next}})
            } else {
                next
            };
            defs.insert(format!("d{i}"), def);
        }
        defs.insert(format!("d{n}"), json!({"type": "string"}));
        json!({"$ref": "#/$defs/d0", "$defs": defs})
    }

    #[test]
    fn r33_ref_depth_counts_direct_and_nested_chains_without_recursion() {
        assert_eq!(ref_depth(&json!({"type": "string"}), 10), 0);
        assert_eq!(ref_depth(&chain(3, false), 10), 4);
        assert_eq!(ref_depth(&chain(3, true), 10), 4);
        // Far past the limit: stops early, no stack overflow.
        assert!(ref_depth(&chain(50_000, false), MAX_REF_DEPTH) > MAX_REF_DEPTH);
        assert!(ref_depth(&chain(50_000, true), MAX_REF_DEPTH) > MAX_REF_DEPTH);
    }

    #[test]
    fn r33_a_recursive_schema_has_a_finite_depth() {
        let tree = json!({"$defs": {"node": {"properties": {
            "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}},
            "$ref": "#/$defs/node"});
        assert_eq!(ref_depth(&tree, 10), 1);
        assert_eq!(
            ref_depth(&json!({"properties": {"self": {"$ref": "#"}}}), 10),
            1
        );
    }
}
