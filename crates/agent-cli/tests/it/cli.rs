//! `agentctx` end to end (spec §10): output, exit codes, `error:` lines.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use agent_core::{json, json::Value};
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
    // A process that fails early (a usage error) may exit without reading.
    match pipe.write_all(stdin.unwrap_or("").as_bytes()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        other => other.unwrap(),
    }
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
    // The error names the kinds there are (D63: typos refused).
    assert_eq!(
        run.stderr,
        "error: ¶state: no message of this kind; the kinds are ¶user\n"
    );
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
fn r15_resolve_refuses_an_escaped_dagger_which_is_a_literal() {
    // `\†user.name` is the literal text "†user.name" (R15), not an expression.
    let run = agentctx(
        &["resolve", &fixture("example1.json"), "\\†user.name"],
        None,
    );
    assert_eq!((run.code, run.stdout.as_str()), (1, ""));
    assert_eq!(
        run.stderr,
        "error: syntax error at byte 0: expected '†' (an expression starts with a reference, like †state.a)\n\\†user.name\n^\n"
    );
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

const STATUS_CALL: &str =
    r#"{"_tool":"updateUserStatus","newStatus":"inactive","_outputPath":"†data.user.status"}"#;

#[test]
fn apply_prints_appended_messages_as_jsonl() {
    let run = agentctx(
        &[
            "apply",
            &fixture("example2_after.json"),
            STATUS_CALL,
            "--result",
            "\"away\"",
            "--date",
            "2025-10-26T12:00:00Z",
        ],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout,
        format!(
            "{{\"type\":\"data\",\"kind\":\"data\",\"data\":{{\"user\":{{\"status\":\"away\"}}}},\"_outputPath\":\"†data.user.status\",\"_outputMethod\":\"set\",\"_call\":{STATUS_CALL},\"_date\":\"2025-10-26T12:00:00Z\"}}\n"
        )
    );
}

#[test]
fn apply_without_output_path_prints_nothing() {
    let run = agentctx(
        &[
            "apply",
            &fixture("example1.json"),
            r#"{"_tool":"log"}"#,
            "--result",
            "1",
        ],
        None,
    );
    assert_eq!((run.code, run.stdout.as_str()), (0, ""));
}

#[test]
fn apply_failure_and_outcomes() {
    let call = r#"{"_outputPath":"†state.ok || †state.err"}"#;
    let run = agentctx(
        &[
            "apply",
            "-",
            call,
            "--failure",
            "\"no\"",
            "--date",
            "2026-01-01T00:00:00Z",
        ],
        Some("[]"),
    );
    assert!(
        run.stdout.contains("\"_outputPath\":\"†state.err\""),
        "{}",
        run.stdout
    );
    let run = agentctx(
        &["apply", "-", call, "--outcome", "1", "--result", "2"],
        Some("[]"),
    );
    assert!(
        run.stdout.contains("\"data\":{\"err\":2}"),
        "{}",
        run.stdout
    );
    let run = agentctx(
        &["apply", "-", call, "--outcome", "2", "--result", "2"],
        Some("[]"),
    );
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stderr,
        "error: outcome 2 chosen, but `_outputPath` has 2 outcome(s)\n"
    );
}

#[test]
fn apply_unhandled_failure_is_exit_1() {
    let run = agentctx(
        &[
            "apply",
            "-",
            r#"{"_outputPath":"†state.x"}"#,
            "--failure",
            "\"boom\"",
        ],
        Some("[]"),
    );
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.starts_with("error: unhandled failure"),
        "{}",
        run.stderr
    );
}

#[test]
fn apply_message_outcome() {
    let run = agentctx(
        &[
            "apply",
            "-",
            r#"{"_instance":"①","_outputPath":"†state.p"}"#,
            "--message",
            r#"{"type":"state","data":{"p":1}}"#,
        ],
        Some("[]"),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("\"_instance\":\"①\""), "{}", run.stdout);
}

