//! Erase as a call's `_outputMethod` (R10b, R20): what its messages hold and
//! what reads see after them.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use agent_core::{json, json::Value};
use agent_data::Context;
use agent_output::{Call, FixedClock, Outcome};

fn clock() -> FixedClock {
    FixedClock::parse("2026-11-21T10:00:00Z").unwrap()
}

fn apply(ctx: &mut Context, call: &Value, outcome: Outcome) -> Vec<Value> {
    agent_output::apply(ctx, &Call::parse(call.clone()).unwrap(), outcome, &clock())
        .unwrap()
        .iter()
        .map(agent_data::Message::to_value)
        .collect()
}

fn read(ctx: &Context, r: &str, instance: Option<&str>) -> Option<Value> {
    let instance = instance.map(|x| agent_core::Instance::new(x).unwrap());
    ctx.read(&r.parse().unwrap(), instance.as_ref()).cloned()
}

#[test]
fn r10b_r20_an_erase_records_null_at_its_path_whatever_the_result() {
    let mut ctx =
        Context::from_json(r#"[{"type":"state","data":{"step1":{"done":true},"n":1}}]"#).unwrap();
    let call = json!({"_tool": "reset", "_outputPath": "†state.step1", "_outputMethod": "erase"});
    let written = apply(
        &mut ctx,
        &call,
        Outcome::Success(json!({"ignored": [1, 2]})),
    );
    assert_eq!(
        written,
        [json!({
            "type": "data", "kind": "state", "data": {"step1": null},
            "_outputPath": "†state.step1", "_outputMethod": "erase",
            "_call": call, "_date": "2026-11-21T10:00:00Z"
        })]
    );
    assert_eq!(read(&ctx, "†state.step1", None), None);
    assert_eq!(read(&ctx, "†state", None), Some(json!({"n": 1})));
}

#[test]
fn r10b_r20_an_erase_fans_out_and_chooses_outcomes_like_any_write() {
    let mut ctx = Context::from_json(
        r#"[{"type":"state","data":{"a":1,"b":2,"err":"old"}},{"type":"data","data":{"a":1}}]"#,
    )
    .unwrap();
    let call = json!({"_outputPath": "†state.a && †data", "_outputMethod": "erase"});
    let written = apply(&mut ctx, &call, Outcome::Success(json!(5)));
    assert_eq!(written[0]["data"], json!({"a": null}));
    assert_eq!(written[1]["data"], json!(null));
    assert_eq!(written[1]["_callAt"], json!(-1));
    assert_eq!(
        read(&ctx, "†state", None),
        Some(json!({"b": 2, "err": "old"}))
    );
    assert_eq!(ctx.view(&"data".parse().unwrap(), None), None);
    // A failure erases the failure outcome's path.
    let call = json!({"_outputPath": "†state.b || †state.err", "_outputMethod": "erase"});
    apply(&mut ctx, &call, Outcome::Failure(json!("boom")));
    assert_eq!(read(&ctx, "†state", None), Some(json!({"b": 2})));
}

#[test]
fn r10b_r6_an_erase_in_an_instance_does_not_fall_through_to_the_global_value() {
    let mut ctx = Context::from_json(r#"[{"type":"state","data":{"step1":"global"}}]"#).unwrap();
    let write = json!({"_outputPath": "†state.step1", "_instance": "x"});
    apply(&mut ctx, &write, Outcome::Success(json!("mine")));
    assert_eq!(read(&ctx, "†state.step1", Some("x")), Some(json!("mine")));
    let erase = json!({"_outputPath": "†state.step1", "_outputMethod": "erase", "_instance": "x"});
    let written = apply(&mut ctx, &erase, Outcome::Success(json!(null)));
    assert_eq!(written[0]["_instance"], json!("x"));
    assert_eq!(read(&ctx, "†state.step1", Some("x")), None);
    assert_eq!(read(&ctx, "†state.step1", None), Some(json!("global")));
    // Re-running the step writes it again.
    apply(&mut ctx, &write, Outcome::Success(json!("again")));
    assert_eq!(read(&ctx, "†state.step1", Some("x")), Some(json!("again")));
}

#[test]
fn r10b_r22_a_returned_erase_message_must_hold_null() {
    let mut ctx = Context::from_json(r#"[{"type":"state","data":{"a":1}}]"#).unwrap();
    let call = Call::parse(json!({"_outputPath": "†state.a"})).unwrap();
    let bad = json!({"type": "state", "data": {"a": 2}, "_outputPath": "†state.a", "_outputMethod": "erase"});
    let err = agent_output::apply(&mut ctx, &call, Outcome::Message(bad), &clock()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the returned message is invalid: `_outputMethod` erase: `data` must hold null at the destination path .a, not a number"
    );
    let good = json!({"type": "state", "data": {"a": null}, "_outputPath": "†state.a", "_outputMethod": "erase"});
    agent_output::apply(&mut ctx, &call, Outcome::Message(good), &clock()).unwrap();
    assert_eq!(read(&ctx, "†state.a", None), None);
}
