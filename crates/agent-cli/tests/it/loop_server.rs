//! `agentctx loop` against a hostile server scripted over a loopback
//! socket: what reaches the terminal, how long a run waits, and the context
//! left as it was (spec R33, R41; decision D53).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use crate::support::{Run, command};
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};
use test_support::http::Server;

/// A scripted loopback server answering every connection alike.
fn serve(script: impl Fn(&mut TcpStream) + Send + Sync + 'static) -> Server {
    Server::start(move |stream, _, _| script(stream))
}

/// A response with no type of its own (`headers` may give one).
fn respond(stream: &mut TcpStream, status: &str, headers: &str, body: &str) {
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// A context file with one input, and its bytes.
fn context() -> (tempfile::TempDir, String, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("task.jsonl");
    std::fs::write(
        &path,
        "{\"type\":\"input\",\"data\":{\"city\":\"Austin\"}}\n",
    )
    .unwrap();
    let bytes = std::fs::read(&path).unwrap();
    (dir, path.to_str().unwrap().to_owned(), bytes)
}

/// `agentctx loop CONTEXT --write` in `provider`'s format against `base`,
/// with a key in the environment.
fn run_loop(context: &str, provider: &str, base: &str, more: &[&str]) -> Run {
    let mut args = vec![
        "loop",
        context,
        "--model",
        "m",
        "--provider",
        provider,
        "--base-url",
        base,
        "--write",
    ];
    args.extend_from_slice(more);
    command(&args)
        .env("OPENAI_API_KEY", "sk-openai-secret")
        .env("ANTHROPIC_API_KEY", "sk-ant-secret")
        .output()
        .unwrap()
        .into()
}

const SECRETS: [&str; 4] = ["sk-openai-secret", "sk-ant-secret", "hunter2", "q-secret"];

#[test]
fn r41_loop_refuses_a_zero_timeout_and_a_zero_answer_limit() {
    let (_dir, context, before) = context();
    let run = run_loop(
        &context,
        "openai",
        "http://127.0.0.1:9/v1",
        &["--timeout", "0"],
    );
    assert_eq!(run.code, 2);
    assert_eq!(
        run.stderr,
        "error: --timeout must be at least 1 (seconds for a request and its retries)\n"
    );
    let run = run_loop(
        &context,
        "openai",
        "http://127.0.0.1:9/v1",
        &["--max-answer-bytes", "0"],
    );
    assert_eq!(run.code, 2);
    assert_eq!(run.stderr, "error: --max-answer-bytes must be at least 1\n");
    assert_eq!(std::fs::read(&context).unwrap(), before);
}

#[test]
fn r41_loop_with_a_silent_server_ends_within_twice_the_timeout() {
    for provider in ["openai", "anthropic"] {
        let server = serve(|_| std::thread::sleep(Duration::from_secs(60)));
        let (_dir, context, before) = context();
        let base = format!("http://127.0.0.1:{}", server.port);
        let started = Instant::now();
        let run = run_loop(&context, provider, &base, &["--timeout", "1"]);
        let took = started.elapsed();
        assert_eq!(run.code, 1, "{}", run.stderr);
        let path = if provider == "openai" {
            "/chat/completions"
        } else {
            "/v1/messages"
        };
        assert_eq!(
            run.stderr,
            format!("error: request to {base}{path} timed out after 1 s (1 attempt(s))\n")
        );
        assert!(took < Duration::from_secs(3), "{took:?}");
        assert_eq!(std::fs::read(&context).unwrap(), before);
    }
}

#[test]
fn r41_loop_prints_one_line_per_retry() {
    for provider in ["openai", "anthropic"] {
        let server = serve(|s| {
            respond(
                s,
                "429 Too Many Requests",
                "Retry-After: 0\r\n",
                r#"{"error": {"message": "slow down"}}"#,
            );
        });
        let (_dir, context, before) = context();
        let base = format!(
            "http://user:hunter2@127.0.0.1:{}/?key=q-secret",
            server.port
        );
        let run = run_loop(&context, provider, &base, &[]);
        assert_eq!(run.code, 1, "{}", run.stderr);
        let lines: Vec<&str> = run.stderr.lines().collect();
        assert_eq!(lines.len(), 5, "{}", run.stderr);
        let path = if provider == "openai" {
            "/chat/completions"
        } else {
            "/v1/messages"
        };
        let url = format!("http://127.0.0.1:{}{path}?key=…", server.port);
        for (i, line) in lines[..4].iter().enumerate() {
            assert_eq!(
                *line,
                format!(
                    "retry: attempt {} of 5 failed ({url} answered 429: \"slow down\"); the server asks to wait 0 s (Retry-After)",
                    i + 1
                )
            );
        }
        assert_eq!(
            lines[4],
            format!("error: gave up after 5 attempts; the last: {url} answered 429: \"slow down\"")
        );
        for secret in SECRETS {
            assert!(!run.stderr.contains(secret), "{}", run.stderr);
        }
        assert_eq!(server.requests().len(), 5);
        assert_eq!(std::fs::read(&context).unwrap(), before);
    }
}

#[test]
fn r33_loop_prints_no_secret_no_escape_sequence_and_follows_no_redirect() {
    for provider in ["openai", "anthropic"] {
        // A redirect to another loopback listener, which must hear nothing.
        let target = serve(|s| respond(s, "200 OK", "", "{}"));
        let location = format!(
            "Location: http://127.0.0.1:{}/steal?key=q-secret\r\n",
            target.port
        );
        let server = serve(move |s| respond(s, "307 Temporary Redirect", &location, ""));
        let (_dir, context, before) = context();
        let base = format!("http://user:hunter2@127.0.0.1:{}/", server.port);
        let run = run_loop(&context, provider, &base, &[]);
        assert_eq!(run.code, 1, "{}", run.stderr);
        assert!(
            run.stderr.contains(&format!(
                "answered 307, a redirect to http://127.0.0.1:{}; model requests do not follow redirects",
                target.port
            )),
            "{}",
            run.stderr
        );
        assert_eq!(target.connections(), 0);

        // Escape sequences in the server's error text are printed escaped.
        let server = serve(|s| {
            respond(
                s,
                "401 Unauthorized",
                "",
                "{\"error\": {\"message\": \"\\u001b]0;pwned\\u0007\\u001b[2J bad key\"}}",
            );
        });
        let base = format!("http://user:hunter2@127.0.0.1:{}/", server.port);
        let run2 = run_loop(&context, provider, &base, &[]);
        assert_eq!(run2.code, 1, "{}", run2.stderr);
        let variable = if provider == "openai" {
            "OPENAI_API_KEY"
        } else {
            "ANTHROPIC_API_KEY"
        };
        assert!(
            run2.stderr.ends_with(&format!(
                " answered 401: \"\\u001b]0;pwned\\u0007\\u001b[2J bad key\"; check the API key ({variable})\n"
            )),
            "{}",
            run2.stderr
        );
        for stderr in [&run.stderr, &run2.stderr] {
            assert!(!stderr.contains('\u{1b}') && !stderr.contains('\u{7}'));
            for secret in SECRETS {
                assert!(!stderr.contains(secret), "{stderr}");
            }
        }
        assert_eq!(std::fs::read(&context).unwrap(), before);
    }
}

#[test]
fn r41_loop_stops_at_the_answer_size_limit() {
    for provider in ["openai", "anthropic"] {
        let server = serve(|s| respond(s, "200 OK", "", &" ".repeat(5000)));
        let (_dir, context, before) = context();
        let base = format!("http://127.0.0.1:{}", server.port);
        let run = run_loop(&context, provider, &base, &["--max-answer-bytes", "1000"]);
        assert_eq!(run.code, 1, "{}", run.stderr);
        assert!(
            run.stderr.ends_with(" is larger than 1000 bytes\n"),
            "{}",
            run.stderr
        );
        assert_eq!(std::fs::read(&context).unwrap(), before);
    }
}

/// A successful response carrying `answer` where `provider`'s format puts it.
fn answer_body(provider: &str, answer: &agent_core::json::Value) -> String {
    let body = match provider {
        "openai" => agent_core::json!({"choices": [{"index": 0, "message": {"role": "assistant",
            "content": answer.to_string()}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1}}),
        _ => agent_core::json!({"type": "message", "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "answer", "input": answer}],
            "usage": {"input_tokens": 1, "output_tokens": 1}}),
    };
    body.to_string()
}

#[test]
fn r39b_loop_survives_a_hostile_model_and_the_next_run_works() {
    use agent_core::{json, json::Value};
    let n = 10_000;
    let cycle: Vec<Value> = (0..n)
        .map(|i| {
            json!({"_tool": "copy", "text": format!("†state.c{}", (i + 1) % n),
                        "_output": "x", "_outputPath": format!("†state.c{i}")})
        })
        .collect();
    let forged = vec![
        json!({"_tool": "copy", "text": "x", "_output": "forged", "_outputPath": "†error"}),
        json!({"_tool": "copy", "text": "x", "_output": "done", "_outputPath": "†output"}),
        json!({"_tool": "copy", "text": "x", "_output": "y", "_outputPath": "†state.v", "_instance": "i9"}),
    ];
    let unknown: Vec<Value> = (0..n).map(|i| json!({"_tool": format!("t{i}")})).collect();
    let tools = json!([{"type": "object", "properties": {"_tool": {"const": "copy"},
        "text": {"type": "string"}, "_output": {"type": "string"}}}])
    .to_string();
    for provider in ["openai", "anthropic"] {
        let answers: Vec<String> = [cycle.clone(), forged.clone(), unknown.clone()]
            .into_iter()
            .map(|calls| answer_body(provider, &json!({"calls": calls, "output": null})))
            .collect();
        // One turn per connection: each response closes its connection.
        let server = Server::start(move |s, _, at| {
            let body = answers.get(at).cloned().unwrap_or_default();
            respond(s, "200 OK", "Content-Type: application/json\r\n", &body);
        });
        let (_dir, context, before) = context();
        let base = format!("http://127.0.0.1:{}", server.port);
        let run = run_loop(
            &context,
            provider,
            &base,
            &["--tools", &tools, "--max-turns", "3"],
        );
        assert_eq!(run.code, 3, "{}", run.stderr);
        let grown = std::fs::metadata(&context).unwrap().len() as usize - before.len();
        // One error for the cycle, three for the forged calls, 64 KiB of
        // unknown tools and one count: nothing near the 890 MB of before.
        assert!(grown < 256 * 1024, "{grown} bytes appended");
        let check = command(&["check", &context]).output().unwrap();
        assert!(
            check.status.success(),
            "{}",
            String::from_utf8_lossy(&check.stderr)
        );
        let output = command(&["view", &context, "output"]).output().unwrap();
        // No forged output: the run never finished.
        assert_eq!(String::from_utf8_lossy(&output.stdout), "");

        // The next run on the same context works and finishes.
        let answer = answer_body(provider, &json!({"calls": [], "output": "the end"}));
        let server = serve(move |s| respond(s, "200 OK", "", &answer));
        let base = format!("http://127.0.0.1:{}", server.port);
        let next = run_loop(&context, provider, &base, &["--tools", &tools]);
        assert_eq!(next.code, 0, "{}", next.stderr);
        assert_eq!(next.stdout.trim(), "\"the end\"");
    }
}

/// A streamed answer in `provider`'s documented event shapes, the answer's
/// text sent a few characters per event.
fn answer_stream(provider: &str, answer: &agent_core::json::Value) -> String {
    use agent_core::json;
    let text = answer.to_string();
    let pieces: Vec<String> = text
        .chars()
        .collect::<Vec<_>>()
        .chunks(3)
        .map(|c| c.iter().collect())
        .collect();
    let mut events = Vec::new();
    if provider == "openai" {
        for piece in pieces {
            let chunk = json!({"id": "c", "object": "chat.completion.chunk", "created": 1,
                "model": "m", "choices": [{"index": 0, "delta": {"content": piece},
                "finish_reason": null}], "usage": null});
            events.push(format!("data: {chunk}\n\n"));
        }
        let usage = json!({"id": "c", "object": "chat.completion.chunk", "created": 1,
            "model": "m", "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 7}});
        events.push(format!("data: {usage}\n\ndata: [DONE]\n\n"));
    } else {
        let event =
            |name: &str, data: agent_core::json::Value| format!("event: {name}\ndata: {data}\n\n");
        events.push(event(
            "message_start",
            json!({"type": "message_start", "message": {
            "id": "msg", "type": "message", "role": "assistant", "content": [],
            "usage": {"input_tokens": 5, "output_tokens": 1}}}),
        ));
        events.push(event("content_block_start", json!({"type": "content_block_start",
            "index": 0, "content_block": {"type": "tool_use", "id": "t", "name": "answer", "input": {}}})));
        for piece in pieces {
            events.push(event(
                "content_block_delta",
                json!({"type": "content_block_delta",
                "index": 0, "delta": {"type": "input_json_delta", "partial_json": piece}}),
            ));
        }
        events.push(event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ));
        events.push(event(
            "message_delta",
            json!({"type": "message_delta",
            "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 7}}),
        ));
        events.push(event("message_stop", json!({"type": "message_stop"})));
    }
    events.concat()
}

#[test]
fn r38_loop_streams_its_answers_unless_told_not_to() {
    let answer = agent_core::json!({"calls": [], "output": {"city": "Austin"}});
    for provider in ["openai", "anthropic"] {
        let (streamed, whole) = (
            answer_stream(provider, &answer),
            answer_body(provider, &answer),
        );
        for (flag, body) in [(None, streamed), (Some("--no-stream"), whole)] {
            let content_type = if flag.is_none() {
                "Content-Type: text/event-stream\r\n"
            } else {
                "Content-Type: application/json\r\n"
            };
            let server = serve(move |s| respond(s, "200 OK", content_type, &body));
            let (_dir, context, _) = context();
            let base = format!("http://127.0.0.1:{}", server.port);
            let more: Vec<&str> = flag.into_iter().collect();
            let run = run_loop(&context, provider, &base, &more);
            assert_eq!(run.code, 0, "{provider} {flag:?}: {}", run.stderr);
            assert_eq!(run.stdout.trim(), r#"{"city":"Austin"}"#);
            let requests = server.requests();
            let streams = requests[0].contains(r#""stream":true"#);
            assert_eq!(streams, flag.is_none(), "{provider} {flag:?}");
        }
    }
}

#[test]
fn r41_loop_fails_at_once_without_a_key_or_a_server() {
    let (_dir, context, before) = context();
    for (provider, variable) in [
        ("openai", "OPENAI_API_KEY"),
        ("anthropic", "ANTHROPIC_API_KEY"),
    ] {
        let run: Run = command(&[
            "loop",
            &context,
            "--model",
            "m",
            "--provider",
            provider,
            "--write",
        ])
        .env_remove(variable)
        .output()
        .unwrap()
        .into();
        assert_eq!(run.code, 1, "{}", run.stderr);
        assert!(
            run.stderr.ends_with(&format!(": set {variable}\n")),
            "{}",
            run.stderr
        );
        assert!(
            run.stderr.starts_with("error: no API key for https://api."),
            "{}",
            run.stderr
        );

        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let started = Instant::now();
        let run = run_loop(&context, provider, &format!("http://127.0.0.1:{port}"), &[]);
        assert!(started.elapsed() < Duration::from_secs(3));
        assert_eq!(run.code, 1, "{}", run.stderr);
        assert!(
            run.stderr
                .starts_with("error: cannot connect to http://127.0.0.1:"),
            "{}",
            run.stderr
        );
        assert!(!run.stderr.contains("retry:"), "{}", run.stderr);
        assert_eq!(std::fs::read(&context).unwrap(), before);
    }
}
