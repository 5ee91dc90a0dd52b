//! How a [`PgStore`] appends and commits: compare-and-append, tried
//! optimistically first, then under the context's row lock; and what an
//! append whose connection broke did.
//!
//! Every append is one transaction that appends only if the context still
//! has the length the batch was validated against: the plain statement
//! `APPEND_PLAIN` where it applies (D96: the plain append), else a call of
//! `agentctx_append` (or, for a call's result, `agentctx_commit_call`,
//! which also marks the call done), which also says why nothing was
//! appended. When the connection breaks during it, [`PgStore`]
//! ends the old server session and looks at what landed (`settle`).
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

use crate::SnapshotWhen;

use super::session::{describe, outcome_unknown};
use super::sql::{APPEND, APPEND_PLAIN, COMMIT, COMMIT_CALL, KEY, LOCK, ROLLBACK};
use super::{Claim, PgStore};
use crate::retry::retry_on_conflict;
use crate::{AppendKey, Error, KeyedOutcome, Result, Store, Stored};
use agent_data::{Context, Message, Prepared};
use std::ops::Range;

fn refused(error: agent_data::Error) -> Error {
    Error::Refused(Box::new(error))
}

/// What `agentctx_commit_call` says of the call's row: its state (or
/// `missing`, `unknown`, `written`), whether the claim was fenced off, and
/// the claim holding the call now.
struct CallNow {
    state: String,
    fenced: bool,
    attempts: Option<i32>,
    worker: Option<String>,
}

fn land(context: &mut Context, prepared: Prepared<'_>) -> Result<KeyedOutcome> {
    context
        .append_prepared(prepared)
        .map(KeyedOutcome::Appended)
        .map_err(refused)
}

/// What an append did: landed now, or nothing because an append with its
/// key had landed — with the index range of that append's messages.
pub(super) enum Sent {
    Landed,
    Already(Range<usize>),
}

