//! `--key` (R34b, spec §10) through the real binary on a real PostgreSQL
//! server: `append`, `apply --write` and `run --write` with the same key
//! twice write once, on PostgreSQL and on a JSONL file; a JSON array file
//! refuses a key.
//!
//! The server is `AGENTCTX_TEST_DATABASE_URL`, else
//! `postgres://root@127.0.0.1:5432/test`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use crate::support::{PUSH, agentctx, fresh};
use agent_core::{json, json::Value};

fn state(url: &str) -> Value {
    let run = agentctx(&["view", url, "state"]);
    assert_eq!(run.code, 0, "{run:?}");
    agent_core::json::from_str(&run.stdout).unwrap()
}

fn ok(args: &[&str]) -> crate::support::Run {
    let run = agentctx(args);
    assert_eq!(run.code, 0, "{run:?}");
    run
}

const ITEM: &str =
    r#"{"type":"state","data":{"items":1},"_outputPath":"†state.items","_outputMethod":"push"}"#;

#[test]
fn r34b_append_with_a_key_twice_appends_one_message() {
    let url = fresh("key-append");
    ok(&["append", &url, r#"{"type":"state","data":{"items":[]}}"#]);
    let first = ok(&["append", &url, ITEM, "--key", "append-1"]);
    assert_eq!(first.stdout, "");
    assert_eq!(
        first.stderr,
        format!("appended 1 message(s); {url} now has 2 message(s)\n")
    );
    let second = ok(&["append", &url, ITEM, "--key", "append-1"]);
    assert_eq!(second.stdout, "");
    assert_eq!(
        second.stderr,
        format!(
            "note: {url}: the append with key append-1 had already landed; nothing was \
             appended again\nappended 0 message(s); {url} now has 2 message(s)\n"
        )
    );
    assert_eq!(state(&url)["items"], json!([1]));
    // Another key, and no key, append.
    ok(&["append", &url, ITEM, "--key", "append-2"]);
    ok(&["append", &url, ITEM]);
    assert_eq!(state(&url)["items"], json!([1, 1, 1]));
}

#[test]
fn r34b_apply_write_with_a_key_twice_writes_once() {
    let url = fresh("key-apply");
    ok(&["append", &url, r#"{"type":"state","data":{"items":[]}}"#]);
    let args = [
        "apply",
        &url,
        PUSH,
        "--result",
        "5",
        "--write",
        "--key",
        "apply-1",
        "--date",
        "2026-01-01T00:00:00Z",
    ];
    let first = ok(&args);
    let second = ok(&args);
    assert_eq!(first.stdout, second.stdout, "prints what a success prints");
    assert_eq!(first.stderr, "");
    assert!(
        second.stderr.contains("key apply-1 had already landed"),
        "{second:?}"
    );
    assert_eq!(state(&url)["items"], json!([5]));
}

#[test]
fn r34b_run_write_with_a_key_again_writes_each_result_once() {
    let url = fresh("key-run");
    ok(&["append", &url, r#"{"type":"state","data":{"a":[],"b":[]}}"#]);
    let dir = tempfile::tempdir().unwrap();
    let mark = dir.path().join("ran-once");
    let plan = r#"[{"_tool":"one","_outputPath":"†state.a","_outputMethod":"push"},
                   {"_tool":"two","_outputPath":"†state.b","_outputMethod":"push"}]"#;
    // `two` fails the first time it runs, then succeeds.
    let two = format!(
        "two=if [ -e '{0}' ]; then echo 2; else touch '{0}'; exit 1; fi",
        mark.display()
    );
    let args = [
        "run",
        &url,
        plan,
        "--activity",
        "one=echo 1",
        "--activity",
        &two,
        "--write",
        "--key",
        "run-1",
    ];
    let first = agentctx(&args);
    assert_eq!(first.code, 1, "{first:?}");
    assert_eq!(state(&url), json!({"a": [1], "b": []}));
    // Again with the same key: call 0 ran again but its result is not
    // appended again; call 1 is written now.
    let second = ok(&args);
    assert!(
        second
            .stderr
            .contains("key run-1/call-0 had already landed"),
        "{second:?}"
    );
    assert!(!second.stderr.contains("call-1"), "{second:?}");
    let report: Value = agent_core::json::from_str(&second.stdout).unwrap();
    assert_eq!(report["calls"][0]["status"], "done");
    assert_eq!(report["calls"][1]["status"], "done");
    assert_eq!(state(&url), json!({"a": [1], "b": [2]}));
    // A third time: nothing more.
    let third = ok(&args);
    assert!(
        third.stderr.contains("run-1/call-1 had already landed"),
        "{third:?}"
    );
    assert_eq!(state(&url), json!({"a": [1], "b": [2]}));
}

#[test]
fn r34b_a_jsonl_file_keeps_keys_so_the_same_key_twice_writes_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    let context = path.to_str().unwrap();
    ok(&["append", context, r#"{"type":"state","data":{"items":[]}}"#]);
    ok(&["append", context, ITEM, "--key", "file-1"]);
    let second = ok(&["append", context, ITEM, "--key", "file-1"]);
    assert!(second.stderr.starts_with("note: "), "{second:?}");
    assert_eq!(state(context), json!({"items": [1]}));
    let plan = r#"[{"_tool":"one","_outputPath":"†state.items","_outputMethod":"push"}]"#;
    for _ in 0..2 {
        ok(&[
            "run",
            context,
            plan,
            "--activity",
            "one=echo 2",
            "--write",
            "--key",
            "run-1",
        ]);
    }
    assert_eq!(state(context), json!({"items": [1, 2]}));
    assert!(dir.path().join(".c.jsonl.keys").exists());
}

#[test]
fn r34b_a_json_array_file_refuses_a_key_and_appends_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.json");
    let context = path.to_str().unwrap();
    ok(&["append", context, r#"{"type":"state","data":{"items":[]}}"#]);
    let before = std::fs::read(&path).unwrap();
    let run = agentctx(&["append", context, ITEM, "--key", "k"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(
        run.stderr,
        format!(
            "error: {context}: this store keeps no append keys, so an append with a key cannot \
             be made here (nothing was appended); append without a key\n"
        )
    );
    let plan = r#"[{"_tool":"one","_outputPath":"†state.items","_outputMethod":"push"}]"#;
    let run = agentctx(&[
        "run",
        context,
        plan,
        "--activity",
        "one=echo 1",
        "--write",
        "--key",
        "k",
    ]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("keeps no append keys"), "{run:?}");
    assert_eq!(run.stdout, "", "nothing ran");
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn r34b_a_bad_key_or_a_key_without_write_is_a_usage_error() {
    let url = fresh("key-bad");
    let run = agentctx(&["append", &url, ITEM, "--key", "two words"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr
            .contains("bad append key \"two words\": byte 3 is ' '"),
        "{run:?}"
    );
    let run = agentctx(&["apply", &url, PUSH, "--result", "1", "--key", "k"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("--write"), "{run:?}");
    let long = "k".repeat(125);
    let run = agentctx(&["run", &url, r#"[{"_tool":"t"}]"#, "--write", "--key", &long]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("--key: bad append key"), "{run:?}");
}