#[test]
fn apply_usage_errors_are_exit_2() {
    assert_eq!(
        agentctx(&["apply", "-", "{}"], Some("[]")).code,
        2,
        "no outcome given"
    );
    assert_eq!(
        agentctx(
            &["apply", "-", "{}", "--result", "1", "--failure", "1"],
            Some("[]")
        )
        .code,
        2
    );
    assert_eq!(
        agentctx(&["apply", "-", "{}", "--outcome", "1"], Some("[]")).code,
        2
    );
    let run = agentctx(
        &["apply", "-", "{}", "--result", "1", "--write"],
        Some("[]"),
    );
    assert_eq!(run.code, 2);
    assert_eq!(
        run.stderr,
        "error: writing needs a CONTEXT file or PostgreSQL URL, not stdin\n"
    );
}

#[test]
fn apply_bad_date_result_and_tool_schema_are_exit_1() {
    let run = agentctx(
        &[
            "apply",
            "-",
            STATUS_CALL,
            "--result",
            "1",
            "--date",
            "yesterday",
        ],
        Some("[]"),
    );
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("is not RFC 3339"), "{}", run.stderr);
    assert_eq!(
        agentctx(
            &["apply", "-", STATUS_CALL, "--result", "{oops"],
            Some("[]")
        )
        .code,
        1
    );
    let schema = r#"{"properties":{"_outputPath":{"const":"†data.user.summary"}}}"#;
    let run = agentctx(
        &[
            "apply",
            "-",
            STATUS_CALL,
            "--result",
            "1",
            "--tool-schema",
            schema,
        ],
        Some("[]"),
    );
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("breaks its tool's schema"),
        "{}",
        run.stderr
    );
}

#[test]
fn r23_apply_tool_schema_judges_parameters_after_resolution_and_ignores_meta_keys() {
    let ctx = r#"[{"type":"input","data":{"days":3,"name":"Ada"}}]"#;
    let schema = r#"{"type":"object","properties":{"days":{"type":"integer"}},"required":["days"],"additionalProperties":false}"#;
    let apply = |call: &str| {
        agentctx(
            &[
                "apply",
                "-",
                call,
                "--result",
                "\"ok\"",
                "--tool-schema",
                schema,
                "--date",
                "2026-01-01T00:00:00Z",
            ],
            Some(ctx),
        )
    };
    let run = apply(r#"{"_tool":"plan","days":"†input.days","_outputPath":"†state.plan"}"#);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout,
        "{\"type\":\"data\",\"kind\":\"state\",\"data\":{\"plan\":\"ok\"},\"_outputPath\":\"†state.plan\",\"_outputMethod\":\"set\",\"_call\":{\"_tool\":\"plan\",\"days\":\"†input.days\",\"_outputPath\":\"†state.plan\"},\"_date\":\"2026-01-01T00:00:00Z\"}\n",
        "the call is recorded as written"
    );
    let run = apply(r#"{"_tool":"plan","days":"†input.name","_outputPath":"†state.plan"}"#);
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (
            1,
            "error: the call breaks its tool's schema: at /days: \"Ada\" is not of type \"integer\" (rule `type` at /properties/days/type)\n"
        )
    );
    let run = apply(r#"{"_tool":"plan","days":"†input.weeks","_outputPath":"†state.plan"}"#);
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (
            3,
            "error: cannot check the call against its tool's schema: †input.weeks not present\n"
        )
    );
}

#[test]
fn apply_write_appends_to_jsonl_and_repairs_torn_tail() {
    let path = temp(
        "apply.jsonl",
        "{\"type\":\"state\",\"data\":{\"log\":[]}}\n{\"type\":\"sta",
    );
    let call = r#"{"_outputPath":"†state.log","_outputMethod":"push"}"#;
    let run = agentctx(&["apply", &path, call, "--result", "1", "--write"], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("torn append"), "{}", run.stderr);
    let run = agentctx(&["apply", &path, call, "--result", "2", "--write"], None);
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(
        !text.contains("\"sta\n"),
        "the torn line was truncated: {text}"
    );
    let view = agentctx(&["view", &path, "state"], None);
    assert_eq!(view.stdout, "{\"log\":[1,2]}\n");
}

#[test]
fn apply_write_rewrites_json_arrays() {
    let path = temp("apply.json", "[{\"type\":\"state\",\"data\":{\"n\":1}}]");
    let run = agentctx(
        &[
            "apply",
            &path,
            r#"{"_outputPath":"†state.m"}"#,
            "--result",
            "2",
            "--write",
        ],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let view = agentctx(&["view", &path, "state"], None);
    assert_eq!(view.stdout, "{\"n\":1,\"m\":2}\n");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with('['), "{text}");
}

