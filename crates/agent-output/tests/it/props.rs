//! Property tests: applying a valid outcome then reading each destination
//! gives the value (set), nothing (erase) or the documented combination
//! (R10, R10b, R20); a refused
//! write leaves the context byte-identical (R13, R20).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use agent_core::{Method, Reference, write};
use agent_core::{json, json::Value};
use agent_data::Context;
use agent_output::{Call, FixedClock, Outcome, apply};
use proptest::prelude::*;

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        (0i64..5).prop_map(Value::from),
        "[xy]{0,2}".prop_map(Value::from)
    ];
    leaf.prop_recursive(2, 8, 2, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::from),
            prop::collection::vec(("[ab]", inner), 0..3)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn destination() -> impl Strategy<Value = Reference> {
    (
        prop::sample::select(vec!["state", "data"]),
        prop::collection::vec("[ab]", 0..3),
    )
        .prop_map(|(kind, keys)| {
            format!(
                "†{kind}{}",
                keys.iter().map(|k| format!(".{k}")).collect::<String>()
            )
            .parse()
            .unwrap()
        })
}

fn context() -> impl Strategy<Value = Context> {
    prop::collection::vec((prop::sample::select(vec!["state", "data"]), value()), 0..4).prop_map(
        |msgs| {
            let messages: Vec<Value> = msgs
                .into_iter()
                .map(|(k, v)| json!({"type": "data", "kind": k, "data": v}))
                .collect();
            Context::from_json(&Value::Array(messages.into()).to_string()).unwrap()
        },
    )
}

fn clock() -> FixedClock {
    FixedClock::parse("2026-01-01T00:00:00Z").unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn r20_applied_outcome_reads_back(
        mut ctx in context(),
        destinations in prop::collection::vec(destination(), 1..3),
        method in prop::sample::select(Method::ALL.to_vec()),
        v in value(),
    ) {
        let path = destinations.iter().map(ToString::to_string).collect::<Vec<_>>().join(" && ");
        let call = json!({"_tool": "t", "_outputPath": path, "_outputMethod": method.as_str()});
        let before = ctx.clone();
        let before_jsonl = ctx.to_jsonl();
        match apply(&mut ctx, &Call::parse(call.clone()).unwrap(), Outcome::Success(v.clone()), &clock()) {
            Ok(appended) => {
                prop_assert_eq!(appended.len(), destinations.len());
                for d in &destinations {
                    let alone = destinations.iter().filter(|o| o.kind == d.kind && o.path.overlaps(&d.path)).count() == 1;
                    if method == Method::Set && alone {
                        prop_assert_eq!(ctx.read(d, None).cloned(), Some(v.clone()), "set reads back the value");
                    }
                    if method == Method::Erase && alone {
                        prop_assert_eq!(ctx.read(d, None), None, "an erased path reads absent");
                    }
                }
                // The same writes applied by hand to the old view give the new view.
                for kind in ["state", "data"] {
                    let kind = agent_core::Kind::new(kind).unwrap();
                    let mut view = before.view(&kind, None).cloned();
                    for d in destinations.iter().filter(|d| d.kind == kind) {
                        write(&mut view, &d.path, method, v.clone()).unwrap();
                    }
                    prop_assert_eq!(ctx.view(&kind, None).cloned(), view);
                }
            }
            Err(_) => {
                prop_assert_eq!(ctx.to_jsonl(), before_jsonl, "a refused write changes nothing");
                // It was refused for a reason: replaying by hand fails somewhere.
                let mut views: Vec<(agent_core::Kind, Option<Value>)> = Vec::new();
                let mut failed = false;
                for d in &destinations {
                    let slot = match views.iter_mut().find(|(k, _)| *k == d.kind) {
                        Some((_, view)) => view,
                        None => {
                            views.push((d.kind.clone(), before.view(&d.kind, None).cloned()));
                            &mut views.last_mut().unwrap().1
                        }
                    };
                    failed |= write(slot, &d.path, method, v.clone()).is_err();
                }
                prop_assert!(failed);
            }
        }
    }
}
