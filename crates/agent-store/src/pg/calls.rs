//! The calls of a plan that many workers run together (schema version 4,
//! decisions D41 and D43): which call waits, which a worker has claimed and until
//! when, which finished; and the workers alive with their tools.
//!
//! Claims are rows locked with `FOR UPDATE SKIP LOCKED`, so workers never
//! wait for each other to pick work; a claim is a lease, so a worker that
//! dies leaves its calls to be claimed again once the lease runs out. The
//! result of a call is committed by [`PgStore::commit_call`], which writes
//! it only from the call's current claim while the call is running: that,
//! not the lease, is what makes a result exactly once and in order (a lease
//! only keeps two workers from running a call at once while both are
//! alive). Each claim increments the call's `attempts` in the statement
//! that takes it, under the row's lock, so the attempt is the claim's
//! fencing token: renewing, giving back and committing all check it.

use super::PgStore;
use super::changed::ROWS_CHANGED;
use super::client::Client;
use super::sql::Sql;
use super::sql::{
    ANALYZE_AFTER, ANALYZE_CALLS, CLAIM, LIVE_TOOLS, PLANS, PLANS_AT_ONCE, REGISTER, RELEASE,
    RENEW, ROWS, SET_UP, UNREGISTER,
};
use crate::{Error, Result};
use std::time::Duration;

/// Where a call of a plan is, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallState {
    /// Not claimed (or claimed, and its claim given back to try again).
    Waiting,
    /// Claimed by a worker, whose lease may have run out.
    Running,
    /// Its result is written.
    Done,
    /// Given up: an unhandled failure after the last attempt, or a result
    /// that could not be written.
    Failed,
}

impl CallState {
    fn parse(text: &str) -> CallState {
        match text {
            "running" => CallState::Running,
            "done" => CallState::Done,
            "failed" => CallState::Failed,
            _ => CallState::Waiting,
        }
    }

    /// `waiting`, `running`, `done` or `failed`.
    pub fn name(self) -> &'static str {
        match self {
            CallState::Waiting => "waiting",
            CallState::Running => "running",
            CallState::Done => "done",
            CallState::Failed => "failed",
        }
    }
}

/// One call's row.
#[derive(Debug, Clone, PartialEq)]
pub struct CallRow {
    /// The call's position in the plan.
    pub call: usize,
    /// Where it is.
    pub state: CallState,
    /// The worker holding it (running) or that wrote or gave it up.
    pub worker: Option<String>,
    /// How many times it was claimed.
    pub attempts: u32,
    /// When it was last claimed (RFC 3339).
    pub claimed_at: Option<String>,
    /// Running: seconds until the lease runs out (negative: it has).
    pub lease_left: Option<f64>,
    /// Waiting after a failed attempt: seconds until it may be claimed.
    pub retry_in: Option<f64>,
    /// The last attempt's error.
    pub error: Option<String>,
}

impl CallRow {
    /// True when a worker may claim it now: waiting and not backing off,
    /// or running with its lease run out.
    pub fn claimable(&self) -> bool {
        match self.state {
            CallState::Waiting => self.retry_in.is_none_or(|s| s <= 0.0),
            CallState::Running => self.lease_left.is_some_and(|s| s <= 0.0),
            CallState::Done | CallState::Failed => false,
        }
    }
}

/// What [`PgCalls::claim`] asks for.
///
/// ```
/// use agent_store::ClaimRequest;
/// use std::time::Duration;
/// let request = ClaimRequest { plan: 7, candidates: &[0, 2], worker: "w1", lease: Duration::from_secs(30), max: 1 };
/// assert_eq!(request.candidates.len(), 2);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClaimRequest<'a> {
    /// The plan message's row.
    pub plan: u64,
    /// The calls (by index in the plan) the worker would run, ready by
    /// the readiness rule.
    pub candidates: &'a [usize],
    /// The worker's name.
    pub worker: &'a str,
    /// How long each claim holds without renewal.
    pub lease: Duration,
    /// The most calls to claim.
    pub max: usize,
}

/// Where a reader of a plan's rows stands ([`PgCalls::rows_changed`]):
/// the oldest transaction whose rows it may not have seen.
///
/// ```
/// use agent_store::Horizon;
/// assert_eq!(Horizon::START, Horizon::default());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Horizon(i64);

impl Horizon {
    /// Before every transaction: a read from it returns every row.
    pub const START: Horizon = Horizon(0);

    /// The horizon at transaction id `id` (a `txid_current()` value): for
    /// a reader that kept its horizon elsewhere and resumes from it.
    ///
    /// ```
    /// use agent_store::Horizon;
    /// let kept = Horizon::at(1_234);
    /// assert_eq!(kept.transaction(), 1_234);
    /// assert!(Horizon::START < kept);
    /// ```
    pub fn at(id: i64) -> Horizon {
        Horizon(id)
    }

