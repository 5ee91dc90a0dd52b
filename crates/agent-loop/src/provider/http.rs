//! JSON over HTTP with bounded retries (spec R41), treating the server as
//! untrusted: no redirect is followed, the answer — a JSON body or a stream
//! of events — is read up to a size limit, one deadline covers a request
//! and its retries, and what the server says is quoted before anyone
//! prints it (D53: untrusted server; D56: streamed answers). Faults no retry mends (no connection,
//! 401, 404) fail at once.

use crate::provider::body::{Fault, Received, Success, read_at_most};
use crate::provider::message::provider_message;
use crate::provider::retry_after::retry_after;
use crate::{Error, Result};
use agent_core::json::Value;
use reqwest::Url;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How failed requests are retried (R41): 429, 5xx, timeouts and
/// connections the server dropped are tried again, up to `attempts` in all, waiting `base`, `2 × base`,
/// `4 × base`, … (never more than `max`) — or what the server's
/// `Retry-After` asks, when it says, up to `max`. No attempt starts and no
/// wait ends after the request's timeout, which covers every attempt.
///
/// `#[non_exhaustive]`: build it from [`Retry::default`] and the `with_*`
/// setters, so a new setting is not a breaking change.
///
/// ```
/// use agent_loop::Retry;
/// use std::time::Duration;
/// let retry = Retry::default().with_attempts(3).with_base(Duration::from_millis(10));
/// assert_eq!((retry.attempts, retry.max), (3, Duration::from_secs(60)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
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
    /// With `attempts` in all, the first included (0 counts as 1).
    pub fn with_attempts(mut self, attempts: u32) -> Self {
        self.attempts = attempts;
        self
    }

    /// With `base` as the first wait.
    pub fn with_base(mut self, base: Duration) -> Self {
        self.base = base;
        self
    }

    /// With `max` as the longest wait.
    pub fn with_max(mut self, max: Duration) -> Self {
        self.max = max;
        self
    }

    /// The wait before attempt `attempt + 1` (0-based `attempt` just failed).
    fn wait(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        let backoff = self
            .base
            .saturating_mul(1u32.checked_shl(attempt).unwrap_or(u32::MAX));
        retry_after.unwrap_or(backoff).min(self.max)
    }
}

/// One retry about to happen, for an observer to show (the library prints
/// nothing itself).
#[derive(Debug)]
#[non_exhaustive]
pub struct RetryNotice<'a> {
    /// The attempt that failed (1 for the first).
    pub attempt: u32,
    /// Attempts allowed in all.
    pub attempts: u32,
    /// The wait before the next attempt.
    pub wait: Duration,
    /// Whether the server asked for this wait (`Retry-After`).
    pub asked: bool,
    /// Why the attempt failed; its text is safe to print (R33).
    pub error: &'a Error,
}

/// What is told of each retry.
pub(crate) type Observer = Arc<dyn Fn(&RetryNotice<'_>) + Send + Sync>;

/// The default bound on a response body: 16 MiB, far beyond any answer a
/// token limit allows.
pub const MAX_ANSWER_BYTES: u64 = 16 << 20;

/// How much of an error response is read: its message is printed
/// shortened anyway.
pub(crate) const ERROR_BODY_BYTES: u64 = 64 << 10;

/// Characters of a provider's error message that are printed.
pub(crate) const MESSAGE_CHARS: usize = 300;

/// Where requests go: the URL sent to, and the URL as printed — without
/// userinfo, and with the query's values hidden (they may hold a key).
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    url: Url,
    shown: String,
}

impl Endpoint {
    /// `base` with `path` appended to its path; its query, if any, stays
    /// after the whole path.
    pub(crate) fn new(base: &str, path: &str) -> Result<Endpoint> {
        let mut url = Url::parse(base.trim()).map_err(|e| Error::Client {
            reason: format!("the base URL is not a URL ({e})"),
        })?;
        if !matches!(url.scheme(), "http" | "https") || url.cannot_be_a_base() {
            return Err(Error::Client {
                reason: "the base URL must be an http or https URL".into(),
            });
        }
        let joined = format!("{}{path}", url.path().trim_end_matches('/'));
        url.set_path(&joined);
        url.set_fragment(None);
        let mut shown = url.clone();
        // Neither fails on an http(s) URL, which always has a host.
        let _ = shown.set_username("");
        let _ = shown.set_password(None);
        shown.set_query(None);
        let mut shown = shown.to_string();
        if let Some(query) = url.query() {
            let keys: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((key, _)) => format!("{key}=…"),
                    None => pair.to_owned(),
                })
                .collect();
            shown.push('?');
            shown.push_str(&keys.join("&"));
        }
        Ok(Endpoint { url, shown })
    }

    /// The URL as printed.
    pub(crate) fn shown(&self) -> &str {
        &self.shown
    }

    /// The host requests go to.
    pub(crate) fn host(&self) -> Option<&str> {
        self.url.host_str()
    }
}

