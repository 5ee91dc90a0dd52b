//! A successful response, read whole as JSON or as a stream of events, up
//! to the size limit (D53: untrusted server; D56: streamed answers).

use crate::Error;
use crate::provider::http::describe_io;
use agent_core::json::Value;
use std::io::Read;

/// How a successful response was read.
pub(crate) enum Received<T> {
    /// What it held.
    Done(T),
    /// A fault no retry can mend.
    Fatal(Error),
    /// The body broke off; retried when the flag says so and time allows.
    Broken(Error, bool),
}

/// A successful response, for its reader.
pub(crate) struct Success<'a> {
    response: reqwest::blocking::Response,
    url: &'a str,
    limit: u64,
}

impl<'a> Success<'a> {
    /// `response` from `url` (as printed), read up to `limit` bytes.
    pub(crate) fn new(
        response: reqwest::blocking::Response,
        url: &'a str,
        limit: u64,
    ) -> Success<'a> {
        Success {
            response,
            url,
            limit,
        }
    }

    /// Whether the body is a stream of server-sent events.
    pub(crate) fn is_event_stream(&self) -> bool {
        self.response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| {
                v.trim_start()
                    .to_ascii_lowercase()
                    .starts_with("text/event-stream")
            })
    }

    /// The body read whole as JSON, up to the limit.
    pub(crate) fn json(mut self) -> Received<Value> {
        match read_at_most(&mut self.response, self.limit) {
            Ok((_, false)) => Received::Fatal(self.too_large()),
            Ok((bytes, true)) => match std::str::from_utf8(&bytes)
                .map_err(|e| e.to_string())
                .and_then(|text| agent_core::json::from_str(text).map_err(|e| e.to_string()))
            {
                Ok(value) => Received::Done(value),
                Err(e) => Received::Fatal(Error::BadReply {
                    reason: format!("the response is not JSON ({e})"),
                }),
            },
            Err(e) => Received::Broken(self.broken(&e), true),
        }
    }

    /// The body's events, read as they arrive. The limit is the answer's
    /// (its content, which [`crate::provider::stream::receive`] counts, as
    /// a whole body counts its bytes); the stream's framing may take
    /// [`FRAMING`] times that in all, and one line the limit and a block.
    pub(crate) fn events(
        self,
    ) -> (
        crate::provider::sse::Events<reqwest::blocking::Response>,
        Fault<'a>,
    ) {
        let fault = Fault {
            url: self.url,
            limit: self.limit,
        };
        (
            crate::provider::sse::Events::new(
                self.response,
                self.limit.saturating_mul(FRAMING),
                self.limit.saturating_add(LINE_SLACK),
            ),
            fault,
        )
    }

    fn too_large(&self) -> Error {
        Fault {
            url: self.url,
            limit: self.limit,
        }
        .too_large()
    }

    fn broken(&self, error: &std::io::Error) -> Error {
        Fault {
            url: self.url,
            limit: self.limit,
        }
        .broken(error)
    }
}

/// How many times the answer's limit a stream may send in all: each
/// small piece of an answer comes wrapped in an event of a few hundred
/// bytes (an OpenAI chunk carrying 7 characters is about 220), so a stream
/// of an answer within the limit can be many times the limit; reading it
/// stays linear, and only the content is kept (D94: content limit).
pub(crate) const FRAMING: u64 = 64;

/// What one event line may hold beyond the answer's limit: the event's own
/// wrapping.
const LINE_SLACK: u64 = 64 << 10;

/// The errors of reading one response's body.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fault<'a> {
    url: &'a str,
    limit: u64,
}

impl<'a> Fault<'a> {
    /// The faults of a body from `url` read up to `limit` bytes.
    pub(crate) fn new(url: &'a str, limit: u64) -> Fault<'a> {
        Fault { url, limit }
    }

    /// The URL as printed.
    pub(crate) fn url(&self) -> &str {
        self.url
    }

    /// The answer's limit, in bytes.
    pub(crate) fn limit(&self) -> u64 {
        self.limit
    }

    /// The body passed the limit.
    pub(crate) fn too_large(&self) -> Error {
        Error::TooLarge {
            url: self.url.to_owned(),
            limit: self.limit,
        }
    }

    /// The body could not be read.
    pub(crate) fn broken(&self, error: &std::io::Error) -> Error {
        Error::Http {
            url: self.url.to_owned(),
            reason: format!("cannot read the response: {}", describe_io(error)),
        }
    }
}

/// Reads at most `limit` bytes of `response`; `true` when that was all.
pub(crate) fn read_at_most(
    response: &mut reqwest::blocking::Response,
    limit: u64,
) -> std::io::Result<(Vec<u8>, bool)> {
    let mut bytes = Vec::new();
    response
        .by_ref()
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)?;
    let whole = u64::try_from(bytes.len()).is_ok_and(|n| n <= limit);
    if !whole {
        bytes.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    }
    Ok((bytes, whole))
}
