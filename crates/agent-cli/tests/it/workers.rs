//! `agentctx worker` and `agentctx status` through the real binary on a
//! real PostgreSQL server (R34d, decision D41): many worker processes
//! running the newest plan message of one context, each call's result
//! written once — with a worker killed mid-run, the server restarted under
//! them, random plans checked against a single-process `agentctx run`, and
//! bad input.
//!
//! The server is `AGENTCTX_TEST_DATABASE_URL`, else
//! `postgres://root@127.0.0.1:5432/test` (`cargo xtask ci` provides one).
//! The restart test starts its own throwaway cluster with the machine's
//! `initdb` and `pg_ctl`. Nothing here is skipped when they are missing: it
//! fails and says what to provide. Activities are `sh` commands (`cat`,
//! `sleep`, `exit`): deterministic from the resolved call on their stdin.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use crate::support::{Run, Stderr, agentctx, fresh, spawn, with_context};

use test_support::cluster as pg_cluster;

use agent_core::{json, json::Value};
use agent_data::Context;
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::process::Child;
use std::time::{Duration, Instant};

/// The write time every worker and run is given, so `_date` is the same.
const DATE: &str = "2026-01-01T00:00:00Z";

fn append(url: &str, messages: &Value) {
    let run = agentctx(&["append", url, &messages.to_string()]);
    assert_eq!(
        (run.code, run.stderr_without_count().as_str()),
        (0, ""),
        "{run:?}"
    );
}

/// `agentctx worker URL --name NAME --date DATE --activity TOOL=CMD… ARGS…`.
fn worker(url: &str, name: &str, activities: &[(&str, &str)], args: &[&str]) -> Child {
    let mut all: Vec<String> = ["worker", url, "--name", name, "--date", DATE]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    for (tool, command) in activities {
        all.push("--activity".into());
        all.push(format!("{tool}={command}"));
    }
    all.extend(args.iter().map(|s| (*s).to_owned()));
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    spawn(&all)
}

fn finish(child: Child) -> Run {
    let mut run: Run = child.wait_with_output().unwrap().into();
    run.stderr = without_pooler_notice(run.stderr);
    run
}

/// A worker's standard error without the line a worker behind a pooler
/// prints first (D109: behind a pooler), which only a pass through one
/// may show.
fn without_pooler_notice(stderr: String) -> String {
    let notice = |line: &str| line.contains("goes through a connection pooler");
    match stderr.split_once('\n') {
        Some((first, rest)) if notice(first) => {
            assert!(test_support::database::pooled(), "{stderr}");
            rest.to_owned()
        }
        _ => stderr,
    }
}

/// Kills a worker with SIGKILL (it may have exited already) and reaps it.
fn kill(mut child: Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// `agentctx status URL [--calls]`, which must succeed.
fn status(url: &str, calls: bool) -> Value {
    let args: &[&str] = if calls {
        &["status", url, "--calls"]
    } else {
        &["status", url]
    };
    let run = agentctx(args);
    assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{run:?}");
    agent_core::json::from_str(&run.stdout).unwrap()
}

/// The JSON a worker prints with --until-idle.
fn report(run: &Run) -> Value {
    agent_core::json::from_str(run.stdout.trim())
        .unwrap_or_else(|e| panic!("worker printed no report ({e}): {run:?}"))
}

/// Every message of the context at `url`, as stored (through `copy`).
fn messages(url: &str) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.jsonl");
    let run = agentctx(&["copy", url, out.to_str().unwrap()]);
    assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{run:?}");
    std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| agent_core::json::from_str(l).unwrap())
        .collect()
}

/// How many result messages each `(instance, _outputPath)` got.
fn results(messages: &[Value]) -> BTreeMap<(String, String), usize> {
    let mut counts = BTreeMap::new();
    for m in messages {
        if let Some(path) = m["_outputPath"].as_str() {
            let instance = m["_instance"].as_str().unwrap_or("").to_owned();
            *counts.entry((instance, path.to_owned())).or_default() += 1;
        }
    }
    counts
}

/// The view of every layer: `kind` or `kind/instance` (an instance's view
/// is read through the global layer, R5).
fn views(messages: &[Value]) -> BTreeMap<String, Value> {
    let context = Context::from_json(&Value::from(messages.to_vec()).to_string()).unwrap();
    context
        .identities()
        .map(|id| {
            let name = match &id.instance {
                Some(i) => format!("{}/{}", id.kind.as_str(), i.as_str()),
                None => id.kind.as_str().to_owned(),
            };
            let view = context.view(&id.kind, id.instance.as_ref()).cloned();
            (name, view.unwrap_or(Value::Null))
        })
        .collect()
}

