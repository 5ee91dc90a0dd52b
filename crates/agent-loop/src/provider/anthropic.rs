//! Anthropic Messages (spec R38): the answer schema as the input schema of
//! one tool the model is made to use.

use crate::provider::body::Fault;
use crate::provider::http::{Endpoint, Http, Retry, RetryNotice};
use crate::provider::scan::Scanner;
use crate::provider::sse::Event;
use crate::provider::stream::{Assemble, Reporter, event_json, receive, stream_error};
use crate::provider::{
    ANSWER_NAME, Provider, Reply, Request, Usage, check_key, native_answer, report_all, usage,
};
use crate::{Answer, Error, Result};
use agent_core::{json, json::Value};
use agent_render::{PayloadFormat as Format, payload};
use std::time::Duration;

/// The Messages API: `POST {base}/v1/messages` with the `anthropic-version`
/// header and one forced tool named `answer`.
///
/// Answers are streamed by default (`"stream": true`): the forced tool's
/// input arrives as `input_json_delta` events up to `message_stop`; a
/// server that answers whole instead is read whole (R38).
#[derive(Debug, Clone)]
pub struct Anthropic {
    endpoint: Endpoint,
    key: Option<String>,
    http: Http,
    stream: bool,
}

impl Anthropic {
    /// The default base URL.
    pub const BASE_URL: &'static str = "https://api.anthropic.com";
    /// The API version sent in `anthropic-version`.
    pub const VERSION: &'static str = "2023-06-01";
    /// The name of the tool that carries the answer.
    pub const ANSWER_TOOL: &'static str = ANSWER_NAME;

    /// A client for the server at `base`. With `key`, requests carry
    /// `x-api-key: KEY`; without, no key header at all. Requests go to
    /// `{base}/v1/messages`, a query of `base` kept after the path;
    /// `timeout` bounds one request with its retries, and must be more
    /// than zero. Redirects are not followed. Anthropic's own server
    /// (`api.anthropic.com`) without a key is [`Error::MissingKey`], before
    /// anything is sent.
    ///
    /// # Errors
    /// [`Error::Client`] when `base` is not an http(s) URL, `timeout` is zero, or TLS cannot be
    /// set up; [`Error::MissingKey`] for Anthropic's own server without `key`.
    pub fn new(
        base: &str,
        key: Option<String>,
        timeout: Duration,
        retry: Retry,
    ) -> Result<Anthropic> {
        let endpoint = Endpoint::new(base, "/v1/messages")?;
        check_key(
            &endpoint,
            key.as_ref(),
            "api.anthropic.com",
            Anthropic::KEY_VARIABLE,
        )?;
        Ok(Anthropic {
            endpoint,
            key,
            http: Http::new(timeout, retry, Anthropic::KEY_VARIABLE)?,
            stream: true,
        })
    }

    /// Where `agentctx loop` reads the key, named by a missing key or a 401.
    pub const KEY_VARIABLE: &'static str = "ANTHROPIC_API_KEY";

    /// Whether answers are streamed (default `true`; `false` asks for the
    /// whole answer at once, as before streaming).
    #[must_use]
    pub fn stream(mut self, on: bool) -> Anthropic {
        self.stream = on;
        self
    }

    /// Reads at most `bytes` of a response (default
    /// [`crate::MAX_ANSWER_BYTES`]); a larger one fails with
    /// [`Error::TooLarge`] without being read further.
    #[must_use]
    pub fn max_answer_bytes(mut self, bytes: u64) -> Anthropic {
        self.http.set_max_answer_bytes(bytes);
        self
    }

