//! OpenAI-compatible Chat Completions (spec R38): OpenAI itself and local
//! servers (vLLM, llama.cpp's server, Ollama) through the base URL.

use crate::provider::body::Fault;
use crate::provider::http::{Endpoint, Http, Retry, RetryNotice};
use crate::provider::scan::Scanner;
use crate::provider::sse::Event;
use crate::provider::stream::{Assemble, Reporter, event_json, receive, stream_error};
use crate::provider::{
    ANSWER_NAME, Provider, Reply, Request, check_key, native_answer, report_all, usage,
};
use crate::{Answer, Error, Result};
use agent_core::{json, json::Value};
use agent_render::{PayloadFormat as Format, payload};
use std::time::Duration;

/// A Chat Completions server: `POST {base}/chat/completions` with the
/// answer schema as `response_format` (`json_schema`, not strict — see
/// decision D31 in `docs/decisions.md`). No token limit is sent: OpenAI's
/// reasoning models refuse `max_tokens` and local servers differ on its
/// successor, so the server's default applies.
///
/// Answers are streamed by default (`"stream": true` with
/// `stream_options: {"include_usage": true}`), read from
/// `choices[0].delta` chunks up to `data: [DONE]`; a server that answers
/// whole instead is read whole (R38).
#[derive(Debug, Clone)]
pub struct OpenAi {
    endpoint: Endpoint,
    key: Option<String>,
    http: Http,
    stream: bool,
}

impl OpenAi {
    /// The default base URL.
    pub const BASE_URL: &'static str = "https://api.openai.com/v1";

    /// A client for the server at `base` (`https://api.openai.com/v1`, or a
    /// local server's `http://127.0.0.1:8000/v1`). With `key`, requests
    /// carry `Authorization: Bearer KEY`; without, no key header at all.
    /// Requests go to `{base}/chat/completions`, a query of `base` kept
    /// after the path; `timeout` bounds one request with its retries, and
    /// must be more than zero. Redirects are not followed. OpenAI's own
    /// server (`api.openai.com`) without a key is [`Error::MissingKey`],
    /// before anything is sent.
    ///
    /// # Errors
    /// [`Error::Client`] when `base` is not an http(s) URL, `timeout` is zero, or TLS cannot be
    /// set up; [`Error::MissingKey`] for OpenAI's own server without `key`.
    pub fn new(base: &str, key: Option<String>, timeout: Duration, retry: Retry) -> Result<OpenAi> {
        let endpoint = Endpoint::new(base, "/chat/completions")?;
        check_key(
            &endpoint,
            key.as_ref(),
            "api.openai.com",
            OpenAi::KEY_VARIABLE,
        )?;
        Ok(OpenAi {
            endpoint,
            key,
            http: Http::new(timeout, retry, OpenAi::KEY_VARIABLE)?,
            stream: true,
        })
    }

    /// Where `agentctx loop` reads the key, named by a missing key or a 401.
    pub const KEY_VARIABLE: &'static str = "OPENAI_API_KEY";

    /// Whether answers are streamed (default `true`; `false` asks for the
    /// whole answer at once, as before streaming).
    #[must_use]
    pub fn stream(mut self, on: bool) -> OpenAi {
        self.stream = on;
        self
    }

    /// Reads at most `bytes` of a response (default
    /// [`crate::MAX_ANSWER_BYTES`]); a larger one fails with
    /// [`Error::TooLarge`] without being read further.
    #[must_use]
    pub fn max_answer_bytes(mut self, bytes: u64) -> OpenAi {
        self.http.set_max_answer_bytes(bytes);
        self
    }

    /// Calls `observer` before each retry's wait (the library prints
    /// nothing).
    #[must_use]
    pub fn on_retry(
        mut self,
        observer: impl Fn(&RetryNotice<'_>) + Send + Sync + 'static,
    ) -> OpenAi {
        self.http.set_observer(std::sync::Arc::new(observer));
        self
    }

    /// The request body (R38).
    ///
    /// # Errors
    /// [`Error::Request`] when the context cannot be rendered in OpenAI's format.
    pub fn body(request: &Request<'_>) -> Result<Value> {
        let rendered = payload(request.chat, Format::OpenAi)
            .map_err(|e| Error::Request(e.to_string()))?
            .into_value();
        let mut messages = vec![json!({"role": "system", "content": request.system})];
        if let Value::Array(chat) = &rendered["messages"] {
            messages.extend(chat.iter().cloned());
        }
        Ok(json!({
            "model": request.model,
            "messages": messages,
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": ANSWER_NAME, "schema": request.answer_schema, "strict": false}
            }
        }))
    }

    /// The reply in a response body: the JSON text of
    /// `choices[0].message.content` (text parts joined, when it is an
    /// array of parts), or else a native tool call carrying the answer
    /// (D53: untrusted server).
    ///
    /// # Errors
    /// [`Error::BadReply`] when `body` has no `choices[0].message`. A reply whose answer cannot
    /// be read is not an error: the [`Reply`]'s `answer` says why.
    pub fn reply(body: &Value) -> Result<Reply> {
        let message = &body["choices"][0]["message"];
        if message.is_null() {
            return Err(Error::BadReply {
                reason: "no choices[0].message".into(),
            });
        }
        let content = match &message["content"] {
            Value::String(text) => text.clone(),
            Value::Array(parts) => parts
                .iter()
                .filter_map(|part| part["text"].as_str())
                .collect::<Vec<_>>()
                .concat(),
            _ => String::new(),
        };
        let answer = if !content.trim().is_empty() {
            Answer::from_text(&content)
        } else if let Value::String(refusal) = &message["refusal"] {
            Err(format!("the model refused: {refusal}"))
        } else {
            native_call(&message["tool_calls"])
        };
        Ok(Reply {
            answer,
            usage: usage(body, "prompt_tokens", "completion_tokens"),
        })
    }
}

