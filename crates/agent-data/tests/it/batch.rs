//! A batch is judged layer by layer (R13, R25, decisions D4 and D39): each
//! write for a type error against the views the earlier messages leave; a
//! layer's schema, and for a global layer its instance layers, on the view
//! the batch's last write to it leaves. Checked against the naive model of
//! the fold (`support`), for appends and for staging.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use crate::support::*;
use agent_core::{Instance, Kind};
use agent_core::{
    json,
    json::{Map, Value},
};
use agent_data::{CheckMode, DataMessage, Error, Message, Schema};
use proptest::prelude::*;
use std::ops::Range;

/// Schemas the values `crate::support::value` writes break and repair often.
fn schemas() -> [Value; 4] {
    [
        json!({"type": "object"}),
        json!({"properties": {"a": {"type": "array", "maxItems": 1}}}),
        json!({"properties": {"b": {"type": "integer"}}}),
        json!({"maxProperties": 1}),
    ]
}

/// A plain data message that declares one of [`schemas`] for its layer.
fn schema_message() -> impl Strategy<Value = DataMessage> {
    (
        prop::sample::select(KINDS.to_vec()),
        prop::sample::select(INSTANCES.to_vec()),
        0..schemas().len(),
        value(),
    )
        .prop_map(|(kind, instance, schema, data)| {
            let mut m = Map::new();
            m.insert("type".into(), "data".into());
            m.insert("kind".into(), kind.into());
            m.insert("data".into(), data);
            m.insert("schema".into(), schemas()[schema].clone());
            if let Some(x) = instance {
                m.insert("_instance".into(), x.into());
            }
            DataMessage::from_value(Value::Object(m)).unwrap()
        })
}

fn messages(max: usize) -> impl Strategy<Value = Vec<DataMessage>> {
    let one = prop_oneof![4 => message(&KINDS), 1 => schema_message()];
    prop::collection::vec(one, 0..max)
}

/// What a batch comes to: accepted, or refused at a message (its offset in
/// the batch) for a reason.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Verdict {
    Accepted,
    TypeError(usize),
    Schema(usize),
    /// A global write makes an instance layer's write fail (D4: instances unbroken).
    BreaksInstance(usize),
}

type Indexed = [(usize, DataMessage)];

fn of(all: &Indexed, kind: &Kind, x: Option<&Instance>) -> Vec<(usize, DataMessage)> {
    all.iter()
        .filter(|(_, m)| m.kind() == kind && m.instance() == x)
        .cloned()
        .collect()
}

/// The view a read of `(kind, x)` sees after `all` (R5, R12).
fn view_of(all: &Indexed, kind: &Kind, x: Option<&Instance>) -> Option<Value> {
    let (global, _) = naive_fold(None, &of(all, kind, None));
    match x {
        None => global,
        Some(_) => naive_fold(global, &of(all, kind, x)).0,
    }
}

/// The schema that applies to `(kind, x)` after `all` (R24).
fn schema_of(all: &Indexed, kind: &Kind, x: Option<&Instance>) -> Option<Value> {
    let newest = |x| {
        of(all, kind, x)
            .iter()
            .rev()
            .find_map(|(_, m)| m.schema().cloned())
    };
    newest(x).or_else(|| x.and_then(|_| newest(None)))
}

