//! Streamed answers in both formats against a server scripted over a
//! loopback socket, writing the providers' documented event shapes
//! (Chat Completions chunks up to `data: [DONE]`; Messages events from
//! `message_start` to `message_stop`), chunked or close-delimited; and
//! the faults that fail at once (spec R38, R41; decision D56).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use test_support::http::Server;
use test_support::sse::{FORMATS, Format, Framing, Step, anthropic_event, openai_chunk, play};

use agent_core::{json, json::Value};
use agent_data::Context;
use agent_loop::{
    Anthropic, Error, OpenAi, Provider, Reply, Request, Retry, SYSTEM_TEXT, Tool, Tools,
    answer_schema,
};
use agent_render::{RenderMode, Renderer};
use std::io::Write;
use std::time::{Duration, Instant};

/// A whole stream of `pieces`, with `pause` after piece `at`.
fn stream(format: Format, pieces: &[&str], pause: Option<(usize, Duration)>) -> Vec<Step> {
    format.stream(pieces.iter().enumerate().map(|(i, piece)| {
        let after = match pause {
            Some((at, wait)) if at == i => vec![Step::Pause(wait)],
            _ => Vec::new(),
        };
        (*piece, after)
    }))
}

/// A client of `format` at `base`, retrying fast.
fn client(format: Format, base: &str, timeout: Duration) -> Box<dyn Provider> {
    let key = Some("sk-test".to_owned());
    match format {
        Format::OpenAi | Format::OpenAiTool => {
            Box::new(OpenAi::new(base, key, timeout, fast()).unwrap())
        }
        Format::Anthropic => Box::new(Anthropic::new(base, key, timeout, fast()).unwrap()),
    }
}

fn fast() -> Retry {
    Retry::default()
        .with_attempts(3)
        .with_base(Duration::from_millis(10))
        .with_max(Duration::from_millis(50))
}

/// A server answering each connection with `steps`, chunked or
/// close-delimited.
fn serve(steps: Vec<Step>, chunked: bool) -> Server {
    let framing = if chunked {
        Framing::Chunked
    } else {
        Framing::CloseDelimited
    };
    Server::start(move |stream, _, _| play(stream, &steps, framing))
}

/// The body of a recorded request.
fn request_body(request: &str) -> Value {
    agent_core::json::from_str(test_support::http::body(request)).unwrap()
}

