//! How a [`PgStore`] commits: optimistically first, then under the
//! context's row lock.
//!
//! Most appends find the context as this handle last saw it: appending at
//! that length is one round trip, and a success proves the batch was
//! validated against exactly the stored context. When another writer came
//! first, retrying optimistically would let a writer that is always up to
//! date win every race against one that has to catch up first (it needs a
//! round trip less), so the loser starves. Instead the loser locks the
//! context's row in a transaction, catches up, validates and appends under
//! it, and commits: writers waiting for the lock queue in order, and the
//! append cannot conflict.

use super::{Claim, PgStore, outcome_unknown};
use crate::retry::retry_on_conflict;
use crate::{Error, Result, Store};
use agent_data::{Context, Message, Prepared};
use std::ops::Range;

fn refused(error: agent_data::Error) -> Error {
    Error::Refused(Box::new(error))
}

fn land(context: &mut Context, prepared: Prepared<'_>) -> Result<Range<usize>> {
    context.append_prepared(prepared).map_err(refused)
}

impl PgStore {
    /// [`Store::commit`] for PostgreSQL (see the module's documentation);
    /// with `claim`, the commit of that call's result.
    pub(super) fn commit_messages(
        &mut self,
        context: &mut Context,
        messages: &[Message],
        claim: Option<&Claim>,
    ) -> Result<Range<usize>> {
        // A call's result is committed even when it has no message: that
        // marks the call done.
        if messages.is_empty() && claim.is_none() {
            return Ok(context.len()..context.len());
        }
        // A refusal against what this handle knew is decided against the
        // context as it is now, below.
        if let Ok(prepared) = context.prepare(messages) {
            match self.append_guarded(&prepared, claim) {
                Ok(()) => return land(context, prepared),
                Err(Error::Conflict { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        let name = self.address.shown.clone();
        retry_on_conflict(&name, || {
            // A conflict only while the context does not exist yet
            // (nothing to lock), or after a lost connection showed
            // nothing landed.
            self.commit_locked(context, messages, claim)
        })
    }

    fn commit_locked(
        &mut self,
        context: &mut Context,
        messages: &[Message],
        claim: Option<&Claim>,
    ) -> Result<Range<usize>> {
        self.catch_up(context)?;
        let Some(id) = self.id else {
            // Missing: the append creates it, or conflicts with its creator.
            let prepared = context.prepare(messages).map_err(refused)?;
            self.append_guarded(&prepared, claim)?;
            return land(context, prepared);
        };
        self.begin_locked(id)?;
        let result = self.append_locked(context, messages, claim);
        if result.is_err() {
            self.rollback();
        }
        result
    }

    /// `BEGIN`, and lock the context's row: other writers' appends wait.
    fn begin_locked(&mut self, id: i64) -> Result<()> {
        let (client, statements) = self.session()?;
        let locked = client
            .batch_execute("BEGIN")
            .and_then(|()| client.query(&statements.lock, &[&id]));
        self.trips += 2;
        match locked {
            Ok(rows) if rows.is_empty() => {
                self.rollback();
                Err(Error::Replaced {
                    name: self.address.shown.clone(),
                    what: "deleted",
                })
            }
            Ok(_) => Ok(()),
            Err(e) => {
                let error = self.read_error(&e);
                self.rollback();
                Err(error)
            }
        }
    }

    /// Under the lock: catch up, validate, append, commit.
    fn append_locked(
        &mut self,
        context: &mut Context,
        messages: &[Message],
        claim: Option<&Claim>,
    ) -> Result<Range<usize>> {
        self.catch_up(context)?;
        let prepared = context.prepare(messages).map_err(refused)?;
        let before = (self.id, self.rows, self.messages);
        self.append_guarded(&prepared, claim)?;
        let committed = match self.session() {
            Ok((client, _)) => {
                let committed = client.batch_execute("COMMIT").map_err(Some);
                self.trips += 1;
                committed
            }
            Err(_) => Err(None),
        };
        match committed {
            Ok(()) => land(context, prepared),
            Err(failure) => {
                (self.id, self.rows, self.messages) = before;
                let lines: Vec<&str> = prepared.lines().collect();
                Err(match failure {
                    // The COMMIT may or may not have been carried out.
                    Some(e) if outcome_unknown(&e) => self.settle(before.1, &lines, &e),
                    Some(e) => self.database("append to", &e),
                    None => Error::Database {
                        action: "append to",
                        name: self.address.shown.clone(),
                        reason: "the connection was lost before the commit".into(),
                    },
                })
            }
        }
    }

    /// Ends an open transaction, if the connection is still there.
    fn rollback(&mut self) {
        if let Some(client) = self.client.as_mut() {
            let _ = client.batch_execute("ROLLBACK");
            self.trips += 1;
        }
    }
}

impl PgStore {
    /// Commits the result of the call `claim` holds — `messages`, possibly
    /// none — as [`Store::commit`] does, and marks the call done in the
    /// same transaction. A call has one result: when it already has one
    /// (another worker's, after this one's lease ran out), nothing is
    /// appended and the error is [`Error::AlreadyWritten`]. Retrying after
    /// any other error (a lost connection, [`Error::InDoubt`]) is safe for
    /// the same reason.
    pub fn commit_call(
        &mut self,
        context: &mut Context,
        messages: &[Message],
        claim: &Claim,
    ) -> Result<Range<usize>> {
        let range = self.commit_messages(context, messages, Some(claim))?;
        self.snapshot(context, false)?;
        Ok(range)
    }
}
