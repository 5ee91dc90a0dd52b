//! What a request carries and what comes back (spec R38), independent of
//! the provider.

pub(crate) mod anthropic;
pub(crate) mod body;
pub(crate) mod http;
pub(crate) mod message;
pub(crate) mod openai;
pub(crate) mod retry_after;
pub(crate) mod scan;
pub(crate) mod sse;
pub(crate) mod stream;

use crate::{Answer, Result};
use agent_core::json::Value;
use agent_render::ChatMessage;

/// One request: the model, the instructions, the rendered context and the
/// schema of the answer.
///
/// `#[non_exhaustive]`: a provider reads its fields; a caller builds it
/// with [`Request::new`] and the `with_*` setters, so a new field is not a
/// breaking change.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Request<'a> {
    /// The model's name, as the provider knows it.
    pub model: &'a str,
    /// The system text ([`crate::SYSTEM_TEXT`]).
    pub system: &'a str,
    /// The context as chat messages (R28–R30).
    pub chat: &'a [ChatMessage],
    /// The answer's schema ([`crate::answer_schema`], R37).
    pub answer_schema: &'a Value,
    /// The most tokens the answer may take (Anthropic requires a bound).
    pub max_tokens: u32,
}

impl<'a> Request<'a> {
    /// A request for `model` with the system text, the chat and the
    /// answer's schema, its answer bounded to 4096 tokens.
    pub fn new(
        model: &'a str,
        system: &'a str,
        chat: &'a [ChatMessage],
        answer_schema: &'a Value,
    ) -> Self {
        Request {
            model,
            system,
            chat,
            answer_schema,
            max_tokens: 4096,
        }
    }

    /// With the answer bounded to `max_tokens` tokens.
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }
}

/// Tokens a request used, as the provider counted them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Usage {
    /// Tokens sent (prompt / input).
    pub input: u64,
    /// Tokens generated (completion / output).
    pub output: u64,
}

impl Usage {
    /// `input` tokens sent, `output` generated.
    ///
    /// ```
    /// let usage = agent_loop::Usage::new(100, 10);
    /// assert_eq!((usage.input, usage.output), (100, 10));
    /// ```
    pub fn new(input: u64, output: u64) -> Self {
        Usage { input, output }
    }
}

/// What came back: the answer, or why the reply is not one (for the model
/// to see on its next turn, R40), and the tokens used.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Reply {
    /// The answer, or what is wrong with the reply.
    pub answer: std::result::Result<Answer, String>,
    /// Tokens used.
    pub usage: Usage,
}

impl Reply {
    /// A reply: the answer (or why the reply is not one) and the tokens
    /// used. What a [`Provider`] other than the two built in returns.
    ///
    /// ```
    /// use agent_loop::{Answer, Reply, Usage};
    /// let answer = Answer::from_text(r#"{"calls": [], "output": "done"}"#);
    /// let reply = Reply::new(answer, Usage::new(120, 8));
    /// assert!(reply.answer.is_ok());
    /// ```
    pub fn new(answer: std::result::Result<Answer, String>, usage: Usage) -> Self {
        Reply { answer, usage }
    }
}