/// Sends one request, noting each reported call with when it came.
fn send(
    provider: &dyn Provider,
    reported: &mut Vec<(usize, Value, Instant)>,
) -> Result<Reply, Error> {
    let ctx = Context::from_json(r#"[{"type": "input", "data": {"city": "Austin"}}]"#).unwrap();
    let chat = Renderer::new().render(&ctx, RenderMode::Merged);
    let mut tools = Tools::new();
    tools.add(
        Tool::new(
            json!({"type": "object", "properties": {"_tool": {"const": "weather"}, "city": {"type": "string"}}}),
            "test",
        )
        .unwrap(),
    );
    let schema = answer_schema(
        &tools,
        |_| false,
        agent_loop::CallInstances::Existing(&[]),
        None,
    );
    provider.send_streaming(
        &Request::new("m", SYSTEM_TEXT, &chat, &schema).with_max_tokens(1024),
        &mut |i, call| reported.push((i, call.clone(), Instant::now())),
    )
}

const FIRST: &str = r#"{"_tool": "weather", "city": "Austin"}"#;
const SECOND: &str = r#"{"_tool": "weather", "city": "a \"}{\" ][ \\ ✓"}"#;

fn answer_text() -> String {
    format!(r#"{{"calls": [{FIRST}, {SECOND}], "output": null}}"#)
}

fn calls() -> Vec<Value> {
    vec![
        agent_core::json::from_str(FIRST).unwrap(),
        agent_core::json::from_str(SECOND).unwrap(),
    ]
}

#[test]
fn r38_the_first_call_is_reported_before_the_stream_ends() {
    for format in FORMATS {
        let text = answer_text();
        let cut = text
            .find(", {\"_tool\": \"weather\", \"city\": \"a")
            .unwrap();
        let (head, tail) = text.split_at(cut);
        let server = serve(
            stream(
                format,
                &[head, tail],
                Some((0, Duration::from_millis(1200))),
            ),
            true,
        );
        let provider = client(format, &server.base, Duration::from_secs(10));
        let started = Instant::now();
        let mut reported = Vec::new();
        let reply = send(provider.as_ref(), &mut reported).unwrap();
        let ended = started.elapsed();
        assert!(
            ended >= Duration::from_millis(1200),
            "{format:?}: {ended:?}"
        );
        let first = reported[0].2.duration_since(started);
        assert!(first < Duration::from_millis(700), "{format:?}: {first:?}");
        let indices: Vec<usize> = reported.iter().map(|r| r.0).collect();
        assert_eq!(indices, [0, 1], "{format:?}");
        let answer = reply.answer.unwrap();
        assert_eq!(answer.calls, calls());
        assert_eq!(answer.output, None);
        assert_eq!(
            (reply.usage.input, reply.usage.output),
            (9, 12),
            "{format:?}"
        );
        let body = request_body(&server.requests()[0]);
        assert_eq!(body["stream"], true, "{format:?}");
        if format != Format::Anthropic {
            assert_eq!(body["stream_options"], json!({"include_usage": true}));
        }
    }
}

#[test]
fn r38_calls_split_byte_by_byte_are_read_whole() {
    for format in FORMATS {
        for chunked in [false, true] {
            let text = answer_text();
            let pieces: Vec<String> = text.chars().map(String::from).collect();
            let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
            let server = serve(stream(format, &pieces, None), chunked);
            let provider = client(format, &server.base, Duration::from_secs(10));
            let mut reported = Vec::new();
            let reply = send(provider.as_ref(), &mut reported).unwrap();
            let got: Vec<(usize, Value)> = reported.into_iter().map(|(i, c, _)| (i, c)).collect();
            assert_eq!(got, vec![(0, calls()[0].clone()), (1, calls()[1].clone())]);
            assert_eq!(reply.answer.unwrap().calls, calls(), "{format:?}");
        }
    }
}

#[test]
fn r38_a_server_that_does_not_stream_is_read_whole() {
    for format in FORMATS {
        let answer: Value = agent_core::json::from_str(&answer_text()).unwrap();
        let body = match format {
            Format::OpenAi => json!({"choices": [{"index": 0, "message": {"role": "assistant",
                "content": answer_text()}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 4}}),
            Format::OpenAiTool => json!({"choices": [{"index": 0, "message": {"role": "assistant",
                "content": null, "tool_calls": [{"id": "c", "type": "function",
                "function": {"name": "answer", "arguments": answer_text()}}]}}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 4}}),
            Format::Anthropic => json!({"type": "message", "content": [{"type": "tool_use",
                "id": "t", "name": "answer", "input": answer}],
                "usage": {"input_tokens": 3, "output_tokens": 4}}),
        }
        .to_string();
        let server = Server::start(move |stream, _, _| {
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        });
        let provider = client(format, &server.base, Duration::from_secs(10));
        let mut reported = Vec::new();
        let reply = send(provider.as_ref(), &mut reported).unwrap();
        let got: Vec<Value> = reported.into_iter().map(|(_, c, _)| c).collect();
        assert_eq!(got, calls(), "{format:?}");
        assert_eq!(reply.answer.unwrap().calls, calls());
        assert_eq!((reply.usage.input, reply.usage.output), (3, 4));
    }
}

#[test]
fn r38_without_streaming_the_whole_answer_is_asked_for_and_every_call_reported() {
    let body = json!({"choices": [{"index": 0, "message": {"role": "assistant",
        "content": answer_text()}}], "usage": {"prompt_tokens": 3, "completion_tokens": 4}})
    .to_string();
    let server = Server::start(move |stream, _, _| {
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
    });
    let provider = OpenAi::new(&server.base, None, Duration::from_secs(5), fast())
        .unwrap()
        .stream(false);
    let mut reported = Vec::new();
    send(&provider, &mut reported).unwrap();
    assert_eq!(reported.len(), 2);
    let body = request_body(&server.requests()[0]);
    assert!(body.get("stream").is_none() && body.get("stream_options").is_none());
}

#[test]
fn r38_a_provider_without_streaming_reports_every_call_after_the_answer() {
    struct Whole;
    impl Provider for Whole {
        fn send(&self, _: &Request<'_>) -> Result<Reply, Error> {
            Ok(Reply::new(
                agent_loop::Answer::from_text(&answer_text()),
                agent_loop::Usage::default(),
            ))
        }
    }
    let mut reported = Vec::new();
    send(&Whole, &mut reported).unwrap();
    let got: Vec<(usize, Value)> = reported.into_iter().map(|(i, c, _)| (i, c)).collect();
    assert_eq!(got, vec![(0, calls()[0].clone()), (1, calls()[1].clone())]);
}

#[test]
fn r38_an_invalid_streamed_answer_is_an_answer_error_and_a_repeated_calls_key_too() {
    for format in FORMATS {
        let server = serve(
            stream(format, &[r#"{"calls": [{"_tool": "weather"}"#], None),
            false,
        );
        let provider = client(format, &server.base, Duration::from_secs(5));
        let mut reported = Vec::new();
        let reply = send(provider.as_ref(), &mut reported).unwrap();
        let error = reply.answer.unwrap_err();
        assert!(
            error.starts_with("the answer is not JSON"),
            "{format:?}: {error}"
        );
        assert_eq!(reported.len(), 1);

        let twice = r#"{"calls": [{"_tool": "a"}], "output": null, "calls": [{"_tool": "b"}]}"#;
        let server = serve(stream(format, &[twice], None), false);
        let provider = client(format, &server.base, Duration::from_secs(5));
        let mut reported = Vec::new();
        let reply = send(provider.as_ref(), &mut reported).unwrap();
        assert_eq!(reported.len(), 1, "{format:?}");
        let error = reply.answer.unwrap_err();
        assert!(error.contains("give \"calls\" once"), "{error}");
    }
}

#[test]
fn r41_a_stall_mid_stream_is_a_timeout_and_not_retried() {
    for format in FORMATS {
        let text = answer_text();
        let cut = text
            .find(", {\"_tool\": \"weather\", \"city\": \"a")
            .unwrap();
        let (head, tail) = text.split_at(cut);
        let server = serve(
            stream(format, &[head, tail], Some((0, Duration::from_secs(30)))),
            true,
        );
        let provider = client(format, &server.base, Duration::from_secs(1));
        let started = Instant::now();
        let mut reported = Vec::new();
        let error = send(provider.as_ref(), &mut reported).unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(3), "{format:?}");
        assert!(
            matches!(error, Error::TimedOut { .. }),
            "{format:?}: {error}"
        );
        assert!(error.to_string().contains("timed out after 1 s"), "{error}");
        assert_eq!(reported.len(), 1, "{format:?}");
        assert_eq!(server.connections(), 1);
    }
}

#[test]
fn r41_a_streamed_answer_is_held_to_the_limit_by_its_content_as_a_whole_one_is() {
    // 1,000 calls (about 40 KB of JSON) in 7-character pieces: near 1 MB
    // of events, many times the 100 KB limit the whole body keeps within.
    let calls: Vec<String> = (0..1000)
        .map(|i| format!(r#"{{"_tool": "weather", "city": "c{i}"}}"#))
        .collect();
    let text = format!(r#"{{"calls": [{}], "output": null}}"#, calls.join(", "));
    let pieces: Vec<&str> = (0..text.len())
        .step_by(7)
        .map(|at| &text[at..(at + 7).min(text.len())])
        .collect();
    let limited = |format: Format, base: &str| -> Box<dyn Provider> {
        let timeout = Duration::from_secs(20);
        match format {
            Format::Anthropic => Box::new(
                Anthropic::new(base, None, timeout, fast())
                    .unwrap()
                    .max_answer_bytes(100_000),
            ),
            _ => Box::new(
                OpenAi::new(base, None, timeout, fast())
                    .unwrap()
                    .max_answer_bytes(100_000),
            ),
        }
    };
    for format in FORMATS {
        let steps = stream(format, &pieces, None);
        let framing: usize = steps
            .iter()
            .map(|s| match s {
                Step::Write(event) => event.len(),
                _ => 0,
            })
            .sum();
        assert!(framing > 500_000, "{framing}");
        let streamed = serve(steps, true);
        let mut reported = Vec::new();
        let reply = send(limited(format, &streamed.base).as_ref(), &mut reported).unwrap();
        let streamed_calls = reply.answer.unwrap().calls;
        assert_eq!((streamed_calls.len(), reported.len()), (1000, 1000));
        let body = format.whole(&text);
        assert!(body.len() < 100_000);
        let whole = Server::start(move |stream, _, _| {
            test_support::http::respond(stream, "200 OK", "", &body);
        });
        let reply = send(limited(format, &whole.base).as_ref(), &mut Vec::new()).unwrap();
        assert_eq!(reply.answer.unwrap().calls, streamed_calls, "{format:?}");
    }
}

#[test]
fn r41_an_oversize_stream_and_an_endless_line_stop_at_the_limit() {
    for format in FORMATS {
        // 5 MB of events: past the content's limit, and past what the
        // framing may take (64 times it) where no block holds the pieces.
        let piece = format.piece(&"x".repeat(1000));
        let endless = Server::start(move |stream, _, _| {
            let steps: Vec<Step> = (0..5000).map(|_| Step::Write(piece.clone())).collect();
            play(stream, &steps, Framing::Chunked);
        });
        let line = Server::start(|stream, _, _| {
            let mut steps = vec![Step::Write("data: ".into())];
            steps.extend((0..2000).map(|_| Step::Write("x".repeat(1000))));
            play(stream, &steps, Framing::CloseDelimited);
        });
        for server in [endless, line] {
            let provider: Box<dyn Provider> = match format {
                Format::Anthropic => Box::new(
                    Anthropic::new(&server.base, None, Duration::from_secs(10), fast())
                        .unwrap()
                        .max_answer_bytes(64 << 10),
                ),
                _ => Box::new(
                    OpenAi::new(&server.base, None, Duration::from_secs(10), fast())
                        .unwrap()
                        .max_answer_bytes(64 << 10),
                ),
            };
            let error = send(provider.as_ref(), &mut Vec::new()).unwrap_err();
            assert_eq!(
                error.to_string(),
                format!(
                    "the answer from {}{} is larger than 65536 bytes",
                    server.base,
                    format.path()
                )
            );
            assert_eq!(server.connections(), 1);
        }
    }
}

#[test]
fn r41_an_error_event_mid_stream_ends_the_request_unretried() {
    for format in FORMATS {
        let mut steps: Vec<Step> = format.opening().into_iter().map(Step::Write).collect();
        steps.push(Step::Write(format.piece(r#"{"calls": ["#)));
        steps.push(Step::Write(format.error_event()));
        let server = serve(steps, true);
        let provider = client(format, &server.base, Duration::from_secs(5));
        let error = send(provider.as_ref(), &mut Vec::new()).unwrap_err();
        let message = match format {
            Format::Anthropic => "\"Overloaded\"",
            _ => "\"The server had an error\"",
        };
        assert_eq!(
            error.to_string(),
            format!(
                "{}{} sent an error in the stream: {message}",
                server.base,
                format.path()
            )
        );
        assert_eq!(server.connections(), 1);
    }
}

#[test]
fn r41_a_stream_cut_before_any_call_is_retried_and_after_one_is_not() {
    for format in FORMATS {
        let text = answer_text();
        let cut = text
            .find(", {\"_tool\": \"weather\", \"city\": \"a")
            .unwrap();
        let (head, _) = text.split_at(cut);
        let mut cut_early: Vec<Step> = format.opening().into_iter().map(Step::Write).collect();
        cut_early.push(Step::Write(format.piece("{\"calls\": [{")));
        cut_early.push(Step::Cut);
        let whole = stream(format, &[&text], None);
        let server = Server::start(move |stream, _, n| {
            play(
                stream,
                if n == 0 { &cut_early } else { &whole },
                Framing::Chunked,
            );
        });
        let provider = client(format, &server.base, Duration::from_secs(5));
        let mut reported = Vec::new();
        let reply = send(provider.as_ref(), &mut reported).unwrap();
        assert_eq!(reply.answer.unwrap().calls, calls(), "{format:?}");
        assert_eq!(reported.len(), 2);
        assert_eq!(server.connections(), 2);

        let mut cut_late: Vec<Step> = format.opening().into_iter().map(Step::Write).collect();
        cut_late.push(Step::Write(format.piece(head)));
        cut_late.push(Step::Cut);
        let server = serve(cut_late, true);
        let provider = client(format, &server.base, Duration::from_secs(5));
        let mut reported = Vec::new();
        let error = send(provider.as_ref(), &mut reported).unwrap_err();
        assert!(
            error
                .to_string()
                .ends_with("(after 1 call(s) were reported, so it is not retried)"),
            "{format:?}: {error}"
        );
        assert_eq!(reported.len(), 1);
        assert_eq!(server.connections(), 1);
    }
}

#[test]
fn r38_a_streamed_answer_in_a_misplaced_place_is_read_as_a_whole_one_would_be() {
    let text = answer_text();
    let (head, tail) = text.split_at(text.len() / 2);
    // Anthropic: the answer as text blocks, no tool use.
    let text_blocks = vec![
        Step::Write(anthropic_event(
            "message_start",
            &json!({"type": "message_start", "message": {"usage": {"input_tokens": 2}}})
                .to_string(),
        )),
        Step::Write(anthropic_event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "text", "text": ""}})
            .to_string(),
        )),
        Step::Write(anthropic_event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "text_delta", "text": head}})
            .to_string(),
        )),
        Step::Write(anthropic_event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "text_delta", "text": tail}})
            .to_string(),
        )),
        Step::Write(anthropic_event(
            "message_stop",
            &json!({"type": "message_stop"}).to_string(),
        )),
    ];
    // OpenAI: a native call of another name whose arguments are the answer
    // (as proxies turn `response_format` into a tool of their own).
    let native = vec![
        Step::Write(openai_chunk(
            &json!({"tool_calls": [{"index": 0, "id": "c",
            "type": "function", "function": {"name": "json_tool_call", "arguments": head}}]})
            .to_string(),
        )),
        Step::Write(openai_chunk(
            &json!({"tool_calls": [{"index": 0, "function": {"arguments": tail}}]}).to_string(),
        )),
        Step::Write("data: [DONE]\n\n".into()),
    ];
    for (format, steps) in [(Format::Anthropic, text_blocks), (Format::OpenAi, native)] {
        let server = serve(steps, false);
        let provider = client(format, &server.base, Duration::from_secs(5));
        let mut reported = Vec::new();
        let reply = send(provider.as_ref(), &mut reported).unwrap();
        assert_eq!(reply.answer.unwrap().calls, calls(), "{format:?}");
        let got: Vec<Value> = reported.into_iter().map(|(_, c, _)| c).collect();
        assert_eq!(got, calls(), "{format:?}");
    }
}