/// The answer in a message's `tool_calls`: the one named `answer`, else the
/// only one (read as [`native_answer`] says).
fn native_call(tool_calls: &Value) -> std::result::Result<Answer, String> {
    let calls: Vec<&Value> = tool_calls
        .as_array()
        .map(|calls| calls.iter().filter(|c| c["function"].is_object()).collect())
        .unwrap_or_default();
    let named: Vec<&&Value> = calls
        .iter()
        .filter(|c| c["function"]["name"] == ANSWER_NAME)
        .collect();
    let call = match (named.as_slice(), calls.as_slice()) {
        ([one], _) => **one,
        ([], [only]) => *only,
        ([], []) => return Err("the reply has no content".to_owned()),
        _ => {
            return Err(format!(
                "the reply has {} native tool calls and no content; give one answer as the content",
                calls.len()
            ));
        }
    };
    let function = &call["function"];
    native_answer(
        function["name"].as_str().unwrap_or_default(),
        &function["arguments"],
    )
}

impl OpenAi {
    fn headers(&self) -> Vec<(&'static str, String)> {
        let mut headers = Vec::new();
        if let Some(key) = &self.key {
            headers.push(("authorization", format!("Bearer {key}")));
        }
        headers
    }

    /// One request whose answer is not streamed.
    fn send_whole(&self, request: &Request<'_>) -> Result<Reply> {
        let body = self
            .http
            .post(&self.endpoint, &self.headers(), &OpenAi::body(request)?)?;
        OpenAi::reply(&body)
    }
}

impl Provider for OpenAi {
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
        let mut body = OpenAi::body(request)?;
        if let Some(fields) = body.as_object_mut() {
            fields.insert("stream".into(), json!(true));
            fields.insert("stream_options".into(), json!({"include_usage": true}));
        }
        let mut reporter = Reporter::new(on_call);
        self.http
            .exchange(&self.endpoint, &self.headers(), &body, &mut |success| {
                receive(success, Chunks::default(), &mut reporter, OpenAi::reply)
            })
    }
}

/// Where a streamed answer's calls are scanned.
const CONTENT: u8 = 0;
const ANSWER_CALL: u8 = 1;

/// A Chat Completions stream gathered into the message it spells out.
#[derive(Default)]
struct Chunks {
    content: Option<Scanner>,
    refusal: Option<String>,
    /// Native tool calls by their `index`.
    tool_calls: std::collections::BTreeMap<u64, NativeCall>,
    /// The `index` of the first native call named `answer`.
    answer_call: Option<u64>,
    usage: Value,
    /// Bytes of content, refusal, names and arguments gathered.
    gathered: usize,
}

/// A native tool call as its deltas build it.
struct NativeCall {
    id: Value,
    name: String,
    arguments: Scanner,
}

impl Assemble for Chunks {
    fn event(
        &mut self,
        event: &Event,
        reporter: &mut Reporter<'_>,
        fault: Fault<'_>,
    ) -> Result<bool> {
        if event.data.trim() == "[DONE]" {
            return Ok(true);
        }
        let chunk = event_json(event)?;
        if chunk.get("error").is_some_and(|e| !e.is_null()) {
            return Err(stream_error(event, fault));
        }
        if chunk["usage"].is_object() {
            self.usage = chunk["usage"].clone();
        }
        let Some(choice) = chunk["choices"].as_array().and_then(|choices| {
            choices
                .iter()
                .find(|c| c["index"].as_u64().unwrap_or(0) == 0)
        }) else {
            return Ok(false);
        };
        let delta = &choice["delta"];
        if let Some(text) = delta["content"].as_str() {
            self.gathered += text.len();
            let calls = self.content.get_or_insert_with(Scanner::new).push(text);
            reporter.offer(CONTENT, calls);
        }
        if let Some(text) = delta["refusal"].as_str() {
            self.gathered += text.len();
            self.refusal.get_or_insert_with(String::new).push_str(text);
        }
        for (position, call) in delta["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            let index = call["index"].as_u64().unwrap_or(position as u64);
            let native = self.tool_calls.entry(index).or_insert_with(|| NativeCall {
                id: Value::Null,
                name: String::new(),
                arguments: Scanner::new(),
            });
            if !call["id"].is_null() {
                native.id = call["id"].clone();
            }
            if let Some(name) = call["function"]["name"]
                .as_str()
                .filter(|_| native.name.is_empty())
            {
                self.gathered += name.len();
                name.clone_into(&mut native.name);
                if name == ANSWER_NAME && self.answer_call.is_none() {
                    self.answer_call = Some(index);
                }
            }
            if let Some(arguments) = call["function"]["arguments"].as_str() {
                self.gathered += arguments.len();
                let calls = native.arguments.push(arguments);
                if self.answer_call == Some(index) {
                    reporter.offer(ANSWER_CALL, calls);
                }
            }
        }
        Ok(false)
    }

    fn gathered(&self) -> usize {
        self.gathered
    }

    fn reply(self) -> Result<Reply> {
        let tool_calls: Vec<Value> = self
            .tool_calls
            .values()
            .map(|call| {
                json!({"id": call.id, "type": "function",
                       "function": {"name": call.name, "arguments": call.arguments.text()}})
            })
            .collect();
        let body = json!({
            "choices": [{"index": 0, "message": {
                "role": "assistant",
                "content": self.content.as_ref().map(Scanner::text),
                "refusal": self.refusal,
                "tool_calls": tool_calls
            }}],
            "usage": self.usage
        });
        OpenAi::reply(&body)
    }
}
