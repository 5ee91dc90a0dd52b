//! JSON over HTTP with bounded retries (spec R41).

use crate::{Error, Result};
use serde_json::Value;
use std::time::Duration;

/// How failed requests are retried (R41): 429, 5xx and connection failures
/// are tried again, up to `attempts` in all, waiting `base`, `2 × base`,
/// `4 × base`, … (never more than `max`) — or what the server's
/// `Retry-After` asks, when it says, up to `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retry {
    /// Attempts in all, the first included (at least 1).
    pub attempts: u32,
    /// The first wait.
    pub base: Duration,
    /// The longest wait.
    pub max: Duration,
}

impl Default for Retry {
    /// 5 attempts, waiting 1 s, 2 s, 4 s, 8 s (at most 60 s when the server
    /// asks for longer).
    fn default() -> Self {
        Retry {
            attempts: 5,
            base: Duration::from_secs(1),
            max: Duration::from_secs(60),
        }
    }
}

impl Retry {
    /// The wait before attempt `attempt + 1` (0-based `attempt` just failed).
    fn wait(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        let backoff = self
            .base
            .saturating_mul(1u32.checked_shl(attempt).unwrap_or(u32::MAX));
        retry_after.unwrap_or(backoff).min(self.max)
    }
}

/// A blocking HTTP client that posts JSON and retries as [`Retry`] says.
#[derive(Debug, Clone)]
pub(crate) struct Http {
    client: reqwest::blocking::Client,
    retry: Retry,
}

impl Http {
    pub(crate) fn new(timeout: Duration, retry: Retry) -> Result<Http> {
        // reqwest is built without a default TLS backend; rustls uses ring.
        // Installing twice (a second provider in one process) is harmless.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::blocking::Client::builder()
            .timeout(timeout)
            .build()
            .map_err(|e| Error::Http {
                url: String::new(),
                reason: format!("cannot build the HTTP client: {e}"),
            })?;
        Ok(Http { client, retry })
    }

    /// Posts `body` to `url` with `headers` and returns the response's JSON.
    /// Retries 429, 5xx and connection failures; any other status ends
    /// with [`Error::Status`], naming the provider's message.
    pub(crate) fn post(
        &self,
        url: &str,
        headers: &[(&str, String)],
        body: &Value,
    ) -> Result<Value> {
        let attempts = self.retry.attempts.max(1);
        let mut attempt = 0;
        loop {
            let mut request = self.client.post(url).json(body);
            for (name, value) in headers {
                request = request.header(*name, value);
            }
            let (error, retry_after) = match request.send() {
                Ok(response) => {
                    let status = response.status();
                    let retry_after = retry_after(response.headers());
                    let text = response.text().map_err(|e| Error::Http {
                        url: url.to_owned(),
                        reason: format!("cannot read the response: {e}"),
                    })?;
                    if status.is_success() {
                        return serde_json::from_str(&text).map_err(|e| Error::BadReply {
                            reason: format!("the response is not JSON ({e})"),
                        });
                    }
                    let error = Error::Status {
                        url: url.to_owned(),
                        status: status.as_u16(),
                        message: provider_message(&text),
                    };
                    if status.as_u16() != 429 && !status.is_server_error() {
                        return Err(error);
                    }
                    (error, retry_after)
                }
                Err(e) if e.is_timeout() || e.is_connect() || e.is_request() => (
                    Error::Http {
                        url: url.to_owned(),
                        reason: describe(&e),
                    },
                    None,
                ),
                Err(e) => {
                    return Err(Error::Http {
                        url: url.to_owned(),
                        reason: describe(&e),
                    });
                }
            };
            attempt += 1;
            if attempt >= attempts {
                return Err(Error::GaveUp {
                    attempts,
                    last: Box::new(error),
                });
            }
            std::thread::sleep(self.retry.wait(attempt - 1, retry_after));
        }
    }
}

/// `Retry-After` in seconds (or `retry-after-ms`, which OpenAI sends).
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok()) {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    text("retry-after")
        .and_then(|v| v.trim().parse::<f64>().ok())
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
}

/// The provider's error message: `error.message` in both providers' error
/// bodies, else the body itself (shortened).
fn provider_message(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    if let Some(message) = parsed
        .as_ref()
        .and_then(|v| v.get("error"))
        .and_then(|e| e.get("message").or(Some(e)))
        .and_then(Value::as_str)
    {
        return message.to_owned();
    }
    let mut short: String = body.chars().take(300).collect();
    if short.len() < body.len() {
        short.push('…');
    }
    short
}

/// A reqwest error with its causes ("error sending request: connection
/// refused").
fn describe(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn r41_waits_double_and_honour_retry_after_up_to_the_maximum() {
        let retry = Retry {
            attempts: 5,
            base: Duration::from_millis(100),
            max: Duration::from_secs(1),
        };
        assert_eq!(retry.wait(0, None), Duration::from_millis(100));
        assert_eq!(retry.wait(2, None), Duration::from_millis(400));
        assert_eq!(retry.wait(9, None), Duration::from_secs(1));
        assert_eq!(retry.wait(40, None), Duration::from_secs(1));
        assert_eq!(
            retry.wait(0, Some(Duration::from_millis(700))),
            Duration::from_millis(700)
        );
        assert_eq!(
            retry.wait(0, Some(Duration::from_secs(30))),
            Duration::from_secs(1)
        );
    }

    #[test]
    fn r41_the_providers_message_is_read_from_either_error_body() {
        assert_eq!(
            provider_message(
                r#"{"error": {"message": "Invalid model", "type": "invalid_request_error"}}"#
            ),
            "Invalid model"
        );
        assert_eq!(
            provider_message(
                r#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#
            ),
            "Overloaded"
        );
        assert_eq!(provider_message("Bad Gateway"), "Bad Gateway");
    }
}
