//! A failure a call's `_outputPath` handles is its result for a worker as
//! for `run` (D105: one rule for failures): written at once, never retried.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use crate::support::{agentctx, fresh};
use agent_core::json::{self, Value};

#[test]
fn d105_a_worker_writes_a_handled_failure_at_once_and_retries_an_unhandled_one() {
    let url = fresh("handled-failure");
    let plan = r#"{"type":"plan","calls":[
        {"_tool":"t","_outputPath":"†state.ok || †state.failed"},
        {"_tool":"t","_outputPath":"†state.only"}]}"#;
    let set_up = agentctx(&["append", &url, r#"{"type":"input","data":{"x":1}}"#, plan]);
    assert_eq!(set_up.code, 0, "{}", set_up.stderr);
    let worker = agentctx(&[
        "worker",
        &url,
        "--name",
        "w",
        "--activity",
        "t=cat >/dev/null; echo no >&2; exit 1",
        "--retries",
        "1",
        "--until-idle",
    ]);
    let report: Value = json::from_str(worker.stdout.trim()).unwrap();
    // The handled failure landed on its first attempt; the other was tried
    // twice and failed.
    assert_eq!(report["did"]["written"], 1, "{}", worker.stdout);
    assert_eq!(report["did"]["retried"], 1, "{}", worker.stdout);
    let status = agentctx(&["status", &url, "--calls"]);
    let status: Value = json::from_str(&status.stdout).unwrap();
    let calls = status["calls"].as_array().unwrap();
    assert_eq!(
        (&calls[0]["state"], &calls[0]["attempts"]),
        (&json::json!("done"), &json::json!(1)),
        "{status}"
    );
    assert_eq!(calls[1]["state"], "failed", "{status}");
    let seen = agentctx(&["view", &url, "state"]);
    assert!(
        seen.stdout.contains("\"failed\":{\"exitStatus\":1"),
        "{}",
        seen.stdout
    );
}
