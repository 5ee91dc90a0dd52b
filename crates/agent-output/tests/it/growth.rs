//! Growth, not speed (long contexts must stay usable): a result fanned out to ten times the
//! destinations must cost about ten times as much, so these compare two
//! sizes ten times apart measured in the same run — never an absolute time.
//! A linear path makes the ratio about 10, a quadratic one about 100.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use agent_core::json;
use agent_data::Context;
use agent_output::{Call, FixedClock, Outcome, apply, messages_for};
use std::time::{Duration, Instant};
use test_support::growth::{assert_linear, fastest};

/// A call writing one value to `n` destinations (`†state.d0 && …`).
fn fan_out(n: usize) -> Call {
    let path: Vec<String> = (0..n).map(|i| format!("†state.d{i}")).collect();
    Call::parse(json!({"_tool": "fan", "_outputPath": path.join(" && ")})).unwrap()
}

fn clock() -> FixedClock {
    FixedClock::parse("2026-01-01T00:00:00Z").unwrap()
}

#[test]
fn r20_a_fanned_out_result_records_its_call_in_bytes_linear_in_the_destinations() {
    // Deterministic: the call (itself linear in n) is stored once per
    // result, not once per destination (D36: fan-out recorded once), which made this about 100.
    let bytes = |n: usize| -> usize {
        let messages = messages_for(&fan_out(n), Outcome::Success(json!("v")), &clock()).unwrap();
        assert_eq!(messages.len(), n);
        messages
            .iter()
            .map(|m| m.to_value().to_string().len())
            .sum()
    };
    let (small, large) = (bytes(1_000), bytes(10_000));
    let ratio = large as f64 / small as f64;
    assert!(
        ratio < 12.0,
        "10× the destinations took {ratio:.1}× the bytes ({small} → {large}): not linear"
    );
}

#[test]
fn r20_a_fanned_out_result_is_built_validated_and_appended_in_linear_time() {
    let run = |call: &Call, n: usize| {
        let mut ctx = Context::from_json(r#"[{"type":"state","data":{"x":1}}]"#).unwrap();
        let appended = apply(&mut ctx, call, Outcome::Success(json!("v")), &clock()).unwrap();
        assert_eq!(appended.len(), n);
        assert_eq!(ctx.len(), n + 1);
    };
    let (small, large) = (fan_out(1_000), fan_out(10_000));
    let t_small = fastest(|| run(&small, 1_000));
    let t_large = fastest(|| run(&large, 10_000));
    assert_linear("the destinations", t_small, t_large);
}

/// The time `apply` takes to append the fan-out `call` to `ctx` (fastest
/// of three runs, each on a fresh copy, the copying not timed).
fn apply_time(ctx: &Context, call: &Call, n: usize) -> Duration {
    (0..3)
        .map(|_| {
            let mut ctx = ctx.clone();
            let start = Instant::now();
            let appended = apply(&mut ctx, call, Outcome::Success(json!("v")), &clock()).unwrap();
            let elapsed = start.elapsed();
            assert_eq!(appended.len(), n);
            elapsed
        })
        .min()
        .unwrap()
}

#[test]
fn r25_a_fanned_out_result_is_checked_against_the_schema_in_linear_time() {
    // The schema judges every destination. Checking the whole view after
    // each message was quadratic; the batch's view is judged once (D39: batch judged together).
    let ctx = Context::from_json(
        r#"[{"type":"state","data":{"x":1},"schema":{"type":"object",
            "properties":{"x":{"type":"integer"}},
            "additionalProperties":{"type":"string","maxLength":8}}}]"#,
    )
    .unwrap();
    let refused = apply(
        &mut ctx.clone(),
        &fan_out(10),
        Outcome::Success(json!(1)),
        &clock(),
    );
    assert!(refused.is_err(), "the schema applies");
    let t_small = apply_time(&ctx, &fan_out(1_000), 1_000);
    let t_large = apply_time(&ctx, &fan_out(10_000), 10_000);
    assert_linear("the destinations", t_small, t_large);
}

#[test]
fn r13_a_fanned_out_global_result_is_checked_against_instance_layers_in_linear_time() {
    // Every global write must leave each instance layer's writes valid
    // (D4: instances unbroken). Refolding the instance layers after each message was quadratic;
    // they are refolded once, over the view the batch leaves (D39: batch judged together).
    let mut messages = vec![json!({"type": "state", "data": {"x": 1}})];
    messages.extend((0..1_000).map(|i| {
        json!({"type": "state", "data": {"log": i}, "_outputPath": "†state.log",
            "_outputMethod": "push", "_instance": format!("i{i}")})
    }));
    let ctx =
        Context::from_json(&agent_core::json::Value::Array(messages.into()).to_string()).unwrap();
    let breaking = Call::parse(json!({"_tool": "fan", "_outputPath": "†state.d0 && †state.log"}));
    let refused = apply(
        &mut ctx.clone(),
        &breaking.unwrap(),
        Outcome::Success(json!("v")),
        &clock(),
    );
    assert!(
        refused.is_err(),
        "a string under the instances' pushes is refused (D4: instances unbroken)"
    );
    let t_small = apply_time(&ctx, &fan_out(1_000), 1_000);
    let t_large = apply_time(&ctx, &fan_out(10_000), 10_000);
    assert_linear("the destinations", t_small, t_large);
}

#[test]
fn r13_a_global_write_is_checked_against_instance_layers_in_time_linear_in_the_context() {
    // D4 refolds every instance layer of the kind over the new global view;
    // copying the whole global view for each made a context with ten times
    // the instances and ten times the global keys cost a hundred times as
    // much. Each now copies only the entries its writes start at.
    let context = |n: usize| {
        let global: agent_core::json::Map = (0..n).map(|k| (format!("k{k}"), json!(k))).collect();
        let mut messages = vec![json!({"type": "state", "data": global})];
        messages.extend((0..n).map(|i| {
            json!({"type": "state", "data": {"log": i}, "_outputPath": "†state.log",
                "_outputMethod": "push", "_instance": format!("i{i}")})
        }));
        Context::from_json(&agent_core::json::Value::Array(messages.into()).to_string()).unwrap()
    };
    let (small, large) = (context(1_000), context(10_000));
    let t_small = apply_time(&small, &fan_out(1), 1);
    let t_large = apply_time(&large, &fan_out(1), 1);
    assert_linear("the context", t_small, t_large);
}
