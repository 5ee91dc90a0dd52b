//! The one readiness rule (D42: one readiness rule): the in-process runner, the rule
//! as `status` applies it, and what a failed write means.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use agent_core::{json, json::Value};
use agent_data::{Append, AppendError, BuildMessages};
use agent_data::{Context, Message};
use agent_output::FixedClock;
use agent_plan::{Activities, Known, Plan, Standing, Status, standings};
use proptest::prelude::*;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

fn clock() -> FixedClock {
    FixedClock::parse("2026-01-01T00:00:00Z").unwrap()
}

/// A context whose store fails (as a database gone away does) from its
/// `fail_at`-th append on.
struct FailingStore {
    context: Context,
    appends: usize,
    fail_at: usize,
}

impl FailingStore {
    fn check(&mut self) -> Result<(), AppendError> {
        self.appends += 1;
        if self.appends >= self.fail_at {
            return Err(AppendError::Store(Box::new(std::io::Error::new(
                std::io::ErrorKind::ConnectionRefused,
                "cannot append to postgres://db/test?context=c: connection refused",
            ))));
        }
        Ok(())
    }
}

impl Append for FailingStore {
    fn context(&self) -> &Context {
        &self.context
    }
    fn append_all(&mut self, messages: &[Message]) -> Result<Range<usize>, AppendError> {
        self.check()?;
        Append::append_all(&mut self.context, messages)
    }
    fn append_built(&mut self, build: &mut BuildMessages<'_>) -> Result<Range<usize>, AppendError> {
        self.check()?;
        self.context.append_built(build)
    }
}

/// Activities that count how often they ran.
fn counted(runs: &Arc<AtomicUsize>) -> Activities {
    let mut activities = Activities::new();
    let echo = Arc::clone(runs);
    activities.register("echo", move |call: &Value| {
        echo.fetch_add(1, Ordering::SeqCst);
        Ok(call.get("value").cloned().unwrap_or(json!("ok")))
    });
    let fail = Arc::clone(runs);
    activities.register("fail", move |_: &Value| -> Result<Value, Value> {
        fail.fetch_add(1, Ordering::SeqCst);
        Err(json!("it broke"))
    });
    activities
}

#[test]
fn d42_a_store_failure_stops_the_run_and_fails_no_call() {
    let plan = Plan::new(vec![
        json!({"_tool": "echo", "_outputPath": "†state.a"}),
        json!({"_tool": "echo", "_outputPath": "†state.b"}),
        json!({"_tool": "echo", "_outputPath": "†state.c"}),
        json!({"_tool": "echo", "x": "†state.a", "_outputPath": "†state.d"}),
    ])
    .unwrap();
    let runs = Arc::new(AtomicUsize::new(0));
    let mut store = FailingStore {
        context: Context::new(),
        appends: 0,
        fail_at: 2,
    };
    let report = plan.run(&mut store, &counted(&runs), &clock());
    let names: Vec<&str> = report.calls.iter().map(|c| c.status.name()).collect();
    assert_eq!(names, ["done", "stopped", "stopped", "stopped"]);
    let stopped = Status::Stopped {
        error: "cannot append to postgres://db/test?context=c: connection refused".into(),
    };
    assert_eq!(report.calls[1].status, stopped, "the store's own words");
    // Wave 0's three activities ran; call 3 never started.
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    assert_eq!(report.calls[3].wave, None);
    assert_eq!(store.context.len(), 1, "only call 0's result is in the log");
    assert_eq!(
        agent_core::json!(report)["calls"][1],
        json!({"index": 1, "tool": "echo", "wave": 0, "status": "stopped",
               "error": "cannot append to postgres://db/test?context=c: connection refused"})
    );
}