impl PgStore {
    /// [`Store::append_at`], or with `claim` the append of that call's
    /// result: refused with [`Error::Fenced`] unless `claim` is the call's
    /// current claim and the call is running, and with
    /// [`Error::AlreadyWritten`] when this claim's result already landed
    /// (schema version 5).
    ///
    /// With `key` (and no claim), the append is made at most once per key
    /// (schema version 7): [`Sent::Already`] when it had landed.
    pub(super) fn append_guarded(
        &mut self,
        prepared: &Prepared<'_>,
        claim: Option<&Claim>,
        key: Option<&AppendKey>,
    ) -> Result<Sent> {
        self.check_position(prepared.base())?;
        let lines: Vec<&str> = prepared.lines().collect();
        // Each line's chain digest, following the rows this handle knows
        // (R34e): the functions store them beside the lines.
        let mut after = self.head;
        let digests: Vec<Vec<u8>> = lines
            .iter()
            .map(|line| {
                after = after.next(line.as_bytes());
                after.as_bytes().to_vec()
            })
            .collect();
        let expected = self.rows;
        let name = self.address.context.clone();
        let at = i64::try_from(expected).unwrap_or(i64::MAX);
        let id = self.id;
        let message = i64::try_from(self.messages).unwrap_or(i64::MAX);
        let key_text = key.map(AppendKey::as_str);
        let mut already = None;
        let mut plain_trips = 0;
        let client = self.client()?;
        // The plain statement first where it applies (D96: the plain
        // append); when it appends nothing, the function says why.
        let plain = match (id, key_text, claim) {
            (Some(_), None, None) if !lines.is_empty() => {
                plain_trips = 1;
                client
                    .execute(&APPEND_PLAIN, &[&name, &id, &at, &lines, &digests])
                    .map(|rows| usize::try_from(rows).ok() == Some(lines.len()))
            }
            _ => Ok(false),
        };
        let function_trips = u64::from(matches!(plain, Ok(false)));
        let found = match (plain, claim) {
            (Ok(true), _) => Ok((id, at, None)),
            (Err(e), _) => Err(e),
            (Ok(false), None) => client
                .query_one(
                    &APPEND,
                    &[&name, &id, &at, &lines, &digests, &key_text, &message],
                )
                .and_then(|row| {
                    if row.try_get::<_, Option<bool>>(2)? == Some(true) {
                        let first: i64 = row.try_get(3)?;
                        let end: i64 = row.try_get(4)?;
                        let message: i64 = row.try_get(5)?;
                        already = Some((first, end, message));
                    }
                    Ok((
                        row.try_get::<_, Option<i64>>(0)?,
                        row.try_get::<_, i64>(1)?,
                        None,
                    ))
                }),
            (Ok(false), Some(claim)) => {
                let plan = i64::try_from(claim.plan).unwrap_or(i64::MAX);
                let call = i32::try_from(claim.call).unwrap_or(i32::MAX);
                let attempt = i32::try_from(claim.attempt).unwrap_or(i32::MAX);
                client
                    .query_one(
                        &COMMIT_CALL,
                        &[
                            &name,
                            &id,
                            &at,
                            &lines,
                            &plan,
                            &call,
                            &claim.worker,
                            &attempt,
                            &digests,
                        ],
                    )
                    .and_then(|row| {
                        Ok((
                            row.try_get::<_, Option<i64>>(0)?,
                            row.try_get::<_, i64>(1)?,
                            Some(CallNow {
                                state: row.try_get(2)?,
                                fenced: row.try_get::<_, Option<bool>>(3)?.unwrap_or(false),
                                attempts: row.try_get(4)?,
                                worker: row.try_get(5)?,
                            }),
                        ))
                    })
            }
        };
        self.trips += plain_trips + function_trips;
        let replaced = |what| Error::Replaced {
            name: self.address.shown.clone(),
            what,
        };
        match found {
            Ok((_, -1, _)) => Err(replaced("deleted")),
            // Another context of the same name: the one read was deleted.
            Ok((found_id, _, _)) if id.is_some() && found_id != id => {
                Err(replaced("deleted and created again"))
            }
            // The key decides before the length does (schema v7): its
            // append landed, and nothing was appended now.
            Ok((found_id, _, None)) if already.is_some() => {
                self.id = found_id;
                let (first, end, message) = already.unwrap_or_default();
                let start = usize::try_from(message).unwrap_or(usize::MAX);
                let count = usize::try_from(end - first).unwrap_or(0);
                Ok(Sent::Already(start..start.saturating_add(count)))
            }
            // The call's row decides before the length does (schema v5):
            // first whether this claim still holds the call.
            Ok((_, _, Some(now))) if now.fenced => {
                let (plan, call, worker, attempt) = claim.map_or((0, 0, String::new(), 0), |c| {
                    (c.plan, c.call, c.worker.clone(), c.attempt)
                });
                Err(Error::Fenced(Box::new(crate::error::Fenced {
                    name: self.address.shown.clone(),
                    plan,
                    call,
                    worker,
                    attempt,
                    state: now.state,
                    attempts: now.attempts.map_or(0, |a| u32::try_from(a).unwrap_or(0)),
                    holder: now.worker,
                })))
            }
            Ok((_, _, Some(now))) if now.state == "done" => {
                let (plan, call) = claim.map_or((0, 0), |c| (c.plan, c.call));
                Err(Error::AlreadyWritten {
                    name: self.address.shown.clone(),
                    plan,
                    call,
                })
            }
            Ok((_, _, Some(now))) if now.state == "missing" => {
                Err(replaced("deleted and created again"))
            }
            Ok((_, _, Some(now))) if now.state == "unknown" => {
                let (plan, call) = claim.map_or((0, 0), |c| (c.plan, c.call));
                Err(Error::Malformed {
                    name: self.address.shown.clone(),
                    reason: format!(
                        "call {call} of the plan at row {plan} has no row in agentctx_calls"
                    ),
                })
            }
            Ok((found_id, found, _)) if found == at => {
                self.id = found_id;
                self.rows += lines.len();
                self.head = after;
                self.messages += prepared.len();
                let bytes = lines.iter().map(|l| l.len() as u64 + 1).sum();
                self.since.add(prepared.len(), bytes);
                Ok(Sent::Landed)
            }
            // The log only grows: shorter than it was read is another log.
            Ok((_, found, _)) if found < at => Err(replaced("deleted and created again")),
            Ok((_, found, _)) => Err(Error::Conflict {
                name: self.address.shown.clone(),
                expected,
                current: usize::try_from(found).unwrap_or(usize::MAX),
            }),
            Err(e) if outcome_unknown(&e) => Err(self.settle(expected, &lines, &e, key)),
            Err(e) => Err(self.database("append to", &e)),
        }
    }

    pub(super) fn check_position(&self, messages: usize) -> Result<()> {
        if messages == self.messages {
            return Ok(());
        }
        Err(Error::Malformed {
            name: self.address.shown.clone(),
            reason: format!(
                "the context has {messages} messages, but {} were read from this store",
                self.messages
            ),
        })
    }

