//! `append` as a setup step that can be run again (D103: `--if-empty`):
//! several MESSAGES as one batch, and `--if-empty`, which appends only to
//! a context holding no messages.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use crate::support::agentctx;

const PLAN: &str = r#"{"type":"plan","calls":[{"_tool":"t","_outputPath":"†state.x"}]}"#;

#[test]
fn d103_append_if_empty_sets_a_context_up_once_however_often_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    let lines = dir.path().join("start.jsonl");
    std::fs::write(
        &lines,
        "{\"type\":\"input\",\"data\":{\"a\":1}}\n{\"type\":\"state\",\"data\":{\"n\":0}}\n",
    )
    .unwrap();
    let from = format!("@{}", lines.display());
    let path = dir.path().join("c.jsonl");
    let c = path.to_str().unwrap();
    let first = agentctx(&["append", c, &from, PLAN, "--if-empty"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!(
        first.stderr,
        format!("appended 3 message(s); {c} now has 3 message(s)\n")
    );
    let written = std::fs::read(&path).unwrap();
    let again = agentctx(&["append", c, &from, PLAN, "--if-empty"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(
        again.stderr,
        format!("not appended: {c} already holds 3 message(s) (--if-empty)\n")
    );
    assert_eq!(std::fs::read(&path).unwrap(), written, "nothing appended");
}

#[test]
fn d103_several_messages_arguments_are_one_batch_all_or_none() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    let c = path.to_str().unwrap();
    let good = r#"{"type":"state","data":{"n":1}}"#;
    let bad = r#"{"type":"state","data":{"n":2},"_outputMethod":"pus"}"#;
    let refused = agentctx(&["append", c, good, bad]);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(!path.exists() || std::fs::read_to_string(&path).unwrap().is_empty());
    let both = agentctx(&["append", c, good, PLAN]);
    assert_eq!(both.code, 0, "{}", both.stderr);
    assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 2);
    let usage = agentctx(&["append", c, good, "--if-empty", "--key", "k"]);
    assert_eq!(usage.code, 2);
    assert!(usage.stderr.contains("--if-empty"), "{}", usage.stderr);
}
