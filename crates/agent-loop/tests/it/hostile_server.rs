//! Both providers against a hostile server scripted over a loopback socket:
//! redirects, huge bodies, stalls, escape sequences, secrets in URLs, and
//! answers in the wrong place (spec R33, R38, R41; decision D53).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use test_support::http::{Server, respond};

use agent_core::{json, json::Value};
use agent_data::Context;
use agent_loop::{
    Anthropic, Error, OpenAi, Provider, Reply, Request, Retry, RetryNotice, SYSTEM_TEXT, Tool,
    Tools, answer_schema,
};
use agent_render::{RenderMode, Renderer};
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const KEY: &str = "sk-secret-key-0123";

const ANSWER: &str = r#"{"calls": [{"_tool": "weather", "city": "†input.city"}], "output": null}"#;

/// The two wire formats.
#[derive(Debug, Clone, Copy)]
enum Format {
    OpenAi,
    Anthropic,
}

const FORMATS: [Format; 2] = [Format::OpenAi, Format::Anthropic];

impl Format {
    /// The path a request goes to under the base URL.
    fn path(self) -> &'static str {
        match self {
            Format::OpenAi => "/chat/completions",
            Format::Anthropic => "/v1/messages",
        }
    }

    /// A successful response carrying `answer` where the format puts it.
    fn response(self, answer: &str) -> Value {
        match self {
            Format::OpenAi => json!({"choices": [{"index": 0, "message": {"role": "assistant",
                "content": answer, "refusal": null}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1}}),
            Format::Anthropic => json!({"type": "message", "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "answer",
                             "input": serde_json::from_str::<Value>(answer).unwrap()}],
                "usage": {"input_tokens": 1, "output_tokens": 1}}),
        }
    }
}

/// How a client is made.
struct Setup {
    timeout: Duration,
    retry: Retry,
    max_answer_bytes: Option<u64>,
    notices: Option<Arc<Mutex<Vec<String>>>>,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            timeout: Duration::from_secs(5),
            retry: Retry::default()
                .with_attempts(3)
                .with_base(Duration::from_millis(10))
                .with_max(Duration::from_millis(50)),
            max_answer_bytes: None,
            notices: None,
        }
    }
}

fn provider(format: Format, base: &str, setup: &Setup) -> Box<dyn Provider> {
    let notices = setup.notices.clone();
    let observe = move |notice: &RetryNotice<'_>| {
        if let Some(notices) = &notices {
            notices.lock().unwrap().push(format!(
                "attempt {} of {} failed, waiting {:?} (asked: {}): {}",
                notice.attempt, notice.attempts, notice.wait, notice.asked, notice.error
            ));
        }
    };
    let key = Some(KEY.to_owned());
    match format {
        Format::OpenAi => {
            let p = OpenAi::new(base, key, setup.timeout, setup.retry)
                .unwrap()
                .on_retry(observe);
            Box::new(match setup.max_answer_bytes {
                Some(n) => p.max_answer_bytes(n),
                None => p,
            })
        }
        Format::Anthropic => {
            let p = Anthropic::new(base, key, setup.timeout, setup.retry)
                .unwrap()
                .on_retry(observe);
            Box::new(match setup.max_answer_bytes {
                Some(n) => p.max_answer_bytes(n),
                None => p,
            })
        }
    }
}

/// Sends one request about a small context.
fn send(provider: &dyn Provider) -> Result<Reply, Error> {
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
        |_| true,
        agent_loop::CallInstances::Existing(&[]),
        None,
    );
    provider.send(&Request::new("m", SYSTEM_TEXT, &chat, &schema).with_max_tokens(100))
}

/// A scripted loopback server answering every connection alike.
fn serve(script: impl Fn(&mut TcpStream) + Send + Sync + 'static) -> Server {
    Server::start(move |stream, _, _| script(stream))
}

/// Holds the connection open, silent, for longer than any test waits.
fn stall(stream: &mut TcpStream) {
    std::thread::sleep(Duration::from_secs(60));
    let _ = stream.flush();
}

