//! `agentctx` end to end (SPEC §10): output, exit codes, `error:` lines.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use std::io::Write;
use std::process::{Command, Stdio};

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn agentctx(args: &[&str], stdin: Option<&str>) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentctx"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdin.take().unwrap();
    pipe.write_all(stdin.unwrap_or("").as_bytes()).unwrap();
    drop(pipe);
    let out = child.wait_with_output().unwrap();
    Run {
        code: out.status.code().expect("exited, not killed by a signal"),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

fn fixture(name: &str) -> String {
    format!("{}/../../tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn temp(name: &str, content: &str) -> String {
    let dir = std::env::temp_dir().join(format!("agentctx-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, content).unwrap();
    path.to_string_lossy().into_owned()
}

#[test]
fn view_prints_compact_view() {
    let run = agentctx(&["view", &fixture("example1.json"), "user"], None);
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, "{\"name\":\"John Doe\",\"age\":30}\n")
    );
}

#[test]
fn view_pretty() {
    let run = agentctx(
        &["view", &fixture("example1.json"), "user", "--pretty"],
        None,
    );
    assert_eq!(
        run.stdout,
        "{\n  \"name\": \"John Doe\",\n  \"age\": 30\n}\n"
    );
}

#[test]
fn view_with_instance_layers_over_global() {
    let ctx = r#"[{"type":"state","data":{"a":1,"b":1}},{"type":"state","data":{"b":2},"_instance":"①"}]"#;
    let run = agentctx(&["view", "-", "state", "--instance", "①"], Some(ctx));
    assert_eq!((run.code, run.stdout.as_str()), (0, "{\"a\":1,\"b\":2}\n"));
}

#[test]
fn view_of_kind_without_messages_is_unresolved_exit_3() {
    let run = agentctx(&["view", &fixture("example1.json"), "state"], None);
    assert_eq!(run.code, 3);
    assert_eq!(run.stdout, "");
    assert_eq!(run.stderr, "error: ¶state: no message of this kind\n");
}

#[test]
fn view_reads_jsonl_from_stdin() {
    let run = agentctx(
        &["view", "-", "data"],
        Some("{\"data\":{\"a\":1}}\n{\"data\":{\"b\":2}}\n"),
    );
    assert_eq!((run.code, run.stdout.as_str()), (0, "{\"a\":1,\"b\":2}\n"));
}

#[test]
fn instances_in_order_of_first_appearance() {
    let ctx = "{\"data\":1,\"_instance\":\"b\"}\n{\"data\":1}\n{\"data\":1,\"_instance\":\"a\"}\n{\"data\":2,\"_instance\":\"b\"}\n";
    let path = temp("inst.jsonl", ctx);
    let run = agentctx(&["instances", &path], None);
    assert_eq!((run.code, run.stdout.as_str()), (0, "[\"b\",\"a\"]\n"));
}

#[test]
fn check_ok() {
    let run = agentctx(&["check", &fixture("example1.json")], None);
    assert_eq!((run.code, run.stdout.as_str()), (0, "ok\n"));
}

#[test]
fn check_reports_problems_exit_1() {
    let ctx = r#"[{"type":"state","data":{"n":1}},{"type":"state","data":{"n":1},"_outputPath":"†state.n","_outputMethod":"push"}]"#;
    let run = agentctx(&["check", "-"], Some(ctx));
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stdout,
        "message 1 (¶state): type error at .n: cannot push onto a number; write skipped\n"
    );
    assert_eq!(run.stderr, "error: 1 problem(s) found\n");
}

#[test]
fn check_complete_enforces_required() {
    let ctx = r#"[{"type":"data","kind":"u","data":{},"schema":{"required":["name"]}}]"#;
    assert_eq!(agentctx(&["check", "-"], Some(ctx)).code, 0);
    let run = agentctx(&["check", "-", "--complete"], Some(ctx));
    assert_eq!(run.code, 1);
    assert!(
        run.stdout.starts_with("¶u: schema violated at /:"),
        "{}",
        run.stdout
    );
}

#[test]
fn bad_message_is_exit_1_with_index() {
    let run = agentctx(
        &["view", "-", "data"],
        Some(r#"[{"type":"text","text":"a"},{"type":"text"}]"#),
    );
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stderr,
        "error: message 1: a text message needs a string `text`\n"
    );
}

#[test]
fn bad_json_and_missing_file_are_exit_1() {
    let run = agentctx(&["view", "-", "data"], Some("[{"));
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.starts_with("error: invalid JSON at line 1"),
        "{}",
        run.stderr
    );
    let run = agentctx(&["check", "/no/such/file.json"], None);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .starts_with("error: cannot read /no/such/file.json"),
        "{}",
        run.stderr
    );
}

#[test]
fn invalid_kind_argument_is_exit_1() {
    let run = agentctx(&["view", &fixture("example1.json"), "9bad"], None);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.starts_with("error: invalid kind"),
        "{}",
        run.stderr
    );
}