    /// Calls `observer` before each retry's wait (the library prints
    /// nothing).
    #[must_use]
    pub fn on_retry(
        mut self,
        observer: impl Fn(&RetryNotice<'_>) + Send + Sync + 'static,
    ) -> Anthropic {
        self.http.set_observer(std::sync::Arc::new(observer));
        self
    }

    /// The request body (R38). The context's own system texts follow the
    /// system text, after a blank line.
    ///
    /// # Errors
    /// [`Error::Request`] when the context cannot be rendered in Anthropic's format, or renders
    /// no user or assistant message.
    pub fn body(request: &Request<'_>) -> Result<Value> {
        let rendered = payload(request.chat, Format::Anthropic)
            .map_err(|e| Error::Request(e.to_string()))?
            .into_value();
        let system = match rendered["system"].as_str() {
            Some(own) => format!("{}\n\n{own}", request.system),
            None => request.system.to_owned(),
        };
        let messages = rendered["messages"].clone();
        if messages.as_array().is_none_or(Vec::is_empty) {
            return Err(Error::Request(
                "the context renders no user or assistant message, and Anthropic needs one".into(),
            ));
        }
        Ok(json!({
            "model": request.model,
            "max_tokens": request.max_tokens,
            "system": system,
            "messages": messages,
            "tools": [{
                "name": Anthropic::ANSWER_TOOL,
                "description": "Give your answer: the calls to make now, and the final output once the task is done (null until then).",
                "input_schema": request.answer_schema
            }],
            "tool_choice": {"type": "tool", "name": Anthropic::ANSWER_TOOL}
        }))
    }

    /// The reply in a response body: the `input` of the `tool_use` block
    /// of the `answer` tool; else the only `tool_use` block, read as an
    /// answer when its input has `calls`; else the text blocks, read as
    /// the answer's JSON text (D53: untrusted server).
    ///
    /// # Errors
    /// [`Error::BadReply`] when `body` has no `content` array. A reply whose answer cannot be
    /// read is not an error: the [`Reply`]'s `answer` says why.
    pub fn reply(body: &Value) -> Result<Reply> {
        let Some(content) = body["content"].as_array() else {
            return Err(Error::BadReply {
                reason: "no content array".into(),
            });
        };
        let uses: Vec<&Value> = content
            .iter()
            .filter(|block| block["type"] == "tool_use")
            .collect();
        let text: String = content
            .iter()
            .filter(|block| block["type"] == "text")
            .filter_map(|block| block["text"].as_str())
            .collect::<Vec<_>>()
            .concat();
        let answer = match uses
            .iter()
            .find(|block| block["name"] == Anthropic::ANSWER_TOOL)
        {
            Some(block) => Answer::from_value(block["input"].clone()),
            None => match uses.as_slice() {
                [only] => native_answer(only["name"].as_str().unwrap_or_default(), &only["input"]),
                [] if !text.trim().is_empty() => Answer::from_text(&text),
                [] => Err(format!(
                    "the reply does not use the {} tool",
                    agent_core::quoted(Anthropic::ANSWER_TOOL)
                )),
                _ => Err(format!(
                    "the reply uses {} tools, none of them {}; use that one tool once",
                    uses.len(),
                    agent_core::quoted(Anthropic::ANSWER_TOOL)
                )),
            },
        };
        Ok(Reply {
            answer,
            usage: usage(body, "input_tokens", "output_tokens"),
        })
    }
}

impl Anthropic {
    fn headers(&self) -> Vec<(&'static str, String)> {
        let mut headers = vec![("anthropic-version", Anthropic::VERSION.to_owned())];
        if let Some(key) = &self.key {
            headers.push(("x-api-key", key.clone()));
        }
        headers
    }

    /// One request whose answer is not streamed.
    fn send_whole(&self, request: &Request<'_>) -> Result<Reply> {
        let body = self
            .http
            .post(&self.endpoint, &self.headers(), &Anthropic::body(request)?)?;
        Anthropic::reply(&body)
    }
}

impl Provider for Anthropic {
    fn send(&self, request: &Request<'_>) -> Result<Reply> {
        if self.stream {
            self.send_streaming(request, &mut |_, _| {})
        } else {
            self.send_whole(request)
        }
    }

