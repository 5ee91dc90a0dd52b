//! The plan executor: dependencies, cycles, scheduling, activities, reports.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use agent_core::{json, json::Value};
use agent_data::Context;
use agent_output::{FixedClock, Outcome};
use agent_plan::{Activities, Error, Plan, Status, Taken};

fn clock() -> FixedClock {
    FixedClock::parse("2026-01-01T00:00:00Z").unwrap()
}

fn echo(call: &Value) -> Result<Value, Value> {
    Ok(call.get("value").cloned().unwrap_or(json!("ok")))
}

fn activities() -> Activities {
    let mut a = Activities::new();
    a.register("echo", echo);
    a.register("fail", |_: &Value| Err(json!("it broke")));
    a.register("explode", |_: &Value| -> Result<Value, Value> {
        panic!("kaboom")
    });
    a.register("choose", |call: &Value| -> Result<Value, Value> {
        Ok(call["value"].clone())
    });
    a
}

fn statuses(report: &agent_plan::Report) -> Vec<&'static str> {
    report.calls.iter().map(|c| c.status.name()).collect()
}

#[test]
fn dependency_is_a_read_of_an_overlapping_write_of_the_same_kind() {
    let plan = Plan::new(vec![
        json!({"_tool": "echo", "x": "†state.profile.name", "_outputPath": "†state.summary"}),
        json!({"_tool": "echo", "_outputPath": "†state.profile"}),
        json!({"_tool": "echo", "x": "†input.profile", "_outputPath": "†state.other"}),
        json!({"_tool": "echo", "x": "†state.summary.short", "_outputPath": "†audit.log"}),
    ])
    .unwrap();
    assert_eq!(plan.dependencies(), [vec![1], vec![], vec![], vec![0]]);
    assert_eq!(plan.waves(), [vec![1, 2], vec![0], vec![3]]);
}

#[test]
fn instance_calls_depend_on_their_instance_and_on_global_writers() {
    let plan = Plan::new(vec![
        json!({"_tool": "echo", "_instance": "①", "x": "†state.a", "_outputPath": "†state.b"}),
        json!({"_tool": "echo", "_instance": "②", "_outputPath": "†state.a"}),
        json!({"_tool": "echo", "_outputPath": "†state.a"}),
        json!({"_tool": "echo", "_instance": "①", "_outputPath": "†state.a"}),
        json!({"_tool": "echo", "x": "†state.a", "_outputPath": "†state.g"}),
    ])
    .unwrap();
    // ① reads a: written by ① and by the global call, not by ②.
    assert_eq!(plan.dependencies()[0], [2, 3]);
    // A global read sees only global writes.
    assert_eq!(plan.dependencies()[4], [2]);
}

#[test]
fn cycles_are_errors_naming_the_calls() {
    let err = Plan::new(vec![
        json!({"_tool": "echo", "_outputPath": "†state.z"}),
        json!({"_tool": "echo", "x": "†state.a", "_outputPath": "†state.b"}),
        json!({"_tool": "echo", "x": "†state.b", "_outputPath": "†state.c"}),
        json!({"_tool": "echo", "x": "†state.c", "_outputPath": "†state.a"}),
    ])
    .unwrap_err();
    match &err {
        Error::Cycle { calls } => {
            let mut sorted = calls.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, [1, 2, 3]);
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("in a cycle"), "{err}");
    // A call reading what it writes itself is not a cycle.
    assert!(Plan::new(vec![json!({"_tool": "echo", "x": "†state.log", "_outputPath": "†state.log", "_outputMethod": "push"})]).is_ok());
}

