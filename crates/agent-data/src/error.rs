//! The one error type of this crate.

use crate::Identity;
use agent_core::json::Value;
use std::fmt;

/// One way a view breaks its schema (R25): where, which rule, what value.
#[derive(Debug, Clone, PartialEq)]
pub struct SchemaViolation {
    /// JSON Pointer into the view (`""` is the whole view).
    pub instance_path: String,
    /// The schema keyword that failed (`type`, `required`, …).
    pub rule: String,
    /// JSON Pointer of that keyword inside the schema.
    pub schema_path: String,
    /// The offending value.
    pub value: Value,
    /// The validator's own explanation.
    pub message: String,
}

impl fmt::Display for SchemaViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.instance_path.is_empty() {
            "/"
        } else {
            &self.instance_path
        };
        write!(
            f,
            "at {at}: {} (rule `{}` at {})",
            self.message, self.rule, self.schema_path
        )
    }
}

/// What is wrong with one message (R1, R2, R9, R25).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum MessageFault {
    /// The message is not a JSON object.
    #[error("a message must be a JSON object, found {found}")]
    NotObject {
        /// The JSON type found instead.
        found: &'static str,
    },
    /// `type` is present but not a string.
    #[error("`type` must be a string")]
    TypeNotString,
    /// A text message without a string `text`.
    #[error("a text message needs a string `text`")]
    TextWithoutText,
    /// A data message without `data`.
    #[error("a data message needs `data`")]
    DataWithoutData,
    /// An object with no `type`, no `data` and no chat `role`/`content`.
    #[error("not a message: no `type`, no `data`, and no `role` with `content`")]
    Unrecognised,
    /// A chat wrapper whose `content` is not a string, object or array.
    #[error("`content` must be a string, a message object or an array of them")]
    BadContent,
    /// A staged write that is not a data message of the staged instance.
    #[error(
        "a staged write must be a data message of instance {}",
        agent_core::quoted(expected)
    )]
    WrongInstance {
        /// The instance being staged.
        expected: String,
    },
    /// A message nested deeper than the limit (R33).
    #[error("the message is {0}")]
    TooDeep(#[source] agent_core::TooDeep),
    /// An opaque message whose `type` loads as a text or data message (R1).
    #[error(
        "type {} is not an opaque message's: it loads as a text or data message",
        agent_core::quoted(found)
    )]
    NotOpaque {
        /// The `type` given.
        found: String,
    },
    /// A native message that would not load back as one: it has a `type`
    /// or `data`, or no tool calls or results (R1).
    #[error(
        "not a native message: it needs a `role`, no `type` or `data`, and tool calls or tool results"
    )]
    NotNative,
    /// A value that had to be one data message is something else.
    #[error("expected exactly one data message")]
    NotData,
    /// `input` and `data` both given on an input message.
    #[error("an input message cannot carry both `input` and `data`")]
    InputAndData,
    /// A field of the wrong JSON type.
    #[error("`{field}` must be {expected}")]
    FieldType {
        /// The field's name.
        field: &'static str,
        /// What it must be.
        expected: &'static str,
    },
    /// A `kind` outside `[A-Za-z_][A-Za-z0-9_-]*` (R2).
    #[error(transparent)]
    InvalidKind(agent_core::InvalidKind),
    /// A `_` key the engine does not read, in a message being appended or
    /// (at `calls[N]`) a call of a plan message (D63: typos refused).
    #[error("{}{key}", call.map(|i| format!("calls[{i}]: ")).unwrap_or_default())]
    UnknownKey {
        /// The call of a plan message it is in, if any.
        call: Option<usize>,
        /// The key, and the keys known there.
        key: agent_core::UnknownKey,
    },
    /// An `_instance` R2 does not allow (it could forge a block header).
    #[error("`_instance`: {0}")]
    InvalidInstance(#[source] agent_core::Error),
    /// An `_outputMethod` that is not one of the six methods (R10, R10b).
    #[error("`_outputMethod`: {0}")]
    UnknownMethod(#[source] agent_core::UnknownMethod),
    /// An `_outputPath` that is not exactly one reference (R9).
    #[error(
        "`_outputPath` {} is not one reference: {reason}",
        agent_core::quoted(text)
    )]
    BadOutputPath {
        /// The rejected text.
        text: String,
        /// Why it does not parse.
        reason: String,
    },
    /// An `_outputPath` naming another kind than the message's (R9).
    #[error("`_outputPath` {path} names kind `{found}`, but the message is of kind `{kind}`")]
    OutputPathKind {
        /// The output path.
        path: String,
        /// The kind it names.
        found: String,
        /// The message's kind.
        kind: String,
    },
    /// `data` holds nothing at the destination path (R9).
    #[error("`data` holds no value at the destination path {path}")]
    ValueAbsent {
        /// The destination path, canonical.
        path: String,
    },
    /// An erase whose `data` holds something other than `null` at the
    /// destination path (R10b).
    #[error(
        "`_outputMethod` erase: `data` must hold null at the destination path {path}, not {found}"
    )]
    EraseValue {
        /// The destination path.
        path: agent_core::DisplayPath,
        /// The JSON type found there.
        found: &'static str,
    },
    /// A `schema` that is not a valid JSON Schema (R25).
    #[error("invalid schema: {reason}")]
    InvalidSchema {
        /// What the schema compiler said.
        reason: String,
    },
    /// A schema to compile in a build of agent-data without its `schema`
    /// feature, which cannot check anything against it (D61: features cut).
    #[error("cannot check a JSON Schema: agent-data was built without its `schema` feature")]
    SchemaUnsupported,
}

