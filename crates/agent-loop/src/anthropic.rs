//! Anthropic Messages (spec R38): the answer schema as the input schema of
//! one tool the model is made to use.

use crate::http::{Http, Retry};
use crate::provider::{Provider, Reply, Request, usage};
use crate::{Answer, Error, Result};
use agent_render::{Provider as Format, payload};
use serde_json::{Value, json};
use std::time::Duration;

/// The Messages API: `POST {base}/v1/messages` with the `anthropic-version`
/// header and one forced tool named `answer`.
#[derive(Debug, Clone)]
pub struct Anthropic {
    base: String,
    key: Option<String>,
    http: Http,
}

impl Anthropic {
    /// The default base URL.
    pub const BASE_URL: &'static str = "https://api.anthropic.com";
    /// The API version sent in `anthropic-version`.
    pub const VERSION: &'static str = "2023-06-01";
    /// The name of the tool that carries the answer.
    pub const ANSWER_TOOL: &'static str = "answer";

    /// A client for the server at `base`. With `key`, requests carry
    /// `x-api-key: KEY`; without, no key header at all.
    pub fn new(
        base: &str,
        key: Option<String>,
        timeout: Duration,
        retry: Retry,
    ) -> Result<Anthropic> {
        Ok(Anthropic {
            base: base.trim_end_matches('/').to_owned(),
            key,
            http: Http::new(timeout, retry)?,
        })
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
    /// of the `answer` tool.
    pub fn reply(body: &Value) -> Result<Reply> {
        let Some(content) = body["content"].as_array() else {
            return Err(Error::BadReply {
                reason: "no content array".into(),
            });
        };
        let answer = content
            .iter()
            .find(|block| block["type"] == "tool_use" && block["name"] == Anthropic::ANSWER_TOOL)
            .map_or_else(
                || {
                    Err(format!(
                        "the reply does not use the {:?} tool",
                        Anthropic::ANSWER_TOOL
                    ))
                },
                |block| Answer::from_value(block["input"].clone()),
            );
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
        let url = format!("{}/v1/messages", self.base);
        let body = self.http.post(&url, &headers, &Anthropic::body(request)?)?;
        Anthropic::reply(&body)
    }
}