    /// The oldest transaction id whose rows the reader may not have seen.
    pub fn transaction(self) -> i64 {
        self.0
    }
}

/// A row of [`ROWS`] or [`ROWS_CHANGED`], whose first eight columns are
/// the same.
fn call_row(row: &tokio_postgres::Row) -> std::result::Result<CallRow, tokio_postgres::Error> {
    let call: i32 = row.try_get(0)?;
    let state: String = row.try_get(1)?;
    let attempts: i32 = row.try_get(3)?;
    Ok(CallRow {
        call: usize::try_from(call).unwrap_or(0),
        state: CallState::parse(&state),
        worker: row.try_get(2)?,
        attempts: u32::try_from(attempts).unwrap_or(0),
        claimed_at: row.try_get(4)?,
        lease_left: row.try_get(5)?,
        retry_in: row.try_get(6)?,
        error: row.try_get(7)?,
    })
}

/// A worker's claim on one call: what [`PgStore::commit_call`] carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// The plan message's row.
    pub plan: u64,
    /// The call's position in the plan.
    pub call: usize,
    /// Which attempt this is (1 for the first claim): the claim's fencing
    /// token. Every claim of the call increments it atomically, so a newer
    /// claim always has a larger one and an older claim can never act on
    /// the call again (D43: fencing).
    pub attempt: u32,
    /// The worker.
    pub worker: String,
}

/// The table of a context's plan calls, and its workers.
///
/// It holds a connection of its own (through a [`PgStore`] of the same
/// address, so it reconnects and migrates the same way).
#[derive(Debug)]
pub struct PgCalls {
    store: PgStore,
}

impl PgCalls {
    /// Connects to the context at `url` (which must exist: a plan is one of
    /// its messages).
    ///
    /// # Errors
    /// [`Error::Missing`] when the context does not exist; otherwise the errors of
    /// [`PgStore::open`].
    pub fn open(url: &str) -> Result<PgCalls> {
        PgCalls::from_store(PgStore::open(url)?)
    }

    /// The calls of `store`'s context, through its connection (or its
    /// pool's).
    pub(crate) fn from_store(mut store: PgStore) -> Result<PgCalls> {
        if store.lent(PgStore::id)?.is_none() {
            return Err(Error::Missing {
                name: store.address.shown.clone(),
            });
        }
        Ok(PgCalls { store })
    }

    /// Round trips to the server so far (see [`PgStore::round_trips`]).
    pub fn round_trips(&self) -> u64 {
        self.store.round_trips()
    }

    /// The context's name for messages (its URL without a password).
    pub fn name(&self) -> &str {
        &self.store.address.shown
    }

    fn id(&mut self) -> Result<i64> {
        self.store.lent(PgStore::id)?.ok_or_else(|| Error::Missing {
            name: self.store.address.shown.clone(),
        })
    }

    /// Runs `f` with the connection, `sql` and the context's id, naming
    /// `action` in its error. The statement is prepared on first use on a
    /// direct connection (one more round trip), sent unnamed through a
    /// pooler.
    fn with<T>(
        &mut self,
        action: &'static str,
        sql: &'static Sql,
        f: impl FnOnce(&mut Client, &Sql, i64) -> Result<T, tokio_postgres::Error>,
    ) -> Result<T> {
        let id = self.id()?;
        let done = self.store.lent(|store| {
            let client = store.client()?;
            let before = client.prepared();
            let done = f(client, sql, id);
            let prepared = client.prepared().saturating_sub(before);
            store.trip(1 + prepared as u64);
            Ok(done)
        })?;
        done.map_err(|e| self.store.database(action, &e))
    }

    /// The newest worker plan message (`{"type":"plan","calls":…}`): its
    /// row and its JSON text; `None` when the context has none. Loop plans
    /// (a top-level `plan` key, decision D69) are passed over: they are the
    /// loop's, and a worker never runs one.
    ///
    /// # Errors
    /// [`Error::Missing`] when the context no longer exists; [`Error::Database`] when the
    /// server refuses the query or cannot be reached (or [`Error::Malformed`] when connecting
    /// again finds tables of a newer schema version).
    pub fn newest_plan(&mut self) -> Result<Option<(u64, String)>> {
        let mut before = i64::MAX;
        loop {
            let lines: Vec<(i64, String)> =
                self.with("read the plan of", &PLANS, |client, statement, id| {
                    client
                        .query(statement, &[&id, &before])?
                        .iter()
                        .map(|row| Ok((row.try_get(0)?, row.try_get(1)?)))
                        .collect()
                })?;
            for (seq, line) in &lines {
                if is_plan(line) {
                    return Ok(Some((u64::try_from(*seq).unwrap_or(0), line.clone())));
                }
                before = *seq;
            }
            if lines.len() < PLANS_AT_ONCE {
                return Ok(None);
            }
        }
    }

