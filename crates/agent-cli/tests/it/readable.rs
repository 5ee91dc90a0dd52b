//! Reports on a terminal are text, to a pipe JSON (D108: readable on a
//! terminal): `run`, `verify`, `instances` and `apply` on a real
//! pseudo-terminal (`script`), with and without `NO_COLOR`, and `--json`
//! asking for the JSON there too; `append --json`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use crate::support::{agentctx, on_terminal};
use agent_core::json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_agentctx");

/// A context of two messages, one of instance ①.
fn context(dir: &tempfile::TempDir) -> String {
    let path = dir.path().join("c.jsonl").display().to_string();
    let run = agentctx(&[
        "append",
        &path,
        r#"[{"type":"state","data":{"step":1}},{"type":"state","data":{"n":1},"_instance":"①"}]"#,
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    path
}

/// What `agentctx ARGS` printed on a terminal, `NO_COLOR` set or not; the
/// terminal's line ends made `\n` again.
fn seen(no_colour: bool, args: &[&str]) -> String {
    let colour = if no_colour { "NO_COLOR=1" } else { "NO_COLOR=" };
    let out = on_terminal(&[&["env", colour, BIN], args].concat());
    String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n")
}

#[test]
fn d108_verify_reads_as_text_on_a_terminal_and_as_json_to_a_pipe_or_with_json() {
    let dir = tempfile::tempdir().unwrap();
    let path = context(&dir);
    let piped = agentctx(&["verify", &path]);
    let report: Value = agent_core::json::from_str(&piped.stdout).unwrap();
    let head = report["head"].as_str().unwrap();
    assert_eq!(
        seen(true, &["verify", &path]),
        format!(
            "{path}: 2 message(s); the chain of digests and everything kept beside it agree\nhead {head}\n"
        )
    );
    assert_eq!(
        seen(false, &["verify", &path]),
        format!(
            "{path}: 2 message(s); \x1b[32mthe chain of digests and everything kept beside it agree\x1b[0m\nhead {head}\n"
        )
    );
    assert_eq!(seen(true, &["verify", &path, "--json"]), piped.stdout);
    // A finding: the head expected is not this one; exit 1 either way.
    let other = "0".repeat(64);
    let wrong = seen(true, &["verify", &path, "--expect", &other]);
    assert!(
        wrong.starts_with(&format!(
            "{path}: 2 message(s); 1 finding(s)\nhead {head}\n  - head: "
        )),
        "{wrong}"
    );
}

#[test]
fn d108_instances_and_apply_read_as_text_on_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let path = context(&dir);
    assert_eq!(seen(true, &["instances", &path]), "①\n");
    assert_eq!(seen(true, &["instances", &path, "--json"]), "[\"①\"]\n");
    assert_eq!(agentctx(&["instances", &path]).stdout, "[\"①\"]\n");
    let call = r#"{"_tool":"t","_outputPath":"†state.x"}"#;
    let apply = [
        "apply",
        &path,
        call,
        "--result",
        "7",
        "--date",
        "2026-01-01T00:00:00Z",
    ];
    let applied = seen(true, &apply);
    assert!(
        applied.starts_with("{\n  \"type\": \"data\",\n  \"kind\": \"state\",\n"),
        "{applied}"
    );
    let piped = agentctx(&apply);
    assert_eq!(piped.stdout.lines().count(), 1, "{}", piped.stdout);
    assert_eq!(
        seen(true, &[&apply[..], &["--json"]].concat()),
        piped.stdout
    );
}

#[test]
fn d108_append_says_what_landed_as_json_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let path = context(&dir);
    let quiet = agentctx(&["append", &path, r#"{"type":"state","data":{"step":2}}"#]);
    assert_eq!(quiet.stdout, "");
    let told = agentctx(&[
        "append",
        &path,
        r#"{"type":"state","data":{"step":3}}"#,
        "--json",
    ]);
    let report: Value = agent_core::json::from_str(&told.stdout).unwrap();
    let head = agentctx(&["verify", &path]);
    let verified: Value = agent_core::json::from_str(&head.stdout).unwrap();
    assert_eq!(
        report,
        agent_core::json!({"name": path, "appended": 1, "length": 4,
            "head": verified["head"], "keptOut": false})
    );
}