    /// After the connection failed during an append of `lines` at
    /// `expected`: looks at what landed. Nothing (or someone else's rows)
    /// → a conflict, which [`Store::commit`] retries; exactly these lines →
    /// in doubt.
    pub(super) fn settle(
        &mut self,
        expected: usize,
        lines: &[&str],
        cause: &tokio_postgres::Error,
        key: Option<&AppendKey>,
    ) -> Error {
        let in_doubt = |store: &PgStore, why: String| Error::InDoubt {
            name: store.address.shown.clone(),
            reason: format!("{}; {why}", describe(cause)),
            key: key.cloned(),
        };
        // The transaction, if any, is over: what follows looks from a new
        // connection at what landed.
        self.client = None;
        self.in_transaction = false;
        // Through a pooler no server session is this store's own to end:
        // the append may yet commit (D109: behind a pooler).
        let ended = match self.backend.take().map(|b| self.end_session(b)) {
            Some(Ok(())) => true,
            Some(Err(why)) => return in_doubt(self, format!("then: {why}")),
            None => false,
        };
        let mut landed = Vec::new();
        let found = match self.read(expected, Some(self.head), &mut landed) {
            Ok(found) => found,
            Err(e) => return in_doubt(self, format!("then: {e}")),
        };
        let ours: String = lines.iter().map(|l| format!("{l}\n")).collect();
        match found {
            Some((0, _)) | None if ended => Error::Conflict {
                name: self.address.shown.clone(),
                expected,
                current: expected,
            },
            Some((0, _)) | None => in_doubt(
                self,
                "it has not landed yet, but through a connection pooler the server session \
                 that ran it cannot be ended, so it may still land"
                    .into(),
            ),
            Some((n, _)) if landed.starts_with(ours.as_bytes()) => in_doubt(
                self,
                format!(
                    "the context now has {} more rows, beginning with exactly these",
                    n
                ),
            ),
            Some((n, _)) => Error::Conflict {
                name: self.address.shown.clone(),
                expected,
                current: expected + n,
            },
        }
    }

