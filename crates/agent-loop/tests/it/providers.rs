//! The two providers over real HTTP against a local server that answers
//! with bodies shaped like each provider's documented examples, and records
//! what it was sent (spec R38, R41).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use agent_core::{json, json::Value};
use agent_data::Context;
use agent_loop::{
    Anthropic, CallInstances, Error, OpenAi, Provider, Reply, Request, Retry, SYSTEM_TEXT, Tool,
    Tools, answer_schema,
};
use agent_render::{RenderMode, Renderer};
use std::time::Duration;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const ANSWER: &str = r#"{"calls": [{"_tool": "weather", "city": "†input.city", "_outputPath": "†state.forecast"}], "output": null}"#;

fn fast() -> Retry {
    Retry::default()
        .with_attempts(3)
        .with_base(Duration::from_millis(10))
        .with_max(Duration::from_millis(50))
}

fn context() -> Context {
    Context::from_json(
        r#"[{"type": "text", "role": "system", "text": "You plan trips."},
            {"type": "input", "data": {"city": "Austin"}}]"#,
    )
    .unwrap()
}

fn schema() -> Value {
    let mut tools = Tools::new();
    tools.add(
        Tool::new(
            json!({"type": "object", "properties": {"_tool": {"const": "weather"}, "city": {"type": "string"}}}),
            "test",
        )
        .unwrap(),
    );
    answer_schema(&tools, |_| true, CallInstances::Existing(&[]), None)
}

/// The mock server's runtime. The providers' client is synchronous and
/// runs on the test's own thread, outside it.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Runtime::new().unwrap()
}

/// Sends one request through `provider`.
fn send(provider: impl Provider) -> Result<Reply, Error> {
    let chat = Renderer::new().render(&context(), RenderMode::Merged);
    let schema = schema();
    provider.send(&Request::new("test-model", SYSTEM_TEXT, &chat, &schema).with_max_tokens(1024))
}

/// A Chat Completions response as in OpenAI's API reference.
fn openai_response(content: &str) -> Value {
    json!({
        "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
        "object": "chat.completion",
        "created": 1741569952,
        "model": "gpt-4.1-2025-04-14",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content, "refusal": null, "annotations": []},
            "logprobs": null,
            "finish_reason": "stop"
        }],
        "usage": {"prompt_tokens": 19, "completion_tokens": 10, "total_tokens": 29},
        "service_tier": "default"
    })
}

/// A Messages response with a `tool_use` block, as in Anthropic's docs.
fn anthropic_response(input: Value) -> Value {
    json!({
        "id": "msg_01Aq9w938a90dw8q",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": [{"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "answer", "input": input}],
        "stop_reason": "tool_use",
        "stop_sequence": null,
        "usage": {"input_tokens": 2095, "output_tokens": 503}
    })
}

