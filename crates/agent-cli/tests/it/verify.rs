//! `agentctx verify` through the real binary: the chain's head is the same
//! for a file, a JSON array, stdin and a PostgreSQL copy; a message changed
//! under a snapshot, and a head other than the one kept, are findings.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use crate::support::{agentctx, command, fresh};
use agent_core::{json, json::Value};

fn report(stdout: &str) -> Value {
    agent_core::json::from_str(stdout).unwrap()
}

/// A JSONL log of `n` state writes, each its own line.
fn log(n: usize) -> String {
    (0..n)
        .map(|i| format!("{}\n", json!({"type": "state", "data": {"n": i}})))
        .collect()
}

#[test]
fn r34e_verify_gives_one_head_for_a_file_a_json_array_stdin_and_a_postgres_copy() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("c.jsonl");
    std::fs::write(&jsonl, log(5)).unwrap();
    let clean = agentctx(&["verify", jsonl.to_str().unwrap()]);
    assert_eq!(clean.code, 0, "{}", clean.stderr);
    let clean = report(&clean.stdout);
    assert_eq!(clean["messages"], 5);
    assert_eq!(clean["findings"], json!([]));
    let head = clean["head"].as_str().unwrap().to_owned();
    assert_eq!(head.len(), 64);

    let array = dir.path().join("c.json");
    let messages: Vec<Value> = log(5)
        .lines()
        .map(|l| agent_core::json::from_str(l).unwrap())
        .collect();
    std::fs::write(&array, serde_json::to_string(&messages).unwrap()).unwrap();
    let from_array = report(&agentctx(&["verify", array.to_str().unwrap()]).stdout);
    assert_eq!(from_array["head"], head.as_str());

    let mut piped = command(&["verify", "-"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    piped
        .stdin
        .take()
        .unwrap()
        .write_all(log(5).as_bytes())
        .unwrap();
    let piped = piped.wait_with_output().unwrap();
    assert_eq!(
        report(&String::from_utf8(piped.stdout).unwrap())["head"],
        head.as_str()
    );

    let url = fresh("verify-copy");
    let copied = agentctx(&["copy", jsonl.to_str().unwrap(), &url]);
    assert_eq!(copied.code, 0, "{}", copied.stderr);
    let in_postgres = agentctx(&["verify", &url]);
    assert_eq!(in_postgres.code, 0, "{}", in_postgres.stderr);
    assert_eq!(report(&in_postgres.stdout)["head"], head.as_str());
}

#[test]
fn r34e_verify_finds_a_head_other_than_the_one_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    std::fs::write(&path, log(3)).unwrap();
    let path = path.to_str().unwrap();
    let head = report(&agentctx(&["verify", path]).stdout)["head"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(agentctx(&["verify", path, "--expect", &head]).code, 0);
    // The last message edited in place, its length kept.
    let edited = log(3).replace(r#"{"n":2}"#, r#"{"n":7}"#);
    std::fs::write(path, edited).unwrap();
    let found = agentctx(&["verify", path, "--expect", &head]);
    assert_eq!(found.code, 1);
    let findings = report(&found.stdout)["findings"].clone();
    let head_finding = findings
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["finding"] == "head")
        .unwrap_or_else(|| panic!("{findings}"));
    assert_eq!(head_finding["expected"], head.as_str());
    // The head record agentctx left says the same from inside: the log
    // changed before its 3 messages.
    assert!(
        findings
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["finding"] == "recordChain"),
        "{findings}"
    );
    assert!(
        found.stderr.starts_with("error: 2 finding(s): "),
        "{}",
        found.stderr
    );
    let bad = agentctx(&["verify", path, "--expect", "nothex"]);
    assert_eq!(bad.code, 2);
    assert_eq!(
        bad.stderr,
        "error: --expect: \"nothex\" is not a chain digest (64 hex digits)\n"
    );
}

