//! The one error type of this crate.

/// Everything that can go wrong talking to a model.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A tool definition that is not a tool (spec R35). `at` says where it
    /// came from: `message 3` of the context, or `caller tool 0`.
    #[error("{at}: {reason}")]
    BadTool {
        /// Where the definition came from.
        at: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A request that could not be made or completed: no connection, a
    /// timeout, a response that could not be read.
    #[error("request to {url} failed: {reason}")]
    Http {
        /// Where it was sent.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// No connection could be made (refused, no such host, a TLS
    /// handshake that failed): not retried, the address is wrong or the
    /// server is down (R41).
    #[error(
        "cannot connect to {url}: {reason}; check the base URL (--base-url) and that the server is running"
    )]
    Connect {
        /// Where the request was to go.
        url: String,
        /// What the connection attempt said.
        reason: String,
    },
    /// A provider's own server was named without a key, which it always
    /// asks for: nothing was sent (R41).
    #[error("no API key for {url}: set {variable}")]
    MissingKey {
        /// The server's URL.
        url: String,
        /// Where the key is read from.
        variable: &'static str,
    },
    /// The provider answered with an error status (R41), with its message
    /// and, for 401 and 404, what to check.
    #[error("{url} answered {status}: {message}{hint}")]
    Status {
        /// Where the request was sent.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The provider's error message as it is printed: quoted as JSON
        /// (R33) and shortened to 300 characters.
        message: String,
        /// What to check, after `; ` (empty for most statuses).
        hint: String,
    },
    /// A streamed answer carried an error event instead of the rest of the
    /// answer (R41): not retried.
    #[error("{url} sent an error in the stream: {message}")]
    StreamError {
        /// Where the request was sent.
        url: String,
        /// The provider's error message, quoted as JSON (R33) and
        /// shortened to 300 characters.
        message: String,
    },
    /// The server answered with a redirect, which model requests never
    /// follow: the key and the whole context would go with them.
    #[error(
        "{url} answered {status}, a redirect to {to}; model requests do not follow redirects (the key and the context would go with them)"
    )]
    Redirect {
        /// Where the request was sent.
        url: String,
        /// The HTTP status (3xx).
        status: u16,
        /// The origin the `Location` header names (scheme, host and port
        /// only), or why there is none.
        to: String,
    },
    /// The response body is larger than the client reads.
    #[error("the answer from {url} is larger than {limit} bytes")]
    TooLarge {
        /// Where the request was sent.
        url: String,
        /// The most bytes read.
        limit: u64,
    },
    /// The request and its retries took the whole timeout.
    #[error(
        "request to {url} timed out after {} s ({attempts} attempt(s))",
        crate::provider::http::seconds(*.timeout)
    )]
    TimedOut {
        /// Where the request was sent.
        url: String,
        /// The time one request may take, its retries included.
        timeout: std::time::Duration,
        /// Attempts made.
        attempts: u32,
    },
    /// Every attempt failed with a fault worth retrying (429, 5xx, a
    /// timeout, a connection the server dropped).
    #[error("gave up after {attempts} attempts; the last: {last}")]
    GaveUp {
        /// Attempts made.
        attempts: u32,
        /// The last attempt's error.
        last: Box<Error>,
    },
    /// A fault worth retrying, but the wait before the next attempt would
    /// end after the timeout.
    #[error(
        "gave up after {attempts} attempt(s): waiting {} s more would pass the {} s timeout; the last: {last}",
        crate::provider::http::seconds(*.wait),
        crate::provider::http::seconds(*.timeout)
    )]
    NoTimeToRetry {
        /// Attempts made.
        attempts: u32,
        /// The wait the next attempt needed.
        wait: std::time::Duration,
        /// The time one request may take, its retries included.
        timeout: std::time::Duration,
        /// The last attempt's error.
        last: Box<Error>,
    },
    /// The client cannot be set up: a base URL that is not an http(s) URL,
    /// a zero timeout, no TLS configuration.
    #[error("cannot set up the HTTP client: {reason}")]
    Client {
        /// What is wrong.
        reason: String,
    },
    /// A successful response without an answer where the provider's format
    /// puts it.
    #[error("the provider's response has no answer: {reason}")]
    BadReply {
        /// What is missing or malformed.
        reason: String,
    },
    /// A message the loop builds (an error, the output) cannot be recorded.
    #[error("cannot record the message: {0}")]
    Record(#[source] agent_data::MessageFault),
    /// The context could not be written: a file or database fault (the
    /// loop stops; what was committed before stays).
    #[error(transparent)]
    Store(#[from] agent_data::AppendError),
    /// The context holds no valid tools, or another fault of its own.
    #[error(transparent)]
    Context(#[from] agent_data::Error),
    /// The output schema is not a valid JSON Schema.
    #[error("invalid output schema: {0}")]
    OutputSchema(#[source] agent_data::MessageFault),
    /// The context cannot be sent as this provider's request.
    #[error("cannot build the request: {0}")]
    Request(String),
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
