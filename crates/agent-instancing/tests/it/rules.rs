//! Instancing: ids, inputs, splitting and grouping, and the instance parts
//! of R5, R6, R18, R20, R22 and R24 through the batch API.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use agent_core::{Instance, Kind};
use agent_core::{json, json::Value};
use agent_data::Context;
use agent_instancing::{
    Schedule, apply_batch, assign_inputs, fresh_ids, group_calls, nth_id, resolve_batch, split,
    views,
};
use agent_output::{Call, FixedClock, Outcome};
use agent_vars::Resolution;

fn clock() -> FixedClock {
    FixedClock::parse("2026-01-01T00:00:00Z").unwrap()
}

fn call(value: Value) -> Call {
    Call::parse(value).unwrap()
}

fn ids(xs: &[Instance]) -> Vec<&str> {
    xs.iter().map(Instance::as_str).collect()
}

#[test]
fn ids_are_circled_then_continue() {
    let all: Vec<String> = (1..=52).map(nth_id).collect();
    assert_eq!(&all[..3], ["①", "②", "③"]);
    assert_eq!(all[19], "⑳");
    assert_eq!(all[20], "㉑");
    assert_eq!(all[34], "㉟");
    assert_eq!(all[35], "㊱");
    assert_eq!(all[49], "㊿");
    assert_eq!(&all[50..], ["#51", "#52"]);
    let unique: std::collections::HashSet<&String> = all.iter().collect();
    assert_eq!(unique.len(), all.len());
}