    /// Makes sure the plan at row `plan` has a row for each of its `calls`
    /// calls (the first worker to see a plan creates them; the rest find
    /// them there).
    ///
    /// # Errors
    /// [`Error::Missing`] when the context no longer exists; [`Error::Database`] when the
    /// server refuses the query or cannot be reached (or [`Error::Malformed`] when connecting
    /// again finds tables of a newer schema version).
    pub fn set_up(&mut self, plan: u64, calls: usize) -> Result<()> {
        let plan = to_i64(plan);
        let count = i32::try_from(calls).unwrap_or(i32::MAX);
        let added = self.with("set up the plan of", &SET_UP, |client, statement, id| {
            client.execute(statement, &[&id, &plan, &count])
        })?;
        // Planned on statistics from before these rows, a claim reads
        // every row of the plan instead of its candidates' (55 ms a claim
        // at 100,000 calls, not 2): so the one who added many counts them
        // now. A role that may not is left to autovacuum.
        if added >= ANALYZE_AFTER {
            self.store.lent(|store| {
                if let Ok(client) = store.client() {
                    let _ = client.batch_execute(ANALYZE_CALLS);
                    store.trip(1);
                }
            });
        }
        Ok(())
    }

    /// Every call's row of the plan at row `plan`, in plan order.
    ///
    /// # Errors
    /// [`Error::Missing`] when the context no longer exists; [`Error::Database`] when the
    /// server refuses the query or cannot be reached (or [`Error::Malformed`] when connecting
    /// again finds tables of a newer schema version).
    pub fn rows(&mut self, plan: u64) -> Result<Vec<CallRow>> {
        let plan = to_i64(plan);
        self.with("read the calls of", &ROWS, |client, statement, id| {
            client
                .query(statement, &[&id, &plan])?
                .iter()
                .map(call_row)
                .collect()
        })
    }

    /// The rows of the plan at row `plan` changed since `since` (every
    /// row, from [`Horizon::START`]), in plan order, and the horizon to
    /// ask from next time: a row written by a transaction that had not
    /// committed when this read began is in the next read (D113:
    /// incremental rounds). A row may come again unchanged.
    ///
    /// # Errors
    /// As [`PgCalls::rows`].
    pub fn rows_changed(&mut self, plan: u64, since: Horizon) -> Result<(Vec<CallRow>, Horizon)> {
        let plan = to_i64(plan);
        self.with(
            "read the calls of",
            &ROWS_CHANGED,
            |client, statement, id| {
                let found = client.query(statement, &[&id, &plan, &since.0])?;
                let horizon = match found.first() {
                    Some(row) => Horizon(row.try_get(8)?),
                    None => since,
                };
                let mut rows = Vec::with_capacity(found.len());
                for row in &found {
                    let call: Option<i32> = row.try_get(0)?;
                    if call.is_some() {
                        rows.push(call_row(row)?);
                    }
                }
                Ok((rows, horizon))
            },
        )
    }

    /// Claims up to `request.max` of its candidates for its worker, each
    /// for its lease: those nobody holds (or whose holder's lease ran out).
    /// Calls another worker is claiming at this instant are skipped, not
    /// waited for.
    ///
    /// # Errors
    /// [`Error::Missing`] when the context no longer exists; [`Error::Database`] when the
    /// server refuses the query or cannot be reached (or [`Error::Malformed`] when connecting
    /// again finds tables of a newer schema version).
    pub fn claim(&mut self, request: &ClaimRequest<'_>) -> Result<Vec<Claim>> {
        let ClaimRequest {
            plan,
            candidates,
            worker,
            lease,
            max,
        } = *request;
        if candidates.is_empty() || max == 0 {
            return Ok(Vec::new());
        }
        let plan_row = to_i64(plan);
        let calls: Vec<i32> = candidates
            .iter()
            .map(|&c| i32::try_from(c).unwrap_or(i32::MAX))
            .collect();
        let max = i64::try_from(max).unwrap_or(i64::MAX);
        let seconds = lease.as_secs_f64();
        self.with("claim calls of", &CLAIM, |client, statement, id| {
            let rows = client.query(
                statement,
                &[&id, &plan_row, &calls, &worker, &seconds, &max],
            )?;
            let mut claims = rows
                .iter()
                .map(|row| {
                    let call: i32 = row.try_get(0)?;
                    let attempt: i32 = row.try_get(1)?;
                    Ok(Claim {
                        plan,
                        call: usize::try_from(call).unwrap_or(0),
                        attempt: u32::try_from(attempt).unwrap_or(0),
                        worker: worker.to_owned(),
                    })
                })
                .collect::<Result<Vec<_>, tokio_postgres::Error>>()?;
            claims.sort_by_key(|c| c.call);
            Ok(claims)
        })
    }

