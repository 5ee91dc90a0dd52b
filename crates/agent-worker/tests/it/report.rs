//! The JSON shapes `agentctx worker` and `agentctx status` print, as the
//! serde types serialise them (no database: built by hand).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use agent_core::json;
use agent_plan::{Plan, Standing};
use agent_store::{CallRow, CallState};
use agent_worker::{PlanStatus, WorkerReport};

#[test]
fn r34d_a_worker_report_keeps_its_camel_case_keys_in_order() {
    let report = WorkerReport {
        ran: 3,
        written: 2,
        already_written: 1,
        fenced: 5,
        stopped: 6,
        retried: 4,
        failed: 0,
        round_trips: 17,
    };
    assert_eq!(
        serde_json::to_string(&report).unwrap(),
        r#"{"ran":3,"written":2,"alreadyWritten":1,"fenced":5,"stopped":6,"retried":4,"failed":0,"roundTrips":17}"#
    );
}

#[test]
fn r34d_status_counts_and_calls_say_who_holds_what_and_why_the_rest_wait() {
    let plan = Plan::new(vec![
        json!({"_tool": "fetch", "_instance": "a", "_outputPath": "†state.p"}),
        json!({"_tool": "sum", "x": "†state.p", "_instance": "a", "_outputPath": "†state.s"}),
    ])
    .unwrap();
    let row = CallRow {
        call: 0,
        state: CallState::Running,
        worker: Some("w1".into()),
        attempts: 2,
        claimed_at: Some("2026-01-01T00:00:00Z".into()),
        lease_left: Some(10.0),
        retry_in: None,
        error: Some("attempt 1 failed: \"boom\"".into()),
    };
    let status = PlanStatus::new(
        5,
        plan,
        vec![
            Standing::Running,
            Standing::Blocked {
                reason: "waits for call 0".into(),
                stuck: false,
            },
        ],
        vec![Some(row), None],
    );
    assert_eq!(
        serde_json::to_string(&status.counts()).unwrap(),
        r#"{"plan":5,"total":2,"done":0,"running":1,"ready":0,"blocked":1,"failed":0}"#
    );
    assert_eq!(
        serde_json::to_string(&status.calls()).unwrap(),
        concat!(
            r#"[{"index":0,"tool":"fetch","instance":"a","state":"running","worker":"w1","#,
            r#""since":"2026-01-01T00:00:00Z","attempts":2,"error":"attempt 1 failed: \"boom\""},"#,
            r#"{"index":1,"tool":"sum","instance":"a","state":"blocked","reason":"waits for call 0"}]"#
        )
    );
}