#[test]
fn r41_a_redirect_is_not_followed_and_nothing_reaches_its_target() {
    for format in FORMATS {
        for status in [
            "301 Moved Permanently",
            "302 Found",
            "307 Temporary Redirect",
            "308 Permanent Redirect",
        ] {
            let target =
                serve(move |s| respond(s, "200 OK", "", &format.response(ANSWER).to_string()));
            let location = format!(
                "Location: http://user:pw@127.0.0.1:{}/steal?token=t0k3n\r\n",
                target.port
            );
            let server = serve(move |s| respond(s, status, &location, ""));
            let error =
                send(provider(format, &server.base, &Setup::default()).as_ref()).unwrap_err();
            let text = error.to_string();
            assert!(matches!(error, Error::Redirect { .. }), "{text}");
            assert_eq!(
                text,
                format!(
                    "{}{} answered {}, a redirect to http://127.0.0.1:{}; model requests do not follow redirects (the key and the context would go with them)",
                    server.base,
                    format.path(),
                    &status[..3],
                    target.port
                )
            );
            for secret in ["pw", "t0k3n", KEY] {
                assert!(!text.contains(secret), "{text}");
            }
            // Not retried, and the redirect's target saw nothing at all.
            assert_eq!(server.requests().len(), 1, "{format:?} {status}");
            assert_eq!(target.connections(), 0, "{format:?} {status}");
        }
    }
}

/// A server answering 200 with a 100 MB body, declared or not.
fn huge(declared: bool) -> Server {
    serve(move |stream| {
        let length = if declared {
            "Content-Length: 104857600\r\n"
        } else {
            ""
        };
        if write!(
            stream,
            "HTTP/1.1 200 OK\r\n{length}Connection: close\r\n\r\n"
        )
        .is_err()
        {
            return;
        }
        let chunk = vec![b' '; 1 << 20];
        for _ in 0..100 {
            if stream.write_all(&chunk).is_err() {
                return;
            }
        }
    })
}

#[test]
fn r41_a_100_mb_answer_is_refused_unread_past_the_limit() {
    for format in FORMATS {
        for declared in [true, false] {
            let server = huge(declared);
            let started = Instant::now();
            let error =
                send(provider(format, &server.base, &Setup::default()).as_ref()).unwrap_err();
            assert_eq!(
                error.to_string(),
                format!(
                    "the answer from {}{} is larger than 16777216 bytes",
                    server.base,
                    format.path()
                )
            );
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "{:?}",
                started.elapsed()
            );
            assert_eq!(server.requests().len(), 1);
        }
        // The limit is the provider's to set.
        let body = format.response(ANSWER).to_string();
        let server = serve(move |s| respond(s, "200 OK", "", &body));
        let small = Setup {
            max_answer_bytes: Some(100),
            ..Setup::default()
        };
        let error = send(provider(format, &server.base, &small).as_ref()).unwrap_err();
        assert!(
            matches!(error, Error::TooLarge { limit: 100, .. }),
            "{error}"
        );
    }
}