    /// Extends `claim`'s lease to `lease` from now: false when the claim is
    /// no longer this worker's (its lease ran out and another took it, or
    /// the call finished).
    ///
    /// # Errors
    /// [`Error::Missing`] when the context no longer exists; [`Error::Database`] when the
    /// server refuses the query or cannot be reached (or [`Error::Malformed`] when connecting
    /// again finds tables of a newer schema version).
    pub fn renew(&mut self, claim: &Claim, lease: Duration) -> Result<bool> {
        let (plan, call, attempt) = claim_key(claim);
        let seconds = lease.as_secs_f64();
        self.with("renew a claim on", &RENEW, |client, statement, id| {
            let n = client.execute(
                statement,
                &[&id, &plan, &call, &attempt, &seconds, &claim.worker],
            )?;
            Ok(n == 1)
        })
    }

    /// Gives `claim` back after a failed attempt with `error`: the call
    /// waits `retry_in` before it may be claimed again, or with `None` it
    /// has failed for good. False when the claim was no longer this
    /// worker's.
    ///
    /// # Errors
    /// [`Error::Missing`] when the context no longer exists; [`Error::Database`] when the
    /// server refuses the query or cannot be reached (or [`Error::Malformed`] when connecting
    /// again finds tables of a newer schema version).
    pub fn release(
        &mut self,
        claim: &Claim,
        error: &str,
        retry_in: Option<Duration>,
    ) -> Result<bool> {
        let (plan, call, attempt) = claim_key(claim);
        let seconds = retry_in.map(|d| d.as_secs_f64());
        self.with("give back a claim on", &RELEASE, |client, statement, id| {
            let row = client.query_one(
                statement,
                &[&id, &plan, &call, &attempt, &seconds, &claim.worker, &error],
            )?;
            Ok(row.try_get::<_, i64>(0)? == 1)
        })
    }

    /// Records that `worker`, with activities for `tools`, is alive for
    /// `alive_for` more (call again before then to stay alive).
    ///
    /// # Errors
    /// [`Error::Missing`] when the context no longer exists; [`Error::Database`] when the
    /// server refuses the query or cannot be reached (or [`Error::Malformed`] when connecting
    /// again finds tables of a newer schema version).
    pub fn register(&mut self, worker: &str, tools: &[String], alive_for: Duration) -> Result<()> {
        let seconds = alive_for.as_secs_f64();
        self.with(
            "register a worker of",
            &REGISTER,
            |client, statement, id| {
                client.execute(statement, &[&id, &worker, &tools, &seconds])?;
                Ok(())
            },
        )
    }

    /// Removes `worker`'s row (when it stops).
    ///
    /// # Errors
    /// [`Error::Missing`] when the context no longer exists; [`Error::Database`] when the
    /// server refuses the query or cannot be reached (or [`Error::Malformed`] when connecting
    /// again finds tables of a newer schema version).
    pub fn unregister(&mut self, worker: &str) -> Result<()> {
        self.with(
            "unregister a worker of",
            &UNREGISTER,
            |client, statement, id| {
                client.query_one(statement, &[&id, &worker])?;
                Ok(())
            },
        )
    }

    /// The tools some live worker has an activity for, sorted.
    ///
    /// # Errors
    /// [`Error::Missing`] when the context no longer exists; [`Error::Database`] when the
    /// server refuses the query or cannot be reached (or [`Error::Malformed`] when connecting
    /// again finds tables of a newer schema version).
    pub fn live_tools(&mut self) -> Result<Vec<String>> {
        self.with(
            "read the workers of",
            &LIVE_TOOLS,
            |client, statement, id| {
                let mut tools = client
                    .query(statement, &[&id])?
                    .iter()
                    .map(|row| row.try_get(0))
                    .collect::<Result<Vec<String>, _>>()?;
                tools.sort();
                Ok(tools)
            },
        )
    }
}

/// True when `line` is a worker plan: a message whose own `type` is
/// `plan`, without the `plan` key of a loop plan (D69: loop and worker plans).
fn is_plan(line: &str) -> bool {
    match agent_core::json::from_str(line) {
        Ok(agent_core::json::Value::Object(fields)) => {
            agent_data::plan_sort(&fields) == Some(agent_data::PlanSort::Worker)
        }
        _ => false,
    }
}

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn claim_key(claim: &Claim) -> (i64, i32, i32) {
    (
        to_i64(claim.plan),
        i32::try_from(claim.call).unwrap_or(i32::MAX),
        i32::try_from(claim.attempt).unwrap_or(i32::MAX),
    )
}