    /// [`Store::commit`] for PostgreSQL (see the module's documentation);
    /// with `claim`, the commit of that call's result; with `key`,
    /// [`Store::commit_once`]. An empty batch with a key appends nothing
    /// and records no key.
    pub(super) fn commit_messages(
        &mut self,
        context: &mut Context,
        messages: &[Message],
        claim: Option<&Claim>,
        key: Option<&AppendKey>,
    ) -> Result<KeyedOutcome> {
        // A call's result is committed even when it has no message: that
        // marks the call done.
        if messages.is_empty() && claim.is_none() {
            return Ok(KeyedOutcome::Appended(context.len()..context.len()));
        }
        // A refusal against what this handle knew is decided against the
        // context as it is now, below.
        if let Ok(prepared) = context.prepare(messages) {
            match self.append_guarded(&prepared, claim, key) {
                Ok(Sent::Landed) => return land(context, prepared),
                Ok(Sent::Already(range)) => return self.already(context, range),
                Err(Error::Conflict { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        let name = self.address.shown.clone();
        retry_on_conflict(&name, || {
            // A conflict only while the context does not exist yet
            // (nothing to lock), or after a lost connection showed
            // nothing landed.
            self.commit_locked(context, messages, claim, key)
        })
    }

    /// An append with the key had landed: `context` caught up to hold it.
    fn already(&mut self, context: &mut Context, range: Range<usize>) -> Result<KeyedOutcome> {
        self.catch_up(context)?;
        Ok(KeyedOutcome::Already(range))
    }

    fn commit_locked(
        &mut self,
        context: &mut Context,
        messages: &[Message],
        claim: Option<&Claim>,
        key: Option<&AppendKey>,
    ) -> Result<KeyedOutcome> {
        self.catch_up(context)?;
        let Some(id) = self.id else {
            // Missing: the append creates it, or conflicts with its creator.
            let prepared = context.prepare(messages).map_err(refused)?;
            return match self.append_guarded(&prepared, claim, key)? {
                Sent::Landed => land(context, prepared),
                Sent::Already(range) => self.already(context, range),
            };
        };
        self.begin_locked(id)?;
        let result = self.append_locked(context, messages, claim, key);
        if result.is_err() {
            self.rollback();
        }
        result
    }

    /// `BEGIN`, and lock the context's row: other writers' appends wait.
    fn begin_locked(&mut self, id: i64) -> Result<()> {
        let client = self.client()?;
        let locked = client.begin().and_then(|()| client.query(&LOCK, &[&id]));
        self.in_transaction = true;
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
        key: Option<&AppendKey>,
    ) -> Result<KeyedOutcome> {
        self.catch_up(context)?;
        let prepared = match context.prepare(messages) {
            Ok(prepared) => prepared,
            // A batch that its own first landing made invalid (a push past
            // `maxItems`, say) is a retry, not a refusal: the key decides
            // first, under the lock.
            Err(e) => {
                if let Some(range) = self.keyed(key)? {
                    self.rollback();
                    return self.already(context, range);
                }
                return Err(refused(e));
            }
        };
        let before = (self.id, self.rows, self.messages, self.head);
        if let Sent::Already(range) = self.append_guarded(&prepared, claim, key)? {
            // Nothing was appended under the lock: end the transaction.
            self.rollback();
            return self.already(context, range);
        }
        let committed = match self.client() {
            Ok(client) => {
                let committed = client.batch_execute(COMMIT).map_err(Some);
                self.trips += 1;
                committed
            }
            Err(_) => Err(None),
        };
        self.in_transaction = false;
        match committed {
            Ok(()) => land(context, prepared),
            Err(failure) => {
                (self.id, self.rows, self.messages, self.head) = before;
                let lines: Vec<&str> = prepared.lines().collect();
                Err(match failure {
                    // The COMMIT may or may not have been carried out.
                    Some(e) if outcome_unknown(&e) => self.settle(before.1, &lines, &e, key),
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

    /// The index range of the messages the append with `key` wrote to
    /// this context, if it landed within the window.
    fn keyed(&mut self, key: Option<&AppendKey>) -> Result<Option<Range<usize>>> {
        let (Some(key), Some(id)) = (key, self.id) else {
            return Ok(None);
        };
        let client = self.client()?;
        let found = client
            .query_opt(&KEY, &[&id, &key.as_str()])
            .and_then(|row| {
                row.map(|row| {
                    Ok::<_, tokio_postgres::Error>((
                        row.try_get::<_, i64>(0)?,
                        row.try_get::<_, i64>(1)?,
                        row.try_get::<_, i64>(2)?,
                    ))
                })
                .transpose()
            });
        self.trips += 2;
        let found = found.map_err(|e| self.read_error(&e))?;
        Ok(found.map(|(first, end, message)| {
            let start = usize::try_from(message).unwrap_or(usize::MAX);
            let count = usize::try_from(end - first).unwrap_or(0);
            start..start.saturating_add(count)
        }))
    }

    /// Ends an open transaction, if the connection is still there.
    fn rollback(&mut self) {
        self.in_transaction = false;
        if let Some(client) = self.client.as_mut() {
            let _ = client.batch_execute(ROLLBACK);
            self.trips += 1;
        }
    }
}

impl PgStore {
    /// Commits the result of the call `claim` holds — `messages`, possibly
    /// none — as [`Store::commit`] does, and marks the call done in the
    /// same transaction — only while `claim` is the call's current claim
    /// (its token, the attempt, is the newest) and the call is running; its
    /// lease may have run out if nobody claimed the call since (decision
    /// D43). Otherwise nothing is appended, the call's row is unchanged, and
    /// the error is [`Error::Fenced`]: the call was claimed again, given
    /// back, failed, or done under another claim. When this very claim's
    /// result already landed the error is [`Error::AlreadyWritten`], so
    /// retrying after any other error (a lost connection,
    /// [`Error::InDoubt`]) is safe.
    ///
    /// # Errors
    /// [`Error::Fenced`] when `claim` is not the call's current claim or the call is not
    /// running; [`Error::AlreadyWritten`] when this claim's result already landed;
    /// [`Error::Malformed`] when the call has no row; otherwise the errors of
    /// [`Store::commit`].
    pub fn commit_call(
        &mut self,
        context: &mut Context,
        messages: &[Message],
        claim: &Claim,
    ) -> Result<Range<usize>> {
        let range =
            self.lent(|store| store.commit_messages(context, messages, Some(claim), None))?;
        self.snapshot(context, SnapshotWhen::Due)?;
        Ok(range.range())
    }
}

impl Stored<PgStore> {
    /// Commits the result of the call `claim` holds ([`PgStore::commit_call`]):
    /// written once, by the call's current claim, or [`Error::Fenced`] or
    /// [`Error::AlreadyWritten`].
    ///
    /// # Errors
    /// The errors of [`PgStore::commit_call`].
    pub fn commit_call(&mut self, messages: &[Message], claim: &Claim) -> Result<Range<usize>> {
        let (store, context) = self.parts();
        store.commit_call(context, messages, claim)
    }
}
