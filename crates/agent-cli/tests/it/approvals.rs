//! `agentctx loop` with approval gates and the carried plan (spec R39c,
//! decisions D69–D72), against a local OpenAI-compatible server
//! (wiremock); and workers, which never run a loop's plan (PostgreSQL,
//! `AGENTCTX_TEST_DATABASE_URL` or the one `cargo xtask ci` provides).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use crate::support::{agentctx, fresh};
use agent_core::{json, json::Value};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

/// A server answering `answers` in order (the last one from then on), as
/// Chat Completions.
fn server(rt: &tokio::runtime::Runtime, answers: &[Value]) -> MockServer {
    let server = rt.block_on(MockServer::start());
    for (i, answer) in answers.iter().enumerate() {
        let body = json!({"id": "c", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant",
            "content": answer.to_string()}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 2}});
        let mock = Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_json(body));
        let mock = if i + 1 < answers.len() {
            mock.up_to_n_times(1)
        } else {
            mock
        };
        rt.block_on(mock.mount(&server));
    }
    server
}

const TOOLS: &str = r#"[{"type": "object", "properties": {"_tool": {"const": "send"},
  "to": {"type": "string"}, "approved": {"type": "boolean"}}}]"#;

fn setup() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let context = dir.path().join("task.jsonl");
    std::fs::write(
        &context,
        "{\"type\":\"input\",\"data\":{\"to\":\"ana@example.com\"}}\n",
    )
    .unwrap();
    (dir, context.to_str().unwrap().to_owned())
}

fn run_loop(context: &str, server: &MockServer, more: &[&str]) -> crate::support::Run {
    let mut args = vec![
        "loop",
        context,
        "--model",
        "m",
        "--base-url",
        server.uri().leak(),
        "--tools",
        TOOLS,
        "--activity",
        "send=printf '\"sent\"'",
        "--write",
        "--date",
        "2026-01-01T00:00:00Z",
    ];
    args.extend_from_slice(more);
    agentctx(&args)
}

#[test]
fn r39c_loop_holds_a_gated_call_names_its_gate_exits_4_and_runs_it_after_apply_write() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (_dir, context) = setup();
    let send = json!({"_tool": "send", "to": "†input.to", "approved": "†state.approvals.send",
        "_outputPath": "†state.sent"});
    let first = server(&rt, &[json!({"calls": [send], "output": null})]);
    let run = run_loop(&context, &first, &["--json"]);
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert_eq!(
        run.stderr,
        "turn 1: 0 call(s) run, 0 error(s), 10 tokens sent\n\
         waiting for approval: †state.approvals.send holds send\n\
         error: waiting for approval after 1 turn(s): only calls held at approval gates remain; \
         write each gate (true runs its calls, false rejects them), e.g. agentctx apply CONTEXT \
         '{\"_tool\":\"approve\",\"_outputPath\":\"†state.approvals.NAME\"}' --result true --write, \
         then run the loop again\n"
    );
    let report: Value = agent_core::json::from_str(&run.stdout).unwrap();
    assert_eq!(report["finished"], json!(false));
    assert_eq!(
        report["waiting"],
        json!([{"gate": "†state.approvals.send", "tools": ["send"]}])
    );
    assert_eq!(report["rejected"], json!([]));
    // Waiting is not failing: no error reached the context.
    assert_eq!(agentctx(&["view", &context, "error"]).code, 3);

    // Approval between runs, as a person gives it.
    let approve = agentctx(&[
        "apply",
        &context,
        r#"{"_tool":"approve","_outputPath":"†state.approvals.send"}"#,
        "--result",
        "true",
        "--write",
    ]);
    assert_eq!(approve.code, 0, "{}", approve.stderr);

    // The next run runs the held call before it asks the model.
    let second = server(&rt, &[json!({"calls": [], "output": "done"})]);
    let run = run_loop(&context, &second, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "\"done\"\n");
    assert_eq!(
        run.stderr,
        "carried plan: 1 call(s) run, 0 error(s)\nturn 1: 0 call(s) run, 0 error(s), 10 tokens sent\n"
    );
    let state = agentctx(&["view", &context, "state"]);
    assert_eq!(
        state.stdout,
        "{\"approvals\":{\"send\":true},\"sent\":\"sent\"}\n"
    );
    let requests = rt.block_on(second.received_requests()).unwrap();
    assert!(String::from_utf8_lossy(&requests[0].body).contains("\\\"sent\\\": \\\"sent\\\""));
}

#[test]
fn r39c_loop_names_a_rejected_gate_and_never_runs_its_call() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (_dir, context) = setup();
    let send = json!({"_tool": "send", "to": "†input.to", "approved": "†state.approvals.send",
        "_outputPath": "†state.sent"});
    let first = server(&rt, &[json!({"calls": [send], "output": null})]);
    assert_eq!(run_loop(&context, &first, &[]).code, 4);
    let reject = agentctx(&[
        "apply",
        &context,
        r#"{"_tool":"approve","_outputPath":"†state.approvals.send"}"#,
        "--result",
        "false",
        "--write",
    ]);
    assert_eq!(reject.code, 0, "{}", reject.stderr);
    let second = server(&rt, &[json!({"calls": [], "output": "kept"})]);
    let run = run_loop(&context, &second, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .ends_with("rejected: †state.approvals.send holds send (not run)\n"),
        "{}",
        run.stderr
    );
    let sent = agentctx(&["resolve", &context, "†state.sent"]);
    assert_eq!(sent.code, 3);
}

