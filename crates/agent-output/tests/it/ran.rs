//! R21b: what a runner records beside a result, and for a call that
//! writes nothing.

use agent_core::{json, json::Value};
use agent_data::{Context, Message};
use agent_output::{Call, Clock, FixedClock, Outcome, Ran, apply_run, messages_for_run};

fn at(text: &str) -> FixedClock {
    FixedClock::parse(text).unwrap()
}

fn ran() -> Ran {
    Ran::started_at(at("2026-03-01T10:00:00Z").now())
}

fn end() -> FixedClock {
    at("2026-03-01T10:00:03.250Z")
}

fn values(messages: &[Message]) -> Vec<Value> {
    messages.iter().map(Message::to_value).collect()
}

#[test]
fn r21b_a_call_without_output_path_that_ran_leaves_one_ran_record_and_no_view() {
    let call =
        Call::parse(json!({"_tool": "notify", "_instance": "a", "to": "†state.who"})).unwrap();
    let mut ctx = Context::new();
    let written = apply_run(
        &mut ctx,
        &call,
        Outcome::Success(json!("sent")),
        &end(),
        &ran(),
    )
    .unwrap();
    assert_eq!(
        values(&written),
        [json!({
            "type": "ran",
            "_call": {"_tool": "notify", "_instance": "a", "to": "†state.who"},
            "_started": "2026-03-01T10:00:00Z",
            "_date": "2026-03-01T10:00:03.250Z"
        })]
    );
    assert_eq!(ctx.len(), 1);
    assert_eq!(ctx.identities().len(), 0, "a ran record writes no view");
}

#[test]
fn r21b_a_failed_call_without_output_path_is_recorded_as_failed_and_its_value_dropped() {
    let call = Call::parse(json!({"_tool": "notify"})).unwrap();
    let failed =
        messages_for_run(&call, Outcome::Failure(json!("smtp down")), &end(), &ran()).unwrap();
    assert_eq!(failed[0].fields()["_failed"], json!(true));
    assert!(!json::to_string(&failed[0].to_value()).contains("smtp down"));
    // A whole message returned for it is dropped as well (R21).
    let returned = Outcome::Message(json!({"type": "data", "kind": "state", "data": {"x": 1}}));
    let dropped = messages_for_run(&call, returned, &end(), &ran()).unwrap();
    assert_eq!(dropped.len(), 1);
    assert_eq!(dropped[0].fields()["type"], json!("ran"));
    assert!(dropped[0].fields().get("_failed").is_none());
}

#[test]
fn r21b_a_fanned_out_result_carries_the_run_once_with_its_call() {
    let call =
        Call::parse(json!({"_tool": "fetch", "_outputPath": "†state.a && †data.b"})).unwrap();
    let by = ran().by("w-7", 3);
    let written = messages_for_run(&call, Outcome::Success(json!(1)), &end(), &by).unwrap();
    assert_eq!(written.len(), 2);
    let first = written[0].fields();
    assert_eq!(first["_started"], json!("2026-03-01T10:00:00Z"));
    assert_eq!(first["_date"], json!("2026-03-01T10:00:03.250Z"));
    assert_eq!(
        (&first["_worker"], &first["_attempt"]),
        (&json!("w-7"), &json!(3))
    );
    let second = written[1].fields();
    assert_eq!(second["_callAt"], json!(-1));
    for key in ["_started", "_worker", "_attempt"] {
        assert!(
            second.get(key).is_none(),
            "{key} is recorded once, with `_call`"
        );
    }
}

#[test]
fn r21b_r22_a_returned_message_keeps_its_own_start_and_gets_the_runners_when_missing() {
    let call = Call::parse(json!({"_tool": "t", "_outputPath": "†state.x"})).unwrap();
    let own = json!({"type": "data", "kind": "state", "data": {"x": 1}, "_started": "2020-01-01T00:00:00Z"});
    let kept = messages_for_run(&call, Outcome::Message(own), &end(), &ran()).unwrap();
    assert_eq!(kept[0].fields()["_started"], json!("2020-01-01T00:00:00Z"));
    let bare = json!({"type": "data", "kind": "state", "data": {"x": 1}});
    let stamped = messages_for_run(&call, Outcome::Message(bare), &end(), &ran()).unwrap();
    assert_eq!(
        stamped[0].fields()["_started"],
        json!("2026-03-01T10:00:00Z")
    );
}

#[test]
fn r21b_an_unhandled_failure_is_still_an_error_and_appends_nothing() {
    let call = Call::parse(json!({"_tool": "t", "_outputPath": "†state.x"})).unwrap();
    let mut ctx = Context::new();
    let err = apply_run(
        &mut ctx,
        &call,
        Outcome::Failure(json!("no")),
        &end(),
        &ran(),
    )
    .unwrap_err();
    assert!(err.to_string().starts_with("unhandled failure"), "{err}");
    assert_eq!(ctx.len(), 0);
}
