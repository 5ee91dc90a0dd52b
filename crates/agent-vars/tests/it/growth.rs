//! Growth, not speed (long contexts must stay usable): doubling work must cost about double, so
//! these compare the time of two sizes ten times apart — never an absolute
//! time. A quadratic path makes the ratio about 100; linear about 10.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use agent_core::json;
use agent_data::Context;
use agent_vars::{Resolution, resolve_call};
use test_support::growth::{assert_linear, fastest};

#[test]
fn r17_every_missing_reference_is_listed_in_linear_time() {
    let ctx = Context::new();
    // n distinct references, each written twice, in `||` alternatives.
    let call = |n: usize| {
        let refs: Vec<String> = (0..2 * n).map(|i| format!("†state.m{}", i % n)).collect();
        json!({"_tool": "t", "x": refs.join(" || ")})
    };
    let resolve = |call: &agent_core::json::Value, n: usize| {
        let Resolution::Pending(missing) = resolve_call(call, &ctx).unwrap() else {
            panic!("nothing is present")
        };
        assert_eq!(missing.len(), n);
    };
    let (small, large) = (call(5_000), call(50_000));
    let t_small = fastest(|| resolve(&small, 5_000));
    let t_large = fastest(|| resolve(&large, 50_000));
    assert_linear("the references", t_small, t_large);
}
