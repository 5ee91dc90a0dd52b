//! Property tests of the fold (R9–R14) against a naive reference model, and
//! of appends (R13) and identity isolation (R4, R5).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use crate::support::*;
use agent_core::Kind;
use agent_core::{
    json,
    json::{Map, Value},
};
use agent_data::{Context, DataMessage, Message};
use proptest::prelude::*;

/// Every layer's own view (R28), in order.
fn layer_views(ctx: &Context) -> Vec<Option<Value>> {
    ctx.identities()
        .map(|id| ctx.layer_view(id).cloned())
        .collect()
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
    fn r10b_erase_makes_older_writes_at_or_under_its_path_irrelevant(
        before in prop::collection::vec(message(&["state"]), 0..12),
        p in path(),
        after in prop::collection::vec(message(&["state"]), 0..6),
        probes in prop::collection::vec(path(), 6),
    ) {
        // Like a set, an erase ends the reverse walk (R14): the global
        // writes at or under its path before it no longer show. Dropping
        // them can leave an intermediate the erase emptied missing, or an
        // array one element shorter where the erase left null, so the law
        // is about reads of the path (present or not, R16), below it, and
        // of paths apart from it.
        let erase = DataMessage::from_value(json!({
            "type": "data", "kind": "state", "data": p.nest(Value::Null),
            "_outputPath": format!("†state{p}"), "_outputMethod": "erase"
        })).unwrap();
        let full: Vec<DataMessage> = before.iter().cloned().chain([erase.clone()]).chain(after.iter().cloned()).collect();
        let pruned: Vec<DataMessage> = before.iter().filter(|m| !(p.is_prefix_of(m.destination()) && m.instance().is_none())).cloned()
            .chain([erase]).chain(after).collect();
        let (full, pruned) = (to_context(full), to_context(pruned));
        let negative = p.segments().iter().any(|s| matches!(s, agent_core::Segment::Index(i) if *i < 0));
        if full.diagnostics().is_empty() && pruned.diagnostics().is_empty() && !negative {
            for (k, x) in every_read() {
                let at = |c: &Context, q: &agent_core::Path| c.view(&k, x.as_ref()).and_then(|v| q.get(v)).cloned();
                let present = |c: &Context| at(c, &p).filter(|v| !v.is_null());
                prop_assert_eq!(present(&full), present(&pruned));
                for q in probes.iter().filter(|q| (p.is_prefix_of(q) && q.len() > p.len()) || !q.overlaps(&p)) {
                    prop_assert_eq!(at(&full, q), at(&pruned, q), "{}", q);
                }
            }
        }
    }

    #[test]
    fn r9_plain_patches_with_disjoint_keys_commute(a in value(), b in value()) {
        let patch = |v: Value, prefix: &str| {
            let obj = match v { Value::Object(m) => m, other => [("v".to_owned(), other)].into_iter().collect() };
            let renamed: Map = obj.into_iter().map(|(k, v)| (format!("{prefix}{k}"), v)).collect();
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
        let lines: Vec<Value> = ctx.to_jsonl().lines().map(|l| agent_core::json::from_str(l).unwrap()).collect();
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
        // Compaction drops the views of short layers (D40: short layers refolded); a write to one
        // folds it again first, and lands as in a context that kept it.
        ctx.compact();
        for message in later.into_iter().map(Message::from) {
            prop_assert_eq!(ctx.append(&message).is_ok(), kept.append(&message).is_ok());
        }
        prop_assert_eq!(state(&kept), state(&ctx));
    }

    #[test]
    fn r13_append_all_accepts_what_appending_one_by_one_accepts(messages in log(16), batch in log(6)) {
        // A batch whose messages are each accepted appended one at a time
        // lands exactly as they would. The converse does not hold: a batch
        // judges a layer on the view its last write there leaves (D39: batch judged together), so
        // a view one of its messages breaks and a later one repairs is
        // accepted (`batch.rs` checks exactly what is).
        let batch: Vec<Message> = batch.into_iter().map(Message::from).collect();
        let mut all = to_context(messages);
        let mut single = all.clone();
        let before = all.to_jsonl();
        let singles: Result<Vec<usize>, _> = batch.iter().map(|m| single.append(m)).collect();
        match all.append_all(&batch) {
            Ok(_) if singles.is_ok() => {
                prop_assert_eq!(all.to_jsonl(), single.to_jsonl());
                prop_assert_eq!(views(&all), views(&single));
            }
            Ok(range) => prop_assert_eq!(range.len(), batch.len()),
            Err(_) => {
                prop_assert!(singles.is_err(), "a batch refused whose messages one by one are not");
                prop_assert_eq!(all.to_jsonl(), before);
            }
        }
    }
}