/// A blocking HTTP client that posts JSON and retries as [`Retry`] says.
#[derive(Clone)]
pub(crate) struct Http {
    client: reqwest::blocking::Client,
    retry: Retry,
    timeout: Duration,
    max_answer_bytes: u64,
    observer: Option<Observer>,
    /// Where the provider's key is read from, for the hint of a 401.
    key_variable: &'static str,
}

impl std::fmt::Debug for Http {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Http")
            .field("retry", &self.retry)
            .field("timeout", &self.timeout)
            .field("max_answer_bytes", &self.max_answer_bytes)
            .field("observer", &self.observer.is_some())
            .finish_non_exhaustive()
    }
}

/// How one attempt ended.
enum Outcome<T> {
    /// The response, read.
    Answer(T),
    /// A fault no retry can mend.
    Fatal(Error),
    /// A fault worth retrying, with the wait the server asked for.
    Retry(Error, Option<Duration>),
    /// No connection, or one lost: worth retrying unless time ran out.
    Transport(Error, bool),
}

impl Http {
    /// A client whose requests, retries included, end within `timeout`;
    /// the key is read from `key_variable`.
    pub(crate) fn new(timeout: Duration, retry: Retry, key_variable: &'static str) -> Result<Http> {
        if timeout.is_zero() {
            return Err(Error::Client {
                reason: "the timeout must be more than 0 s".into(),
            });
        }
        let client = reqwest::blocking::Client::builder()
            .tls_backend_preconfigured(tls()?)
            // The key and the whole context would follow a redirect to
            // wherever it points.
            .redirect(reqwest::redirect::Policy::none())
            .timeout(timeout)
            .build()
            .map_err(|e| Error::Client {
                reason: describe(&e),
            })?;
        Ok(Http {
            client,
            retry,
            timeout,
            max_answer_bytes: MAX_ANSWER_BYTES,
            observer: None,
            key_variable,
        })
    }

    /// Reads at most `bytes` of a response body.
    pub(crate) fn set_max_answer_bytes(&mut self, bytes: u64) {
        self.max_answer_bytes = bytes;
    }

    /// Tells `observer` of each retry before its wait.
    pub(crate) fn set_observer(&mut self, observer: Observer) {
        self.observer = Some(observer);
    }

    /// Posts `body` to `endpoint` with `headers` and returns the response's
    /// JSON, as [`Http::exchange`] says.
    pub(crate) fn post(
        &self,
        endpoint: &Endpoint,
        headers: &[(&str, String)],
        body: &Value,
    ) -> Result<Value> {
        self.exchange(endpoint, headers, body, &mut |success| success.json())
    }