#[test]
fn r33_a_huge_error_text_is_printed_short_and_quoted() {
    // Built once, by hand: escaping 20 MB through `json!` in a debug build
    // on a busy machine took longer than the client's timeout.
    let body = std::sync::Arc::new(format!(
        r#"{{"error":{{"message":"\u001b]0;owned\u0007\u001b[2J{}"}}}}"#,
        "x".repeat(20 << 20)
    ));
    let patient = Setup {
        timeout: Duration::from_secs(60),
        ..Setup::default()
    };
    for format in FORMATS {
        let body = body.clone();
        let server = serve(move |stream| respond(stream, "400 Bad Request", "", &body));
        let error = send(provider(format, &server.base, &patient).as_ref()).unwrap_err();
        let text = error.to_string();
        assert!(text.len() < 500, "{} bytes", text.len());
        assert!(!text.chars().any(char::is_control), "{text}");
        // The body was cut where reading stopped; its message is still
        // found and printed, not the cut JSON.
        assert!(
            text.contains(r#"answered 400: "\u001b]0;owned\u0007\u001b[2Jxxx"#),
            "{text}"
        );
        assert!(text.ends_with("xxx…\""), "{text}");
        // A short message is read from its JSON, still quoted.
        let server = serve(|stream| {
            let body = json!({"error": {"message": "bad\u{1b}[31m red"}}).to_string();
            respond(stream, "401 Unauthorized", "", &body);
        });
        let error = send(provider(format, &server.base, &Setup::default()).as_ref()).unwrap_err();
        let variable = match format {
            Format::OpenAi => "OPENAI_API_KEY",
            Format::Anthropic => "ANTHROPIC_API_KEY",
        };
        assert_eq!(
            error.to_string(),
            format!(
                "{}{} answered 401: \"bad\\u001b[31m red\"; check the API key ({variable})",
                server.base,
                format.path()
            )
        );
    }
}

#[test]
fn r41_a_stall_before_the_headers_ends_within_twice_the_timeout_with_default_retries() {
    for format in FORMATS {
        let server = serve(stall);
        let setup = Setup {
            timeout: Duration::from_secs(1),
            retry: Retry::default(),
            ..Setup::default()
        };
        let started = Instant::now();
        let error = send(provider(format, &server.base, &setup).as_ref()).unwrap_err();
        let took = started.elapsed();
        assert_eq!(
            error.to_string(),
            format!(
                "request to {}{} timed out after 1 s (1 attempt(s))",
                server.base,
                format.path()
            )
        );
        assert!(took < Duration::from_millis(2500), "{took:?}");
    }
}

#[test]
fn r41_a_stall_inside_the_body_is_a_timeout_not_a_decoding_error() {
    for format in FORMATS {
        let server = serve(|stream| {
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"choi"
            );
            stall(stream);
        });
        let setup = Setup {
            timeout: Duration::from_millis(800),
            retry: Retry::default(),
            ..Setup::default()
        };
        let started = Instant::now();
        let error = send(provider(format, &server.base, &setup).as_ref()).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "request to {}{} timed out after 0.8 s (1 attempt(s))",
                server.base,
                format.path()
            )
        );
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
    }
}

#[test]
fn r41_a_retry_after_date_is_honoured_as_its_seconds_would_be() {
    for format in FORMATS {
        // An HTTP-date (RFC 9110) far ahead: the wait it asks for, capped,
        // passes the timeout, so the run stops at once instead of retrying
        // after 1, 2, 4 s as if nothing was asked.
        let server = serve(|s| {
            respond(
                s,
                "429 Too Many Requests",
                "Retry-After: Fri, 31 Dec 2099 23:59:59 GMT\r\n",
                "{}",
            )
        });
        let setup = Setup {
            timeout: Duration::from_secs(5),
            retry: Retry::default().with_max(Duration::from_secs(60)),
            ..Setup::default()
        };
        let started = Instant::now();
        let error = send(provider(format, &server.base, &setup).as_ref()).unwrap_err();
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(
            error.to_string(),
            format!(
                "gave up after 1 attempt(s): waiting 60 s more would pass the 5 s timeout; the last: {}{} answered 429: \"{{}}\"",
                server.base,
                format.path()
            )
        );
        assert_eq!(server.requests().len(), 1);
    }
}

