//! Anthropic Messages (spec R38): the answer schema as the input schema of
//! one tool the model is made to use.

use crate::http::{Endpoint, Http, Retry, RetryNotice};
use crate::provider::{ANSWER_NAME, Provider, Reply, Request, native_answer, usage};
use crate::{Answer, Error, Result};
use agent_render::{Provider as Format, payload};
use serde_json::{Value, json};
use std::time::Duration;

/// The Messages API: `POST {base}/v1/messages` with the `anthropic-version`
/// header and one forced tool named `answer`.
#[derive(Debug, Clone)]
pub struct Anthropic {
    endpoint: Endpoint,
    key: Option<String>,
    http: Http,
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
    /// than zero. Redirects are not followed.
    pub fn new(
        base: &str,
        key: Option<String>,
        timeout: Duration,
        retry: Retry,
    ) -> Result<Anthropic> {
        Ok(Anthropic {
            endpoint: Endpoint::new(base, "/v1/messages")?,
            key,
            http: Http::new(timeout, retry)?,
        })
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
    /// the answer's JSON text (decision D53).
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

impl Provider for Anthropic {
    fn send(&self, request: &Request<'_>) -> Result<Reply> {
        let mut headers = vec![("anthropic-version", Anthropic::VERSION.to_owned())];
        if let Some(key) = &self.key {
            headers.push(("x-api-key", key.clone()));
        }
        let body = self
            .http
            .post(&self.endpoint, &headers, &Anthropic::body(request)?)?;
        Anthropic::reply(&body)
    }
}