    /// Posts `body` to `endpoint` with `headers` and gives a successful
    /// response to `read`. Retries 429, 5xx, timeouts and what `read`
    /// calls broken-and-retryable while the timeout allows; no connection
    /// is [`Error::Connect`]; any other status ends with [`Error::Status`],
    /// naming the provider's message, or [`Error::Redirect`].
    pub(crate) fn exchange<T>(
        &self,
        endpoint: &Endpoint,
        headers: &[(&str, String)],
        body: &Value,
        read: &mut dyn FnMut(Success<'_>) -> Received<T>,
    ) -> Result<T> {
        let bytes = agent_core::json::to_string(body).into_bytes();
        let url = endpoint.shown();
        let started = Instant::now();
        let attempts = self.retry.attempts.max(1);
        let timed_out = |attempts| Error::TimedOut {
            url: url.to_owned(),
            timeout: self.timeout,
            attempts,
        };
        let mut attempt = 0;
        loop {
            let left = self.timeout.saturating_sub(started.elapsed());
            if left.is_zero() {
                return Err(timed_out(attempt));
            }
            attempt += 1;
            let (error, retry_after) = match self.attempt(endpoint, headers, &bytes, left, read) {
                Outcome::Answer(value) => return Ok(value),
                Outcome::Fatal(error) => return Err(error),
                Outcome::Transport(_, _) if started.elapsed() >= self.timeout => {
                    return Err(timed_out(attempt));
                }
                Outcome::Transport(error, false) => return Err(error),
                Outcome::Transport(error, true) => (error, None),
                Outcome::Retry(error, retry_after) => (error, retry_after),
            };
            if attempt >= attempts {
                return Err(Error::GaveUp {
                    attempts,
                    last: Box::new(error),
                });
            }
            let wait = self.retry.wait(attempt - 1, retry_after);
            if started.elapsed().saturating_add(wait) >= self.timeout {
                return Err(Error::NoTimeToRetry {
                    attempts: attempt,
                    wait,
                    timeout: self.timeout,
                    last: Box::new(error),
                });
            }
            if let Some(observer) = &self.observer {
                observer(&RetryNotice {
                    attempt,
                    attempts,
                    wait,
                    asked: retry_after.is_some(),
                    error: &error,
                });
            }
            std::thread::sleep(wait);
        }
    }

    /// One attempt, given `left` of the timeout.
    fn attempt<T>(
        &self,
        endpoint: &Endpoint,
        headers: &[(&str, String)],
        body: &[u8],
        left: Duration,
        read: &mut dyn FnMut(Success<'_>) -> Received<T>,
    ) -> Outcome<T> {
        let url = endpoint.shown();
        let transport = |reason: String| Error::Http {
            url: url.to_owned(),
            reason,
        };
        let mut request = self
            .client
            .post(endpoint.url.clone())
            .timeout(left)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_vec());
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let mut response = match request.send() {
            Ok(response) => response,
            // Refused, no such host, a failed TLS handshake: waiting does
            // not mend a wrong address, and a user should hear at once.
            Err(e) if e.is_connect() && !e.is_timeout() => {
                return Outcome::Fatal(Error::Connect {
                    url: url.to_owned(),
                    reason: describe(&e),
                });
            }
            // A timeout, or a connection the server dropped before
            // answering: a server's fault, like a 5xx.
            Err(e) => return Outcome::Transport(transport(describe(&e)), true),
        };
        let status = response.status();
        if status.is_redirection() {
            return Outcome::Fatal(Error::Redirect {
                url: url.to_owned(),
                status: status.as_u16(),
                to: redirect_target(&endpoint.url, response.headers()),
            });
        }
        if status.is_success() {
            let limit = self.max_answer_bytes;
            // A declared length over the limit is refused before reading.
            if response.content_length().is_some_and(|n| n > limit) {
                return Outcome::Fatal(Fault::new(url, limit).too_large());
            }
            return match read(Success::new(response, url, limit)) {
                Received::Done(value) => Outcome::Answer(value),
                Received::Fatal(error) => Outcome::Fatal(error),
                Received::Broken(error, retry) => Outcome::Transport(error, retry),
            };
        }
        let retry_after = retry_after(response.headers());
        // A broken error body still leaves its status to report.
        let (text, _) = read_at_most(&mut response, ERROR_BODY_BYTES).unwrap_or_default();
        let hint = match status.as_u16() {
            401 => format!("; check the API key ({})", self.key_variable),
            404 => "; check the base URL (--base-url) and the model name (--model)".to_owned(),
            _ => String::new(),
        };
        let error = Error::Status {
            url: url.to_owned(),
            status: status.as_u16(),
            message: provider_message(&String::from_utf8_lossy(&text)),
            hint,
        };
        if status.as_u16() == 429 || status.is_server_error() {
            Outcome::Retry(error, retry_after)
        } else {
            Outcome::Fatal(error)
        }
    }
}

/// The client's TLS: rustls with its own ring provider and the platform's
/// verifier, so no process-wide default provider is installed.
fn tls() -> Result<rustls::ClientConfig> {
    use rustls_platform_verifier::BuilderVerifierExt;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let fault = |e: rustls::Error| Error::Client {
        reason: format!("cannot configure TLS: {e}"),
    };
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(fault)?
        .with_platform_verifier()
        .map_err(fault)?
        .with_no_client_auth();
    // reqwest is built without HTTP/2.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// Where a redirect points: its origin only (scheme, host, port), which
/// holds no userinfo, path or query that could carry a secret.
fn redirect_target(request: &Url, headers: &reqwest::header::HeaderMap) -> String {
    let Some(location) = headers
        .get(reqwest::header::LOCATION)
        .and_then(|v| v.to_str().ok())
    else {
        return "(no Location header)".into();
    };
    match request.join(location) {
        Ok(to) if matches!(to.scheme(), "http" | "https") => to.origin().ascii_serialization(),
        _ => "(a Location that is not an http(s) URL)".into(),
    }
}

/// `d` in seconds as printed: `3`, `0.25`.
pub(crate) fn seconds(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        return d.as_secs().to_string();
    }
    let text = format!("{:.3}", d.as_secs_f64());
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// A reqwest error with its causes ("error sending request: connection
/// refused"), without the URL, which may hold a password.
fn describe(error: &reqwest::Error) -> String {
    let mut text = String::new();
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(cause) = current {
        let part = if let Some(e) = cause.downcast_ref::<reqwest::Error>() {
            reqwest_text(e)
        } else {
            cause.to_string()
        };
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&part);
        current = cause.source();
    }
    text
}

/// A reqwest error's own text, its URL left out.
fn reqwest_text(error: &reqwest::Error) -> String {
    let text = error.to_string();
    match error.url() {
        Some(url) => {
            let with = format!(" for url ({url})");
            text.replace(&with, "")
        }
        None => text,
    }
}

/// An I/O error from reading a body, with its causes.
pub(crate) fn describe_io(error: &std::io::Error) -> String {
    match error
        .get_ref()
        .and_then(|e| e.downcast_ref::<reqwest::Error>())
    {
        Some(e) => describe(e),
        None => error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn r41_waits_double_and_honour_retry_after_up_to_the_maximum() {
        let retry = Retry::default()
            .with_attempts(5)
            .with_base(Duration::from_millis(100))
            .with_max(Duration::from_secs(1));
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
    fn r41_seconds_are_printed_without_needless_digits() {
        assert_eq!(seconds(Duration::from_secs(300)), "300");
        assert_eq!(seconds(Duration::from_millis(250)), "0.25");
        assert_eq!(seconds(Duration::from_millis(1500)), "1.5");
    }

    #[test]
    fn r41_urls_are_printed_without_userinfo_or_query_values() {
        let at =
            Endpoint::new("http://user:pw@h:8080/v1/?key=sk-1&x", "/chat/completions").unwrap();
        assert_eq!(
            at.url.as_str(),
            "http://user:pw@h:8080/v1/chat/completions?key=sk-1&x"
        );
        assert_eq!(at.shown(), "http://h:8080/v1/chat/completions?key=…&x");
        let plain = Endpoint::new("https://api.anthropic.com", "/v1/messages").unwrap();
        assert_eq!(plain.shown(), "https://api.anthropic.com/v1/messages");
        for bad in ["ftp://h/v1", "not a url", "mailto:a@b"] {
            let error = Endpoint::new(bad, "/x").unwrap_err().to_string();
            assert!(
                error.starts_with("cannot set up the HTTP client: "),
                "{error}"
            );
        }
    }

    #[test]
    fn r41_a_zero_timeout_is_refused() {
        assert_eq!(
            Http::new(Duration::ZERO, Retry::default(), "KEY")
                .unwrap_err()
                .to_string(),
            "cannot set up the HTTP client: the timeout must be more than 0 s"
        );
    }

    #[test]
    fn r41_building_a_client_installs_no_process_wide_tls_provider() {
        Http::new(Duration::from_secs(1), Retry::default(), "KEY").unwrap();
        assert!(rustls::crypto::CryptoProvider::get_default().is_none());
        // An https request to a listener that is no TLS server fails as a
        // request, without a provider installed.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            if let Ok((mut stream, _)) = listener.accept() {
                use std::io::Write;
                let _ = stream.write_all(b"HTTP/1.1 200 OK\r\n\r\n");
            }
        });
        let http = Http::new(
            Duration::from_secs(5),
            Retry {
                attempts: 1,
                ..Retry::default()
            },
            "KEY",
        )
        .unwrap();
        let endpoint = Endpoint::new(&format!("https://127.0.0.1:{port}"), "/x").unwrap();
        let error = http.post(&endpoint, &[], &Value::Null).unwrap_err();
        assert!(matches!(error, Error::Connect { .. }), "{error}");
        server.join().unwrap();
        assert!(rustls::crypto::CryptoProvider::get_default().is_none());
    }
}
