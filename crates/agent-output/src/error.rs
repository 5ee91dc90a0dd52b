//! The one error type of this crate.

use agent_data::SchemaViolation;

/// Everything that can go wrong writing a result.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The call is not a JSON object, or its `_instance` is bad.
    #[error(transparent)]
    Call(#[from] agent_vars::Error),
    /// A write time that is not an RFC 3339 date ([`crate::FixedClock::parse`]),
    /// or a clock's time outside the years 0000 to 9999 (`text` is its debug form).
    #[error("{} is not RFC 3339: {reason}", agent_core::quoted(text))]
    Date {
        /// The text given.
        text: String,
        /// What the date parser said.
        reason: String,
    },
    /// `_tool` is not a string.
    #[error("`_tool` must be a string, found {found}")]
    ToolNotString {
        /// The JSON type found instead.
        found: &'static str,
    },
    /// `_outputPath` is not a string.
    #[error("`_outputPath` must be a string")]
    OutputPathNotString,
    /// `_outputPath` is a string but not an expression (no leading `†`).
    #[error(
        "`_outputPath` {} is not an expression: it must start with '†'{}",
        agent_core::quoted(text),
        agent_core::dagger_meant(text)
            .map(|meant| format!("; did you mean {}?", agent_core::quoted(&meant)))
            .unwrap_or_default()
    )]
    OutputPathNotExpression {
        /// The rejected text.
        text: String,
    },
    /// `_outputPath` does not parse (R19).
    #[error("`_outputPath`: {0}")]
    OutputPathSyntax(agent_vars::SyntaxError),
    /// `_outputMethod` is not a string.
    #[error("`_outputMethod` must be a string, found {found}")]
    OutputMethodNotString {
        /// The JSON type found instead.
        found: &'static str,
    },
    /// A `_` key the engine does not read and the application did not
    /// allow ([`crate::Call::check_keys`], decision D63).
    #[error(transparent)]
    UnknownKey(#[from] agent_core::UnknownKey),
    /// `_outputMethod` is not one of the six methods (R10, R10b, R20).
    #[error("`_outputMethod`: {0}")]
    UnknownMethod(#[source] agent_core::UnknownMethod),
    /// A failure with no failure outcome to write it to (R20).
    #[error(
        "unhandled failure: `_outputPath` has one outcome, so a failure has nowhere to go: {value}"
    )]
    UnhandledFailure {
        /// The failure value.
        value: agent_core::json::Value,
    },
    /// An explicitly chosen outcome that does not exist (R20).
    #[error("outcome {index} chosen, but `_outputPath` has {count} outcome(s)")]
    NoSuchOutcome {
        /// The chosen index.
        index: usize,
        /// How many outcomes there are.
        count: usize,
    },
    /// A message the activity returned (R22) that is not one valid data
    /// message.
    #[error("the returned message is invalid: {0}")]
    BadMessage(#[source] agent_data::MessageFault),
    /// A message the activity returned naming another instance than the
    /// call's (R6).
    #[error("the returned message writes instance {}, but the call runs in {}", scope(.found.as_deref()), scope(.expected.as_deref()))]
    WrongInstance {
        /// The call's instance (`None`: global).
        expected: Option<String>,
        /// The message's instance.
        found: Option<String>,
    },
    /// The message recording the result would nest deeper than the limit
    /// (R33): the call is copied one level down as `_call`, the value
    /// `|path| + 1` levels down in `data`.
    #[error("the message recording this result would be {0}")]
    TooDeep(#[source] agent_core::TooDeep),
    /// The message recording the result cannot be built — its `_call` and
    /// value checked, this is a fault the call carried (a bad field).
    #[error("the result cannot be recorded: {0}")]
    Record(#[source] agent_data::MessageFault),
    /// The call breaks its tool's schema (R23).
    #[error("the call breaks its tool's schema: {}", list(.0))]
    ToolSchema(Vec<SchemaViolation>),
    /// A parameter's reference is missing, so the call cannot be checked
    /// against its tool's schema (R23 judges parameters after resolution).
    #[error("cannot check the call against its tool's schema: {} not present", missing.join(", "))]
    ToolSchemaUnresolved {
        /// The missing references (`†input.days`).
        missing: Vec<String>,
    },
    /// The tool schema itself is invalid.
    #[error("invalid tool schema: {0}")]
    BadToolSchema(agent_data::MessageFault),
    /// The append was refused (type error R13, schema R25, …); nothing was appended.
    #[error(transparent)]
    Append(#[from] agent_data::Error),
    /// The append did not land for a reason other than a refusal: the store
    /// failed (I/O, a full disk, contention), keeps no keys, or was given a
    /// bad key. Nothing was appended (but see the store's in-doubt error).
    #[error(transparent)]
    Store(agent_data::AppendError),
}

impl From<agent_data::AppendError> for Error {
    fn from(error: agent_data::AppendError) -> Self {
        match error {
            agent_data::AppendError::Refused(refused) => Error::Append(*refused),
            other => Error::Store(other),
        }
    }
}

/// An instance as the user wrote it (JSON-quoted), or `the global scope`.
fn scope(instance: Option<&str>) -> String {
    match instance {
        Some(id) => agent_core::json::Value::from(id).to_string(),
        None => "the global scope".into(),
    }
}

fn list(violations: &[SchemaViolation]) -> String {
    let parts: Vec<String> = violations.iter().map(ToString::to_string).collect();
    parts.join("; ")
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
