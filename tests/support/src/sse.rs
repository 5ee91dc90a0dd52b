//! The providers' documented event streams, as a scripted server sends
//! them: Chat Completions chunks up to `data: [DONE]`, Messages events from
//! `message_start` to `message_stop`, chunked or close-delimited, with
//! pauses, cuts and hooks between events.

use serde_json::{Value, json};
use std::fmt;
use std::io::Write;
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

/// A wire format an answer streams in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Chat Completions, the answer as the message's content.
    OpenAi,
    /// Chat Completions with the answer as a native tool call's arguments.
    OpenAiTool,
    /// Anthropic's Messages, the answer as a `tool_use` block's input.
    Anthropic,
}

/// Every [`Format`].
pub const FORMATS: [Format; 3] = [Format::OpenAi, Format::OpenAiTool, Format::Anthropic];

/// What the server does next.
#[derive(Clone)]
pub enum Step {
    /// Write this text (an event, or any bytes).
    Write(String),
    /// Wait this long.
    Pause(Duration),
    /// Run this (say, wait until the client started something) before the
    /// next step.
    Call(Arc<dyn Fn() + Send + Sync>),
    /// Drop the connection without ending the body.
    Cut,
}

impl fmt::Debug for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::Write(text) => f.debug_tuple("Write").field(text).finish(),
            Step::Pause(wait) => f.debug_tuple("Pause").field(wait).finish(),
            Step::Call(_) => f.write_str("Call(..)"),
            Step::Cut => f.write_str("Cut"),
        }
    }
}

/// How the body's end is marked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// `Transfer-Encoding: chunked`, one chunk per write.
    Chunked,
    /// `Connection: close`: the body ends when the connection does.
    CloseDelimited,
}

/// Writes a `200` event-stream response playing `steps`.
pub fn play(stream: &mut TcpStream, steps: &[Step], framing: Framing) {
    let header = match framing {
        Framing::Chunked => "Transfer-Encoding: chunked\r\n",
        Framing::CloseDelimited => "Connection: close\r\n",
    };
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nCache-Control: no-cache\r\n{header}\r\n"
    );
    for step in steps {
        match step {
            Step::Write(text) if framing == Framing::Chunked => {
                let _ = write!(stream, "{:x}\r\n{text}\r\n", text.len());
            }
            Step::Write(text) => {
                let _ = stream.write_all(text.as_bytes());
            }
            Step::Pause(wait) => std::thread::sleep(*wait),
            Step::Call(hook) => hook(),
            Step::Cut => {
                let _ = stream.flush();
                return;
            }
        }
        let _ = stream.flush();
    }
    if framing == Framing::Chunked {
        let _ = stream.write_all(b"0\r\n\r\n");
    }
}

/// One Chat Completions chunk carrying `delta` (JSON text, kept as written).
///
/// ```
/// let chunk = test_support::sse::openai_chunk(r#"{"content":"hi"}"#);
/// assert!(chunk.starts_with("data: {") && chunk.contains(r#""delta":{"content":"hi"}"#));
/// assert!(chunk.ends_with("\n\n"));
/// ```
pub fn openai_chunk(delta: &str) -> String {
    format!(
        r#"data: {{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{{"index":0,"delta":{delta},"logprobs":null,"finish_reason":null}}],"usage":null}}"#
    ) + "\n\n"
}

/// One named Messages event whose data is `data` (JSON text, kept as
/// written).
///
/// ```
/// assert_eq!(test_support::sse::anthropic_event("ping", r#"{"type":"ping"}"#), "event: ping\ndata: {\"type\":\"ping\"}\n\n");
/// ```
pub fn anthropic_event(name: &str, data: &str) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

