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

/// `square`: `n * n` of a call's `n`, counting in `ran` how often each
/// `n` ran.
pub(crate) fn squaring(ran: Arc<Mutex<BTreeMap<i64, usize>>>) -> Activities {
    let mut activities = Activities::new();
    activities.register("square", move |call: &Value| {
        let n = call["n"].as_i64().unwrap();
        *ran.lock().unwrap().entry(n).or_default() += 1;
        std::thread::sleep(Duration::from_millis(5));
        Ok(json!(n * n))
    });
    activities
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
                scope.spawn(move || worker(&url, squaring(ran), &format!("w{w}")).run().unwrap())
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
fn r21b_a_workers_result_says_who_ran_it_when_and_a_call_that_writes_nothing_leaves_a_ran_record() {
    let url = stored_plan(
        "ran",
        json!({"type": "plan", "calls": [
            {"_tool": "nap", "_outputPath": "†state.slept"},
            {"_tool": "nap", "after": "†state.slept"}
        ]}),
    );
    let mut activities = Activities::new();
    activities.register("nap", |_: &Value| {
        std::thread::sleep(Duration::from_millis(30));
        Ok(json!("zzz"))
    });
    let report = worker(&url, activities, "napper").run().unwrap();
    assert_eq!(report.written, 2, "{report:?}");
    let context = PgStore::open(&url).unwrap().load().unwrap().context;
    let log: Vec<Value> = context.messages().map(|m| m.to_value()).collect();
    assert_eq!(log.len(), 3, "{log:?}");
    let time = |m: &Value, key: &str| {
        let clock = agent_output::FixedClock::parse(m[key].as_str().unwrap()).unwrap();
        agent_output::Clock::now(&clock)
    };
    for m in &log[1..] {
        assert_eq!(
            (&m["_worker"], &m["_attempt"]),
            (&json!("napper"), &json!(1)),
            "{m}"
        );
        let took = time(m, "_date")
            .duration_since(time(m, "_started"))
            .unwrap();
        assert!(
            took >= Duration::from_millis(30),
            "the start precedes the nap: {m}"
        );
    }
    assert_eq!(log[2]["type"], json!("ran"));
    assert_eq!(
        log[2]["_call"],
        json!({"_tool": "nap", "after": "†state.slept"})
    );
    // The record changed no view, and the calls table counts it done.
    assert_eq!(state(&url), json!({"slept": "zzz"}));
    assert_eq!(plan_status(&url).unwrap().counts().done, 2);
}

#[test]
fn d113_a_value_another_writer_appends_mid_run_readies_the_call_missing_it() {
    let url = stored_plan(
        "appended",
        json!({"type": "plan", "calls": [
            {"_tool": "nap", "_outputPath": "†state.a"},
            {"_tool": "nap", "x": "†state.extra", "_outputPath": "†state.b"}
        ]}),
    );
    let mut activities = Activities::new();
    activities.register("nap", |_: &Value| {
        std::thread::sleep(Duration::from_millis(1_000));
        Ok(json!("zzz"))
    });
    let report = std::thread::scope(|scope| {
        let running = scope.spawn(|| worker(&url, activities, "napper").run().unwrap());
        // While call 0 naps, another writer supplies what call 1 misses:
        // the worker's next round must judge call 1 again.
        std::thread::sleep(Duration::from_millis(200));
        let mut store = PgStore::open(&url).unwrap();
        let mut context = store.load().unwrap().context;
        let extra = Message::from_value(json!({"type": "state", "data": {"extra": 1}})).unwrap();
        store.commit(&mut context, &extra).unwrap();
        running.join().unwrap()
    });
    assert_eq!(report.written, 2, "{report:?}");
    assert_eq!(state(&url), json!({"a": "zzz", "extra": 1, "b": "zzz"}));
}

#[test]
fn d113_a_worker_whose_own_row_ran_out_still_counts_its_tools_and_finishes_the_plan() {
    let url = stored_plan(
        "own-tools",
        json!({"type": "plan", "calls": [
            {"_tool": "nap", "_outputPath": "†state.a"},
            {"_tool": "nap", "after": "†state.a", "_outputPath": "†state.b"}
        ]}),
    );
    let mut activities = Activities::new();
    activities.register("nap", |_: &Value| {
        std::thread::sleep(Duration::from_millis(600));
        Ok(json!("zzz"))
    });
    let options = options("expired").with_lease(Duration::from_millis(300));
    let worker = Worker::new(
        &url,
        activities,
        Box::new(agent_output::SystemClock),
        options,
    );
    let done = std::sync::atomic::AtomicBool::new(false);
    let name = url.rsplit("context=").next().unwrap().to_owned();
    let report = std::thread::scope(|scope| {
        // As a database away for longer than the lease leaves it: every
        // worker's row run out, this one's too, again and again.
        scope.spawn(|| {
            let mut raw =
                postgres::Client::connect(&database::direct_url(), postgres::NoTls).unwrap();
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                // This test's context only: other tests share the table.
                raw.execute(
                    "UPDATE agentctx_workers SET alive_until = now() - interval '1 hour' \
                     WHERE context = (SELECT id FROM agentctx_contexts WHERE name = $1)",
                    &[&name],
                )
                .unwrap();
                std::thread::sleep(Duration::from_millis(2));
            }
        });
        let report = worker.run();
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        report.unwrap()
    });
    assert_eq!(report.written, 2, "{report:?}");
    assert_eq!(state(&url), json!({"a": "zzz", "b": "zzz"}));
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

/// Runs until asked to stop (at most 30 s), noting when it was.
struct UntilStopped(Arc<Mutex<Option<std::time::Instant>>>);

impl agent_plan::Activity for UntilStopped {
    fn run(&self, call: &Value) -> agent_output::Outcome {
        self.run_until(call, &agent_plan::Stop::new())
    }

    fn run_until(&self, _: &Value, stop: &agent_plan::Stop) -> agent_output::Outcome {
        let started = std::time::Instant::now();
        while started.elapsed() < Duration::from_secs(30) {
            if stop.is_stopped() {
                *self.0.lock().unwrap() = Some(std::time::Instant::now());
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        agent_output::Outcome::Success(json!("late"))
    }
}

#[test]
fn r34d_an_activity_whose_claim_was_taken_over_is_stopped_at_the_next_renewal_and_its_result_dropped()
 {
    let url = stored_plan(
        "taken",
        json!({"type": "plan", "calls": [{"_tool": "slow", "_outputPath": "†state.out"}]}),
    );
    let name = database::unique_name("holder", "a");
    let thief = database::unique_name("thief", "b");
    let stopped_at = Arc::new(Mutex::new(None));
    let mut activities = Activities::new();
    activities.register("slow", UntilStopped(stopped_at.clone()));
    let options = options(&name).with_lease(Duration::from_millis(900));
    let mut db = postgres::Client::connect(&database::direct_url(), postgres::NoTls).unwrap();
    let report = std::thread::scope(|scope| {
        let running = scope.spawn(|| {
            Worker::new(
                &url,
                activities,
                Box::new(agent_output::SystemClock),
                options,
            )
            .run()
            .unwrap()
        });
        let held = |db: &mut postgres::Client, who: &str| -> i64 {
            db.query_one(
                "SELECT count(*) FROM agentctx_calls WHERE worker = $1 AND state = 'running'",
                &[&who],
            )
            .unwrap()
            .get(0)
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while held(&mut db, &name) == 0 {
            assert!(std::time::Instant::now() < deadline, "never claimed");
            std::thread::sleep(Duration::from_millis(10));
        }
        // Another worker takes the call over, as it would once this one's
        // lease ran out unrenewed.
        db.execute(
            "UPDATE agentctx_calls SET worker = $2, attempts = attempts + 1, claimed_at = now(), \
             lease_until = now() + interval '60 seconds' WHERE worker = $1 AND state = 'running'",
            &[&name, &thief],
        )
        .unwrap();
        let taken = std::time::Instant::now();
        while stopped_at.lock().unwrap().is_none() {
            assert!(
                taken.elapsed() < Duration::from_secs(5),
                "the activity ran on"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        let stopped_after = stopped_at.lock().unwrap().unwrap() - taken;
        // A renewal every third of the lease: stopped within about that.
        assert!(
            stopped_after < Duration::from_millis(900),
            "{stopped_after:?}"
        );
        // The other worker finishes the call its own way, and this one,
        // idle, ends.
        db.execute(
            "UPDATE agentctx_calls SET state = 'failed', error = 'taken by the test', \
             lease_until = NULL WHERE worker = $1",
            &[&thief],
        )
        .unwrap();
        running.join().unwrap()
    });
    assert_eq!(
        (report.stopped, report.written, report.fenced),
        (1, 0, 0),
        "{report:?}"
    );
    assert_eq!(
        state(&url),
        Value::Null,
        "the stopped activity's result is not written"
    );
}