    fn send_streaming(
        &self,
        request: &Request<'_>,
        on_call: &mut dyn FnMut(usize, &Value),
    ) -> Result<Reply> {
        if !self.stream {
            let reply = self.send_whole(request)?;
            report_all(&reply, on_call);
            return Ok(reply);
        }
        let mut body = Anthropic::body(request)?;
        if let Some(fields) = body.as_object_mut() {
            fields.insert("stream".into(), json!(true));
        }
        let mut reporter = Reporter::new(on_call);
        self.http
            .exchange(&self.endpoint, &self.headers(), &body, &mut |success| {
                receive(success, Blocks::default(), &mut reporter, Anthropic::reply)
            })
    }
}

/// Where a streamed answer's calls are scanned.
const TEXT: u8 = 0;
const ANSWER_TOOL: u8 = 1;

/// A Messages stream gathered into the content blocks it spells out.
#[derive(Default)]
struct Blocks {
    /// The text blocks' text, joined as [`Anthropic::reply`] joins them.
    text: Option<Scanner>,
    /// `tool_use` blocks by their `index`.
    uses: std::collections::BTreeMap<u64, ToolUse>,
    /// The `index` of the first `tool_use` block named `answer`.
    answer: Option<u64>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    /// Bytes of text, names, starting inputs and input JSON gathered.
    gathered: usize,
}

/// A `tool_use` block as its deltas build it.
struct ToolUse {
    name: String,
    /// The `input` the block started with (used when no delta follows).
    start: Value,
    json: Scanner,
}

impl Blocks {
    fn usage(&mut self, usage: &Value) {
        if let Some(n) = usage["input_tokens"].as_u64() {
            self.input_tokens = Some(n);
        }
        if let Some(n) = usage["output_tokens"].as_u64() {
            self.output_tokens = Some(n);
        }
    }

    fn text(&mut self, text: &str, reporter: &mut Reporter<'_>) {
        self.gathered += text.len();
        let calls = self.text.get_or_insert_with(Scanner::new).push(text);
        reporter.offer(TEXT, calls);
    }
}

impl Assemble for Blocks {
    fn event(
        &mut self,
        event: &Event,
        reporter: &mut Reporter<'_>,
        fault: Fault<'_>,
    ) -> Result<bool> {
        let data = event_json(event)?;
        let kind = data["type"].as_str().unwrap_or(&event.name);
        let index = data["index"].as_u64().unwrap_or(0);
        match kind {
            "message_start" => self.usage(&data["message"]["usage"]),
            "message_delta" => self.usage(&data["usage"]),
            "message_stop" => return Ok(true),
            "error" => return Err(stream_error(event, fault)),
            "content_block_start" => {
                let block = &data["content_block"];
                match block["type"].as_str() {
                    Some("text") => self.text(block["text"].as_str().unwrap_or_default(), reporter),
                    Some("tool_use") => {
                        // The block's name and starting input, bounded by
                        // the event that carries them.
                        self.gathered += event.data.len();
                        let name = block["name"].as_str().unwrap_or_default().to_owned();
                        if name == ANSWER_NAME && self.answer.is_none() {
                            self.answer = Some(index);
                        }
                        let start = block.get("input").cloned().unwrap_or(Value::Null);
                        let json = Scanner::new();
                        self.uses.insert(index, ToolUse { name, start, json });
                    }
                    _ => {}
                }
            }
            "content_block_delta" => {
                let delta = &data["delta"];
                match delta["type"].as_str() {
                    Some("text_delta") => {
                        self.text(delta["text"].as_str().unwrap_or_default(), reporter);
                    }
                    Some("input_json_delta") => {
                        if let Some(block) = self.uses.get_mut(&index) {
                            let part = delta["partial_json"].as_str().unwrap_or_default();
                            self.gathered += part.len();
                            let calls = block.json.push(part);
                            if self.answer == Some(index) {
                                reporter.offer(ANSWER_TOOL, calls);
                            }
                        }
                    }
                    _ => {}
                }
            }
            // `ping`, `content_block_stop`, and events added later.
            _ => {}
        }
        Ok(false)
    }

    fn gathered(&self) -> usize {
        self.gathered
    }

    fn reply(self) -> Result<Reply> {
        let usage = Usage {
            input: self.input_tokens.unwrap_or(0),
            output: self.output_tokens.unwrap_or(0),
        };
        let mut content = Vec::new();
        if let Some(text) = &self.text {
            content.push(json!({"type": "text", "text": text.text()}));
        }
        for (index, block) in &self.uses {
            let text = block.json.text();
            let input = if text.trim().is_empty() {
                block.start.clone()
            } else {
                match agent_core::json::from_str(text) {
                    Ok(input) => input,
                    // The answer's own text says what is wrong with it.
                    Err(_) if self.answer == Some(*index) => {
                        return Ok(Reply {
                            answer: Answer::from_text(text),
                            usage,
                        });
                    }
                    Err(_) => Value::String(text.to_owned()),
                }
            };
            content.push(json!({"type": "tool_use", "name": block.name, "input": input}));
        }
        let body = json!({
            "content": content,
            "usage": {"input_tokens": usage.input, "output_tokens": usage.output}
        });
        Anthropic::reply(&body)
    }
}
