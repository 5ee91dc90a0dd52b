//! The naive reference model of the fold and the generators of data
//! messages, shared by the property tests (`props.rs`, `batch.rs`).

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use agent_core::{Instance, Kind, Method, Path, Segment};
use agent_core::{
    json,
    json::{Map, Value},
};
use agent_data::{Context, DataMessage, Message};
use proptest::prelude::*;

// ---------- the naive reference model: copy-based, recursive, no indexes ----------

pub fn naive_combine(cur: Option<Value>, m: Method, v: Value) -> Result<Value, ()> {
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
        (Method::Push, None, v) => json!([v]),
        (Method::Push, Some(Value::Array(mut a)), v) => {
            a.push(v);
            Value::Array(a)
        }
        (Method::Concat, None, v @ (Value::Array(_) | Value::String(_))) => v,
        (Method::Concat, Some(Value::Array(a)), Value::Array(b)) => {
            Value::Array(a.into_iter().chain(b).collect())
        }
        (Method::Concat, Some(Value::String(a)), Value::String(b)) => Value::String(a + &b),
        _ => return Err(()),
    })
}

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
/// view (what an erase of the root leaves), `Err` a type error.
pub fn naive_write(
    cur: Option<Value>,
    segs: &[Segment],
    m: Method,
    v: Value,
) -> Result<Option<Value>, ()> {
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
                    map.insert(key, naive_erase(Some(child), rest).unwrap());
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
                    naive_erase(Some(items[i].clone()), rest).unwrap()
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
) -> Result<Value, ()> {
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
                    k.parse().map_err(|_| ())?
                }
                _ => return Err(()),
            };
            if index > items.len() {
                return Err(());
            }
            let child = naive_write_value(items.get(index).cloned(), rest, m, v)?;
            if index == items.len() {
                items.push(child);
            } else {
                items[index] = child;
            }
            Ok(Value::Array(items))
        }
        Some(_) => Err(()),
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
            Err(()) => skipped.push(*i),
        }
    }
    (view, skipped)
}

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

// ---------- generators ----------

pub const KINDS: [&str; 2] = ["state", "input"];
pub const INSTANCES: [Option<&str>; 3] = [None, Some("x"), Some("y")];

pub fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        (0i64..4).prop_map(Value::from),
        "[pq]{0,2}".prop_map(Value::from),
    ];
    leaf.prop_recursive(2, 8, 2, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::vec(("[ab]", inner), 0..3)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

pub fn path() -> impl Strategy<Value = Path> {
    let seg = prop_oneof![
        3 => "[ab]".prop_map(Segment::Key),
        1 => Just(Segment::Key("0".into())),
        1 => (-1i64..2).prop_map(Segment::Index),
    ];
    prop::collection::vec(seg, 0..3).prop_map(Path::from_segments)
}

pub fn method() -> impl Strategy<Value = Method> {
    prop::sample::select(Method::ALL.to_vec())
}

/// A data message as the wire would carry it: plain (merge at the root, or
/// an erase of the whole view) or an output message with `_outputPath` and
/// `_outputMethod`.
pub fn message(kinds: &'static [&'static str]) -> impl Strategy<Value = DataMessage> {
    (
        prop::sample::select(kinds.to_vec()),
        prop::sample::select(INSTANCES.to_vec()),
        path(),
        method(),
        value(),
        any::<bool>(),
    )
        .prop_map(|(kind, instance, path, method, value, plain)| {
            let mut m = Map::new();
            m.insert("type".into(), "data".into());
            m.insert("kind".into(), kind.into());
            // An erase holds null where its value would be (R10b).
            let value = if method == Method::Erase {
                Value::Null
            } else {
                value
            };
            if plain && method == Method::Erase {
                // A plain erase: the whole view.
                m.insert("data".into(), value);
                m.insert("_outputMethod".into(), method.as_str().into());
            } else if plain {
                m.insert("data".into(), value);
            } else {
                m.insert("data".into(), path.nest(value));
                m.insert("_outputPath".into(), format!("†{kind}{path}").into());
                m.insert("_outputMethod".into(), method.as_str().into());
            }
            if let Some(x) = instance {
                m.insert("_instance".into(), x.into());
            }
            DataMessage::from_value(Value::Object(m)).unwrap()
        })
}

pub fn log(max: usize) -> impl Strategy<Value = Vec<DataMessage>> {
    prop::collection::vec(message(&KINDS), 0..max)
}

pub fn every_read() -> Vec<(Kind, Option<Instance>)> {
    KINDS
        .iter()
        .flat_map(|k| {
            INSTANCES
                .iter()
                .map(move |x| (Kind::new(*k).unwrap(), x.map(|x| Instance::new(x).unwrap())))
        })
        .collect()
}

pub fn views(ctx: &Context) -> Vec<Option<Value>> {
    every_read()
        .iter()
        .map(|(k, x)| ctx.view(k, x.as_ref()).cloned())
        .collect()
}

pub fn to_context(messages: Vec<DataMessage>) -> Context {
    Context::from_messages(messages.into_iter().map(Message::from).collect()).unwrap()
}