#[test]
fn r39c_loop_confirm_refuses_without_a_terminal() {
    let (_dir, context) = setup();
    let run = agentctx(&[
        "loop",
        &context,
        "--model",
        "m",
        "--base-url",
        "http://127.0.0.1:9",
        "--confirm",
    ]);
    assert_eq!(run.code, 2);
    assert_eq!(
        run.stderr,
        "error: --confirm asks about each call on a terminal, and stdin is not one: run it from a \
         terminal, or leave --confirm out\n"
    );
}

#[test]
fn d69_a_worker_never_picks_up_a_loop_plan() {
    let url = fresh("loop-plan");
    let append = |message: Value| {
        let run = agentctx(&["append", &url, &message.to_string()]);
        assert_eq!(run.code, 0, "{run:?}");
    };
    append(json!({"type": "input", "data": {"id": 7}}));
    append(
        json!({"type": "plan", "calls": [{"_tool": "t", "id": "†input.id", "_outputPath": "†state.worked"}]}),
    );
    // The loop's plan comes later; a worker runs the worker plan before it.
    append(
        json!({"type": "plan", "plan": [{"_tool": "t", "id": 8, "_outputPath": "†state.looped"}], "_pending": [0]}),
    );
    let run = agentctx(&[
        "worker",
        &url,
        "--activity",
        "t=cat",
        "--until-idle",
        "--date",
        "2026-01-01T00:00:00Z",
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    let report: Value = agent_core::json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(report["plan"]["plan"], json!(1), "{report}");
    assert_eq!(report["plan"]["done"], json!(1), "{report}");
    let status = agentctx(&["status", &url]);
    let status: Value = agent_core::json::from_str(&status.stdout).unwrap();
    assert_eq!(
        (status["plan"].clone(), status["total"].clone()),
        (json!(1), json!(1))
    );
    let state = agentctx(&["view", &url, "state"]);
    assert_eq!(
        state.stdout,
        "{\"worked\":{\"_tool\":\"t\",\"id\":7,\"_outputPath\":\"†state.worked\"}}\n"
    );
    // With only a loop plan, a worker finds no plan.
    let only = fresh("loop-plan-only");
    let run = agentctx(&[
        "append",
        &only,
        &json!({"type": "plan", "plan": [{"_tool": "t"}]}).to_string(),
    ]);
    assert_eq!(run.code, 0);
    let status = agentctx(&["status", &only]);
    assert_eq!(status.code, 1, "{status:?}");
    assert!(status.stderr.contains("no plan"), "{}", status.stderr);
}

#[test]
fn r39c_loop_confirm_asks_on_a_terminal_and_runs_the_call_typed_instead() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (_dir, context) = setup();
    let server = server(
        &rt,
        &[
            json!({"calls": [{"_tool": "send", "to": "†input.to", "_outputPath": "†state.sent"}], "output": null}),
            json!({"calls": [], "output": "done"}),
        ],
    );
    let uri = server.uri();
    let args = [
        env!("CARGO_BIN_EXE_agentctx"),
        "loop",
        &context,
        "--model",
        "m",
        "--base-url",
        &uri,
        "--tools",
        TOOLS,
        "--activity",
        "send=cat",
        "--write",
        "--confirm",
    ];
    let words: Vec<String> = args
        .iter()
        .map(|a| format!("'{}'", a.replace('\'', r"'\''")))
        .collect();
    // `script` gives the command a terminal and passes our input to it.
    let mut child = Command::new("script")
        .args(["-qec", &words.join(" "), "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    input
        .write_all(b"e\n{\"_tool\":\"send\",\"to\":\"bo@example.com\",\"_outputPath\":\"\xe2\x80\xa0state.sent\"}\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    drop(input);
    let seen = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{seen}");
    for expected in [
        "ready: {\"_tool\":\"send\",\"to\":\"†input.to\",\"_outputPath\":\"†state.sent\"}",
        "run it? [y]es, [n]o (skip), [e]dit: ",
        "the call to run instead, as one line of JSON: ",
        "\"done\"",
    ] {
        assert!(seen.contains(expected), "{expected:?} not in {seen:?}");
    }
    // The typed call ran, and its result records it.
    let state = agentctx(&["view", &context, "state"]);
    assert!(state.stdout.contains("bo@example.com"), "{}", state.stdout);
    let copy = std::fs::read_to_string(&context).unwrap();
    let result = copy
        .lines()
        .find(|l| l.contains("\"sent\""))
        .expect("the result");
    assert!(
        result.contains("\"_call\":{\"_tool\":\"send\",\"to\":\"bo@example.com\""),
        "{result}"
    );
}
