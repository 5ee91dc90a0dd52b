//! Workers on a stored plan, driven as a library (not through the binary),
//! against the real test server (spec R34d).

use agent_core::{Kind, json, json::Value};
use agent_data::{Context, Message};
use agent_plan::Activities;
use agent_store::{PgStore, Store};
use agent_worker::{Worker, WorkerOptions, WorkerReport, plan_status};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use test_support::database;

/// A fresh context on the test server holding `plan`.
fn stored_plan(name: &str, plan: Value) -> String {
    let url = database::with_context(&database::url(), &database::unique_name("worker", name));
    let mut store =
        PgStore::open(&url).unwrap_or_else(|e| panic!("{e}\n{}", database::HOW_TO_PROVIDE));
    let mut context = Context::new();
    store
        .commit(&mut context, &Message::from_value(plan).unwrap())
        .unwrap_or_else(|e| panic!("{e}\n{}", database::HOW_TO_PROVIDE));
    url
}

fn options(name: &str) -> WorkerOptions {
    WorkerOptions::new(name)
        .with_concurrency(4)
        .with_until_idle(true)
        .with_retries(1)
}

fn worker(url: &str, activities: Activities, name: &str) -> Worker {
    Worker::new(
        url,
        activities,
        Box::new(agent_output::SystemClock),
        options(name),
    )
}

/// The view of `state` the stored log folds to.
fn state(url: &str) -> Value {
    let context = PgStore::open(url).unwrap().load().unwrap().context;
    let state = Kind::new("state").unwrap();
    context.view(&state, None).cloned().unwrap_or(Value::Null)
}

#[test]
fn r34d_three_workers_on_one_plan_run_each_call_once_and_write_every_result() {
    const CALLS: usize = 30;
    let calls: Vec<Value> = (0..CALLS)
        .map(|i| json!({"_tool": "square", "n": i, "_outputPath": format!("†state.r{i}")}))
        .collect();
    let url = stored_plan("three", json!({"type": "plan", "calls": calls}));
    let ran: Arc<Mutex<BTreeMap<i64, usize>>> = Arc::default();
    let reports: Vec<WorkerReport> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..3)
            .map(|w| {
                let (ran, url) = (ran.clone(), url.clone());
                scope.spawn(move || {
                    let mut activities = Activities::new();
                    activities.register("square", move |call: &Value| {
                        let n = call["n"].as_i64().unwrap();
                        *ran.lock().unwrap().entry(n).or_default() += 1;
                        std::thread::sleep(Duration::from_millis(5));
                        Ok(json!(n * n))
                    });
                    worker(&url, activities, &format!("w{w}")).run().unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let ran = ran.lock().unwrap().clone();
    assert_eq!(ran.len(), CALLS, "every call ran: {ran:?}");
    assert!(
        ran.values().all(|&times| times == 1),
        "none ran twice: {ran:?}"
    );
    let written: usize = reports.iter().map(|r| r.written).sum();
    assert_eq!(written, CALLS, "{reports:?}");
    let state = state(&url);
    for i in 0..CALLS {
        assert_eq!(
            state[format!("r{i}").as_str()],
            json!(i * i),
            "r{i} in {state}"
        );
    }
    let status = plan_status(&url).unwrap();
    assert_eq!(
        (status.counts().done, status.counts().total),
        (CALLS, CALLS)
    );
}

#[test]
fn r34d_a_call_reading_what_another_writes_runs_after_it_and_reads_its_result() {
    let url = stored_plan(
        "chain",
        json!({"type": "plan", "calls": [
            {"_tool": "add", "x": "†state.first", "_outputPath": "†state.second"},
            {"_tool": "add", "x": 1, "_outputPath": "†state.first"}
        ]}),
    );
    let mut activities = Activities::new();
    activities.register("add", |call: &Value| {
        Ok(json!(call["x"].as_i64().unwrap() + 10))
    });
    let report = worker(&url, activities, "chain").run().unwrap();
    assert_eq!(report.written, 2, "{report:?}");
    assert_eq!(state(&url), json!({"first": 11, "second": 21}));
}

#[test]
fn r34d_an_activity_that_keeps_failing_fails_its_call_after_the_retries_and_nothing_is_written() {
    let url = stored_plan(
        "fails",
        json!({"type": "plan", "calls": [{"_tool": "broken", "_outputPath": "†state.out"}]}),
    );
    let attempts = Arc::new(Mutex::new(0));
    let counted = attempts.clone();
    let mut activities = Activities::new();
    activities.register("broken", move |_: &Value| {
        *counted.lock().unwrap() += 1;
        Err(json!("the service said no"))
    });
    let report = worker(&url, activities, "fails").run().unwrap();
    assert_eq!((report.failed, report.written), (1, 0), "{report:?}");
    assert_eq!(
        *attempts.lock().unwrap(),
        2,
        "the first attempt and one retry"
    );
    assert_eq!(state(&url), Value::Null);
    let status = plan_status(&url).unwrap();
    assert_eq!(status.counts().failed, 1);
    let call = &status.calls()[0];
    assert_eq!(call.state, "failed");
}
