//! `--key KEY`: appends made at most once per key (`append`,
//! `apply --write`, `run --write`; docs/store.md, "Idempotent appends").

use crate::Failure;
use crate::input::AnyStore;
use agent_data::{Append, AppendError, AppendKey, BuildMessages, KeyedOutcome};
use agent_data::{Context, Message};
use agent_store::Stored;
use std::ops::Range;

/// What `--key` says in every command's help.
pub(crate) const HELP: &str = "Append at most once per KEY (printable ASCII without spaces, at most \
    128 bytes): run again with the same KEY after a failure — the append may have landed — and \
    nothing already appended is appended again. Kept 7 days, in PostgreSQL and beside JSONL files (not JSON arrays)";

/// Parses `--key` (a clap value parser: a bad key is a usage error).
pub(crate) fn parse_key(arg: &str) -> std::result::Result<AppendKey, String> {
    arg.parse::<AppendKey>().map_err(|e| e.to_string())
}

/// A stored context that notes which appends with a key had already
/// landed, so the command can say so.
pub(crate) struct Noting<'a> {
    stored: &'a mut Stored<AnyStore>,
    already: Vec<AppendKey>,
}

impl<'a> Noting<'a> {
    /// Checks that the store keeps keys before anything is run (an empty
    /// append with a key appends nothing and records nothing), then wraps
    /// it.
    pub(crate) fn new(
        stored: &'a mut Stored<AnyStore>,
        key: &AppendKey,
    ) -> std::result::Result<Self, Failure> {
        stored.append_once(&[], key).map_err(Failure::invalid)?;
        Ok(Noting {
            stored,
            already: Vec::new(),
        })
    }

    /// True when an append with a key had already landed (and was not
    /// appended again).
    pub(crate) fn already_landed(&self) -> bool {
        !self.already.is_empty()
    }

    /// Says on stderr which appends had already landed (nothing was
    /// appended for them now).
    pub(crate) fn report(&self) {
        let name = self.stored.store().name();
        for key in &self.already {
            eprintln!(
                "note: {name}: the append with key {key} had already landed; nothing was \
                 appended again"
            );
        }
    }
}

impl Append for Noting<'_> {
    fn context(&self) -> &Context {
        self.stored.context()
    }

    fn append_all(&mut self, messages: &[Message]) -> Result<Range<usize>, AppendError> {
        self.stored.append_all(messages)
    }

    fn append_built(&mut self, build: &mut BuildMessages<'_>) -> Result<Range<usize>, AppendError> {
        self.stored.append_built(build)
    }

    fn append_once(
        &mut self,
        messages: &[Message],
        key: &AppendKey,
    ) -> Result<KeyedOutcome, AppendError> {
        let once = self.stored.append_once(messages, key)?;
        if once.is_already() {
            self.already.push(key.clone());
        }
        Ok(once)
    }
}