#[test]
fn r34e_verify_finds_a_message_changed_under_the_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    std::fs::write(&path, "").unwrap();
    let path_text = path.to_str().unwrap();
    // Appended through agentctx, so a writer leaves a snapshot beside it.
    let batch: String = log(200);
    let appended = agentctx(&[
        "append",
        path_text,
        &format!("@{}", {
            let p = dir.path().join("batch.jsonl");
            std::fs::write(&p, &batch).unwrap();
            p.to_str().unwrap().to_owned()
        }),
    ]);
    assert_eq!(appended.code, 0, "{}", appended.stderr);
    for i in 0..3 {
        let one = json!({"type": "state", "data": {"tail": i}}).to_string();
        assert_eq!(agentctx(&["append", path_text, &one]).code, 0);
    }
    assert!(
        dir.path().join(".c.jsonl.snapshot").exists(),
        "a snapshot was written"
    );
    assert_eq!(agentctx(&["verify", path_text]).code, 0);
    // Message 5 edited in place, same length: the snapshot's anchor (the
    // file's last bytes) still matches.
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replacen(r#"{"n":5}"#, r#"{"n":6}"#, 1)).unwrap();
    let found = agentctx(&["verify", path_text]);
    assert_eq!(found.code, 1, "{}", found.stdout);
    let finding = &report(&found.stdout)["findings"][0];
    assert_eq!(finding["finding"], "snapshotChain", "{finding}");
    assert!(finding["summarises"].as_u64().unwrap() > 5);
}

#[test]
fn r34e_every_write_can_print_the_head_that_verify_expects() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    let path = path.to_str().unwrap();
    let one = json!({"type": "state", "data": {"n": 1}}).to_string();
    let appended = agentctx(&["append", path, &one, "--head"]);
    assert_eq!(appended.code, 0, "{}", appended.stderr);
    let applied = agentctx(&[
        "apply",
        path,
        r#"{"_tool":"t","_outputPath":"†state.m"}"#,
        "--result",
        "2",
        "--write",
        "--head",
    ]);
    assert_eq!(applied.code, 0, "{}", applied.stderr);
    let line = applied.stderr.trim_end();
    let (head, count) = line
        .strip_prefix("head: ")
        .and_then(|rest| rest.split_once(' '))
        .unwrap_or_else(|| panic!("{line}"));
    assert_eq!(count, "(2 messages)");
    assert!(
        appended.stderr.ends_with("(1 messages)\n"),
        "{}",
        appended.stderr
    );
    // The head a write printed is the one verify recomputes.
    assert_eq!(agentctx(&["verify", path, "--expect", head]).code, 0);
    // Without --head, a write says only what it appended.
    assert_eq!(
        agentctx(&["append", path, &one]).stderr,
        format!("appended 1 message(s); {path} now has 3 message(s)\n")
    );
}

#[test]
fn d111_verify_chain_hashes_a_recorded_log_and_verifies_anything_else_in_full() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    let path_text = path.to_str().unwrap();
    std::fs::write(&path, "").unwrap();
    // Appended through agentctx: its lines as agentctx writes them, and
    // the head record beside them that says so.
    let batch = dir.path().join("batch.jsonl");
    std::fs::write(&batch, log(300)).unwrap();
    let appended = agentctx(&["append", path_text, &format!("@{}", batch.display())]);
    assert_eq!(appended.code, 0, "{}", appended.stderr);
    let full = report(&agentctx(&["verify", path_text]).stdout);
    let hashed = agentctx(&["verify", "--chain", path_text]);
    assert_eq!(hashed.code, 0, "{}", hashed.stderr);
    let hashed = report(&hashed.stdout);
    assert_eq!(hashed["folded"], false);
    assert_eq!(full["folded"], true);
    assert_eq!(hashed["head"], full["head"]);
    assert_eq!(hashed["messages"], 300);
    assert_eq!(hashed["findings"], json!([]));
    // The same lines with no record: nothing says they are as agentctx
    // writes them, so they are read and folded.
    let bare = dir.path().join("bare.jsonl");
    std::fs::copy(&path, &bare).unwrap();
    let unrecorded = report(&agentctx(&["verify", "--chain", bare.to_str().unwrap()]).stdout);
    assert_eq!(unrecorded["folded"], true);
    assert_eq!(unrecorded["head"], full["head"]);
    // A line changed, its length kept: the record no longer confirms the
    // lines, so the full verify says what changed.
    let text = std::fs::read_to_string(&path).unwrap();
    let changed = text.replacen(r#"{"n":5}"#, r#"{"n":6}"#, 1);
    assert_ne!(changed, text);
    std::fs::write(&path, changed).unwrap();
    let found = agentctx(&["verify", "--chain", path_text]);
    assert_eq!(found.code, 1, "{}", found.stdout);
    let found = report(&found.stdout);
    assert_eq!(found["folded"], true);
    assert!(
        found["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["finding"] == "recordChain"),
        "{found}"
    );
}
