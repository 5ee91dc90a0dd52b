//! Growth, not speed (long contexts must stay usable): ordering a plan ten times longer must
//! cost about ten times as much. Compares two sizes — never an absolute
//! time; a quadratic path makes the ratio about 100.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use agent_core::{json, json::Value};
use agent_plan::Plan;
use test_support::growth::{assert_linear, fastest};

/// A chain of `n` calls, each reading what the previous one writes, listed
/// last first (the order that made the old wave pass place one call per
/// sweep).
fn chain(n: usize) -> Vec<Value> {
    (0..n)
        .rev()
        .map(|i| {
            let input = if i == 0 {
                "†input.seed".to_owned()
            } else {
                format!("†state.p{}", i - 1)
            };
            json!({"_tool": "step", "x": input, "_outputPath": format!("†state.p{i}")})
        })
        .collect()
}

#[test]
fn ordering_a_plan_grows_linearly_with_its_calls() {
    let (small, large) = (chain(2_000), chain(20_000));
    let order = |calls: &Vec<Value>, n: usize| {
        let plan = Plan::new(calls.clone()).unwrap();
        assert_eq!(plan.waves().len(), n);
    };
    let t_small = fastest(|| order(&small, 2_000));
    let t_large = fastest(|| order(&large, 20_000));
    assert_linear("the calls", t_small, t_large);
}