#[test]
fn d42_a_refused_write_fails_its_call_and_the_run_goes_on() {
    let context = Context::from_json(
        r#"[{"type":"state","data":{"n":0},"schema":{"properties":{"n":{"type":"integer"}}}}]"#,
    )
    .unwrap();
    let plan = Plan::new(vec![
        json!({"_tool": "echo", "value": "not a number", "_outputPath": "†state.n"}),
        json!({"_tool": "echo", "value": 2, "_outputPath": "†state.m"}),
    ])
    .unwrap();
    let mut store = FailingStore {
        context,
        appends: 0,
        fail_at: usize::MAX,
    };
    let report = plan.run(&mut store, &counted(&Arc::default()), &clock());
    assert!(
        matches!(&report.calls[0].status, Status::Failed { error, .. } if error.contains("schema"))
    );
    assert_eq!(report.calls[1].status.name(), "done");
}

#[test]
fn d42_a_call_is_skipped_for_the_first_dependency_known_not_to_be_done() {
    // Call 3 reads what calls 1 and 2 write. Call 2 fails in wave 0; call 1
    // waits for call 0 and fails in wave 1. Call 3 is skipped as soon as
    // call 2 failed: because of call 2, though call 1 comes first.
    let plan = Plan::new(vec![
        json!({"_tool": "echo", "_outputPath": "†state.seed"}),
        json!({"_tool": "fail", "x": "†state.seed", "_outputPath": "†state.p"}),
        json!({"_tool": "fail", "_outputPath": "†state.q"}),
        json!({"_tool": "echo", "p": "†state.p", "q": "†state.q", "_outputPath": "†state.r"}),
    ])
    .unwrap();
    assert_eq!(plan.dependencies()[3], [1, 2]);
    let mut context = Context::new();
    let report = plan.run(&mut context, &counted(&Arc::default()), &clock());
    assert_eq!(report.calls[3].status, Status::Skipped { because: 2 });
    assert_eq!(report.calls[1].status.name(), "failed");
}

/// The standing `status` names for what a run reported.
fn known_of(status: &Status) -> Known {
    match status {
        Status::Done { .. } => Known::Done,
        Status::Failed { .. } => Known::Failed,
        _ => Known::Open,
    }
}

fn random_plan() -> impl Strategy<Value = Vec<Value>> {
    let call = (
        prop_oneof![Just("echo"), Just("fail")],
        prop::collection::vec(0..5usize, 0..3),
        0..5usize,
    )
        .prop_map(|(tool, reads, write)| {
            let mut call = json!({"_tool": tool, "_outputPath": format!("†state.k{write}")});
            for (i, r) in reads.iter().enumerate() {
                call[format!("r{i}")] = json!(format!("†state.k{r}"));
            }
            call
        });
    prop::collection::vec(call, 1..8)
}

proptest! {
    /// After a run, the rule applied to what the run recorded stands each
    /// call where the run left it: done and failed as recorded, skipped
    /// and blocked calls stuck (never to run), nothing ready or waiting.
    #[test]
    fn d42_the_runner_and_the_rule_agree(calls in random_plan()) {
        let Ok(plan) = Plan::new(calls) else { return Ok(()) };
        let mut context = Context::new();
        let report = plan.run(&mut context, &counted(&Arc::default()), &clock());
        let known: Vec<Known> = report.calls.iter().map(|c| known_of(&c.status)).collect();
        let after = standings(&plan, &[], &known, &context, &|_| true);
        for (call, standing) in report.calls.iter().zip(&after) {
            match (&call.status, standing) {
                (Status::Done { .. }, Standing::Done) | (Status::Failed { .. }, Standing::Failed) => {}
                (Status::Skipped { .. }, Standing::Blocked { reason, stuck: true }) => {
                    prop_assert!(reason.ends_with("which it depends on, will not be done"), "{reason}");
                }
                (Status::Blocked { missing }, Standing::Blocked { reason, stuck: true }) => {
                    prop_assert_eq!(reason, &format!("missing {}", missing.join(", ")));
                }
                (status, standing) => prop_assert!(false, "call {}: run says {status:?}, the rule {standing:?}", call.index),
            }
        }
    }
}