#[test]
fn usage_errors_are_exit_2() {
    assert_eq!(agentctx(&["view"], None).code, 2);
    assert_eq!(agentctx(&["frobnicate"], None).code, 2);
    assert_eq!(agentctx(&["check", "x.json", "--bogus"], None).code, 2);
    assert_eq!(agentctx(&["--help"], None).code, 0);
}

#[test]
fn torn_last_line_is_a_warning() {
    let path = temp("torn.jsonl", "{\"data\":{\"a\":1}}\n{\"data\":{\"a\":");
    let run = agentctx(&["view", &path, "data"], None);
    assert_eq!((run.code, run.stdout.as_str()), (0, "{\"a\":1}\n"));
    assert!(run.stderr.starts_with("warning: "), "{}", run.stderr);
    assert!(run.stderr.contains("torn append"), "{}", run.stderr);
}

#[test]
fn resolve_prints_value() {
    let run = agentctx(
        &[
            "resolve",
            &fixture("example2_after.json"),
            "†data.user.status",
        ],
        None,
    );
    assert_eq!((run.code, run.stdout.as_str()), (0, "\"inactive\"\n"));
    let run = agentctx(
        &[
            "resolve",
            &fixture("example2_after.json"),
            "†data.nope || †data.user.name",
        ],
        None,
    );
    assert_eq!((run.code, run.stdout.as_str()), (0, "\"Alex\"\n"));
}

#[test]
fn resolve_literal_and_escape() {
    let run = agentctx(
        &["resolve", &fixture("example1.json"), "\\†user.name"],
        None,
    );
    assert_eq!((run.code, run.stdout.as_str()), (0, "\"†user.name\"\n"));
}

#[test]
fn resolve_with_instance() {
    let ctx = r#"[{"type":"state","data":{"v":"global"}},{"type":"state","data":{"v":"mine"},"_instance":"①"}]"#;
    let run = agentctx(&["resolve", "-", "†state.v", "--instance", "①"], Some(ctx));
    assert_eq!(run.stdout, "\"mine\"\n");
}

#[test]
fn resolve_unresolved_is_exit_3_listing_missing() {
    let run = agentctx(
        &[
            "resolve",
            &fixture("example1.json"),
            "†user.city && †user.name || †state.x",
        ],
        None,
    );
    assert_eq!(run.code, 3);
    assert_eq!(
        run.stderr,
        "error: unresolved: not present: †user.city, †state.x\n"
    );
}

#[test]
fn resolve_syntax_error_prints_caret_exit_1() {
    let run = agentctx(
        &["resolve", &fixture("example1.json"), "†user.name && "],
        None,
    );
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stderr,
        "error: syntax error at byte 16: expected a reference after the operator, found the end\n†user.name && \n              ^\n"
    );
}

#[test]
fn resolve_call_inline_and_from_file() {
    let call = r#"{"_tool":"summarize","_outputPath":"†data.summary","who":"†data.user.name","tags":["†data.user.status",1]}"#;
    let run = agentctx(
        &["resolve-call", &fixture("example2_after.json"), call],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout,
        "{\"_tool\":\"summarize\",\"_outputPath\":\"†data.summary\",\"who\":\"Alex\",\"tags\":[\"inactive\",1]}\n"
    );
    let path = temp("call.json", call);
    let from_file = agentctx(
        &[
            "resolve-call",
            &fixture("example2_after.json"),
            &format!("@{path}"),
        ],
        None,
    );
    assert_eq!(from_file.stdout, run.stdout);
}

#[test]
fn resolve_call_pending_is_exit_3() {
    let run = agentctx(
        &[
            "resolve-call",
            &fixture("example2_after.json"),
            r#"{"a":"†data.user.age"}"#,
        ],
        None,
    );
    assert_eq!(run.code, 3);
    assert_eq!(run.stderr, "error: pending: not present: †data.user.age\n");
}

#[test]
fn resolve_call_uses_call_instance() {
    let ctx = r#"[{"type":"state","data":{"v":"global"}},{"type":"state","data":{"v":"mine"},"_instance":"①"}]"#;
    let run = agentctx(
        &["resolve-call", "-", r#"{"_instance":"①","v":"†state.v"}"#],
        Some(ctx),
    );
    assert_eq!(run.stdout, "{\"_instance\":\"①\",\"v\":\"mine\"}\n");
}

#[test]
fn resolve_call_bad_json_and_syntax_errors_are_exit_1() {
    let run = agentctx(
        &["resolve-call", &fixture("example1.json"), "{not json"],
        None,
    );
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.starts_with("error: CALL is not valid JSON"),
        "{}",
        run.stderr
    );
    let run = agentctx(
        &[
            "resolve-call",
            &fixture("example1.json"),
            r#"{"p":{"q":"†user |"}}"#,
        ],
        None,
    );
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stderr,
        "error: CALL at /p/q: syntax error at byte 8: a single '|'; the operator is '||'\n†user |\n      ^\n"
    );
}
