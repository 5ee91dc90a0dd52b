//! Property (a turn is a plan, so it must not behave differently): for any answer whose calls write distinct paths,
//! running it as a turn yields the same views as running the same calls as
//! a plan (`agentctx run`) with the same activities (spec R39); when the
//! calls cannot be ordered, it writes what its leading calls that read
//! nothing wrote, as they started while the answer arrived (D77: calls start while streaming).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use agent_core::{Instance, Kind};
use agent_core::{json, json::Value};
use agent_data::Context;
use agent_loop::{Answer, Error, Loop, Provider, Reply, Request, Tool, Usage};
use agent_output::FixedClock;
use agent_plan::{Activities, Plan};
use proptest::prelude::*;
use std::sync::Mutex;

/// Answers once with the given calls.
struct Once(Mutex<Option<Value>>);

impl Provider for Once {
    fn send(&self, _: &Request<'_>) -> Result<Reply, Error> {
        let calls = self.0.lock().unwrap().take().unwrap_or_else(|| json!([]));
        Ok(Reply::new(
            Answer::from_value(json!({"calls": calls, "output": null})),
            Usage::default(),
        ))
    }
}

const TOOLS: [&str; 3] = ["t0", "t1", "t2"];

fn activities() -> Activities {
    let mut activities = Activities::new();
    for tool in TOOLS {
        activities.register(tool, move |call: &Value| {
            Ok(json!({"by": tool, "x": call["x"]}))
        });
    }
    activities
}

fn start() -> Context {
    Context::from_json(
        r#"[{"type": "input", "data": {"v": 1}},
            {"type": "input", "data": {"v": 2}, "_instance": "①"},
            {"type": "state", "data": {"seed": true}}]"#,
    )
    .unwrap()
}

/// Call `i` writes `†state.p{i}`: its `x` is a literal, the input, or
/// what call `j` writes.
fn call_strategy(n: usize) -> impl Strategy<Value = Vec<Value>> {
    let one = (0..TOOLS.len(), 0..n + 2, any::<bool>());
    proptest::collection::vec(one, n).prop_map(move |specs| {
        specs
            .into_iter()
            .enumerate()
            .map(|(i, (tool, source, in_instance))| {
                let x = match source {
                    0 => json!(i),
                    1 => json!("†input.v"),
                    j => json!(format!("†state.p{}", j - 2)),
                };
                let mut call =
                    json!({"_tool": TOOLS[tool], "x": x, "_outputPath": format!("†state.p{i}")});
                if in_instance {
                    call["_instance"] = json!("①");
                }
                call
            })
            .collect()
    })
}

fn views(ctx: &Context) -> (Option<Value>, Option<Value>) {
    let state = Kind::new("state").unwrap();
    let one = Instance::new("①").unwrap();
    (
        ctx.view(&state, None).cloned(),
        ctx.view(&state, Some(&one)).cloned(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn r39_a_turn_writes_what_the_same_plan_writes(calls in (1usize..6).prop_flat_map(call_strategy)) {
        let clock = FixedClock::parse("2026-01-01T00:00:00Z").unwrap();
        let mut by_plan = start();
        match Plan::new(calls.clone()) {
            Ok(plan) => {
                plan.run(&mut by_plan, &activities(), &clock);
            }
            // Calls that read each other in a cycle: no plan runs, but the
            // answer's leading calls that read nothing started as they
            // arrived, and what ran is written (D77: calls start while streaming).
            Err(_) => {
                let leading: Vec<Value> = calls
                    .iter()
                    .take_while(|c| c["x"].is_number())
                    .cloned()
                    .collect();
                Plan::new(leading).unwrap().run(&mut by_plan, &activities(), &clock);
            }
        }
        let mut by_turn = start();
        let mut settings = Loop::new("once");
        settings.max_turns = 1;
        settings.tools = TOOLS
            .iter()
            .map(|t| Tool::new(json!({"type": "object", "properties": {"_tool": {"const": t}}}), t).unwrap())
            .collect();
        settings
            .run(&Once(Mutex::new(Some(Value::Array(calls.clone().into())))), &activities(), &mut by_turn, &clock, &mut |_| {})
            .unwrap();
        prop_assert_eq!(views(&by_turn), views(&by_plan), "calls: {}", Value::Array(calls.into()));
    }
}
