//! Activities are bounded (a misbehaving command must not stall or
//! exhaust `run`): a hang is killed after
//! `--activity-timeout`, a flood after 64 MiB, and children an activity
//! leaves behind do not keep `run` waiting.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use crate::support::{Run, spawn};
use agent_core::json::Value;
use std::time::{Duration, Instant};

fn context() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    std::fs::write(&path, "{\"type\":\"input\",\"data\":{\"a\":1}}\n").unwrap();
    let path = path.to_str().unwrap().to_owned();
    (dir, path)
}

/// Runs `agentctx ARGS`, failing the test if it is still running after
/// `limit` (a hang, not a measurement: the limit is far above the work).
fn finishes_within(args: &[&str], limit: Duration) -> Run {
    let mut child = spawn(args);
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            child.kill().unwrap();
            panic!("agentctx {args:?} still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap().into()
}

fn report(run: &Run) -> Value {
    agent_core::json::from_str(&run.stdout).unwrap()
}

#[test]
fn an_activity_that_hangs_is_killed_after_the_timeout_and_its_failure_says_so() {
    let (_dir, ctx) = context();
    let run = finishes_within(
        &[
            "run",
            &ctx,
            r#"[{"_tool":"x","_outputPath":"†state.a || †state.error"}]"#,
            "--activity",
            "x=echo started >&2; sleep 60",
            "--activity-timeout",
            "1",
        ],
        Duration::from_secs(30),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let call = &report(&run)["calls"][0];
    assert_eq!(call["outcome"], "failure");
    assert_eq!(
        call["failure"],
        agent_core::json!({"error": "timed out after 1 s", "stderr": "started"})
    );
}

#[test]
fn an_activity_that_floods_its_output_is_stopped_at_the_cap() {
    let (_dir, ctx) = context();
    let run = finishes_within(
        &[
            "run",
            &ctx,
            r#"[{"_tool":"x","_outputPath":"†state.a"}]"#,
            "--activity",
            "x=yes",
        ],
        Duration::from_secs(60),
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    let call = &report(&run)["calls"][0];
    assert_eq!(call["status"], "failed");
    assert_eq!(call["failure"]["error"], "printed more than 67108864 bytes");
}

#[test]
fn children_an_activity_leaves_running_do_not_keep_run_waiting() {
    let (_dir, ctx) = context();
    // The background sleep inherits stdout; without killing the group, run
    // would wait for it to close.
    let run = finishes_within(
        &[
            "run",
            &ctx,
            r#"[{"_tool":"x","_outputPath":"†state.a"}]"#,
            "--activity",
            "x=sleep 60 & echo 7",
        ],
        Duration::from_secs(30),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(report(&run)["calls"][0]["status"], "done");
}

#[test]
fn spec10_an_activity_whose_stdout_is_not_json_fails_quoting_its_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    std::fs::write(&path, "{\"type\":\"input\",\"data\":{\"x\":1}}\n").unwrap();
    let path = path.to_str().unwrap();
    let plan = r#"[{"_tool":"t","_outputPath":"†state.y || †state.failed"}]"#;
    let long = format!("t=printf '{}é{}'", "x".repeat(199), "y".repeat(50));
    for (activity, quoted) in [
        ("t=echo hello, not JSON", "hello, not JSON".to_owned()),
        (long.as_str(), format!("{}…", "x".repeat(199))),
    ] {
        let run = crate::support::agentctx(&["run", path, plan, "--activity", activity]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        let report: agent_core::json::Value = agent_core::json::from_str(&run.stdout).unwrap();
        assert_eq!(report["calls"][0]["outcome"], "failure", "{}", run.stdout);
        let failure = &report["calls"][0]["failure"];
        assert_eq!(failure["stdout"], quoted.as_str(), "{}", run.stdout);
        assert_eq!(
            failure["error"], "stdout is not JSON: expected value at line 1 column 1",
            "{}",
            run.stdout
        );
    }
}