/// Polls `until` every 50 ms for at most `limit`.
fn wait_for(limit: Duration, what: &str, mut until: impl FnMut() -> bool) {
    let started = Instant::now();
    while !until() {
        assert!(started.elapsed() < limit, "waited {limit:?} for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `n` instances `i0`… each with an `input` `{"id": N}`, and a plan of two
/// calls each: `fetch` reads the input and writes `†state.profile`, `summ`
/// reads that and writes `†state.summary`.
fn two_step_plan(url: &str, n: usize) -> usize {
    let inputs: Vec<Value> = (0..n)
        .map(|i| json!({"type": "input", "data": {"id": i}, "_instance": format!("i{i}")}))
        .collect();
    append(url, &Value::from(inputs));
    let calls: Vec<Value> = (0..n)
        .flat_map(|i| {
            let instance = format!("i{i}");
            [
                json!({"_tool": "fetch", "_instance": instance, "id": "†input.id", "_outputPath": "†state.profile"}),
                json!({"_tool": "summ", "_instance": instance, "p": "†state.profile", "_outputPath": "†state.summary"}),
            ]
        })
        .collect();
    append(url, &json!({"type": "plan", "calls": calls}));
    n
}

/// What `cat` makes of the two-step plan: each result is the resolved call.
fn assert_two_step_views(messages: &[Value], n: usize) {
    let counts = results(messages);
    assert_eq!(counts.len(), 2 * n, "a result for every call");
    for ((instance, path), count) in &counts {
        assert_eq!(*count, 1, "{instance} {path} written {count} times");
    }
    let views = views(messages);
    for i in 0..n {
        let instance = format!("i{i}");
        let profile = json!({"_tool": "fetch", "_instance": instance, "id": i, "_outputPath": "†state.profile"});
        let summary = json!({"_tool": "summ", "_instance": instance, "p": profile, "_outputPath": "†state.summary"});
        assert_eq!(
            views[&format!("state/{instance}")],
            json!({"profile": profile, "summary": summary}),
            "{instance}"
        );
    }
}

fn all_done(plan: usize, total: usize) -> Value {
    json!({"plan": plan, "total": total, "done": total, "running": 0, "ready": 0, "blocked": 0, "failed": 0})
}

#[test]
fn r34d_four_workers_and_one_killed_mid_run_write_every_result_exactly_once() {
    const INSTANCES: usize = 200;
    let started = Instant::now();
    let url = fresh("kill");
    two_step_plan(&url, INSTANCES);
    let fast = [("fetch", "sleep 0.05; cat"), ("summ", "cat")];
    // The victim's activities take three seconds: whenever it is killed, it
    // is in the middle of some, even when a status poll on a loaded machine
    // takes a second or more between seeing its claims and the kill.
    let slow = [("fetch", "sleep 3; cat"), ("summ", "sleep 3; cat")];
    let args = ["--lease", "2", "--concurrency", "4", "--until-idle"];
    let victim = worker(&url, "victim", &slow, &args);
    let others: Vec<Child> = (0..3)
        .map(|w| worker(&url, &format!("w{w}"), &fast, &args))
        .collect();
    // Kill it once others have written results and it holds claims.
    let mut seen = Value::Null;
    wait_for(Duration::from_secs(30), "results and victim claims", || {
        let now = status(&url, true);
        let mut running: BTreeMap<String, usize> = BTreeMap::new();
        for call in now["calls"].as_array().unwrap() {
            if call["state"] == "running" {
                *running.entry(call["worker"].to_string()).or_default() += 1;
            }
            // Every reference is there once the call before is done: a
            // result committed while status looked is not "missing".
            assert!(
                !call["reason"]
                    .as_str()
                    .is_some_and(|r| r.starts_with("missing")),
                "{call}"
            );
        }
        // --concurrency 4: never more claims at once.
        assert!(running.values().all(|&n| n <= 4), "{running:?}");
        let ready = now["done"].as_u64().unwrap() >= 40 && running.contains_key("\"victim\"");
        seen = now;
        ready
    });
    kill(victim);
    // What it held when it died: its claims seen just before the kill and
    // just after it (on a busy machine either status may miss some: one
    // it finished in between, or one whose lease ran out before the second
    // status and that another worker claimed), less those it finished
    // before dying. Nothing commits those calls but another worker, once
    // the lease has run out (2 s, renewed every third).
    let claims = |status: &Value| -> Vec<u64> {
        status["calls"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["state"] == "running" && c["worker"] == "victim")
            .map(|c| c["index"].as_u64().unwrap())
            .collect()
    };
    let mut claimed = claims(&seen);
    claimed.extend(claims(&status(&url, true)));
    claimed.sort_unstable();
    claimed.dedup();

    let runs: Vec<Run> = others.into_iter().map(finish).collect();
    let plan_row = INSTANCES; // the inputs, then the plan message
    let want = all_done(plan_row, 2 * INSTANCES);
    let mut written = 0;
    for run in &runs {
        assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{run:?}");
        let report = report(run);
        assert_eq!(report["plan"], want);
        written += report["did"]["written"].as_u64().unwrap();
    }
    assert_eq!(status(&url, false), want);
    let after = status(&url, true);
    let calls = after["calls"].as_array().unwrap();
    let held: Vec<u64> = claimed
        .into_iter()
        .filter(|&index| calls[usize::try_from(index).unwrap()]["worker"] != "victim")
        .collect();
    assert!(!held.is_empty(), "the victim held no claim when killed");
    for index in &held {
        let call = &calls[usize::try_from(*index).unwrap()];
        assert_eq!(call["state"], "done", "{call}");
        assert_ne!(call["worker"], "victim", "taken over: {call}");
        assert!(call["attempts"].as_u64().unwrap() >= 2, "{call}");
    }
    // Every result once: the survivors' and the victim's before it died.
    let by_victim = calls.iter().filter(|c| c["worker"] == "victim").count() as u64;
    assert_eq!(written + by_victim, 2 * INSTANCES as u64);
    assert_two_step_views(&messages(&url), INSTANCES);
    eprintln!(
        "{} calls, victim killed holding {held:?}, done in {:?}",
        2 * INSTANCES,
        started.elapsed()
    );
}

#[test]
fn r34d_workers_reconnect_after_the_server_restarts_and_write_nothing_twice() {
    const INSTANCES: usize = 60;
    let started = Instant::now();
    let cluster =
        pg_cluster::Cluster::start("agentctx-pg-restart-workers-", None).unwrap_or_else(|e| {
            panic!("this test starts its own PostgreSQL cluster and needs initdb and pg_ctl: {e}")
        });
    // In a pass through a pooler, one in front of this cluster too: the
    // pooler's server sessions die with the server, its clients' do not.
    let pooler = test_support::database::pooled().then(|| {
        test_support::pooler::PgBouncer::start(&cluster.url(), 4).unwrap_or_else(|e| panic!("{e}"))
    });
    let base = pooler.as_ref().map_or_else(|| cluster.url(), |p| p.url());
    let url = with_context(&base, "restart");
    two_step_plan(&url, INSTANCES);
    let activities = [("fetch", "sleep 0.1; cat"), ("summ", "sleep 0.05; cat")];
    let args = ["--lease", "2", "--concurrency", "2", "--until-idle"];
    let workers: Vec<Child> = (0..3)
        .map(|w| worker(&url, &format!("w{w}"), &activities, &args))
        .collect();
    wait_for(Duration::from_secs(30), "some results", || {
        status(&url, false)["done"].as_u64().unwrap() >= 10
    });
    cluster.pg_ctl(&["restart", "-m", "immediate"]).unwrap();
    if pooler.is_some() {
        // A pooler refuses clients for a while after a failed login to the
        // server (its `server_login_retry`, here 1 s): wait that out.
        let deadline = Instant::now() + Duration::from_secs(20);
        while agentctx(&["status", &url]).code != 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    let done_after_restart = status(&url, false)["done"].as_u64().unwrap();
    assert!(
        done_after_restart < 2 * INSTANCES as u64,
        "the restart came after the work: {done_after_restart}"
    );
    let runs: Vec<Run> = workers.into_iter().map(finish).collect();
    let want = all_done(INSTANCES, 2 * INSTANCES);
    let mut warned = 0;
    for run in &runs {
        assert_eq!(run.code, 0, "{run:?}");
        assert_eq!(report(run)["plan"], want, "{run:?}");
        // The lost connection is waited out, with a warning per try (or
        // per result whose commit must be sent again).
        for line in run.stderr.lines() {
            assert!(line.starts_with("warning: worker w"), "{line}");
            warned += 1;
        }
    }
    assert!(warned > 0, "no worker noticed the restart: {runs:?}");
    assert_eq!(status(&url, false), want);
    assert_two_step_views(&messages(&url), INSTANCES);
    eprintln!(
        "restart under 3 workers: {warned} warnings, done in {:?}",
        started.elapsed()
    );
}

/// A worker that exits at once: its exit status and stderr.
fn worker_fails(url: &str, args: &[&str]) -> (i32, String) {
    let mut all = vec!["worker", url];
    all.extend(args);
    let run = agentctx(&all);
    assert_eq!(run.stdout, "", "{run:?}");
    (run.code, without_pooler_notice(run.stderr))
}

#[test]
fn r34d_a_bad_plan_message_stops_workers_and_status_with_its_row() {
    let url = fresh("bad-plan");
    let idle = ["--activity", "t=cat", "--until-idle"];
    // No plan yet.
    append(&url, &json!({"type": "state", "data": {"a": 1}}));
    let none = format!(
        "error: {url} has no plan message (append {{\"type\":\"plan\",\"calls\":[…]}} first)\n"
    );
    assert_eq!(worker_fails(&url, &idle), (1, none.clone()));
    let run = agentctx(&["status", &url]);
    assert_eq!((run.code, run.stderr), (1, none));
    // The newest plan message counts; each of these is wrong.
    let cases = [
        (
            json!({"type": "plan", "calls": {"_tool": "t"}}),
            "\"calls\" must be an array of calls, found an object",
        ),
        (
            json!({"type": "plan"}),
            "it has no \"calls\": an array of calls",
        ),
        (
            json!({"type": "plan", "calls": [
                {"_tool": "t", "x": "†state.b", "_outputPath": "†state.a"},
                {"_tool": "t", "x": "†state.a", "_outputPath": "†state.b"}]}),
            "calls 0 → 1 depend on each other in a cycle",
        ),
        (
            json!({"type": "plan", "calls": [7]}),
            "call 0: a call must be a JSON object, found a number",
        ),
    ];
    for (row, (plan, reason)) in cases.iter().enumerate() {
        append(&url, plan);
        let want = format!("error: the plan message at row {}: {reason}\n", row + 1);
        assert_eq!(worker_fails(&url, &idle), (1, want.clone()), "{plan}");
        let run = agentctx(&["status", &url]);
        assert_eq!((run.code, run.stderr.as_str()), (1, want.as_str()));
    }
    // A message that only mentions a plan is not one: the cycle above is
    // still the newest plan.
    append(
        &url,
        &json!({"type": "state", "data": {"note": {"type": "plan", "calls": []}}}),
    );
    let (code, stderr) = worker_fails(&url, &idle);
    assert_eq!(code, 1);
    assert!(
        stderr.contains("at row 4: call 0: a call must be"),
        "{stderr}"
    );
}

#[test]
fn r34d_a_worker_started_before_its_plan_waits_for_it_and_runs_it() {
    let url = fresh("plan-later");
    append(&url, &json!({"type": "input", "data": {"id": 7}}));
    // Without --until-idle a worker waits for a plan instead of failing.
    let early = worker(&url, "early", &[("t", "cat")], &["--lease", "1"]);
    std::thread::sleep(Duration::from_millis(500));
    append(
        &url,
        &json!({"type": "plan", "calls": [{"_tool": "t", "id": "†input.id", "_outputPath": "†state.got"}]}),
    );
    wait_for(
        Duration::from_secs(20),
        "the waiting worker to run the plan",
        || status(&url, false)["done"] == json!(1),
    );
    kill(early);
    let views = views(&messages(&url));
    assert_eq!(
        views["state"],
        json!({"got": {"_tool": "t", "id": 7, "_outputPath": "†state.got"}})
    );
}

#[test]
fn r34d_bad_worker_arguments_are_usage_errors() {
    let url = fresh("usage");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.jsonl");
    std::fs::write(&file, "{\"type\":\"plan\",\"calls\":[]}\n").unwrap();
    let file = file.to_str().unwrap();
    let not_pg = |command: &str| {
        format!(
            "error: {command} needs a PostgreSQL CONTEXT (postgres://HOST/DB?context=NAME): workers \
             share a plan through the database, and {} is not one\n",
            Value::from(file)
        )
    };
    assert_eq!(
        worker_fails(file, &["--activity", "t=cat", "--until-idle"]),
        (2, not_pg("worker"))
    );
    let run = agentctx(&["status", file]);
    assert_eq!((run.code, run.stderr), (2, not_pg("status")));
    let cases: [(&[&str], &str); 4] = [
        (
            &["--until-idle"],
            "worker needs at least one --activity NAME=COMMAND or --mcp COMMAND: a worker with \
             no activities could run nothing",
        ),
        (
            &["--activity", "t=cat", "--concurrency", "0"],
            "--concurrency must be at least 1",
        ),
        (
            &["--activity", "t=cat", "--lease", "0.01"],
            "--lease must be at least 0.1 seconds",
        ),
        (
            &["--activity", "tcat"],
            "--activity \"tcat\": expected NAME=COMMAND",
        ),
    ];
    for (args, message) in cases {
        assert_eq!(
            worker_fails(&url, args),
            (2, format!("error: {message}\n")),
            "{args:?}"
        );
    }
    // A context that does not exist: nothing to run, nothing created.
    assert_eq!(
        worker_fails(&url, &["--activity", "t=cat", "--until-idle"]),
        (1, format!("error: {url}: no such context\n"))
    );
    let probe = agentctx(&["check", &url]);
    assert_eq!(probe.stderr, format!("error: {url}: no such context\n"));
}

#[test]
fn r34d_a_call_whose_tool_no_worker_has_is_blocked_and_the_worker_stops_promptly() {
    let url = fresh("no-tool");
    append(
        &url,
        &json!({"type": "plan", "calls": [
            {"_tool": "x", "_outputPath": "†state.a"},
            {"_tool": "t", "v": 1, "_outputPath": "†state.b"},
            {"_tool": "t", "a": "†state.a", "_outputPath": "†state.c"},
        ]}),
    );
    let started = Instant::now();
    let run = finish(worker(
        &url,
        "w",
        &[("t", "cat")],
        &["--until-idle", "--lease", "30"],
    ));
    let took = started.elapsed();
    assert!(took < Duration::from_secs(20), "took {took:?}");
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (3, "error: 2 call(s) blocked\n")
    );
    let want = json!({"plan": 0, "total": 3, "done": 1, "running": 0, "ready": 0, "blocked": 2, "failed": 0});
    let mut printed = report(&run);
    let round_trips = printed["did"]
        .as_object_mut()
        .unwrap()
        .remove("roundTrips")
        .unwrap();
    assert!(round_trips.as_u64().unwrap() > 0, "{round_trips}");
    assert_eq!(
        printed,
        json!({"worker": "w", "did": {"ran": 1, "written": 1, "alreadyWritten": 0, "fenced": 0, "stopped": 0, "retried": 0, "failed": 0}, "plan": want})
    );
    // The worker has stopped: nobody has tool t now either.
    let calls = status(&url, true);
    let reasons: Vec<&Value> = calls["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["reason"])
        .collect();
    assert_eq!(
        reasons,
        [
            &json!("no worker has an activity for tool \"x\""),
            &Value::Null,
            &json!("waits for call 0"),
        ]
    );
    assert_eq!(calls["calls"][1]["state"], "done");
    assert_eq!(calls["calls"][1]["worker"], "w");
    assert_eq!(calls["calls"][1]["attempts"], 1);
}

/// Sends `signal` (`STOP`, `CONT`) to a worker process.
fn signal(child: &Child, signal: &str) {
    let sent = std::process::Command::new("kill")
        .args([format!("-{signal}"), child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success(), "kill -{signal} {}", child.id());
}

/// A one-call plan the victim claims and is then stopped holding, past its
/// lease; `other` (with `args`) takes the call over and runs until idle.
/// The victim is then continued and runs until idle too: (victim, other).
fn stopped_past_its_lease(url: &str, other: &str, args: &[&str]) -> (Run, Run) {
    append(
        url,
        &json!({"type": "plan", "calls": [{"_tool": "t", "_outputPath": "†state.r"}]}),
    );
    // Its activity outlives the stop: activities run in their own process
    // group (D35: activity process groups), so only the worker is stopped, and the result waits.
    let victim = worker(
        url,
        "victim",
        &[("t", r#"sleep 3; echo '{"by":"victim"}'"#)],
        &["--lease", "1", "--until-idle"],
    );
    wait_for(Duration::from_secs(10), "the victim's claim", || {
        status(url, false)["running"] == 1
    });
    signal(&victim, "STOP");
    // The lease runs out a second after the last renewal at the latest.
    std::thread::sleep(Duration::from_millis(1500));
    let mut all = vec!["--lease", "1", "--until-idle"];
    all.extend(args);
    let other = finish(worker(url, "w", &[("t", other)], &all));
    signal(&victim, "CONT");
    (finish(victim), other)
}

#[test]
fn r34d_fenced_a_worker_stopped_past_its_lease_cannot_commit_after_another_finished() {
    let url = fresh("fenced-done");
    let (victim, w) = stopped_past_its_lease(&url, r#"echo '{"by":"w"}'"#, &[]);
    assert_eq!((w.code, w.stderr.as_str()), (0, ""), "{w:?}");
    assert_eq!(report(&w)["did"]["written"], 1, "{w:?}");
    // Continued, the victim's first renewal finds its claim taken: its
    // activity is stopped (or its result, ready meanwhile, dropped),
    // counted, not retried; the victim exits as the plan stands.
    assert_eq!((victim.code, victim.stderr.as_str()), (0, ""), "{victim:?}");
    let did = &report(&victim)["did"];
    assert_eq!(
        (
            &did["ran"],
            &did["written"],
            &did["alreadyWritten"],
            &did["fenced"],
            &did["stopped"]
        ),
        (&json!(1), &json!(0), &json!(0), &json!(0), &json!(1)),
        "{victim:?}"
    );
    let messages = messages(&url);
    assert_eq!(messages.len(), 2, "the plan and one result: {messages:?}");
    assert_eq!(views(&messages)["state"], json!({"r": {"by": "w"}}));
    let call = &status(&url, true)["calls"][0];
    assert_eq!(
        (&call["state"], &call["worker"], &call["attempts"]),
        (&json!("done"), &json!("w"), &json!(2)),
        "{call}"
    );
}

#[test]
fn r34d_fenced_a_worker_stopped_past_its_lease_cannot_turn_a_failed_call_done() {
    let url = fresh("fenced-failed");
    let (victim, w) = stopped_past_its_lease(
        &url,
        "cat >/dev/null; echo broken >&2; exit 1",
        &["--retries", "0"],
    );
    assert_eq!(w.code, 1, "{w:?}");
    assert_eq!(report(&w)["did"]["failed"], 1, "{w:?}");
    // A failed call never changes: the victim's late success is refused.
    assert_eq!(victim.code, 1, "{victim:?}");
    let did = &report(&victim)["did"];
    assert_eq!(
        (&did["written"], &did["stopped"], &did["failed"]),
        (&json!(0), &json!(1), &json!(0)),
        "{victim:?}"
    );
    assert_eq!(report(&victim)["plan"]["failed"], 1, "{victim:?}");
    let messages = messages(&url);
    assert_eq!(messages.len(), 1, "the plan alone: {messages:?}");
    let call = &status(&url, true)["calls"][0];
    assert_eq!(
        (&call["state"], &call["worker"], &call["attempts"]),
        (&json!("failed"), &json!("w"), &json!(2)),
        "{call}"
    );
}

#[test]
fn r34d_a_call_taken_over_from_a_killed_worker_runs_again_even_without_retries() {
    // --retries counts failed activities; a worker that died is not one.
    let url = fresh("takeover");
    append(
        &url,
        &json!({"type": "plan", "calls": [
            {"_tool": "t", "v": 1, "_outputPath": "†state.ok"},
            {"_tool": "bad", "v": 2, "_outputPath": "†state.b || †state.err"},
        ]}),
    );
    let victim = worker(
        &url,
        "victim",
        &[("t", "sleep 5; cat"), ("bad", "sleep 5; exit 1")],
        &["--lease", "0.5", "--concurrency", "2"],
    );
    wait_for(Duration::from_secs(10), "the victim's claims", || {
        status(&url, false)["running"] == 2
    });
    kill(victim);
    let run = finish(worker(
        &url,
        "w",
        &[("t", "cat"), ("bad", "cat >/dev/null; echo no >&2; exit 1")],
        &["--lease", "0.5", "--retries", "0", "--until-idle"],
    ));
    assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{run:?}");
    assert_eq!(report(&run)["plan"], all_done(0, 2));
    let views = views(&messages(&url));
    assert_eq!(
        views["state"],
        json!({"ok": {"_tool": "t", "v": 1, "_outputPath": "†state.ok"},
               "err": {"exitStatus": 1, "stderr": "no"}})
    );
    for call in status(&url, true)["calls"].as_array().unwrap() {
        assert_eq!(
            (&call["worker"], &call["attempts"]),
            (&json!("w"), &json!(2))
        );
    }
}

#[test]
fn r34d_results_of_one_place_keep_runs_order_when_a_worker_with_the_missing_tool_comes_later() {
    let url = fresh("late-tool");
    let calls = json!([
        {"_tool": "x", "v": "first", "_outputPath": "†state.list", "_outputMethod": "push"},
        {"_tool": "t", "v": "second", "_outputPath": "†state.list", "_outputMethod": "push"},
    ]);
    append(&url, &json!({"type": "state", "data": {"list": []}}));
    append(&url, &json!({"type": "plan", "calls": calls}));
    // Only t: the push of call 1 waits for call 0, whose tool nobody has.
    let only_t = finish(worker(&url, "t-only", &[("t", "cat")], &["--until-idle"]));
    assert_eq!(only_t.code, 3, "{only_t:?}");
    let calls_now = status(&url, true);
    assert_eq!(
        calls_now["calls"][1]["reason"],
        "waits for call 0, which writes the same place first"
    );
    let both = finish(worker(
        &url,
        "both",
        &[("t", "cat"), ("x", "cat")],
        &["--until-idle"],
    ));
    assert_eq!((both.code, both.stderr.as_str()), (0, ""), "{both:?}");
    let views = views(&messages(&url));
    let list: Vec<&Value> = views["state"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| &v["v"])
        .collect();
    assert_eq!(list, [&json!("first"), &json!("second")]);
}

/// What one call of a random plan does; `k` (its position) makes each
/// result distinct.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// Reads `†input.n`, writes `†state.a`.
    First,
    /// Reads `†state.a` (its instance's or the global one), writes `†state.b`.
    Then,
    /// Reads `†input.n`, pushes onto `†state.list`.
    Push,
    /// Reads `†state.list` (global pushes, then its instance's), writes
    /// `†state.seen`.
    ReadsList,
}

#[derive(Debug, Clone, Copy)]
struct RandomCall {
    /// `None`: a global call.
    instance: Option<usize>,
    step: Step,
    /// Its activity fails (deterministically).
    bad: bool,
    /// It has a failure outcome (`… || †state.err`, `†state.errs` for a push).
    handled: bool,
}

impl RandomCall {
    fn to_json(self, k: usize) -> Value {
        let (read, out, method) = match self.step {
            Step::First => (("n", "†input.n"), "†state.a", None),
            Step::Then => (("a", "†state.a"), "†state.b", None),
            Step::Push => (("n", "†input.n"), "†state.list", Some("push")),
            Step::ReadsList => (("l", "†state.list"), "†state.seen", None),
        };
        let failure = if method.is_some() {
            "†state.errs"
        } else {
            "†state.err"
        };
        let mut call = json!({
            "_tool": if self.bad { "bad" } else { "ok" },
            "k": k,
            read.0: read.1,
            "_outputPath": if self.handled { format!("{out} || {failure}") } else { out.to_owned() },
        });
        if let Some(method) = method {
            call["_outputMethod"] = json!(method);
        }
        if let Some(i) = self.instance {
            call["_instance"] = json!(format!("p{i}"));
        }
        call
    }
}

fn random_call(instances: usize) -> impl Strategy<Value = RandomCall> {
    (
        prop::option::weighted(0.75, 0..instances),
        prop_oneof![
            Just(Step::First),
            Just(Step::Then),
            Just(Step::Push),
            Just(Step::ReadsList)
        ],
        prop::bool::weighted(0.25),
        any::<bool>(),
    )
        .prop_map(|(instance, step, bad, handled)| RandomCall {
            instance,
            step,
            bad,
            handled,
        })
}

/// A random plan over 1–3 instances: 1–10 calls, dependent through
/// `†state.a` and `†state.list`, some global, some failing.
fn random_plan() -> impl Strategy<Value = (usize, Vec<RandomCall>)> {
    (1..=3usize).prop_flat_map(|instances| {
        (
            Just(instances),
            prop::collection::vec(random_call(instances), 1..=10),
        )
    })
}

/// How the workers run: each one's concurrency, the retries, and which
/// worker is killed how many milliseconds after they start.
#[derive(Debug, Clone)]
struct Crew {
    concurrency: Vec<usize>,
    retries: u32,
    kill: Option<(usize, u64)>,
}

fn crew() -> impl Strategy<Value = Crew> {
    (
        prop::collection::vec(1..=3usize, 1..=4),
        prop_oneof![3 => Just(0u32), 1 => Just(1u32)],
        prop::option::weighted(0.7, (0..4usize, 0..400u64)),
    )
        .prop_map(|(concurrency, retries, kill)| Crew {
            kill: kill.map(|(w, ms)| (w % concurrency.len(), ms)),
            concurrency,
            retries,
        })
}

/// Activities: `ok` echoes the resolved call, `bad` fails with
/// `{"exitStatus": 3, "stderr": "boom"}`; `pause` before either.
fn activities(pause: &str) -> [(&'static str, String); 2] {
    [
        ("ok", format!("sleep {pause}; cat")),
        (
            "bad",
            format!("sleep {pause}; cat >/dev/null; echo boom >&2; exit 3"),
        ),
    ]
}

/// The starting messages: global state with the lists, and an input per
/// instance (and a global one).
fn starting(instances: usize) -> Vec<Value> {
    let mut start = vec![
        json!({"type": "state", "data": {"list": [], "errs": []}}),
        json!({"type": "input", "data": {"n": -1}}),
    ];
    start.extend(
        (0..instances)
            .map(|i| json!({"type": "input", "data": {"n": i}, "_instance": format!("p{i}")})),
    );
    start
}

/// Runs `plan` with `crew` on a fresh PostgreSQL context and with a single
/// `agentctx run --write` on a file holding the same starting messages;
/// the views, the results and how it ended must be the same.
fn workers_match_run(instances: usize, plan: &[RandomCall], crew: &Crew) {
    let calls: Vec<Value> = plan.iter().enumerate().map(|(k, c)| c.to_json(k)).collect();
    let start = starting(instances);

    // One process, one file.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("run.jsonl");
    let lines: Vec<String> = start.iter().map(Value::to_string).collect();
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let file = file.to_str().unwrap();
    let [(ok, ok_cmd), (bad, bad_cmd)] = activities("0");
    let run = agentctx(&[
        "run",
        file,
        &Value::from(calls.clone()).to_string(),
        "--activity",
        &format!("{ok}={ok_cmd}"),
        "--activity",
        &format!("{bad}={bad_cmd}"),
        "--date",
        DATE,
        "--write",
    ]);
    assert!([0, 1, 3].contains(&run.code), "{run:?}");
    let report: Value = agent_core::json::from_str(&run.stdout).unwrap();
    let count = |states: &[&str]| {
        report["calls"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| states.contains(&c["status"].as_str().unwrap()))
            .count()
    };
    let lines: Vec<Value> = std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .map(|l| agent_core::json::from_str(l).unwrap())
        .collect();

    // Workers.
    let url = fresh("prop");
    append(&url, &Value::from(start.clone()));
    append(&url, &json!({"type": "plan", "calls": calls}));
    let retries = crew.retries.to_string();
    let spawn_worker = |name: &str, concurrency: usize, pause: &str| {
        let activities = activities(pause);
        let activities: Vec<(&str, &str)> =
            activities.iter().map(|(t, c)| (*t, c.as_str())).collect();
        let concurrency = concurrency.to_string();
        worker(
            &url,
            name,
            &activities,
            &[
                "--until-idle",
                "--lease",
                "1",
                "--retries",
                &retries,
                "--concurrency",
                &concurrency,
            ],
        )
    };
    let mut children: Vec<(String, Child)> = crew
        .concurrency
        .iter()
        .enumerate()
        .map(|(w, &c)| {
            // The one to be killed is slow, so a kill finds it mid-activity.
            let pause = if crew.kill.is_some_and(|(v, _)| v == w) {
                "0.2"
            } else {
                "0.01"
            };
            (format!("w{w}"), spawn_worker(&format!("w{w}"), c, pause))
        })
        .collect();
    if let Some((victim, after)) = crew.kill {
        std::thread::sleep(Duration::from_millis(after));
        let (_, child) = children.remove(victim);
        kill(child);
        children.push(("stand-in".into(), spawn_worker("stand-in", 2, "0.01")));
    }
    let want_code = run.code;
    let mut last = Value::Null;
    for (name, child) in children {
        let ran = finish(child);
        assert_eq!(ran.code, want_code, "{name}: {ran:?}\nrun: {report}");
        last = report_of(&ran);
    }
    let stored = messages(&url);
    // The views of every layer, and the results themselves, as run wrote them.
    assert_eq!(
        views(&stored),
        views(&lines),
        "run: {report}\nworkers: {last}"
    );
    // Which worker wrote a result, on which attempt, is the workers' own
    // (R21b); the rest is as run wrote it.
    let results_of = |messages: &[Value], skip: usize| {
        let mut results: Vec<String> = messages[skip..]
            .iter()
            .filter(|m| m["type"] != "plan")
            .map(|m| {
                let mut m = m.clone();
                if let Some(fields) = m.as_object_mut() {
                    fields.shift_remove("_worker");
                    fields.shift_remove("_attempt");
                }
                m.to_string()
            })
            .collect();
        results.sort();
        results
    };
    assert_eq!(
        results_of(&stored, start.len()),
        results_of(&lines, start.len())
    );
    let status = status(&url, false);
    assert_eq!(
        (
            &status["done"],
            &status["failed"],
            &status["blocked"],
            &status["running"],
            &status["ready"]
        ),
        (
            &json!(count(&["done"])),
            &json!(count(&["failed"])),
            &json!(count(&["blocked", "skipped"])),
            &json!(0),
            &json!(0)
        ),
        "run: {report}\nstatus: {status}"
    );
}

/// A worker's printed report, whatever its exit status.
fn report_of(run: &Run) -> Value {
    agent_core::json::from_str(run.stdout.trim()).unwrap_or(Value::Null)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 10,
        max_shrink_iters: 20,
        ..ProptestConfig::default()
    })]

    #[test]
    fn r34d_workers_killed_or_not_leave_the_views_a_single_run_leaves(
        (instances, plan) in random_plan(),
        crew in crew(),
    ) {
        workers_match_run(instances, &plan, &crew);
    }
}

#[test]
fn d109_a_worker_behind_pgbouncer_says_once_that_it_polls_and_runs_the_plan() {
    // Two server sessions for the worker's store, claims and appends.
    let pooler = test_support::pooler::PgBouncer::start(&test_support::database::direct_url(), 2)
        .unwrap_or_else(|e| panic!("{e}"));
    let url = with_context(&pooler.url(), "pooled-worker");
    append(
        &url,
        &json!({"type": "plan", "calls": [
            {"_tool": "t", "v": 1, "_outputPath": "†state.a"},
            {"_tool": "t", "a": "†state.a", "_outputPath": "†state.b"},
        ]}),
    );
    let run = agentctx(&["worker", &url, "--activity", "t=cat", "--until-idle"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stderr,
        format!(
            "agentctx: {url} goes through a connection pooler, where LISTEN cannot be used: \
             idle workers look for work every 1 s instead of being woken\n"
        )
    );
    assert_eq!(report(&run)["plan"], all_done(0, 2));
}
