//! OpenAI-compatible Chat Completions (spec R38): OpenAI itself and local
//! servers (vLLM, llama.cpp's server, Ollama) through the base URL.

use crate::http::{Http, Retry};
use crate::provider::{Provider, Reply, Request, usage};
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
    base: String,
    key: Option<String>,
    http: Http,
}

impl OpenAi {
    /// The default base URL.
    pub const BASE_URL: &'static str = "https://api.openai.com/v1";

    /// A client for the server at `base` (`https://api.openai.com/v1`, or a
    /// local server's `http://127.0.0.1:8000/v1`). With `key`, requests
    /// carry `Authorization: Bearer KEY`; without, no key header at all.
    pub fn new(base: &str, key: Option<String>, timeout: Duration, retry: Retry) -> Result<OpenAi> {
        Ok(OpenAi {
            base: base.trim_end_matches('/').to_owned(),
            key,
            http: Http::new(timeout, retry)?,
        })
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
                "json_schema": {"name": "answer", "schema": request.answer_schema, "strict": false}
            }
        }))
    }

    /// The reply in a response body: the JSON text of
    /// `choices[0].message.content`.
    pub fn reply(body: &Value) -> Result<Reply> {
        let message = &body["choices"][0]["message"];
        if message.is_null() {
            return Err(Error::BadReply {
                reason: "no choices[0].message".into(),
            });
        }
        let answer = match (&message["content"], &message["refusal"]) {
            (Value::String(text), _) => Answer::from_text(text),
            (_, Value::String(refusal)) => Err(format!("the model refused: {refusal}")),
            _ => Err("the reply has no content".to_owned()),
        };
        Ok(Reply {
            answer,
            usage: usage(body, "prompt_tokens", "completion_tokens"),
        })
    }
}

impl Provider for OpenAi {
    fn send(&self, request: &Request<'_>) -> Result<Reply> {
        let mut headers = Vec::new();
        if let Some(key) = &self.key {
            headers.push(("authorization", format!("Bearer {key}")));
        }
        let url = format!("{}/chat/completions", self.base);
        let body = self.http.post(&url, &headers, &OpenAi::body(request)?)?;
        OpenAi::reply(&body)
    }
}