#[test]
fn r38_openai_request_body_is_chat_completions_with_a_json_schema_response_format() {
    let rt = runtime();
    let server = rt.block_on(MockServer::start());
    rt.block_on(
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .respond_with(ResponseTemplate::new(200).set_body_json(openai_response(ANSWER)))
            .mount(&server),
    );
    let provider = OpenAi::new(
        &format!("{}/v1/", server.uri()),
        Some("sk-test".into()),
        Duration::from_secs(5),
        fast(),
    )
    .unwrap();
    let reply = send(provider).unwrap();
    let answer = reply.answer.unwrap();
    assert_eq!(answer.calls[0]["city"], "†input.city");
    assert_eq!(answer.output, None);
    assert_eq!((reply.usage.input, reply.usage.output), (19, 10));

    let requests = rt.block_on(server.received_requests()).unwrap();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(
        request.headers.get("authorization").unwrap(),
        "Bearer sk-test"
    );
    assert_eq!(
        request.headers.get("content-type").unwrap(),
        "application/json"
    );
    let body: Value = serde_json::from_slice(&request.body).unwrap();
    assert_eq!(body["model"], "test-model");
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(
        messages[0],
        json!({"role": "system", "content": SYSTEM_TEXT})
    );
    assert_eq!(
        messages[1],
        json!({"role": "system", "content": "You plan trips."})
    );
    assert_eq!(messages[2]["role"], "user");
    assert!(
        messages[2]["content"]
            .as_str()
            .unwrap()
            .starts_with("## Data: ¶input\n")
    );
    assert_eq!(
        body["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "answer", "schema": schema(), "strict": false}})
    );
    assert_eq!(
        body.as_object().unwrap().keys().collect::<Vec<_>>(),
        [
            "model",
            "messages",
            "response_format",
            "stream",
            "stream_options"
        ]
    );
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    // The body is a request async-openai's types accept.
    let typed: async_openai::types::chat::CreateChatCompletionRequest =
        agent_core::json::from_value(body).unwrap();
    assert_eq!(typed.messages.len(), 3);
    assert_eq!(typed.stream, Some(true));
}

#[test]
fn r38_without_a_key_no_key_header_is_sent() {
    let rt = runtime();
    let server = rt.block_on(MockServer::start());
    rt.block_on(
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_json(openai_response(ANSWER)))
            .mount(&server),
    );
    let provider = OpenAi::new(&server.uri(), None, Duration::from_secs(5), fast()).unwrap();
    send(provider).unwrap();
    let server2 = rt.block_on(MockServer::start());
    rt.block_on(
        Mock::given(method("POST"))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_json(anthropic_response(json!({"calls": [], "output": 1}))),
            )
            .mount(&server2),
    );
    let provider = Anthropic::new(&server2.uri(), None, Duration::from_secs(5), fast()).unwrap();
    send(provider).unwrap();
    let openai = &rt.block_on(server.received_requests()).unwrap()[0];
    assert!(openai.headers.get("authorization").is_none());
    assert_eq!(openai.url.path(), "/chat/completions");
    let anthropic = &rt.block_on(server2.received_requests()).unwrap()[0];
    assert!(anthropic.headers.get("x-api-key").is_none());
    assert_eq!(
        anthropic.headers.get("anthropic-version").unwrap(),
        "2023-06-01"
    );
}

#[test]
fn r38_anthropic_request_forces_one_answer_tool_and_reads_its_input() {
    let rt = runtime();
    let server = rt.block_on(MockServer::start());
    let input: Value = agent_core::json::from_str(ANSWER).unwrap();
    rt.block_on(
        Mock::given(method("POST"))
            .and(path("/v1/messages"))
            .respond_with(
                ResponseTemplate::new(200).set_body_json(anthropic_response(input.clone())),
            )
            .mount(&server),
    );
    let provider = Anthropic::new(
        &server.uri(),
        Some("sk-ant-test".into()),
        Duration::from_secs(5),
        fast(),
    )
    .unwrap();
    let reply = send(provider).unwrap();
    assert_eq!(
        reply.answer.unwrap().calls,
        input["calls"].as_array().unwrap().clone()
    );
    assert_eq!((reply.usage.input, reply.usage.output), (2095, 503));

    let request = &rt.block_on(server.received_requests()).unwrap()[0];
    assert_eq!(request.headers.get("x-api-key").unwrap(), "sk-ant-test");
    assert_eq!(
        request.headers.get("anthropic-version").unwrap(),
        "2023-06-01"
    );
    let body: Value = serde_json::from_slice(&request.body).unwrap();
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["max_tokens"], 1024);
    // The context's own system text follows the engine's.
    assert_eq!(body["system"], format!("{SYSTEM_TEXT}\n\nYou plan trips."));
    assert_eq!(body["messages"][0]["role"], "user");
    assert_eq!(body["messages"][0]["content"][0]["type"], "text");
    assert_eq!(body["tools"][0]["name"], "answer");
    assert_eq!(body["tools"][0]["input_schema"], schema());
    assert_eq!(
        body["tool_choice"],
        json!({"type": "tool", "name": "answer"})
    );
}

#[test]
fn r41_429_and_503_are_retried_and_the_answer_arrives() {
    let rt = runtime();
    let server = rt.block_on(MockServer::start());
    rt.block_on(
Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "0")
                .set_body_json(json!({"error": {"message": "Rate limit reached", "type": "requests", "param": null, "code": "rate_limit_exceeded"}})),
        )
        .up_to_n_times(1)
        .mount(&server),
    );
    rt.block_on(
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(503).set_body_string("Service Unavailable"))
            .up_to_n_times(1)
            .mount(&server),
    );
    rt.block_on(
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_json(openai_response(ANSWER)))
            .mount(&server),
    );
    let provider = OpenAi::new(&server.uri(), None, Duration::from_secs(5), fast()).unwrap();
    let reply = send(provider).unwrap();
    assert!(reply.answer.is_ok());
    assert_eq!(rt.block_on(server.received_requests()).unwrap().len(), 3);
}