/// A model behind an API. [`crate::OpenAi`] and [`crate::Anthropic`] speak
/// the two providers' formats over HTTP; tests and embedders may implement
/// it over anything else.
pub trait Provider {
    /// Sends one request. An `Err` is a failed request (nothing of it is
    /// kept, R41); a reply that is not a valid answer is an `Ok` whose
    /// `answer` says why.
    ///
    /// # Errors
    /// A failed request (R41). The HTTP providers give
    /// [`Error::Request`](crate::Error::Request) when the context cannot be sent in their
    /// format; [`Error::Connect`](crate::Error::Connect), [`Error::Http`](crate::Error::Http),
    /// [`Error::Status`](crate::Error::Status),
    /// [`Error::StreamError`](crate::Error::StreamError),
    /// [`Error::Redirect`](crate::Error::Redirect),
    /// [`Error::TooLarge`](crate::Error::TooLarge),
    /// [`Error::TimedOut`](crate::Error::TimedOut), [`Error::GaveUp`](crate::Error::GaveUp) or
    /// [`Error::NoTimeToRetry`](crate::Error::NoTimeToRetry) when the request fails;
    /// [`Error::BadReply`](crate::Error::BadReply) when a successful response holds no reply
    /// where their format puts it.
    fn send(&self, request: &Request<'_>) -> Result<Reply>;

    /// Sends one request and calls `on_call(i, call)` for each call of the
    /// answer, in order, `i` counting from 0 — as soon as the call's JSON
    /// is complete when the answer is streamed (R38), so a caller can
    /// start on it while the rest is still arriving. The [`Reply`] is the
    /// one [`Provider::send`] gives.
    ///
    /// When the reply is a valid answer, the calls reported are exactly
    /// its `calls`, each once; a reply whose answer turns out invalid (or
    /// a failed request) may follow calls already reported, which were a
    /// prefix that looked valid — the `Reply` (or `Err`) says what holds.
    /// This default sends whole and then reports every call; the HTTP
    /// providers stream unless built with `stream(false)`.
    ///
    /// # Errors
    /// The errors of [`Provider::send`].
    fn send_streaming(
        &self,
        request: &Request<'_>,
        on_call: &mut dyn FnMut(usize, &Value),
    ) -> Result<Reply> {
        let reply = self.send(request)?;
        report_all(&reply, on_call);
        Ok(reply)
    }
}

/// Reports every call of a reply that is a valid answer.
pub(crate) fn report_all(reply: &Reply, on_call: &mut dyn FnMut(usize, &Value)) {
    if let Ok(answer) = &reply.answer {
        for (i, call) in answer.calls.iter().enumerate() {
            on_call(i, call);
        }
    }
}

/// A missing key for a provider's own server (`host`), which always asks
/// for one; servers elsewhere (local ones) may need none.
pub(crate) fn check_key(
    endpoint: &crate::provider::http::Endpoint,
    key: Option<&String>,
    host: &str,
    variable: &'static str,
) -> Result<()> {
    if key.is_none() && endpoint.host() == Some(host) {
        return Err(crate::Error::MissingKey {
            url: endpoint.shown().to_owned(),
            variable,
        });
    }
    Ok(())
}

/// The tokens a usage object holds under `input` and `output` names.
pub(crate) fn usage(body: &Value, input: &str, output: &str) -> Usage {
    let n = |name: &str| body["usage"][name].as_u64().unwrap_or(0);
    Usage {
        input: n(input),
        output: n(output),
    }
}

/// The name the answer goes by on the wire: OpenAI's `json_schema` and
/// Anthropic's forced tool.
pub(crate) const ANSWER_NAME: &str = "answer";

/// A tool call the server gave natively instead of the answer where the
/// format puts it (D53: untrusted server): read as the answer when it is named
/// `answer`, or when its arguments are an object with `calls` — they are
/// then checked like any answer; any other call is an error naming it.
pub(crate) fn native_answer(name: &str, arguments: &Value) -> std::result::Result<Answer, String> {
    let value = match arguments {
        // OpenAI sends the arguments as JSON text.
        Value::String(text) => match agent_core::json::from_str(text) {
            Ok(value) => value,
            Err(_) if name == ANSWER_NAME => return Answer::from_text(text),
            Err(_) => Value::Null,
        },
        other => other.clone(),
    };
    if name == ANSWER_NAME || value.get("calls").is_some() {
        return Answer::from_value(value);
    }
    Err(format!(
        "the reply calls the native tool {} instead of giving the answer {{\"calls\": [...], \"output\": ...}}",
        agent_core::quoted(&short(name, 100))
    ))
}

/// The first `chars` characters of `text`, with `…` when cut.
pub(crate) fn short(text: &str, chars: usize) -> String {
    let mut cut: String = text.chars().take(chars).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    cut
}
