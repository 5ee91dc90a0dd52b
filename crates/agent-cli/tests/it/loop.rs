//! `agentctx loop` against a local OpenAI-compatible server (wiremock)
//! answering like Chat Completions (spec §10, §12).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use crate::support::agentctx;
use agent_core::{json, json::Value};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

/// A Chat Completions response whose message content is `answer`.
fn completion(answer: Value) -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 1741569952,
           "model": "local", "choices": [{"index": 0, "message": {"role": "assistant",
           "content": answer.to_string(), "refusal": null}, "finish_reason": "stop"}],
           "usage": {"prompt_tokens": 321, "completion_tokens": 20, "total_tokens": 341}})
}

/// A server answering `answers` in order (the last one from then on).
fn server(rt: &tokio::runtime::Runtime, answers: &[Value]) -> MockServer {
    let server = rt.block_on(MockServer::start());
    for (i, answer) in answers.iter().enumerate() {
        let mock = Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_json(completion(answer.clone())));
        let mock = if i + 1 < answers.len() {
            mock.up_to_n_times(1)
        } else {
            mock
        };
        rt.block_on(mock.mount(&server));
    }
    server
}

const TOOLS: &str = r#"[
  {"type": "object", "properties": {"_tool": {"const": "summarize"}, "text": {"type": "string"},
   "_output": {"type": "string"}}},
  {"type": "object", "properties": {"_tool": {"const": "shout"}, "text": {"type": "string"}}}
]"#;

fn setup() -> (tempfile::TempDir, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let context = dir.path().join("task.jsonl");
    std::fs::write(
        &context,
        "{\"type\":\"input\",\"data\":{\"text\":\"logs\"}}\n",
    )
    .unwrap();
    let tools = dir.path().join("tools.json");
    std::fs::write(&tools, TOOLS).unwrap();
    let context = context.to_str().unwrap().to_owned();
    let tools = format!("@{}", tools.to_str().unwrap());
    (dir, context, tools)
}

#[test]
fn spec10_loop_runs_turns_until_the_output_and_writes_each_turn() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = server(
        &rt,
        &[
            json!({"calls": [
                {"_tool": "shout", "text": "†state.summary", "_outputPath": "†state.loud"},
                {"_tool": "summarize", "text": "†input.text", "_output": "short", "_outputPath": "†state.summary"}
            ], "output": null}),
            json!({"calls": [], "output": {"result": "SHORT"}}),
        ],
    );
    let (_dir, context, tools) = setup();
    let run = agentctx(&[
        "loop",
        &context,
        "--model",
        "local-model",
        "--base-url",
        &server.uri(),
        "--tools",
        &tools,
        "--activity",
        "shout=sed -n 's/.*\"text\":\"\\([^\"]*\\)\".*/\"\\1\"/p' | tr a-z A-Z",
        "--write",
        "--date",
        "2026-01-01T00:00:00Z",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "{\"result\":\"SHORT\"}\n");
    assert_eq!(
        run.stderr,
        "turn 1: 2 call(s) run, 0 error(s), 321 tokens sent\nturn 2: 0 call(s) run, 0 error(s), 321 tokens sent\n"
    );
    let view = agentctx(&["view", &context, "state"]);
    assert_eq!(view.stdout, "{\"summary\":\"short\",\"loud\":\"SHORT\"}\n");
    let output = agentctx(&["view", &context, "output"]);
    assert_eq!(output.stdout, "{\"result\":\"SHORT\"}\n");
    let requests = rt.block_on(server.received_requests()).unwrap();
    assert_eq!(requests.len(), 2);
    assert!(requests[0].headers.get("authorization").is_none());
}

#[test]
fn spec10_loop_without_write_leaves_the_context_and_exits_3_when_unfinished() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = server(
        &rt,
        &[json!({"calls": [{"_tool": "nope"}], "output": null})],
    );
    let (_dir, context, tools) = setup();
    let before = std::fs::read(&context).unwrap();
    let run = agentctx(&[
        "loop",
        &context,
        "--model",
        "m",
        "--base-url",
        &server.uri(),
        "--tools",
        &tools,
        "--max-turns",
        "2",
    ]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert_eq!(run.stdout, "");
    assert_eq!(
        run.stderr,
        "turn 1: 0 call(s) run, 1 error(s), 321 tokens sent\nturn 2: 0 call(s) run, 1 error(s), 321 tokens sent\nerror: unfinished: no final output after 2 turn(s)\n"
    );
    assert_eq!(std::fs::read(&context).unwrap(), before);
}