#[test]
fn r41_retries_stop_at_the_timeout_and_each_is_told_to_the_observer() {
    for format in FORMATS {
        // Asked to wait longer than the timeout allows: no wait at all.
        let server = serve(|s| respond(s, "503 Service Unavailable", "Retry-After: 30\r\n", "{}"));
        let notices = Arc::new(Mutex::new(Vec::new()));
        let setup = Setup {
            timeout: Duration::from_secs(2),
            retry: Retry::default(),
            notices: Some(notices.clone()),
            ..Setup::default()
        };
        let started = Instant::now();
        let error = send(provider(format, &server.base, &setup).as_ref()).unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(1));
        assert_eq!(
            error.to_string(),
            format!(
                "gave up after 1 attempt(s): waiting 30 s more would pass the 2 s timeout; the last: {}{} answered 503: \"{{}}\"",
                server.base,
                format.path()
            )
        );
        assert!(notices.lock().unwrap().is_empty());

        // Backoff within the timeout: each retry is told, then the deadline
        // stops them before the attempts run out.
        let server = serve(|s| {
            respond(
                s,
                "500 Internal Server Error",
                "",
                r#"{"error": {"message": "down"}}"#,
            )
        });
        let setup = Setup {
            timeout: Duration::from_millis(1500),
            retry: Retry::default()
                .with_attempts(10)
                .with_base(Duration::from_millis(300))
                .with_max(Duration::from_secs(60)),
            notices: Some(notices.clone()),
            ..Setup::default()
        };
        let started = Instant::now();
        let error = send(provider(format, &server.base, &setup).as_ref()).unwrap_err();
        assert!(started.elapsed() < Duration::from_millis(1500));
        assert!(
            matches!(error, Error::NoTimeToRetry { attempts: 3, .. }),
            "{error}"
        );
        let url = format!("{}{}", server.base, format.path());
        assert_eq!(
            *notices.lock().unwrap(),
            [
                format!(
                    "attempt 1 of 10 failed, waiting 300ms (asked: false): {url} answered 500: \"down\""
                ),
                format!(
                    "attempt 2 of 10 failed, waiting 600ms (asked: false): {url} answered 500: \"down\""
                ),
            ]
        );
        assert_eq!(server.requests().len(), 3);
        notices.lock().unwrap().clear();

        // A wait the server asks for is told as such.
        let server = serve(|s| respond(s, "429 Too Many Requests", "Retry-After: 0\r\n", "{}"));
        let setup = Setup {
            notices: Some(notices.clone()),
            ..Setup::default()
        };
        send(provider(format, &server.base, &setup).as_ref()).unwrap_err();
        assert_eq!(notices.lock().unwrap().len(), 2);
        assert!(notices.lock().unwrap()[0].contains("waiting 0ns (asked: true)"));
        notices.lock().unwrap().clear();
    }
}

#[test]
fn r41_a_refused_connection_fails_at_once_without_the_password() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    for format in FORMATS {
        let notices = Arc::new(Mutex::new(Vec::new()));
        let setup = Setup {
            notices: Some(notices.clone()),
            ..Setup::default()
        };
        let base = format!("http://user:hunter2@127.0.0.1:{port}/?key={KEY}");
        let started = Instant::now();
        let error = send(provider(format, &base, &setup).as_ref()).unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(1));
        let text = error.to_string();
        assert!(
            text.starts_with(&format!(
                "cannot connect to http://127.0.0.1:{port}{}?key=…: ",
                format.path()
            )) && text
                .ends_with("; check the base URL (--base-url) and that the server is running"),
            "{text}"
        );
        let notices = notices.lock().unwrap();
        assert!(notices.is_empty(), "{notices:?}");
        for shown in notices.iter().chain([&text]) {
            assert!(
                !shown.contains("hunter2") && !shown.contains(KEY),
                "{shown}"
            );
        }
    }
}

#[test]
fn r38_a_base_url_keeps_its_query_after_the_path_and_prints_neither_password_nor_values() {
    for format in FORMATS {
        let server = serve(|s| respond(s, "403 Forbidden", "", r#"{"error": {"message": "no"}}"#));
        let base = format!(
            "http://user:hunter2@127.0.0.1:{}/v1/?api-key=q-secret&debug",
            server.port
        );
        let error = send(provider(format, &base, &Setup::default()).as_ref()).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "http://127.0.0.1:{}/v1{}?api-key=…&debug answered 403: \"no\"",
                server.port,
                format.path()
            )
        );
        let request = server.requests()[0].clone();
        assert!(
            request.starts_with(&format!(
                "POST /v1{}?api-key=q-secret&debug HTTP/1.1\r\n",
                format.path()
            )),
            "{request}"
        );
    }
}

