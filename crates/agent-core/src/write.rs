//! The six write methods (R10, R10b) and writing at a path (R11).
//!
//! A view is an `Option<Value>`: `None` is *absent*, which is not `null`.
//! Every write is checked completely before anything is changed, so a
//! refused write leaves the view untouched.

use crate::error::DisplayPath;
use crate::json::{Map, Value};
use crate::path::canonical_index;
use crate::{Error, Path, Result, Segment, UnknownMethod};
use std::fmt;

/// How a written value combines with what is already at its path (R10).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Method {
    /// Replace (last write wins).
    Set,
    /// Deep-merge objects; anything else replaces.
    Merge,
    /// Shallow-merge objects: top-level keys replace.
    Assign,
    /// Append one element to an array (creating it when absent or null).
    Push,
    /// Join arrays, or join strings.
    Concat,
    /// Make the path absent (R10b): the written value is not used.
    Erase,
}

impl Method {
    /// All six methods, in the order of R10 and R10b.
    pub const ALL: [Method; 6] = [
        Method::Set,
        Method::Merge,
        Method::Assign,
        Method::Push,
        Method::Concat,
        Method::Erase,
    ];

    /// The method's name as written in `_outputMethod`.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Set => "set",
            Method::Merge => "merge",
            Method::Assign => "assign",
            Method::Push => "push",
            Method::Concat => "concat",
            Method::Erase => "erase",
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Method {
    type Err = UnknownMethod;
    fn from_str(name: &str) -> std::result::Result<Self, UnknownMethod> {
        Method::ALL
            .into_iter()
            .find(|m| m.as_str() == name)
            .ok_or_else(|| UnknownMethod { name: name.into() })
    }
}

fn type_error(path: &Path, depth: usize, reason: impl Into<String>) -> Error {
    Error::Type {
        at: DisplayPath(Path::from_segments(path.segments()[..depth].to_vec())),
        reason: reason.into(),
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Where a segment lands in an array of `len` elements when writing (R11):
/// `Ok(i)` with `i <= len` (`i == len` appends).
fn write_index(path: &Path, depth: usize, segment: &Segment, len: usize) -> Result<usize> {
    let index = match segment {
        Segment::Key(k) => canonical_index(k).ok_or_else(|| {
            type_error(
                path,
                depth,
                format!("key {} cannot select an array element", crate::quoted(k)),
            )
        })?,
        Segment::Index(i) => usize::try_from(*i)
            .map_err(|_| type_error(path, depth, "a negative index cannot be written through"))?,
    };
    if index > len {
        return Err(type_error(
            path,
            depth,
            format!("index {index} is past the end of an array of {len}"),
        ));
    }
    Ok(index)
}

/// Checks that writing `value` at `path` with `method` into `view` would
/// succeed, without changing anything (R10, R10b, R11). An erase always
/// succeeds.
///
/// # Errors
///
/// [`Error::Type`](crate::Error::Type) when the write would fail: a step
/// into a scalar, an index into a non-array, or a method whose operands do
/// not fit (R10, R11).
pub fn check_write(view: Option<&Value>, path: &Path, method: Method, value: &Value) -> Result<()> {
    if method == Method::Erase {
        return Ok(());
    }
    let mut current = view;
    for (depth, segment) in path.segments().iter().enumerate() {
        current = match current {
            None | Some(Value::Null) => None,
            Some(Value::Object(map)) => map.get(segment.as_key().as_ref()),
            Some(Value::Array(items)) => items.get(write_index(path, depth, segment, items.len())?),
            Some(scalar) => {
                return Err(type_error(
                    path,
                    depth,
                    format!("cannot write inside a {}", type_name(scalar)),
                ));
            }
        };
        if current.is_none() {
            break; // everything below is created fresh
        }
    }
    check_method(current, method, value).map_err(|reason| type_error(path, path.len(), reason))
}

fn check_method(current: Option<&Value>, method: Method, value: &Value) -> Result<(), String> {
    let current = current.filter(|v| !v.is_null());
    match (method, current, value) {
        (Method::Push, None | Some(Value::Array(_)), _) => Ok(()),
        (Method::Push, Some(other), _) => Err(format!("cannot push onto a {}", type_name(other))),
        (Method::Concat, None, Value::Array(_) | Value::String(_))
        | (Method::Concat, Some(Value::Array(_)), Value::Array(_))
        | (Method::Concat, Some(Value::String(_)), Value::String(_)) => Ok(()),
        (Method::Concat, None, v) => Err(format!("cannot concat a {} onto nothing", type_name(v))),
        (Method::Concat, Some(c), v) => Err(format!(
            "cannot concat a {} onto a {}",
            type_name(v),
            type_name(c)
        )),
        _ => Ok(()),
    }
}

/// Writes `value` at `path` into `view` with `method` (R10, R10b, R11).
///
/// On error nothing is changed. An erase ignores `value` and never fails.
///
/// # Errors
///
/// [`Error::Type`](crate::Error::Type), as for [`check_write`]; the view is
/// then unchanged.
///
/// ```
/// use agent_core::{write, Method, Path};
/// use agent_core::json;
///
/// let mut view = None; // absent
/// let tags: Path = ".user.tags".parse()?;
/// write(&mut view, &tags, Method::Push, json!("a"))?;
/// write(&mut view, &tags, Method::Concat, json!(["b", "c"]))?;
/// assert_eq!(view, Some(json!({"user": {"tags": ["a", "b", "c"]}})));
/// assert!(write(&mut view, &tags, Method::Concat, json!("d")).is_err());
///
/// // Erase: a key is removed, an element becomes null, the root absent.
/// write(&mut view, &".user.tags[1]".parse()?, Method::Erase, json!(null))?;
/// assert_eq!(view, Some(json!({"user": {"tags": ["a", null, "c"]}})));
/// write(&mut view, &".user.tags".parse()?, Method::Erase, json!(null))?;
/// assert_eq!(view, Some(json!({"user": {}})));
/// write(&mut view, &Path::root(), Method::Erase, json!(null))?;
/// assert_eq!(view, None);
/// # Ok::<(), agent_core::Error>(())
/// ```
pub fn write(view: &mut Option<Value>, path: &Path, method: Method, value: Value) -> Result<()> {
    if method != Method::Erase {
        check_write(view.as_ref(), path, method, &value)?;
    }
    write_checked(view, path, method, value)
}

/// [`write()`] for a write that [`check_write`] has accepted against this
/// same `view`: the check is not made again, so the path is walked once. A
/// caller that validates before writing (an append) pays for one check,
/// not two.
///
/// # Errors
///
/// [`Error::Type`](crate::Error::Type) for a step into a scalar or an
/// index past an array's end — but, unchecked, after creating the missing
/// parents before it; and a `concat` whose operands do not fit replaces
/// instead of failing. Neither happens to a write `check_write` accepted.
pub fn write_checked(
    view: &mut Option<Value>,
    path: &Path,
    method: Method,
    value: Value,
) -> Result<()> {
    if method == Method::Erase {
        erase(view, path);
        return Ok(());
    }
    let Some((last, parents)) = path.segments().split_last() else {
        let combined = combine(view.take(), method, value);
        *view = Some(combined);
        return Ok(());
    };
    let mut container = match view {
        Some(v) if !v.is_null() => v,
        _ => view.insert(Value::Object(Map::new())),
    };
    for (depth, segment) in parents.iter().enumerate() {
        container = child_or_create(container, path, depth, segment)?;
    }
    match container {
        Value::Object(map) => {
            let key = last.as_key();
            match map.get_mut(key.as_ref()) {
                Some(slot) => *slot = combine(Some(slot.take()), method, value),
                None => {
                    map.insert(key.into_owned(), combine(None, method, value));
                }
            }
        }
        Value::Array(items) => {
            let index = write_index(path, parents.len(), last, items.len())?;
            match items.get_mut(index) {
                Some(slot) => *slot = combine(Some(slot.take()), method, value),
                None => items.push(combine(None, method, value)),
            }
        }
        other => return Err(type_error(path, parents.len(), type_name(other))),
    }
    Ok(())
}

/// Erase (R10b): makes `path` read as absent. It is addressed as a read
/// is (R8): where the read finds nothing, nothing changes; where it finds
/// a value, an object's key is removed (the other keys keep their order),
/// an array's element becomes `null` (the elements after it keep their
/// indexes, so what other writes put there stays where readers look for
/// it), and the whole view becomes absent.
fn erase(view: &mut Option<Value>, path: &Path) {
    let Some((last, parents)) = path.segments().split_last() else {
        *view = None;
        return;
    };
    let Some(mut container) = view.as_mut() else {
        return;
    };
    for segment in parents {
        let child = match container {
            Value::Object(map) => map.get_mut(segment.as_key().as_ref()),
            Value::Array(items) => match segment.array_index(items.len()) {
                Some(index) => items.get_mut(index),
                None => None,
            },
            _ => None,
        };
        match child {
            Some(child) => container = child,
            None => return,
        }
    }
    match container {
        Value::Object(map) => {
            map.shift_remove(last.as_key().as_ref());
        }
        Value::Array(items) => {
            if let Some(slot) = last
                .array_index(items.len())
                .and_then(|index| items.get_mut(index))
            {
                *slot = Value::Null;
            }
        }
        _ => {}
    }
}

/// Steps into `container` for writing, creating a missing (or null) child as
/// an object. Only reached after [`check_write`] passed.
fn child_or_create<'v>(
    container: &'v mut Value,
    path: &Path,
    depth: usize,
    segment: &Segment,
) -> Result<&'v mut Value> {
    let child = match container {
        Value::Object(map) => map.get_or_insert_with(segment.as_key().into_owned(), || Value::Null),
        Value::Array(items) => {
            let index = write_index(path, depth, segment, items.len())?;
            if index == items.len() {
                items.push(Value::Null);
            }
            &mut items[index]
        }
        other => {
            let reason = format!("cannot write inside a {}", type_name(other));
            return Err(type_error(path, depth, reason));
        }
    };
    if child.is_null() {
        *child = Value::Object(Map::new());
    }
    Ok(child)
}

/// Combines the current value at a path with a written one. The pairing was
/// already accepted by `check_method`; unreachable combinations fall back to
/// replacing, which is never observed.
fn combine(current: Option<Value>, method: Method, value: Value) -> Value {
    match (method, current) {
        (Method::Set, _) | (_, None) if method != Method::Push => value,
        (Method::Merge, Some(mut current)) => {
            merge_deep(&mut current, value);
            current
        }
        (Method::Assign, Some(Value::Object(mut map))) => match value {
            Value::Object(patch) => {
                map.extend(patch);
                Value::Object(map)
            }
            other => other,
        },
        (Method::Push, Some(Value::Array(mut items))) => {
            items.push(value);
            Value::Array(items)
        }
        (Method::Push, _) => Value::Array(vec![value].into()),
        (Method::Concat, Some(Value::Array(mut items))) => {
            if let Value::Array(more) = value {
                items.extend(more);
            }
            Value::Array(items)
        }
        (Method::Concat, Some(Value::String(mut text))) => {
            if let Value::String(more) = value {
                text.push_str(&more);
            }
            Value::String(text)
        }
        (Method::Concat, Some(Value::Null)) => value,
        _ => value,
    }
}

/// Deep merge (R10): recurse where both sides are objects, else take `patch`.
/// Existing keys keep their position; new keys are appended in patch order.
pub fn merge_deep(target: &mut Value, patch: Value) {
    match (target, patch) {
        (Value::Object(map), Value::Object(patch)) => {
            for (key, value) in patch {
                match map.get_mut(&key) {
                    Some(slot) if slot.is_object() && value.is_object() => merge_deep(slot, value),
                    Some(slot) => *slot = value,
                    None => {
                        map.insert(key, value);
                    }
                }
            }
        }
        (target, patch) => *target = patch,
    }
}
