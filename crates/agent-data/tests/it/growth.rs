//! Growth, not speed: loading ten times the log must cost about ten times
//! as much. These compare two sizes ten times apart measured in the same
//! run — never an absolute time. A linear path makes the ratio about 10, a
//! quadratic one about 100.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use agent_data::{Context, Format};
use test_support::growth::{assert_linear, fastest};

#[test]
fn r12_a_log_of_many_instances_and_many_global_writes_loads_in_linear_time() {
    // Each global write makes the layered views of its kind stale; visiting
    // every instance layer to forget them made loading quadratic.
    let log = |n: usize| {
        (0..n)
            .map(|i| {
                format!(
                    "{{\"type\":\"state\",\"v\":{i},\"_instance\":\"i{i}\"}}\n\
                     {{\"type\":\"state\",\"g\":{i}}}\n"
                )
            })
            .collect::<String>()
    };
    let (small, large) = (log(4_000), log(40_000));
    let time =
        |text: &str| fastest(|| drop(Context::load(text.as_bytes(), Format::Jsonl).unwrap()));
    let (t_small, t_large) = (time(&small), time(&large));
    assert_linear("the log", t_small, t_large);
}