/// The rule, spelt out on whole views: messages one after another; a write
/// must apply to the view the earlier ones leave; after a layer's last
/// write in the batch, its view must satisfy its schema (`required`
/// tolerated) and, for a global layer, every instance layer of the kind
/// must fold with no skipped write that did not fail before the batch.
fn judge(context: &[DataMessage], batch: &[DataMessage]) -> Verdict {
    let mut all: Vec<(usize, DataMessage)> = context.iter().cloned().enumerate().collect();
    let before_batch = all.clone();
    for (offset, m) in batch.iter().enumerate() {
        let (kind, x) = (m.kind(), m.instance());
        let view = view_of(&all, kind, x);
        let segments = m.destination().segments();
        if naive_write(view, segments, m.method(), m.value().clone()).is_err() {
            return Verdict::TypeError(offset);
        }
        all.push((context.len() + offset, m.clone()));
        let last = !batch[offset + 1..]
            .iter()
            .any(|later| later.kind() == kind && later.instance() == x);
        if !last {
            continue;
        }
        let view = view_of(&all, kind, x);
        if let (Some(schema), Some(view)) = (schema_of(&all, kind, x), &view) {
            let schema = Schema::compile(&schema).unwrap();
            if !schema.violations(view, CheckMode::Normal).is_empty() {
                return Verdict::Schema(offset);
            }
        }
        if x.is_none() {
            let old_global = view_of(&before_batch, kind, None);
            let mut instances: Vec<&Instance> = all
                .iter()
                .filter(|(_, m)| m.kind() == kind)
                .filter_map(|(_, m)| m.instance())
                .collect();
            instances.dedup();
            for y in instances {
                let (_, new) = naive_fold(view.clone(), &of(&all, kind, Some(y)));
                let (_, old) = naive_fold(old_global.clone(), &of(&before_batch, kind, Some(y)));
                if new.iter().any(|index| !old.contains(index)) {
                    return Verdict::BreaksInstance(offset);
                }
            }
        }
    }
    Verdict::Accepted
}

/// The verdict an append's result states: a type error naming an instance
/// layer for a global message is D4's.
fn verdict(result: &Result<Range<usize>, Error>, base: usize, batch: &[DataMessage]) -> Verdict {
    match result {
        Ok(_) => Verdict::Accepted,
        Err(Error::Schema { index, .. }) => Verdict::Schema(index - base),
        Err(Error::TypeError {
            index, identity, ..
        }) => {
            let offset = index - base;
            if identity.instance.is_some() && batch[offset].instance().is_none() {
                Verdict::BreaksInstance(offset)
            } else {
                Verdict::TypeError(offset)
            }
        }
        Err(other) => panic!("unexpected error: {other}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn r13_r25_a_batch_is_accepted_exactly_when_the_views_it_leaves_pass(
        context in messages(12),
        batch in messages(8),
    ) {
        let mut ctx = to_context(context.clone());
        let before = ctx.to_jsonl();
        let wire: Vec<Message> = batch.iter().cloned().map(Message::from).collect();
        let result = ctx.append_all(&wire);
        let expected = judge(&context, &batch);
        prop_assert_eq!(verdict(&result, context.len(), &batch), expected, "{:?}", result);
        if expected == Verdict::Accepted {
            // The views are the fold of the whole log, as if every message
            // were appended without validation, and the naive model's.
            let unchecked = to_context(context.iter().chain(&batch).cloned().collect());
            prop_assert_eq!(ctx.to_jsonl(), unchecked.to_jsonl());
            prop_assert_eq!(views(&ctx), views(&unchecked));
            for ((kind, x), got) in every_read().iter().zip(views(&ctx)) {
                prop_assert_eq!(got, naive_view(&unchecked, kind, x.as_ref()).0);
            }
            // Hence no fold diagnostic the context did not have (R13).
            let had: Vec<usize> =
                to_context(context).diagnostics().iter().map(|d| d.index).collect();
            for diagnostic in ctx.diagnostics() {
                prop_assert!(had.contains(&diagnostic.index), "new: {:?}", diagnostic);
            }
        } else {
            prop_assert_eq!(ctx.to_jsonl(), before);
        }
    }

    #[test]
    fn r13_r25_a_staged_item_is_judged_as_a_batch(
        context in messages(12),
        batch in messages(8),
    ) {
        // Staging validates one instance's items with the same engine
        // (parallel instances): an item is judged as a batch of its own.
        let x = Instance::new("x").unwrap();
        let item: Vec<DataMessage> =
            batch.into_iter().filter(|m| m.instance() == Some(&x)).collect();
        let mut ctx = to_context(context.clone());
        let wire: Vec<Message> = item.iter().cloned().map(Message::from).collect();
        let staged = ctx.stage(&x, vec![(7, wire)]);
        let mut results = ctx.commit(vec![staged]).unwrap();
        prop_assert_eq!(results.len(), 1);
        let (key, result) = results.remove(0);
        prop_assert_eq!(key, 7);
        let result = result.map(|committed| committed.range);
        prop_assert_eq!(verdict(&result, context.len(), &item), judge(&context, &item));
    }
}
