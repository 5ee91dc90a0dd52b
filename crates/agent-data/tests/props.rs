//! Property tests of the fold (R9–R14) against a naive reference model, and
//! of appends (R13) and identity isolation (R4, R5).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use agent_core::{Instance, Kind, Method, Path, Segment};
use agent_data::{Context, DataMessage, Message};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

// ---------- the naive reference model: copy-based, recursive, no indexes ----------

fn naive_combine(cur: Option<Value>, m: Method, v: Value) -> Result<Value, ()> {
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

fn naive_merge(cur: Value, patch: Value) -> Value {
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

fn naive_write(cur: Option<Value>, segs: &[Segment], m: Method, v: Value) -> Result<Value, ()> {
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
            map.insert(key, naive_write(None, rest, m, v)?);
            Ok(Value::Object(map))
        }
        Some(Value::Object(mut map)) => {
            let child = naive_write(map.get(&key).cloned(), rest, m, v)?;
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
            let child = naive_write(items.get(index).cloned(), rest, m, v)?;
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
fn naive_fold(
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
            Ok(v) => view = Some(v),
            Err(()) => skipped.push(*i),
        }
    }
    (view, skipped)
}

fn naive_view(
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

const KINDS: [&str; 2] = ["state", "input"];
const INSTANCES: [Option<&str>; 3] = [None, Some("x"), Some("y")];

fn value() -> impl Strategy<Value = Value> {
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

fn path() -> impl Strategy<Value = Path> {
    let seg = prop_oneof![
        3 => "[ab]".prop_map(Segment::Key),
        1 => Just(Segment::Key("0".into())),
        1 => (-1i64..2).prop_map(Segment::Index),
    ];
    prop::collection::vec(seg, 0..3).prop_map(Path::from_segments)
}

fn method() -> impl Strategy<Value = Method> {
    prop::sample::select(Method::ALL.to_vec())
}

/// A data message as the wire would carry it: plain (merge at the root) or
/// an output message with `_outputPath` and `_outputMethod`.
fn message(kinds: &'static [&'static str]) -> impl Strategy<Value = DataMessage> {
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
            if plain {
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

fn log(max: usize) -> impl Strategy<Value = Vec<DataMessage>> {
    prop::collection::vec(message(&KINDS), 0..max)
}

fn every_read() -> Vec<(Kind, Option<Instance>)> {
    KINDS
        .iter()
        .flat_map(|k| {
            INSTANCES
                .iter()
                .map(move |x| (Kind::new(*k).unwrap(), x.map(|x| Instance::new(x).unwrap())))
        })
        .collect()
}

fn views(ctx: &Context) -> Vec<Option<Value>> {
    every_read()
        .iter()
        .map(|(k, x)| ctx.view(k, x.as_ref()).cloned())
        .collect()
}

/// Every layer's own view (R28), in order.
fn layer_views(ctx: &Context) -> Vec<Option<Value>> {
    ctx.identities()
        .map(|id| ctx.layer_view(id).cloned())
        .collect()
}

fn to_context(messages: Vec<DataMessage>) -> Context {
    Context::from_messages(messages.into_iter().map(Message::from).collect()).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn r12_r14_fold_equals_naive_model(messages in log(24), probes in prop::collection::vec(path(), 8)) {
        let ctx = to_context(messages);
        let mut naive_skipped = Vec::new();
        for (kind, instance) in every_read() {
            let (expected, skipped) = naive_view(&ctx, &kind, instance.as_ref());
            prop_assert_eq!(ctx.view(&kind, instance.as_ref()).cloned(), expected.clone());
            for probe in &probes {
                let reference = agent_core::Reference::new(kind.clone(), probe.clone());
                let got = ctx.read(&reference, instance.as_ref()).cloned();
                prop_assert_eq!(got.as_ref(), expected.as_ref().and_then(|v| probe.get(v)));
            }
            naive_skipped.extend(skipped);
        }
        // Every index the model skipped (in any read) is a diagnostic, and vice versa.
        naive_skipped.sort_unstable();
        naive_skipped.dedup();
        let mut got: Vec<usize> = ctx.diagnostics().iter().map(|d| d.index).collect();
        got.sort_unstable();
        got.dedup();
        prop_assert_eq!(got, naive_skipped);
    }

    #[test]
    fn r10_set_makes_older_writes_at_or_under_its_path_irrelevant(
        before in prop::collection::vec(message(&["state"]), 0..12),
        p in path(),
        v in value(),
        after in prop::collection::vec(message(&["state"]), 0..6),
    ) {
        let set = DataMessage::from_value(json!({
            "type": "data", "kind": "state", "data": p.nest(v),
            "_outputPath": format!("†state{p}"), "_outputMethod": "set"
        })).unwrap();
        let full: Vec<DataMessage> = before.iter().cloned().chain([set.clone()]).chain(after.iter().cloned()).collect();
        let pruned: Vec<DataMessage> = before.iter().filter(|m| !(p.is_prefix_of(m.destination()) && m.instance().is_none())).cloned()
            .chain([set]).chain(after).collect();
        let (full, pruned) = (to_context(full), to_context(pruned));
        // Skipped writes change which intermediates exist, so the law is
        // about logs that fold cleanly.
        if full.diagnostics().is_empty() && pruned.diagnostics().is_empty() {
            prop_assert_eq!(views(&full), views(&pruned));
        }
    }

    #[test]
    fn r9_plain_patches_with_disjoint_keys_commute(a in value(), b in value()) {
        let patch = |v: Value, prefix: &str| {
            let obj = match v { Value::Object(m) => m, other => [("v".to_owned(), other)].into_iter().collect() };
            let renamed: Map<String, Value> = obj.into_iter().map(|(k, v)| (format!("{prefix}{k}"), v)).collect();
            DataMessage::new(Kind::new("state").unwrap(), Value::Object(renamed))
        };
        let ab = to_context(vec![patch(a.clone(), "x"), patch(b.clone(), "y")]);
        let ba = to_context(vec![patch(b, "y"), patch(a, "x")]);
        prop_assert_eq!(views(&ab), views(&ba));
    }

    #[test]
    fn r13_validated_appends_fold_without_diagnostics(messages in log(32)) {
        let mut ctx = Context::new();
        for m in messages {
            let _ = ctx.append(&m.into());
        }
        prop_assert!(ctx.diagnostics().is_empty(), "{:?}", ctx.diagnostics());
        // The incrementally maintained views equal a fresh fold of the log.
        let reloaded = Context::load(ctx.to_jsonl().as_bytes(), agent_data::Format::Jsonl).unwrap().context;
        prop_assert_eq!(views(&ctx), views(&reloaded));
        prop_assert!(reloaded.diagnostics().is_empty());
    }

    #[test]
    fn r4_r5_appending_to_one_identity_never_changes_another(messages in log(16), extra in message(&KINDS)) {
        let mut ctx = to_context(messages);
        let before_views = views(&ctx);
        let before_json = ctx.to_json();
        let (kind, instance) = (extra.kind().clone(), extra.instance().cloned());
        match ctx.append(&extra.into()) {
            Err(_) => prop_assert_eq!(ctx.to_json(), before_json, "a refused append changes nothing"),
            Ok(_) => {
                for ((k, x), (old, new)) in every_read().iter().zip(before_views.iter().zip(views(&ctx))) {
                    // A read of (k, x) may change only if it sees the written layer:
                    // the same kind, and the same instance or a global write.
                    let sees = *k == kind && (instance.is_none() || x.as_ref() == instance.as_ref());
                    if !sees {
                        prop_assert_eq!(old, &new, "read {:?}@{:?} changed", k, x);
                    }
                }
            }
        }
    }

    #[test]
    fn r3_stored_messages_read_back_as_given(messages in log(24)) {
        // The context keeps messages as text; reading one parses it again.
        let given: Vec<Value> = messages.iter().map(|m| Message::from(m.clone()).to_value()).collect();
        let ctx = to_context(messages);
        let read: Vec<Value> = ctx.messages().map(|m| m.to_value()).collect();
        prop_assert_eq!(&read, &given);
        for (i, value) in given.iter().enumerate() {
            let text = ctx.message_json(i).unwrap();
            prop_assert_eq!(&serde_json::from_str::<Value>(text).unwrap(), value);
        }
        let lines: Vec<Value> = ctx.to_jsonl().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        prop_assert_eq!(&lines, &given);
    }

    #[test]
    fn r12_compacting_changes_no_view(messages in log(24), later in log(8)) {
        let mut ctx = to_context(messages);
        let mut kept = ctx.clone();
        let state = |ctx: &Context| (views(ctx), layer_views(ctx), ctx.to_jsonl(), ctx.diagnostics());
        let before = state(&ctx);
        ctx.compact();
        prop_assert_eq!(&before, &state(&ctx));
        // Compaction drops the views of short layers (D40); a write to one
        // folds it again first, and lands as in a context that kept it.
        ctx.compact();
        for message in later.into_iter().map(Message::from) {
            prop_assert_eq!(ctx.append(&message).is_ok(), kept.append(&message).is_ok());
        }
        prop_assert_eq!(state(&kept), state(&ctx));
    }

    #[test]
    fn r13_append_all_matches_appending_one_by_one(messages in log(16), batch in log(6)) {
        // A batch lands exactly as its messages appended one at a time, or
        // (when one of them is refused) not at all.
        let batch: Vec<Message> = batch.into_iter().map(Message::from).collect();
        let mut all = to_context(messages);
        let mut single = all.clone();
        let before = all.to_jsonl();
        let singles: Result<Vec<usize>, _> = batch.iter().map(|m| single.append(m)).collect();
        match all.append_all(&batch) {
            Ok(_) => {
                prop_assert!(singles.is_ok());
                prop_assert_eq!(all.to_jsonl(), single.to_jsonl());
                prop_assert_eq!(views(&all), views(&single));
            }
            Err(_) => {
                prop_assert!(singles.is_err());
                prop_assert_eq!(all.to_jsonl(), before);
            }
        }
    }
}