#[test]
fn spec10_loop_reports_a_refused_request_and_bad_arguments() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(MockServer::start());
    rt.block_on(
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(404).set_body_json(
                json!({"error": {"message": "The model `m` does not exist", "type": "invalid_request_error", "param": null, "code": "model_not_found"}}),
            ))
            .mount(&server),
    );
    let (_dir, context, _tools) = setup();
    let run = agentctx(&[
        "loop",
        &context,
        "--model",
        "m",
        "--base-url",
        &server.uri(),
    ]);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stderr,
        format!(
            "error: {}/chat/completions answered 404: \"The model `m` does not exist\"; check the base URL (--base-url) and the model name (--model)\n",
            server.uri()
        )
    );
    let bad = agentctx(&["loop", &context, "--model", "m", "--provider", "mistral"]);
    assert_eq!(bad.code, 2);
    assert_eq!(
        bad.stderr,
        "error: unknown provider \"mistral\": expected openai or anthropic\n"
    );
    let tools = agentctx(&[
        "loop",
        &context,
        "--model",
        "m",
        "--tools",
        "[{\"type\":\"object\"}]",
    ]);
    assert_eq!(tools.code, 1);
    assert_eq!(
        tools.stderr,
        "error: --tools tool 0: a tool's `properties._tool.const` must be its name, a string\n"
    );
}

#[test]
fn spec10_loop_refuses_max_calls_and_parallel_0_and_passes_its_bounds_to_the_loop() {
    let (_dir, context, _tools) = setup();
    let zero = agentctx(&["loop", &context, "--model", "m", "--max-calls", "0"]);
    assert_eq!(zero.code, 2);
    assert_eq!(zero.stderr, "error: --max-calls must be at least 1\n");
    let zero = agentctx(&["loop", &context, "--model", "m", "--parallel", "0"]);
    assert_eq!(zero.code, 2);
    assert_eq!(zero.stderr, "error: --parallel must be at least 1\n");

    let rt = tokio::runtime::Runtime::new().unwrap();
    let calls: Vec<Value> = (0..3)
        .map(|i| json!({"_tool": "note", "_output": "x", "_outputPath": format!("†state.n{i}"), "_instance": "i1"}))
        .collect();
    let server = server(&rt, &[json!({"calls": calls, "output": null})]);
    let tools = json!([{"type": "object", "properties": {"_tool": {"const": "note"}, "_output": {"type": "string"}}}]).to_string();
    let run = agentctx(&[
        "loop",
        &context,
        "--model",
        "m",
        "--base-url",
        &server.uri(),
        "--tools",
        &tools,
        "--max-turns",
        "1",
        "--max-calls",
        "2",
        "--new-instances",
        "--write",
    ]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(
        run.stderr.starts_with("turn 1: 2 call(s) run, 1 error(s),"),
        "{}",
        run.stderr
    );
    let view = agentctx(&["view", &context, "state", "--instance", "i1"]);
    assert_eq!(view.stdout.trim(), r#"{"n0":"x","n1":"x"}"#);
}

#[test]
fn spec10_loop_on_a_terminal_rewrites_one_live_line_and_without_one_prints_a_line_per_turn() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = server(
        &rt,
        &[
            json!({"calls": [{"_tool": "summarize", "text": "†input.text", "_output": "short", "_outputPath": "†state.s"}], "output": null}),
            json!({"calls": [], "output": "done"}),
        ],
    );
    let (_dir, context, tools) = setup();
    let args = [
        env!("CARGO_BIN_EXE_agentctx"),
        "loop",
        &context,
        "--model",
        "m",
        "--base-url",
        &server.uri(),
        "--tools",
        &tools,
    ];
    let on_tty = crate::support::on_terminal(&args);
    let seen = String::from_utf8_lossy(&on_tty.stdout);
    assert!(on_tty.status.success(), "{seen}");
    for expected in [
        "\r\x1b[2Kturn 1: asking the model (0 tokens sent so far)",
        "\r\x1b[2Kturn 1: 0 running, 1 done, 0 waiting (0 tokens sent so far)",
        "\r\x1b[2Kturn 1: 1 call(s) run, 0 error(s), 321 tokens sent\r\n",
        "\r\x1b[2Kturn 2: asking the model (321 tokens sent so far)",
        "\r\x1b[2Kturn 2: 0 call(s) run, 0 error(s), 321 tokens sent\r\n",
        "\"done\"",
    ] {
        assert!(seen.contains(expected), "{expected:?} not in {seen:?}");
    }
    // Without a terminal: a plain line per turn, nothing rewritten (the
    // server gives its final answer from now on).
    let plain = crate::support::command(&args[1..]).output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&plain.stderr),
        "turn 1: 0 call(s) run, 0 error(s), 321 tokens sent\n"
    );
}