impl Format {
    /// The path a request goes to under the base URL.
    pub fn path(self) -> &'static str {
        match self {
            Format::OpenAi | Format::OpenAiTool => "/chat/completions",
            Format::Anthropic => "/v1/messages",
        }
    }

    /// The events that open a stream.
    pub fn opening(self) -> Vec<String> {
        match self {
            Format::OpenAi => vec![openai_chunk(
                &json!({"role": "assistant", "content": "", "refusal": null}).to_string(),
            )],
            Format::OpenAiTool => vec![openai_chunk(
                &json!({"role": "assistant", "content": null,
                "tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                "function": {"name": "answer", "arguments": ""}}]})
                .to_string(),
            )],
            Format::Anthropic => vec![
                anthropic_event(
                    "message_start",
                    &json!({"type": "message_start", "message": {
                    "id": "msg_1", "type": "message", "role": "assistant", "model": "m",
                    "content": [], "stop_reason": null, "stop_sequence": null,
                    "usage": {"input_tokens": 9, "output_tokens": 1}}})
                    .to_string(),
                ),
                anthropic_event(
                    "content_block_start",
                    &json!({"type": "content_block_start",
                    "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1",
                    "name": "answer", "input": {}}})
                    .to_string(),
                ),
                anthropic_event("ping", &json!({"type": "ping"}).to_string()),
            ],
        }
    }

    /// The event carrying one piece of the answer's text.
    pub fn piece(self, text: &str) -> String {
        match self {
            Format::OpenAi => openai_chunk(&json!({"content": text}).to_string()),
            Format::OpenAiTool => openai_chunk(
                &json!({"tool_calls": [{"index": 0, "function": {"arguments": text}}]}).to_string(),
            ),
            Format::Anthropic => anthropic_event(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": 0,
                        "delta": {"type": "input_json_delta", "partial_json": text}})
                .to_string(),
            ),
        }
    }

    /// The events that close a stream, usage included.
    pub fn closing(self) -> Vec<String> {
        match self {
            Format::OpenAi | Format::OpenAiTool => vec![
                format!(
                    "data: {}\n\n",
                    json!({"id": "c1", "object": "chat.completion.chunk", "created": 1,
                        "model": "m", "choices": [{"index": 0, "delta": {},
                        "finish_reason": "stop"}], "usage": null})
                ),
                format!(
                    "data: {}\n\n",
                    json!({"id": "c1", "object": "chat.completion.chunk", "created": 1,
                        "model": "m", "choices": [], "usage": {"prompt_tokens": 9,
                        "completion_tokens": 12, "total_tokens": 21}})
                ),
                "data: [DONE]\n\n".to_owned(),
            ],
            Format::Anthropic => vec![
                anthropic_event(
                    "content_block_stop",
                    &json!({"type": "content_block_stop", "index": 0}).to_string(),
                ),
                anthropic_event(
                    "message_delta",
                    &json!({"type": "message_delta",
                    "delta": {"stop_reason": "tool_use", "stop_sequence": null},
                    "usage": {"output_tokens": 12}})
                    .to_string(),
                ),
                anthropic_event("message_stop", &json!({"type": "message_stop"}).to_string()),
            ],
        }
    }

    /// A whole stream: each piece of the answer's text, followed by the
    /// steps given with it.
    ///
    /// ```
    /// use test_support::sse::{Format, Step};
    /// let steps = Format::OpenAi.stream([("{\"a\"", vec![]), (":1}", vec![Step::Cut])]);
    /// assert!(matches!(steps.last(), Some(Step::Write(done)) if done == "data: [DONE]\n\n"));
    /// ```
    pub fn stream<S: AsRef<str>>(
        self,
        pieces: impl IntoIterator<Item = (S, Vec<Step>)>,
    ) -> Vec<Step> {
        let mut steps: Vec<Step> = self.opening().into_iter().map(Step::Write).collect();
        for (piece, after) in pieces {
            steps.push(Step::Write(self.piece(piece.as_ref())));
            steps.extend(after);
        }
        steps.extend(self.closing().into_iter().map(Step::Write));
        steps
    }

    /// An error event as the provider sends it mid-stream.
    pub fn error_event(self) -> String {
        match self {
            Format::OpenAi | Format::OpenAiTool => format!(
                "data: {}\n\n",
                json!({"error": {"message": "The server had an error", "type": "server_error"}})
            ),
            Format::Anthropic => anthropic_event("error", &json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}).to_string()),
        }
    }

    /// The whole body the server sends when asked not to stream; for
    /// Anthropic `text` must be JSON (the tool's input), kept as written.
    pub fn whole(self, text: &str) -> String {
        let usage_openai = r#"{"prompt_tokens":9,"completion_tokens":12,"total_tokens":21}"#;
        match self {
            Format::OpenAi => format!(
                r#"{{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{{"index":0,"message":{{"role":"assistant","content":{}}},"finish_reason":"stop"}}],"usage":{usage_openai}}}"#,
                Value::from(text)
            ),
            Format::OpenAiTool => format!(
                r#"{{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{{"index":0,"message":{{"role":"assistant","content":null,"tool_calls":[{{"id":"call_1","type":"function","function":{{"name":"answer","arguments":{}}}}}]}},"finish_reason":"tool_calls"}}],"usage":{usage_openai}}}"#,
                Value::from(text)
            ),
            Format::Anthropic => format!(
                r#"{{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{{"type":"tool_use","id":"toolu_1","name":"answer","input":{text}}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{{"input_tokens":9,"output_tokens":12}}}}"#
            ),
        }
    }
}
