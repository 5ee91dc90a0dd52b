//! Property tests: parallel batches equal sequential ones exactly, and
//! instances are isolated in both directions (R5, R6).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use agent_core::{Instance, Kind, Method};
use agent_core::{json, json::Value};
use agent_data::Context;
use agent_instancing::{Schedule, apply_batch, split};
use agent_output::{Call, FixedClock, Outcome};
use proptest::prelude::*;

const INSTANCES: [&str; 3] = ["①", "②", "③"];
const KINDS: [&str; 2] = ["state", "input"];

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        (0i64..4).prop_map(Value::from),
        "[pq]{0,2}".prop_map(Value::from)
    ];
    leaf.prop_recursive(2, 6, 2, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::from),
            prop::collection::vec(("[ab]", inner), 0..3)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn path() -> impl Strategy<Value = String> {
    prop::collection::vec("[ab]", 0..3)
        .prop_map(|keys| keys.iter().map(|k| format!(".{k}")).collect())
}

/// A context of global and instance messages (some of them type errors).
fn context() -> impl Strategy<Value = Context> {
    let message = (
        prop::sample::select(KINDS.to_vec()),
        prop::option::of(prop::sample::select(INSTANCES.to_vec())),
        path(),
        prop::sample::select(Method::ALL.to_vec()),
        value(),
    );
    prop::collection::vec(message, 0..10).prop_map(|msgs| {
        let messages: Vec<Value> = msgs
            .into_iter()
            .map(|(kind, instance, path, method, v)| {
                // An erase holds null where its value would be (R10b).
                let v = if method == Method::Erase { Value::Null } else { v };
                let mut m = json!({"type": "data", "kind": kind, "data": agent_core::Path::parse(&path).unwrap().nest(v),
                                   "_outputPath": format!("†{kind}{path}"), "_outputMethod": method.as_str()});
                if let Some(x) = instance {
                    m["_instance"] = json!(x);
                }
                m
            })
            .collect();
        Context::from_json(&Value::Array(messages.into()).to_string()).unwrap()
    })
}

/// A batch item: a call in some instance (or, sometimes, global) with an outcome.
fn item(global: bool) -> impl Strategy<Value = (Call, Outcome)> {
    let instance = if global {
        prop::option::of(prop::sample::select(INSTANCES.to_vec())).boxed()
    } else {
        prop::sample::select(INSTANCES.to_vec())
            .prop_map(Some)
            .boxed()
    };
    (
        instance,
        prop::collection::vec((prop::sample::select(KINDS.to_vec()), path()), 1..3),
        any::<bool>(),
        prop::sample::select(Method::ALL.to_vec()),
        value(),
        0..4u8,
    )
        .prop_map(|(instance, outcomes, two, method, v, how)| {
            let dest = |(k, p): &(&str, String)| format!("†{k}{p}");
            let output_path = if two && outcomes.len() > 1 {
                format!("{} || {}", dest(&outcomes[0]), dest(&outcomes[1]))
            } else {
                outcomes.iter().map(dest).collect::<Vec<_>>().join(" && ")
            };
            let mut call =
                json!({"_tool": "t", "_outputPath": output_path, "_outputMethod": method.as_str()});
            if let Some(x) = instance {
                call["_instance"] = json!(x);
            }
            let outcome = match how {
                0 | 1 => Outcome::Success(v),
                2 => Outcome::Failure(v),
                _ => Outcome::Message(json!({"type": "data", "kind": outcomes[0].0, "data": v})),
            };
            (Call::parse(call).unwrap(), outcome)
        })
}

fn clock() -> FixedClock {
    FixedClock::parse("2026-01-01T00:00:00Z").unwrap()
}

fn every_view(ctx: &Context, instance: Option<&Instance>) -> Vec<Option<Value>> {
    KINDS
        .iter()
        .map(|k| ctx.view(&Kind::new(*k).unwrap(), instance).cloned())
        .collect()
}

fn layer_bytes(ctx: &Context, instance: &str) -> String {
    ctx.messages()
        .filter(|m| m.fields().get("_instance") == Some(&json!(instance)))
        .map(|m| m.to_value().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Both modes give the same results (errors included) and the same bytes.
fn assert_modes_agree(ctx: Context, items: Vec<(Call, Outcome)>) -> Result<(), TestCaseError> {
    let mut seq = ctx.clone();
    let mut par = ctx;
    let rs = apply_batch(&mut seq, items.clone(), &clock(), Schedule::Sequential);
    let rp = apply_batch(&mut par, items, &clock(), Schedule::Parallel);
    prop_assert_eq!(format!("{rs:?}"), format!("{rp:?}"));
    prop_assert_eq!(seq.to_jsonl(), par.to_jsonl());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn parallel_batch_equals_sequential(ctx in context(), items in prop::collection::vec(item(true), 0..12)) {
        assert_modes_agree(ctx, items)?;
    }

    #[test]
    fn parallel_instance_batch_equals_sequential(ctx in context(), items in prop::collection::vec(item(false), 0..16)) {
        assert_modes_agree(ctx, items)?;
    }

    #[test]
    fn r5_reads_for_x_are_explained_by_global_and_own_layer(ctx in context()) {
        // Removing every other instance's messages changes nothing X reads.
        for (x, alone) in split(&ctx).unwrap() {
            prop_assert_eq!(every_view(&ctx, Some(&x)), every_view(&alone, Some(&x)));
        }
    }

    #[test]
    fn r6_writes_for_x_never_change_another_instance(
        ctx in context(),
        x in prop::sample::select(INSTANCES.to_vec()),
        items in prop::collection::vec(item(false), 0..8),
    ) {
        let items: Vec<(Call, Outcome)> = items.into_iter().map(|(call, outcome)| {
            let mut call = call.into_value();
            call["_instance"] = json!(x);
            (Call::parse(call).unwrap(), outcome)
        }).collect();
        let mut after = ctx.clone();
        for mode in [Schedule::Sequential, Schedule::Parallel] {
            apply_batch(&mut after, items.clone(), &clock(), mode);
        }
        for y in INSTANCES.iter().filter(|y| **y != x) {
            let y_id = Instance::new(*y).unwrap();
            prop_assert_eq!(layer_bytes(&ctx, y), layer_bytes(&after, y), "{}'s layer is byte-identical", y);
            prop_assert_eq!(every_view(&ctx, Some(&y_id)), every_view(&after, Some(&y_id)));
        }
        prop_assert_eq!(every_view(&ctx, None), every_view(&after, None), "the global layer is untouched");
    }
}
