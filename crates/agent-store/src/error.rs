//! The one error type of this crate.

/// Everything that can go wrong reading or appending a stored context. Each
/// names the context (a file path, or a URL without its password).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The operating system refused a read, a write, a lock or an fsync.
    #[error("cannot {action} {name}: {source}")]
    Io {
        /// What was being done (`read`, `append to`, `lock`, …).
        action: &'static str,
        /// The context.
        name: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The context path names something that is not a regular file (a
    /// FIFO, a device, a socket, a directory): refused before anything is
    /// read from it, so it can neither hang nor feed endless bytes.
    #[error(
        "{name} is {kind}, not a regular file: a context file must be a regular file (use - for stdin)"
    )]
    NotAFile {
        /// The context.
        name: String,
        /// What it is (`a FIFO`, `a character device`, …).
        kind: &'static str,
    },
    /// The context file starts with a UTF-8 byte order mark, which JSON
    /// does not allow. Refused rather than read past or cut away.
    #[error(
        "{name} starts with a UTF-8 byte order mark (bytes EF BB BF), which a context file may not have; remove those three bytes and try again (nothing was read or written)"
    )]
    ByteOrderMark {
        /// The context.
        name: String,
    },
    /// A write would have made the file larger than this process may make
    /// files (`ulimit -f`, `RLIMIT_FSIZE`). The write was undone.
    #[error(
        "cannot {action} {name}: it would exceed the file-size limit of this process (ulimit -f); nothing was written ({source})"
    )]
    SizeLimit {
        /// What was being done (`append to`, `write`).
        action: &'static str,
        /// The context.
        name: String,
        /// The OS error (`EFBIG`).
        source: std::io::Error,
    },
    /// The stored rows do not chain (R34e): a row was edited, deleted,
    /// inserted or reordered, or its digest removed, by something other
    /// than agentctx. Nothing is read past it; `agentctx verify` lists
    /// every finding.
    #[error("{name}: row {position}: {what} (agentctx verify lists every finding)")]
    Tampered {
        /// The context.
        name: String,
        /// The first row that does not match.
        position: u64,
        /// What is wrong there.
        what: String,
    },
    /// The stored messages do not load (bad JSON, a bad message, R1).
    #[error("{name}: {source}")]
    Load {
        /// The context.
        name: String,
        /// What loading said.
        source: Box<agent_data::Error>,
    },
    /// The append was refused: a type error or a schema violation against
    /// the context as it is now (R13, R25), or a bad message. Nothing was
    /// appended.
    #[error("{0}")]
    Refused(Box<agent_data::Error>),
    /// Someone else appended first: the context no longer has the length
    /// the append was validated against. Nothing was appended; catch up and
    /// validate again ([`crate::Store::commit`] does).
    #[error(
        "{name}: another writer appended first (expected {expected} messages, found {current})"
    )]
    Conflict {
        /// The context.
        name: String,
        /// The length the append expected.
        expected: usize,
        /// The length found.
        current: usize,
    },
    /// Every attempt of a commit met a conflict.
    #[error(
        "{name}: gave up after {attempts} attempts: other writers kept appending first; nothing was appended"
    )]
    Contended {
        /// The context.
        name: String,
        /// Attempts made.
        attempts: usize,
    },
    /// The stored context is no longer the one this handle read: a file
    /// truncated or replaced by a program that does not append.
    #[error("{name} was {what} since it was read; load it again")]
    Replaced {
        /// The context.
        name: String,
        /// `truncated`, `replaced`, …
        what: &'static str,
    },
    /// `copy` into a context that already has messages.
    #[error("{name} is not empty ({messages} messages): copy only into a missing or empty context")]
    NotEmpty {
        /// The context.
        name: String,
        /// How many messages it has.
        messages: usize,
    },
    /// A stored context that cannot take an append as it is (a JSON file
    /// that does not end in `]`, say).
    #[error("{name}: {reason}")]
    Malformed {
        /// The context.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// The context does not exist (a missing file, or no such context in
    /// the database). Reading it is an error; the first append creates it.
    #[error("{name}: no such context")]
    Missing {
        /// The context.
        name: String,
    },
    /// A PostgreSQL address that cannot be used: not a URL, no `context`
    /// parameter, a bad context name.
    #[error("{address}: {reason}")]
    Address {
        /// The address, without its password.
        address: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The database refused, or could not be reached. Nothing was appended.
    #[error("cannot {action} {name}: {reason}")]
    Database {
        /// What was being done (`connect to`, `read`, `append to`, …).
        action: &'static str,
        /// The context's URL, without its password.
        name: String,
        /// What the server or the client said.
        reason: String,
    },
    /// The result of a plan's call was not appended because the call
    /// already has one, written under this very claim: a commit sent again
    /// after a lost connection, whose first sending landed. A call's result
    /// is written once. (A result from a claim that is no longer the
    /// call's current one is [`Error::Fenced`].)
    #[error(
        "{name}: call {call} of the plan at row {plan} already has its result; this one was not appended"
    )]
    AlreadyWritten {
        /// The context.
        name: String,
        /// The plan message's row.
        plan: u64,
        /// The call's position in the plan.
        call: usize,
    },
    /// The result of a plan's call was not appended because the claim it
    /// was run under is no longer the call's current one (D43: fencing):
    /// the call was claimed again after this claim's lease ran out, given
    /// back, given up (failed), or finished under another claim. Only the
    /// worker holding the call's current claim, while the call is running,
    /// may write its result; the call's row and the log are unchanged.
    #[error("{0}")]
    Fenced(Box<Fenced>),
    /// The connection was lost while an append was committing, and the
    /// context afterwards begins with exactly that batch: it may be this
    /// append, or another writer's identical one. Check before retrying —
    /// or, for an append made with a key ([`crate::Store::commit_once`]),
    /// retry with the same key: it lands once.
    #[error(
        "{name}: the connection was lost while appending ({reason}); the append may have landed{}",
        key.as_ref().map_or_else(String::new, |k| format!(
            "; retry with the same key ({k}) to be sure it lands once"
        ))
    )]
    InDoubt {
        /// The context.
        name: String,
        /// What happened.
        reason: String,
        /// The append's key, when it was made with one.
        key: Option<crate::AppendKey>,
    },
    /// An append with a key ([`crate::Store::commit_once`]) to a store
    /// that keeps no keys, so it could not promise to append once. Nothing
    /// was appended.
    #[error(
        "{name}: this store keeps no append keys, so an append with a key cannot be made here \
         (nothing was appended); append without a key"
    )]
    KeysUnsupported {
        /// The context.
        name: String,
    },
}

impl Error {
    /// True when the error says the context does not exist.
    pub fn is_missing(&self) -> bool {
        match self {
            Error::Missing { .. } => true,
            Error::Io { source, .. } => source.kind() == std::io::ErrorKind::NotFound,
            _ => false,
        }
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What [`Error::Fenced`] says: whose result was refused, and which claim
/// holds the call now.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{name}: call {call} of the plan at row {plan} is {state}, held by attempt {attempts} \
     of {}; the result of attempt {attempt} by worker {worker} was fenced off and not appended",
    holder.as_deref().map_or_else(|| "no worker".to_owned(), |h| format!("worker {h}"))
)]
pub struct Fenced {
    /// The context.
    pub name: String,
    /// The plan message's row.
    pub plan: u64,
    /// The call's position in the plan.
    pub call: usize,
    /// The worker whose result was refused.
    pub worker: String,
    /// Its claim's token: the attempt it ran.
    pub attempt: u32,
    /// The call's state now (`waiting`, `running`, `done` or `failed`).
    pub state: String,
    /// The call's current token: how many times it was claimed.
    pub attempts: u32,
    /// The worker holding (or last holding) the call now.
    pub holder: Option<String>,
}