#[test]
fn apply_refused_write_leaves_file_byte_identical() {
    let original = "{\"type\":\"state\",\"data\":{\"n\":1}}\n";
    let path = temp("refused.jsonl", original);
    let run = agentctx(
        &[
            "apply",
            &path,
            r#"{"_outputPath":"†state.n","_outputMethod":"push"}"#,
            "--result",
            "2",
            "--write",
        ],
        None,
    );
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .starts_with("error: message 1 (¶state) refused: type error at .n"),
        "{}",
        run.stderr
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), original);
}

#[test]
fn render_defaults_to_plain_merged_and_matches_golden() {
    let run = agentctx(&["render", &fixture("batch.jsonl"), "--pretty"], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let golden = std::fs::read_to_string(format!(
        "{}/../../tests/golden/batch.merged.plain.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    assert_eq!(run.stdout, golden);
}

#[test]
fn render_text_append_and_tokens() {
    let run = agentctx(
        &[
            "render",
            &fixture("example1.json"),
            "--provider",
            "text",
            "--mode",
            "append",
            "--tokens",
        ],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .starts_with("[user]\nUpdate the user's city to Austin\n\n[user]\n## Data: ¶user\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("## Data: ¶user\n{\n  \"age\": 30\n}"),
        "{}",
        run.stdout
    );
    let tokens: usize = run
        .stderr
        .trim()
        .strip_prefix("tokens: ")
        .unwrap()
        .strip_suffix(" (o200k_base)")
        .unwrap()
        .parse()
        .unwrap();
    assert!(tokens > 20, "{}", run.stderr);
}

#[test]
fn render_usage_and_provider_errors() {
    assert_eq!(
        agentctx(
            &["render", &fixture("example1.json"), "--provider", "gemini"],
            None
        )
        .code,
        2
    );
    assert_eq!(
        agentctx(
            &["render", &fixture("example1.json"), "--mode", "diff"],
            None
        )
        .code,
        2
    );
    let run = agentctx(
        &["render", "-", "--provider", "anthropic"],
        Some(r#"[{"role":"assistant","content":"hi"}]"#),
    );
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stderr,
        "error: the anthropic payload cannot start with an assistant turn (chat message 0)\n"
    );
}

#[test]
fn demo_runs_the_bundled_plan_end_to_end_and_says_how_to_inspect_the_file_it_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("my demo.jsonl");
    let file = file.to_str().unwrap();
    let run = agentctx(&["demo", "--context", file], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let written = agentctx(&["view", file, "state", "--instance", "②"], None);
    assert_eq!(
        written.stdout, "{\"log\":[],\"label\":\"spam\",\"score\":0.9,\"decision\":\"remove\"}\n",
        "{}",
        written.stderr
    );
    // The plan it ran is recorded in the context, for `inspect`.
    let plans = agentctx(&["log", file, "--json", "--limit", "500"], None);
    let recorded: Value = agent_core::json::from_str(&plans.stdout).unwrap();
    let plan_messages: Vec<&Value> = recorded["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["message"]["type"] == "plan")
        .collect();
    assert_eq!(plan_messages.len(), 1, "{}", plans.stdout);
    assert_eq!(
        plan_messages[0]["message"]["calls"]
            .as_array()
            .unwrap()
            .len(),
        10
    );
    let messages = std::fs::read_to_string(file).unwrap().lines().count();
    assert!(
        run.stdout.ends_with(&format!(
            "# Look at every step\n\nThe context ({messages} messages) is in {file}. To see its \
             views, its log and the plan after any message, in a browser:\n\n    \
             agentctx inspect '{file}' --open\n"
        )),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .starts_with("# Plan: 10 calls in waves [0, 1, 2, 9] → [3, 4, 5] → [6, 7, 8]"),
        "{}",
        run.stdout
    );
    assert_eq!(
        run.stdout.matches("\"status\": \"done\"").count(),
        10,
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("## Data: ¶state@②\n{\n  \"label\": \"spam\",\n  \"score\": 0.9,\n  \"decision\": \"remove\"\n}"), "{}", run.stdout);
    assert!(
        run.stdout.contains("\"escalation\""),
        "the attack is escalated: {}",
        run.stdout
    );
}

#[test]
fn run_with_shell_activities() {
    let ctx = r#"[{"type":"input","data":{"n":20}}]"#;
    let plan = r#"[
        {"_tool":"double","x":"†state.half","_outputPath":"†state.result"},
        {"_tool":"halve","n":"†input.n","_outputPath":"†state.half"}
    ]"#;
    let run = agentctx(
        &[
            "run",
            "-",
            plan,
            "--activity",
            "halve=python3 -c 'import json,sys; c=json.load(sys.stdin); print(c[\"n\"]//2)'",
            "--activity",
            "double=python3 -c 'import json,sys; c=json.load(sys.stdin); print(c[\"x\"]*2)'",
        ],
        Some(ctx),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout,
        "{\"calls\":[{\"index\":0,\"tool\":\"double\",\"wave\":1,\"status\":\"done\",\"outcome\":\"success\",\"outcomeIndex\":0,\"paths\":[\"†state.result\"]},\
         {\"index\":1,\"tool\":\"halve\",\"wave\":0,\"status\":\"done\",\"outcome\":\"success\",\"outcomeIndex\":0,\"paths\":[\"†state.half\"]}]}\n"
    );
}

#[test]
fn run_report_names_outcome_paths_and_a_failing_commands_exit_status_and_stderr_tail() {
    let plan = r#"[{"_tool":"bad","_outputPath":"†state.ok || †state.err && †log.errors"},{"_tool":"bad","_outputPath":"†state.x"},{"_tool":"quiet"}]"#;
    let run = agentctx(
        &[
            "run",
            "-",
            plan,
            "--activity",
            "bad=echo first line >&2; echo nope >&2; exit 4",
            "--activity",
            "quiet=true",
        ],
        Some("[]"),
    );
    assert_eq!(run.code, 1);
    assert_eq!(run.stderr, "error: 1 call(s) failed\n");
    let report: Value = agent_core::json::from_str(&run.stdout).unwrap();
    let failure = json!({"exitStatus": 4, "stderr": "first line\nnope"});
    assert_eq!(
        report["calls"][0],
        json!({"index": 0, "tool": "bad", "wave": 0, "status": "done",
               "outcome": "failure", "outcomeIndex": 1,
               "paths": ["†state.err", "†log.errors"], "failure": failure}),
        "a handled failure is done, written to both destinations of outcome 1"
    );
    assert_eq!(report["calls"][1]["status"], "failed");
    assert_eq!(report["calls"][1]["failure"], failure);
    assert_eq!(
        report["calls"][1]["error"],
        "unhandled failure: `_outputPath` has one outcome, so a failure has nowhere to go: {\"exitStatus\":4,\"stderr\":\"first line\\nnope\"}"
    );
    assert_eq!(
        report["calls"][2],
        json!({"index": 2, "tool": "quiet", "wave": 0, "status": "done",
               "outcome": "success", "outcomeIndex": 0, "paths": []}),
        "a call without _outputPath writes nothing (R21)"
    );
}

#[test]
fn run_failure_keeps_only_the_end_of_a_long_stderr() {
    let plan = r#"[{"_tool":"loud","_outputPath":"†state.ok || †state.err"}]"#;
    let run = agentctx(
        &[
            "run",
            "-",
            plan,
            "--activity",
            "loud=i=0; while [ $i -lt 500 ]; do echo \"line $i\" >&2; i=$((i+1)); done; exit 1",
        ],
        Some("[]"),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report: Value = agent_core::json::from_str(&run.stdout).unwrap();
    let stderr = report["calls"][0]["failure"]["stderr"].as_str().unwrap();
    assert!(stderr.starts_with('…'), "{stderr}");
    assert!(stderr.ends_with("line 498\nline 499"), "{stderr}");
    assert!(stderr.len() <= 2000 + '…'.len_utf8(), "{}", stderr.len());
}

#[test]
fn run_dry_run_names_tools_without_an_activity() {
    let plan = r#"[{"_tool":"a","_outputPath":"†state.a"},{"_tool":"b","x":"†state.a"},{"_tool":"c"},{"_tool":"b"}]"#;
    let run = agentctx(
        &["run", "-", plan, "--dry-run", "--activity", "a=true"],
        Some("[]"),
    );
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (
            0,
            "{\"waves\":[[0,2,3],[1]],\"missingActivities\":[\"b\",\"c\"]}\n"
        )
    );
}

#[test]
fn run_blocked_is_exit_3_and_dry_run_lists_waves() {
    let plan = r#"[{"_tool":"t","x":"†input.missing","_outputPath":"†state.a"},{"_tool":"t","x":"†state.a"}]"#;
    let run = agentctx(&["run", "-", plan, "--activity", "t=echo 1"], Some("[]"));
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(
        run.stdout.contains("\"status\":\"blocked\"")
            && run.stdout.contains("\"status\":\"skipped\""),
        "{}",
        run.stdout
    );
    let run = agentctx(&["run", "-", plan, "--dry-run"], Some("[]"));
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (
            0,
            "{\"waves\":[[0],[1]],\"missingActivities\":[\"t\"],\"warnings\":[\"PLAN call 0: \
             †input.missing reads ¶input, a kind the context does not have and no call of the \
             plan writes: the call will be blocked; the context has no data messages\"]}\n"
        )
    );
}

#[test]
fn run_cycle_and_bad_plan_are_exit_1() {
    let cycle = r#"[{"_tool":"t","x":"†state.b","_outputPath":"†state.a"},{"_tool":"t","x":"†state.a","_outputPath":"†state.b"}]"#;
    let run = agentctx(&["run", "-", cycle, "--dry-run"], Some("[]"));
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("in a cycle"), "{}", run.stderr);
    assert_eq!(agentctx(&["run", "-", "{}"], Some("[]")).code, 1);
    assert_eq!(
        agentctx(&["run", "-", "[]", "--activity", "noequals"], Some("[]")).code,
        2
    );
}

#[test]
fn run_write_appends_results_durably() {
    let path = temp("run.jsonl", "{\"type\":\"input\",\"data\":{\"n\":1}}\n");
    let plan = r#"[{"_tool":"one","n":"†input.n","_outputPath":"†state.out"}]"#;
    let run = agentctx(
        &["run", &path, plan, "--activity", "one=cat", "--write"],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let view = agentctx(&["view", &path, "state"], None);
    assert_eq!(
        view.stdout,
        "{\"out\":{\"_tool\":\"one\",\"n\":1,\"_outputPath\":\"†state.out\"}}\n"
    );
}

#[test]
fn r18_apply_refuses_a_call_that_is_not_an_object_and_appends_nothing() {
    let context = "{\"type\":\"state\",\"data\":{\"a\":1}}\n";
    for (call, found) in [("[1]", "an array"), ("\"x\"", "a string"), ("null", "null")] {
        let run = agentctx(&["apply", "-", call, "--result", "1"], Some(context));
        assert_eq!((run.code, run.stdout.as_str()), (1, ""), "{call}");
        assert_eq!(
            run.stderr,
            format!("error: a call must be a JSON object, found {found}\n")
        );
    }
}

#[test]
fn apply_date_outside_rfc_3339_years_is_an_error() {
    let call = r#"{"_outputPath":"†state.a"}"#;
    for date in [
        "+10000-01-01T00:00:00Z",
        "-0001-01-01T00:00:00Z",
        "10000-01-01T00:00:00Z",
    ] {
        // `--date=…`: a value starting with `-` is not taken for an option.
        let flag = format!("--date={date}");
        let run = agentctx(&["apply", "-", call, "--result", "1", &flag], Some("[]"));
        assert_eq!((run.code, run.stdout.as_str()), (1, ""), "{date}");
        assert!(
            run.stderr
                .starts_with(&format!("error: --date {date:?} is not RFC 3339: ")),
            "{}",
            run.stderr
        );
    }
}

#[test]
fn r15_resolve_takes_an_expression_and_hints_at_a_missing_dagger() {
    let context = "{\"type\":\"state\",\"data\":{\"a\":1}}\n";
    let cases = [
        (
            "state.a",
            "error: syntax error at byte 0: expected '†' (an expression starts with a reference): did you mean \"†state.a\"?\nstate.a\n^\n",
        ),
        (
            ".a",
            "error: syntax error at byte 0: expected '†' (an expression starts with a reference, like †state.a)\n.a\n^\n",
        ),
        (
            "|| †state.a",
            "error: syntax error at byte 0: expected '†' (an expression starts with a reference, like †state.a)\n|| †state.a\n^\n",
        ),
    ];
    for (expression, stderr) in cases {
        let run = agentctx(&["resolve", "-", expression], Some(context));
        assert_eq!((run.code, run.stdout.as_str()), (1, ""), "{expression}");
        assert_eq!(run.stderr, stderr, "{expression}");
    }
    let run = agentctx(&["resolve", "-", "†state.a"], Some(context));
    assert_eq!((run.code, run.stdout.as_str()), (0, "1\n"));
}

#[test]
fn r5_reading_in_an_instance_with_no_message_says_so_and_reads_global_layers() {
    let context = "{\"type\":\"state\",\"data\":{\"a\":1}}\n{\"type\":\"state\",\"data\":{\"a\":2},\"_instance\":\"known\"}\n";
    let warning = "warning: instance \"nope\" has no message in this context; the read sees the global layers only; the instances are \"known\"\n";
    let view = agentctx(&["view", "-", "state", "--instance", "nope"], Some(context));
    assert_eq!(
        (view.code, view.stdout.as_str(), view.stderr.as_str()),
        (0, "{\"a\":1}\n", warning)
    );
    let resolve = agentctx(
        &["resolve", "-", "†state.a", "--instance", "nope"],
        Some(context),
    );
    assert_eq!(
        (
            resolve.code,
            resolve.stdout.as_str(),
            resolve.stderr.as_str()
        ),
        (0, "1\n", warning)
    );
    // A known instance: no warning.
    let known = agentctx(
        &["resolve", "-", "†state.a", "--instance", "known"],
        Some(context),
    );
    assert_eq!(
        (known.code, known.stdout.as_str(), known.stderr.as_str()),
        (0, "2\n", "")
    );
}

#[test]
fn help_says_what_commands_do_in_words_and_points_to_the_spec() {
    let top = agentctx(&["--help"], None);
    assert_eq!(top.code, 0);
    assert!(top.stdout.contains("docs/spec.md"), "{}", top.stdout);
    let commands = [
        "demo",
        "run",
        "view",
        "resolve",
        "resolve-call",
        "apply",
        "assign",
        "append",
        "copy",
        "render",
        "instances",
        "check",
    ];
    let cites_a_rule = |text: &str| {
        text.as_bytes()
            .windows(2)
            .any(|w| w[0] == b'R' && w[1].is_ascii_digit())
            || text.contains('§')
    };
    assert!(!cites_a_rule(&top.stdout), "{}", top.stdout);
    for command in commands {
        assert!(
            top.stdout.contains(&format!("\n  {command} ")),
            "{command} listed"
        );
        let help = agentctx(&[command, "--help"], None);
        assert_eq!(help.code, 0, "{command}");
        assert!(
            !cites_a_rule(&help.stdout),
            "`{command} --help` cites a rule number:\n{}",
            help.stdout
        );
    }
}

#[test]
fn run_date_fixes_the_write_time_and_a_succeeding_commands_stderr_is_passed_on() {
    let path = temp(
        "run-date.jsonl",
        "{\"type\":\"input\",\"data\":{\"n\":1}}\n",
    );
    let plan = r#"[{"_tool":"t","_outputPath":"†state.out"}]"#;
    let run = agentctx(
        &[
            "run",
            &path,
            plan,
            "--write",
            "--date",
            "2026-02-03T04:05:06Z",
            "--activity",
            "t=echo working >&2; echo 7",
        ],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stderr, "t: working\n");
    let written = std::fs::read_to_string(&path).unwrap();
    assert!(
        written.lines().nth(1).unwrap().ends_with(
            ",\"_started\":\"2026-02-03T04:05:06Z\",\"_date\":\"2026-02-03T04:05:06Z\"}"
        ),
        "{written}"
    );
    let run = agentctx(&["run", &path, plan, "--date", "soon"], None);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .starts_with("error: --date \"soon\" is not RFC 3339"),
        "{}",
        run.stderr
    );
}
