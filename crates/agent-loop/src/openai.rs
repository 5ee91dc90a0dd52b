//! OpenAI-compatible Chat Completions (spec R38): OpenAI itself and local
//! servers (vLLM, llama.cpp's server, Ollama) through the base URL.

use crate::http::{Endpoint, Http, Retry, RetryNotice};
use crate::provider::{ANSWER_NAME, Provider, Reply, Request, native_answer, usage};
use crate::{Answer, Error, Result};
use agent_render::{Provider as Format, payload};
use serde_json::{Value, json};
use std::time::Duration;

/// A Chat Completions server: `POST {base}/chat/completions` with the
/// answer schema as `response_format` (`json_schema`, not strict — see
/// decision D31 in `docs/decisions.md`). No token limit is sent: OpenAI's
/// reasoning models refuse `max_tokens` and local servers differ on its
/// successor, so the server's default applies.
#[derive(Debug, Clone)]
pub struct OpenAi {
    endpoint: Endpoint,
    key: Option<String>,
    http: Http,
}

impl OpenAi {
    /// The default base URL.
    pub const BASE_URL: &'static str = "https://api.openai.com/v1";

    /// A client for the server at `base` (`https://api.openai.com/v1`, or a
    /// local server's `http://127.0.0.1:8000/v1`). With `key`, requests
    /// carry `Authorization: Bearer KEY`; without, no key header at all.
    /// Requests go to `{base}/chat/completions`, a query of `base` kept
    /// after the path; `timeout` bounds one request with its retries, and
    /// must be more than zero. Redirects are not followed.
    pub fn new(base: &str, key: Option<String>, timeout: Duration, retry: Retry) -> Result<OpenAi> {
        Ok(OpenAi {
            endpoint: Endpoint::new(base, "/chat/completions")?,
            key,
            http: Http::new(timeout, retry)?,
        })
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
    /// (decision D53).
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

impl Provider for OpenAi {
    fn send(&self, request: &Request<'_>) -> Result<Reply> {
        let mut headers = Vec::new();
        if let Some(key) = &self.key {
            headers.push(("authorization", format!("Bearer {key}")));
        }
        let body = self
            .http
            .post(&self.endpoint, &headers, &OpenAi::body(request)?)?;
        OpenAi::reply(&body)
    }
}