#[test]
fn fresh_ids_never_collide_with_existing_ones() {
    let ctx = Context::from_json(r#"[{"data":1,"_instance":"②"},{"data":1,"_instance":"employee_A"},{"data":1,"_instance":"①"}]"#).unwrap();
    assert_eq!(ids(&fresh_ids(&ctx, 3)), ["③", "④", "⑤"]);
}

#[test]
fn r5_instance_ids_in_order_of_first_appearance_after_assign() {
    let mut ctx = Context::from_json(r#"[{"data":1,"_instance":"x"}]"#).unwrap();
    let (new, _) = assign_inputs(&mut ctx, vec![json!({"c": "a"}), json!({"c": "b"})]).unwrap();
    assert_eq!(ids(&new), ["①", "②"]);
    let all: Vec<&str> = ctx.instances().map(Instance::as_str).collect();
    assert_eq!(all, ["x", "①", "②"]);
    let input = Kind::new("input").unwrap();
    assert_eq!(ctx.view(&input, Some(&new[1])), Some(&json!({"c": "b"})));
    assert_eq!(
        ctx.view(&input, None),
        None,
        "inputs are targeted, not global"
    );
}

#[test]
fn split_keeps_global_messages_and_own_layer_only() {
    let ctx = Context::from_json(
        r#"[{"type":"text","text":"task"},{"type":"state","data":{"g":1}},
            {"type":"state","data":{"a":1},"_instance":"①"},{"type":"state","data":{"b":1},"_instance":"②"},
            {"type":"plan","steps":[]}]"#,
    )
    .unwrap();
    let parts = split(&ctx).unwrap();
    assert_eq!(
        parts.keys().map(Instance::as_str).collect::<Vec<_>>(),
        ["①", "②"]
    );
    let one = &parts["①"];
    assert_eq!(one.len(), 4);
    let state = Kind::new("state").unwrap();
    assert_eq!(
        one.view(&state, parts.get_index(0).map(|(x, _)| x)),
        Some(&json!({"g": 1, "a": 1}))
    );
    assert!(!one.to_jsonl().contains("\"b\""));
}

#[test]
fn group_calls_by_instance_in_order_of_first_appearance() {
    let calls = [
        call(json!({"_instance": "②"})),
        call(json!({})),
        call(json!({"_instance": "①"})),
        call(json!({"_instance": "②"})),
    ];
    let groups = group_calls(&calls);
    let keys: Vec<Option<&str>> = groups
        .keys()
        .map(|k| k.as_ref().map(Instance::as_str))
        .collect();
    assert_eq!(keys, [Some("②"), None, Some("①")]);
    assert_eq!(groups[0], [0, 3]);
}

#[test]
fn r18_batch_resolution_is_scoped_per_call() {
    let ctx = Context::from_json(
        r#"[{"type":"input","data":{"lang":"en"}},{"type":"input","data":{"c":"hi"},"_instance":"①"},{"type":"input","data":{"c":"yo","lang":"fr"},"_instance":"②"}]"#,
    )
    .unwrap();
    let calls: Vec<Call> = ["①", "②", "③"]
        .iter()
        .map(|x| call(json!({"_instance": x, "text": "†input.c", "lang": "†input.lang"})))
        .collect();
    for mode in [Schedule::Sequential, Schedule::Parallel] {
        let results = resolve_batch(&ctx, &calls, mode);
        assert_eq!(
            results[0].as_ref().unwrap(),
            &Resolution::Ready(json!({"_instance": "①", "text": "hi", "lang": "en"}))
        );
        assert_eq!(
            results[1].as_ref().unwrap(),
            &Resolution::Ready(json!({"_instance": "②", "text": "yo", "lang": "fr"}))
        );
        assert!(matches!(
            results[2].as_ref().unwrap(),
            Resolution::Pending(_)
        ));
    }
}

#[test]
fn r6_r20_r22_batch_writes_stay_in_their_instance() {
    for mode in [Schedule::Sequential, Schedule::Parallel] {
        let mut ctx = Context::from_json(r#"[{"type":"state","data":{"shared":true}}]"#).unwrap();
        let items = vec![
            (
                call(json!({"_instance": "①", "_outputPath": "†state.v"})),
                Outcome::Success(json!(1)),
            ),
            (
                call(json!({"_instance": "②", "_outputPath": "†state.ok || †state.err"})),
                Outcome::Failure(json!("e")),
            ),
            (
                call(json!({"_instance": "①", "_outputPath": "†state.w"})),
                Outcome::Message(json!({"type": "state", "data": {"w": 2}})),
            ),
            (
                call(json!({"_instance": "③", "_outputPath": "†state.x"})),
                Outcome::Failure(json!("unhandled")),
            ),
        ];
        let results = apply_batch(&mut ctx, items, &clock(), mode);
        assert!(results[0].is_ok() && results[1].is_ok() && results[2].is_ok());
        assert!(results[3].is_err());
        let state = views(&ctx, &Kind::new("state").unwrap());
        assert_eq!(state["①"], Some(json!({"shared": true, "v": 1, "w": 2})));
        assert_eq!(state["②"], Some(json!({"shared": true, "err": "e"})));
        assert!(
            !state.contains_key("③"),
            "a refused item creates no instance"
        );
        assert_eq!(
            ctx.view(&Kind::new("state").unwrap(), None),
            Some(&json!({"shared": true}))
        );
    }
}

#[test]
fn r24_instance_layers_use_global_schema_in_batches() {
    for mode in [Schedule::Sequential, Schedule::Parallel] {
        let mut ctx = Context::from_json(
            r#"[{"type":"state","data":{},"schema":{"properties":{"score":{"type":"number"}}}}]"#,
        )
        .unwrap();
        let items = vec![
            (
                call(json!({"_instance": "①", "_outputPath": "†state.score"})),
                Outcome::Success(json!(3)),
            ),
            (
                call(json!({"_instance": "②", "_outputPath": "†state.score"})),
                Outcome::Success(json!("high")),
            ),
        ];
        let results = apply_batch(&mut ctx, items, &clock(), mode);
        assert!(results[0].is_ok());
        let err = results[1].as_ref().unwrap_err().to_string();
        assert!(
            err.starts_with("message 2 (¶state@②) refused: schema violated"),
            "{err}"
        );
    }
}

#[test]
fn batches_with_global_writes_run_sequentially_with_same_result() {
    let items = || {
        vec![
            (
                call(
                    json!({"_instance": "①", "_outputPath": "†state.log", "_outputMethod": "push"}),
                ),
                Outcome::Success(json!(1)),
            ),
            (
                call(json!({"_outputPath": "†state.log"})),
                Outcome::Success(json!("text")),
            ),
        ]
    };
    let mut a = Context::new();
    let mut b = Context::new();
    let ra = apply_batch(&mut a, items(), &clock(), Schedule::Sequential);
    let rb = apply_batch(&mut b, items(), &clock(), Schedule::Parallel);
    assert_eq!(format!("{ra:?}"), format!("{rb:?}"));
    assert_eq!(a.to_jsonl(), b.to_jsonl());
    assert!(
        ra[1].is_err(),
        "the global write would break ①'s push (D4: instances unbroken)"
    );
}