#[test]
fn bad_calls_are_errors_with_their_index() {
    for (call, reason) in [
        (json!([1]), "a call must be a JSON object"),
        (json!({"x": "†state.a ||"}), "syntax error"),
        (json!({"_outputPath": "state.a"}), "is not an expression"),
        (
            json!({"_outputPath": "†state.a", "_outputMethod": "upsert"}),
            "`_outputMethod`: unknown method \"upsert\"",
        ),
        (json!({"_instance": ""}), "`_instance`"),
    ] {
        let err = Plan::new(vec![json!({"_tool": "echo"}), call.clone()]).unwrap_err();
        match &err {
            Error::BadCall {
                index: 1,
                reason: r,
            } => assert!(r.contains(reason), "{call}: {r}"),
            other => panic!("{call}: {other:?}"),
        }
    }
}

#[test]
fn run_executes_in_dependency_order_and_reports() {
    let mut ctx = Context::from_json(r#"[{"type":"input","data":{"id":7}}]"#).unwrap();
    let plan = Plan::new(vec![
        json!({"_tool": "echo", "value": "†state.profile", "_outputPath": "†state.copy"}),
        json!({"_tool": "echo", "value": "†input.id", "_outputPath": "†state.profile"}),
    ])
    .unwrap();
    let report = plan.run(&mut ctx, &activities(), &clock());
    assert_eq!(statuses(&report), ["done", "done"]);
    assert_eq!(
        (report.calls[0].wave, report.calls[1].wave),
        (Some(1), Some(0))
    );
    assert_eq!(
        ctx.read(&"†state.copy".parse().unwrap(), None),
        Some(&json!(7))
    );
    // The appended message records the call as given, unresolved (R20).
    let last = ctx.messages().next_back().unwrap().to_value();
    assert_eq!(last["_call"]["value"], json!("†state.profile"));
}

#[test]
fn failures_blocks_skips_and_panics() {
    let mut ctx = Context::new();
    let plan = Plan::new(vec![
        json!({"_tool": "fail", "_outputPath": "†state.a"}),
        json!({"_tool": "echo", "x": "†state.a", "_outputPath": "†state.b"}),
        json!({"_tool": "fail", "_outputPath": "†state.ok || †state.err"}),
        json!({"_tool": "echo", "x": "†state.missing", "_outputPath": "†state.c"}),
        json!({"_tool": "explode", "_outputPath": "†state.d"}),
        json!({"_tool": "nobody", "_outputPath": "†state.e"}),
        json!({"_tool": "echo"}),
    ])
    .unwrap();
    let report = plan.run(&mut ctx, &activities(), &clock());
    assert_eq!(
        statuses(&report),
        [
            "failed", "skipped", "done", "blocked", "failed", "failed", "done"
        ]
    );
    assert_eq!(
        report.calls[0].status,
        Status::Failed {
            error: "unhandled failure: `_outputPath` has one outcome, so a failure has nowhere to go: \"it broke\"".into(),
            failure: Some(json!("it broke")),
        }
    );
    assert_eq!(report.calls[1].status, Status::Skipped { because: 0 });
    assert_eq!(
        report.calls[2].status,
        Status::Done {
            taken: Taken::Failure,
            paths: vec!["†state.err".into()],
            failure: Some(json!("it broke")),
        },
        "a handled failure is done (D17: run statuses) and says where it went"
    );
    assert_eq!(
        report.calls[3].status,
        Status::Blocked {
            missing: vec!["†state.missing".into()]
        }
    );
    match &report.calls[4].status {
        Status::Failed { error, failure } => {
            assert_eq!(error, "activity for \"explode\" panicked: kaboom");
            assert_eq!(failure, &None);
        }
        other => panic!("{other:?}"),
    }
    match &report.calls[5].status {
        Status::Failed { error, .. } => {
            assert_eq!(error, "no activity registered for tool \"nobody\"")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        ctx.read(&"†state.err".parse().unwrap(), None),
        Some(&json!("it broke"))
    );
    assert_eq!(
        report.calls[6].status,
        Status::Done {
            taken: Taken::Success,
            paths: vec![],
            failure: None
        },
        "fire-and-forget runs, appends nothing"
    );
    assert!(!report.all_done());
}

struct Choosy;

impl agent_plan::Activity for Choosy {
    fn run(&self, call: &Value) -> Outcome {
        if call["as_message"] == json!(true) {
            Outcome::Message(json!({"type": "state", "data": {"m": 1}}))
        } else {
            Outcome::Chosen {
                index: 1,
                value: json!("second"),
            }
        }
    }
}

#[test]
fn chosen_outcomes_and_returned_messages() {
    let mut ctx = Context::new();
    let mut acts = Activities::new();
    acts.register("choosy", Choosy);
    let plan = Plan::new(vec![
        json!({"_tool": "choosy", "_outputPath": "†state.a || †state.b"}),
        json!({"_tool": "choosy", "as_message": true, "_instance": "①", "_outputPath": "†state.m"}),
    ])
    .unwrap();
    let report = plan.run(&mut ctx, &acts, &clock());
    assert!(report.all_done(), "{report:?}");
    assert_eq!(
        ctx.read(&"†state.b".parse().unwrap(), None),
        Some(&json!("second"))
    );
    let one = agent_core::Instance::new("①").unwrap();
    assert_eq!(
        ctx.read(&"†state.m".parse().unwrap(), Some(&one)),
        Some(&json!(1))
    );
    let taken: Vec<(Taken, Vec<String>)> = report
        .calls
        .iter()
        .map(|c| match &c.status {
            Status::Done { taken, paths, .. } => (*taken, paths.clone()),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        taken,
        [
            (Taken::Chosen(1), vec!["†state.b".to_owned()]),
            // The returned message has no `_outputPath` of its own: it
            // writes where its `_call` points (R9).
            (Taken::Message, vec!["†state.m".to_owned()]),
        ]
    );
    assert_eq!(
        agent_core::json!(report)["calls"][0]["outcomeIndex"],
        json!(1),
        "a chosen outcome reports its position"
    );
}

#[test]
fn appended_messages_land_in_plan_order_within_a_wave() {
    let calls: Vec<Value> = (0..20).map(|i| json!({"_tool": "echo", "value": i, "_instance": format!("#{i}"), "_outputPath": "†state.v"})).collect();
    for _ in 0..5 {
        let mut ctx = Context::new();
        let report = Plan::new(calls.clone())
            .unwrap()
            .run(&mut ctx, &activities(), &clock());
        assert!(report.all_done());
        let order: Vec<String> = ctx
            .messages()
            .map(|m| m.fields()["_instance"].as_str().unwrap().to_owned())
            .collect();
        let expected: Vec<String> = (0..20).map(|i| format!("#{i}")).collect();
        assert_eq!(order, expected);
    }
}

#[test]
fn report_json_shape() {
    let mut ctx = Context::new();
    let plan = Plan::new(vec![
        json!({"_tool": "echo", "_outputPath": "†state.x"}),
        json!({"_tool": "echo", "x": "†state.nope"}),
    ])
    .unwrap();
    let report = plan.run(&mut ctx, &activities(), &clock());
    assert_eq!(
        agent_core::json!(report),
        json!({"calls": [
            {"index": 0, "tool": "echo", "wave": 0, "status": "done",
             "outcome": "success", "outcomeIndex": 0, "paths": ["†state.x"]},
            {"index": 1, "tool": "echo", "wave": 0, "status": "blocked", "missing": ["†state.nope"]}
        ]})
    );
}

#[cfg(feature = "async")]
#[test]
fn async_activities_run_in_plans() {
    use agent_plan::{ActivityFuture, AsyncActivity};
    use std::task::Poll;

    /// Pending once (waking itself), then ready: exercises the executor's park/wake.
    struct Slow;
    impl AsyncActivity for Slow {
        fn run<'a>(&'a self, call: &'a Value) -> ActivityFuture<'a> {
            let mut first = true;
            Box::pin(std::future::poll_fn(move |cx| {
                if first {
                    first = false;
                    cx.waker().wake_by_ref();
                    Poll::Pending
                } else {
                    Poll::Ready(Outcome::Success(call["v"].clone()))
                }
            }))
        }
    }
    let mut acts = Activities::new();
    acts.register_async("slow", Slow);
    let mut ctx = Context::new();
    let plan = Plan::new(vec![
        json!({"_tool": "slow", "v": 5, "_outputPath": "†state.x"}),
    ])
    .unwrap();
    assert!(plan.run(&mut ctx, &acts, &clock()).all_done());
    assert_eq!(
        ctx.read(&"†state.x".parse().unwrap(), None),
        Some(&json!(5))
    );
}

#[test]
fn r18_a_plan_over_its_dependency_limit_is_refused_and_one_within_it_is_not() {
    let writers = (0..10).map(|i| json!({"_tool": "w", "v": i, "_outputPath": "†state.x"}));
    let readers = (0..10)
        .map(|i| json!({"_tool": "r", "x": "†state.x", "_outputPath": format!("†state.r{i}")}));
    let calls: Vec<Value> = writers.chain(readers).collect();
    // Each reader depends on the ten writers: 100 in all.
    assert!(Plan::with_dependency_limit(calls.clone(), 100).is_ok());
    let error = Plan::with_dependency_limit(calls, 99).unwrap_err();
    assert_eq!(error, Error::TooManyDependencies { limit: 99 });
    assert_eq!(
        error.to_string(),
        "the calls depend on each other more than 99 times in all"
    );
}

/// A clock one second further on at each reading, so the order of the
/// readings shows in what is stamped.
struct Ticking(std::sync::atomic::AtomicU64);

impl agent_output::Clock for Ticking {
    fn now(&self) -> std::time::SystemTime {
        let tick = self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        std::time::UNIX_EPOCH + std::time::Duration::from_secs(tick)
    }
}

#[test]
fn r21b_a_run_stamps_each_start_before_its_activity_and_records_a_call_that_writes_nothing() {
    let plan = Plan::new(vec![
        json!({"_tool": "echo", "value": 1, "_outputPath": "†state.a"}),
        json!({"_tool": "echo", "x": "†state.a"}),
        json!({"_tool": "fail", "x": "†state.a"}),
    ])
    .unwrap();
    let mut ctx = Context::new();
    let clock = Ticking(std::sync::atomic::AtomicU64::new(0));
    let report = plan.run(&mut ctx, &activities(), &clock);
    // A failure with nowhere to go is dropped, as ever (R21): done.
    assert_eq!(statuses(&report), ["done", "done", "done"]);
    let log: Vec<Value> = (0..ctx.len())
        .map(|i| ctx.message(i).unwrap().to_value())
        .collect();
    assert_eq!(log.len(), 3, "{log:?}");
    // Call 0: started at tick 0, written at tick 1.
    assert_eq!(log[0]["_started"], json!("1970-01-01T00:00:00Z"));
    assert_eq!(log[0]["_date"], json!("1970-01-01T00:00:01Z"));
    // Calls 1 and 2 start together (ticks 2 and 3, in either order), then
    // are written in plan order (ticks 4 and 5).
    let mut starts = [log[1]["_started"].clone(), log[2]["_started"].clone()];
    starts.sort_by_key(|v| v.as_str().unwrap().to_owned());
    assert_eq!(
        starts,
        [json!("1970-01-01T00:00:02Z"), json!("1970-01-01T00:00:03Z")]
    );
    assert_eq!(log[1]["type"], json!("ran"));
    assert_eq!(log[1]["_call"], plan.calls()[1].as_value().clone());
    assert_eq!(log[1]["_date"], json!("1970-01-01T00:00:04Z"));
    assert!(log[1].get("_failed").is_none());
    assert_eq!(log[2]["type"], json!("ran"));
    assert_eq!(log[2]["_failed"], json!(true));
    assert_eq!(log[2]["_date"], json!("1970-01-01T00:00:05Z"));
    // The records write no view: only call 0's result folds.
    assert_eq!(ctx.identities().len(), 1);
}