/// Everything that can go wrong in `agent-data`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The input is not well-formed JSON (or a JSONL line is not).
    #[error("invalid JSON{}: {reason}", at(*line, *column))]
    Json {
        /// 1-based line of the fault.
        line: usize,
        /// 1-based column of the fault.
        column: usize,
        /// What the JSON parser said.
        reason: String,
    },
    /// JSON nested deeper than the limit (R33).
    #[error("JSON {depth} at byte {offset}{}", line.map(|l| format!(" (line {l})")).unwrap_or_default())]
    TooDeep {
        /// The limit it exceeds.
        #[source]
        depth: agent_core::TooDeep,
        /// Byte offset (in the whole input) of the bracket that went too deep.
        offset: usize,
        /// 1-based line, for JSONL input.
        line: Option<usize>,
    },
    /// A JSON context that is not an array (R1).
    #[error("a JSON context must be an array of messages, found {found}")]
    NotAnArray {
        /// The JSON type found instead.
        found: &'static str,
    },
    /// One message is invalid (R1, R2, R9, R25). `index` is the 0-based
    /// position of the message in the input (for appends: in the batch).
    #[error("message {index}{}: {fault}", line.map(|l| format!(" (line {l})")).unwrap_or_default())]
    Message {
        /// 0-based message index.
        index: usize,
        /// 1-based line, for JSONL input.
        line: Option<usize>,
        /// What is wrong.
        fault: MessageFault,
    },
    /// An append that would be a type error against its view (R13).
    #[error("message {index} (¶{identity}) refused: {source}")]
    TypeError {
        /// Index the message would have had in the context.
        index: usize,
        /// The layer written (or, for a global write, the instance layer it breaks).
        identity: Identity,
        /// The type error, with its path.
        source: agent_core::Error,
    },
    /// An append whose resulting view breaks the layer's schema (R25).
    #[error(
        "message {index} (¶{identity}) refused: schema violated: {}",
        list(violations)
    )]
    Schema {
        /// Index the message would have had in the context.
        index: usize,
        /// The layer written.
        identity: Identity,
        /// Every violation found.
        violations: Vec<SchemaViolation>,
    },
    /// An append to a layer that has a schema, in a build of agent-data
    /// without its `schema` feature: the view cannot be checked, so the
    /// append is refused rather than taken unchecked (D61: features cut).
    #[error(
        "message {index} (¶{identity}) refused: its layer has a schema, and agent-data was built without its `schema` feature, which checks it"
    )]
    SchemaUnchecked {
        /// Index the message would have had in the context.
        index: usize,
        /// The layer written.
        identity: Identity,
    },
    /// Staged writes whose context changed since staging (or two batches for
    /// one instance); nothing was committed.
    #[error(
        "writes staged for instance {} are stale: the context changed since they were validated",
        agent_core::quoted(instance)
    )]
    Stale {
        /// The instance of the stale batch.
        instance: String,
    },
    /// A prepared batch whose context grew after it was validated; nothing
    /// was appended (prepare it again).
    #[error(
        "a batch validated against {validated} messages cannot land: the context has {now} now"
    )]
    Changed {
        /// The context's length when the batch was validated.
        validated: usize,
        /// Its length now.
        now: usize,
    },
    /// A snapshot that cannot be read back: damaged, or written by another
    /// version. Stores ignore it and read the whole log instead.
    #[error("invalid snapshot: {reason}")]
    Snapshot {
        /// What is wrong with it.
        reason: String,
    },
    /// A point past the end of the log ([`Context::prefix`]).
    ///
    /// [`Context::prefix`]: crate::Context::prefix
    #[error(
        "the context has {len} message(s): there is no point after its first {at} (choose 0 to {len})"
    )]
    PastTheEnd {
        /// The point asked for: a number of messages.
        at: usize,
        /// The context's length.
        len: usize,
    },
    /// A point inside the part of the log a snapshot summarised
    /// ([`Context::prefix`]): its messages are not held.
    ///
    /// [`Context::prefix`]: crate::Context::prefix
    #[error(
        "cannot go back to the first {at} message(s): this context was opened from a snapshot and holds its messages only from {held_from} on; load it whole"
    )]
    NotHeld {
        /// The point asked for: a number of messages.
        at: usize,
        /// Where the held messages start.
        held_from: usize,
    },
    /// Reading a context file failed.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
}

impl Error {
    /// The same error naming message `index` instead (for errors that name one).
    pub(crate) fn at_index(self, index: usize) -> Self {
        match self {
            Error::Message { line, fault, .. } => Error::Message { index, line, fault },
            Error::TypeError {
                identity, source, ..
            } => Error::TypeError {
                index,
                identity,
                source,
            },
            Error::Schema {
                identity,
                violations,
                ..
            } => Error::Schema {
                index,
                identity,
                violations,
            },
            Error::SchemaUnchecked { identity, .. } => Error::SchemaUnchecked { index, identity },
            other => other,
        }
    }
}

fn at(line: usize, column: usize) -> String {
    format!(" at line {line} column {column}")
}

fn list(violations: &[SchemaViolation]) -> String {
    let parts: Vec<String> = violations.iter().map(ToString::to_string).collect();
    parts.join("; ")
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