/// The reply a server's 200 body makes.
fn reply(format: Format, body: Value) -> Result<agent_loop::Answer, String> {
    let body = body.to_string();
    let server = serve(move |s| respond(s, "200 OK", "", &body));
    send(provider(format, &server.base, &Setup::default()).as_ref())
        .unwrap()
        .answer
}

#[test]
fn r38_an_answer_given_as_a_native_tool_call_is_read() {
    let answer: Value = agent_core::json::from_str(ANSWER).unwrap();
    let openai_call = |name: &str, arguments: &str| {
        json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "call_1", "type": "function",
                            "function": {"name": name, "arguments": arguments}}]},
            "finish_reason": "tool_calls"}]})
    };
    let anthropic_use = |name: &str, input: Value| {
        json!({"type": "message", "content": [{"type": "text", "text": "Sure."},
            {"type": "tool_use", "id": "t1", "name": name, "input": input}]})
    };
    for name in ["answer", "json_tool_call"] {
        let read = reply(Format::OpenAi, openai_call(name, ANSWER)).unwrap();
        assert_eq!(read.calls, answer["calls"].as_array().unwrap().clone());
        let read = reply(Format::Anthropic, anthropic_use(name, answer.clone())).unwrap();
        assert_eq!(read.calls, answer["calls"].as_array().unwrap().clone());
    }
    // A call of another tool is not an answer: the model is told so.
    let expected = "the reply calls the native tool \"weather\" instead of giving the answer {\"calls\": [...], \"output\": ...}";
    assert_eq!(
        reply(
            Format::OpenAi,
            openai_call("weather", r#"{"city": "Austin"}"#)
        )
        .unwrap_err(),
        expected
    );
    assert_eq!(
        reply(
            Format::Anthropic,
            anthropic_use("weather", json!({"city": "Austin"}))
        )
        .unwrap_err(),
        expected
    );
    // An answer-named call is still checked like any answer.
    assert_eq!(
        reply(Format::OpenAi, openai_call("answer", r#"{"calls": []}"#)).unwrap_err(),
        "the answer has no \"output\" (use null while work remains)"
    );
}

#[test]
fn r38_an_answer_given_as_text_reaches_the_answer_reader() {
    // Anthropic without the tool: the text blocks are the answer's text.
    let body = json!({"type": "message", "content": [{"type": "text", "text": ANSWER}]});
    assert_eq!(reply(Format::Anthropic, body).unwrap().calls.len(), 1);
    // OpenAI content as an array of text parts.
    let body = json!({"choices": [{"index": 0, "message": {"role": "assistant",
        "content": [{"type": "text", "text": ANSWER}]}}]});
    assert_eq!(reply(Format::OpenAi, body).unwrap().calls.len(), 1);
    // Nothing at all.
    let body = json!({"type": "message", "content": []});
    assert_eq!(
        reply(Format::Anthropic, body).unwrap_err(),
        "the reply does not use the \"answer\" tool"
    );
    let body = json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": ""}}]});
    assert_eq!(
        reply(Format::OpenAi, body).unwrap_err(),
        "the reply has no content"
    );
}

#[test]
fn r41_401_and_404_fail_at_once_saying_what_to_check() {
    for format in FORMATS {
        for (status, hint) in [
            ("401 Unauthorized", "check the API key"),
            (
                "404 Not Found",
                "check the base URL (--base-url) and the model name (--model)",
            ),
        ] {
            let server = serve(move |s| respond(s, status, "", r#"{"error": {"message": "no"}}"#));
            let error = send(provider(format, &server.base, &Setup::default()).as_ref());
            let text = error.unwrap_err().to_string();
            assert!(
                text.contains(&format!("answered {}: \"no\"; {hint}", &status[..3])),
                "{text}"
            );
            assert_eq!(server.connections(), 1, "{text}");
        }
    }
}
