//! The naive reference model of the fold: copy-based, recursive, no
//! indexes — every rule written the plainest way, to check the real fold
//! against.

use agent_core::json::{Map, Value};
use agent_core::{Instance, Kind, Method, Segment};

use crate::{Context, DataMessage, Message};

/// A write the fold skips (a type error, R12).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Skipped;

/// One write at the destination itself (R10): what `m` makes of the
/// current value `cur` and the written `v`.
///
/// # Errors
///
/// [`Skipped`] where the fold skips the write (a type error, R12).
pub fn naive_combine(cur: Option<Value>, m: Method, v: Value) -> Result<Value, Skipped> {
    let cur = cur
        .filter(|c| !c.is_null() || m == Method::Set || m == Method::Merge || m == Method::Assign);
    Ok(match (m, cur, v) {
        (Method::Set, _, v) => v,
        (Method::Merge, Some(c), v) => naive_merge(c, v),
        (Method::Assign, Some(Value::Object(mut c)), Value::Object(p)) => {
            for (k, x) in p {
                c.insert(k, x);
            }
            Value::Object(c)
        }
        (Method::Merge | Method::Assign, _, v) => v,
        (Method::Push, None, v) => Value::Array(vec![v].into()),
        (Method::Push, Some(Value::Array(mut a)), v) => {
            a.push(v);
            Value::Array(a)
        }
        (Method::Concat, None, v @ (Value::Array(_) | Value::String(_))) => v,
        (Method::Concat, Some(Value::Array(a)), Value::Array(b)) => {
            Value::Array(a.into_iter().chain(b).collect())
        }
        (Method::Concat, Some(Value::String(a)), Value::String(b)) => Value::String(a + &b),
        _ => return Err(Skipped),
    })
}

/// A deep merge of `patch` into `cur` (R10's `merge`): objects merge key
/// by key, anything else replaces.
pub fn naive_merge(cur: Value, patch: Value) -> Value {
    match (cur, patch) {
        (Value::Object(mut c), Value::Object(p)) => {
            for (k, x) in p {
                let merged = match c.get(&k) {
                    Some(old) if old.is_object() && x.is_object() => naive_merge(old.clone(), x),
                    _ => x,
                };
                c.insert(k, merged);
            }
            Value::Object(c)
        }
        (_, p) => p,
    }
}

/// Writes `v` at `segs` with `m` (R10, R10b, R11); `Ok(None)` is an absent
/// view (what an erase of the root leaves).
///
/// # Errors
///
/// [`Skipped`] where the fold skips the write (a type error, R12).
pub fn naive_write(
    cur: Option<Value>,
    segs: &[Segment],
    m: Method,
    v: Value,
) -> Result<Option<Value>, Skipped> {
    if m == Method::Erase {
        return Ok(naive_erase(cur, segs));
    }
    naive_write_value(cur, segs, m, v).map(Some)
}

/// Erase (R10b), addressed as a read is (R8): where the read finds a
/// value, an object's key goes, an array's element becomes null, the root
/// becomes absent; elsewhere nothing changes.
pub fn naive_erase(cur: Option<Value>, segs: &[Segment]) -> Option<Value> {
    let (seg, rest) = segs.split_first()?;
    match cur {
        Some(Value::Object(mut map)) => {
            let key = match seg {
                Segment::Key(k) => k.clone(),
                Segment::Index(i) => i.to_string(),
            };
            if let Some(child) = map.get(&key).cloned() {
                if rest.is_empty() {
                    map.shift_remove(&key);
                } else {
                    // Below the root an erase always leaves a value.
                    map.insert(key, naive_erase(Some(child), rest).unwrap_or(Value::Null));
                }
            }
            Some(Value::Object(map))
        }
        Some(Value::Array(mut items)) => {
            let len = items.len() as i64;
            let index = match seg {
                Segment::Index(i) if *i < 0 => Some(len + i),
                Segment::Index(i) => Some(*i),
                Segment::Key(k)
                    if k == "0"
                        || (!k.starts_with('0') && k.chars().all(|c| c.is_ascii_digit())) =>
                {
                    k.parse().ok()
                }
                Segment::Key(_) => None,
            }
            .filter(|i| (0..len).contains(i));
            if let Some(i) = index {
                let i = i as usize;
                items[i] = if rest.is_empty() {
                    Value::Null
                } else {
                    naive_erase(Some(items[i].clone()), rest).unwrap_or(Value::Null)
                };
            }
            Some(Value::Array(items))
        }
        other => other,
    }
}

fn naive_write_value(
    cur: Option<Value>,
    segs: &[Segment],
    m: Method,
    v: Value,
) -> Result<Value, Skipped> {
    let Some((seg, rest)) = segs.split_first() else {
        return naive_combine(cur, m, v);
    };
    let key = match seg {
        Segment::Key(k) => k.clone(),
        Segment::Index(i) => i.to_string(),
    };
    match cur {
        None | Some(Value::Null) => {
            let mut map = Map::new();
            map.insert(key, naive_write_value(None, rest, m, v)?);
            Ok(Value::Object(map))
        }
        Some(Value::Object(mut map)) => {
            let child = naive_write_value(map.get(&key).cloned(), rest, m, v)?;
            map.insert(key, child);
            Ok(Value::Object(map))
        }
        Some(Value::Array(mut items)) => {
            let index = match seg {
                Segment::Index(i) if *i >= 0 => *i as usize,
                Segment::Key(k)
                    if k == "0"
                        || (!k.starts_with('0') && k.chars().all(|c| c.is_ascii_digit())) =>
                {
                    k.parse().map_err(|_| Skipped)?
                }
                _ => return Err(Skipped),
            };
            if index > items.len() {
                return Err(Skipped);
            }
            let child = naive_write_value(items.get(index).cloned(), rest, m, v)?;
            if index == items.len() {
                items.push(child);
            } else {
                items[index] = child;
            }
            Ok(Value::Array(items))
        }
        Some(_) => Err(Skipped),
    }
}

/// Folds `messages` (context order) onto `start`; returns the view and the
/// indexes of skipped writes.
pub fn naive_fold(
    start: Option<Value>,
    messages: &[(usize, DataMessage)],
) -> (Option<Value>, Vec<usize>) {
    let mut view = start;
    let mut skipped = Vec::new();
    for (i, m) in messages {
        match naive_write(
            view.clone(),
            m.destination().segments(),
            m.method(),
            m.value().clone(),
        ) {
            Ok(v) => view = v,
            Err(Skipped) => skipped.push(*i),
        }
    }
    (view, skipped)
}

/// The view of `kind` (and `instance`, layered over the global view, R5)
/// by the model, from every data message of `ctx`, with the indexes of
/// the writes skipped.
pub fn naive_view(
    ctx: &Context,
    kind: &Kind,
    instance: Option<&Instance>,
) -> (Option<Value>, Vec<usize>) {
    let of = |x: Option<&Instance>| -> Vec<(usize, DataMessage)> {
        ctx.messages()
            .enumerate()
            .filter_map(|(i, m)| match m {
                Message::Data(d) => Some((i, d)),
                _ => None,
            })
            .filter(|(_, d)| d.kind() == kind && d.instance() == x)
            .collect()
    };
    let (global, mut skipped) = naive_fold(None, &of(None));
    match instance {
        None => (global, skipped),
        Some(x) => {
            let (view, own) = naive_fold(global, &of(Some(x)));
            skipped.extend(own);
            (view, skipped)
        }
    }
}