#[test]
fn r41_a_400_is_not_retried_and_names_the_status_and_the_providers_message() {
    let rt = runtime();
    let server = rt.block_on(MockServer::start());
    rt.block_on(
Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(400).set_body_json(
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: Field required"}}),
        ))
        .mount(&server),
    );
    let provider = Anthropic::new(&server.uri(), None, Duration::from_secs(5), fast()).unwrap();
    let error = send(provider).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "{}/v1/messages answered 400: \"max_tokens: Field required\"",
            server.uri()
        )
    );
    assert_eq!(rt.block_on(server.received_requests()).unwrap().len(), 1);
}

#[test]
fn r41_retries_are_bounded() {
    let rt = runtime();
    let server = rt.block_on(MockServer::start());
    rt.block_on(
        Mock::given(method("POST"))
            .respond_with(
                ResponseTemplate::new(500)
                    .set_body_json(json!({"error": {"message": "The server had an error"}})),
            )
            .mount(&server),
    );
    let provider = OpenAi::new(&server.uri(), None, Duration::from_secs(5), fast()).unwrap();
    let error = send(provider).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "gave up after 3 attempts; the last: {}/chat/completions answered 500: \"The server had an error\"",
            server.uri()
        )
    );
    assert_eq!(rt.block_on(server.received_requests()).unwrap().len(), 3);
}

#[test]
fn r41_a_refused_connection_is_not_retried() {
    // A port nothing listens on: bind, note it, and close.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let provider = OpenAi::new(
        &format!("http://127.0.0.1:{port}"),
        None,
        Duration::from_secs(5),
        fast(),
    )
    .unwrap();
    let error = send(provider).unwrap_err();
    let text = error.to_string();
    assert!(
        text.starts_with(&format!(
            "cannot connect to http://127.0.0.1:{port}/chat/completions: "
        )),
        "{text}"
    );
}

#[test]
fn r40_a_reply_that_is_not_json_is_an_answer_error_not_a_failed_request() {
    let rt = runtime();
    let server = rt.block_on(MockServer::start());
    rt.block_on(
        Mock::given(method("POST"))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_json(openai_response("I think the weather is nice.")),
            )
            .mount(&server),
    );
    let provider = OpenAi::new(&server.uri(), None, Duration::from_secs(5), fast()).unwrap();
    let reply = send(provider).unwrap();
    assert_eq!(
        reply.answer.unwrap_err(),
        "the answer is not JSON (expected value at line 1 column 1): \"I think the weather is nice.\""
    );
}

#[test]
fn r41_a_providers_own_server_without_a_key_fails_before_sending() {
    let timeout = Duration::from_secs(5);
    let openai = OpenAi::new(OpenAi::BASE_URL, None, timeout, fast()).unwrap_err();
    assert_eq!(
        openai.to_string(),
        "no API key for https://api.openai.com/v1/chat/completions: set OPENAI_API_KEY"
    );
    let anthropic = Anthropic::new(Anthropic::BASE_URL, None, timeout, fast()).unwrap_err();
    assert_eq!(
        anthropic.to_string(),
        "no API key for https://api.anthropic.com/v1/messages: set ANTHROPIC_API_KEY"
    );
    // A server of one's own may need no key.
    OpenAi::new("http://127.0.0.1:8000/v1", None, timeout, fast()).unwrap();
    Anthropic::new("http://127.0.0.1:8000", None, timeout, fast()).unwrap();
}

#[test]
fn r41_an_unknown_host_fails_at_once() {
    // `.invalid` never resolves (RFC 6761).
    let (base, timeout) = ("http://agentctx-test.invalid:9", Duration::from_secs(20));
    let openai = send(OpenAi::new(base, None, timeout, fast()).unwrap()).unwrap_err();
    let anthropic = send(Anthropic::new(base, None, timeout, fast()).unwrap()).unwrap_err();
    for error in [openai, anthropic] {
        assert!(matches!(error, Error::Connect { .. }), "{error}");
        assert!(
            error
                .to_string()
                .starts_with("cannot connect to http://agentctx-test.invalid:9/"),
            "{error}"
        );
    }
}
