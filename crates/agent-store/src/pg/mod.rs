//! Contexts in PostgreSQL, shared by processes on many machines (R34b).
//!
//! A context is a row of `agentctx_contexts` holding its length; its
//! messages are rows of `agentctx_messages` keyed by `(context, seq)`. An
//! append is one call of `agentctx_append` — one transaction — which locks
//! the context's row and appends only if the context still has the length
//! the batch was validated against (compare-and-append). Loading is one
//! streamed query; catching up is one query for the rows after a length.
//!
//! This file holds [`PgStore`] and its [`Store`] methods, which hand each
//! step to the file that does it. In the order a call goes through them:
//!
//! - `address.rs`: the URL — server, options, context name, timeouts;
//!   `credentials.rs`: what it leaves out, from the environment and the
//!   password file, as libpq finds them;
//! - `pooling.rs`: telling a direct connection from one through a
//!   transaction pooler (D109: behind a pooler);
//! - `client.rs`: the blocking client, whose every call ends: a deadline
//!   on the server's silence;
//! - `session.rs`: the connection — connecting within the timeout,
//!   migrating (`schema.rs`: the tables and SQL functions, by version),
//!   preparing the statements every append runs, reconnecting, ending a
//!   lost connection's server session, counting round trips, and what a
//!   PostgreSQL error means;
//! - `sql.rs`: the text of every statement sent, with why it is written so;
//! - `load.rs`: reading — the context's id, the whole log, catching up
//!   with the rows after a length (`rows.rs` streams them);
//! - `snapshot.rs`: resuming from the newest snapshot, writing one — in
//!   content-defined chunks, only those that changed (schema version 9);
//! - `append.rs`: compare-and-append, and the commit — optimistic first,
//!   then under the context's row lock, retried on conflict
//!   (`crate::retry`); an append with a key, which `agentctx_append` checks
//!   and records in `agentctx_keys` in the append's transaction (schema
//!   version 7, [`Store::commit_once`]); a call's result through
//!   `agentctx_commit_call`; and settling an append whose connection broke;
//! - `calls.rs`: the calls of a plan ([`PgCalls`]): claims, leases,
//!   releases, the workers alive;
//! - `listen.rs`: [`Listener`], which sleeps until a call changes.
//!
//! A worker's call: [`PgCalls::claim`] (`calls.rs`) claims it with
//! `sql::CLAIM` on the connection `session.rs` keeps; the worker runs it
//! and commits its result with [`PgStore::commit_call`] (`append.rs`),
//! which sends `sql::COMMIT_CALL`, running `agentctx_commit_call`
//! (`schema.rs`, version 5): the messages and the call marked done, in one
//! transaction, only while the worker's claim (its token, the attempt) is
//! the call's current one and the call is running.

mod address;
mod append;
mod backfill;
mod calls;
mod changed;
mod client;
mod credentials;
mod listen;
mod load;
mod pool;
mod pooling;
mod rows;
mod schema;
mod session;
mod snapshot;
mod sql;
mod verify;

use crate::SnapshotWhen;

use crate::snapshot::Since;
use crate::{AppendKey, Error, KeyedOutcome, Result, Store};
use address::Address;
use agent_data::{Context, Digest, Loaded, Message, Prepared};
use client::Client;
use std::ops::Range;

pub use address::MAX_NAME_BYTES;
pub use calls::{CallRow, CallState, Claim, ClaimRequest, Horizon, PgCalls};
pub use listen::Listener;
pub use load::MAX_NAMES;
pub use pool::PgPool;
pub use schema::SCHEMA_VERSION;

/// A context stored in PostgreSQL, addressed by a URL whose `context`
/// parameter names it (spec §10).
///
/// The store holds one connection, opened by [`PgStore::open`] and opened
/// again when the server dropped it; a store of a [`PgPool`] takes one of
/// the pool's for each call instead. It takes no lock: every append is a
/// compare-and-append, and [`Store::commit`] retries when another writer
/// appended first. An append whose outcome cannot be known — the connection
/// died while it was committing, and the rows after the expected length
/// are exactly this batch — is [`Error::InDoubt`]; when the context shows
/// it did not land, the append is retried as after a conflict.
///
/// ```no_run
/// use agent_data::Message;
/// use agent_store::{PgStore, Store};
/// use agent_core::json;
///
/// let mut store = PgStore::open("postgres://root@127.0.0.1:5432/test?context=docs-example")?;
/// let mut context = agent_data::Context::new();
/// store.catch_up(&mut context)?; // whatever is there already
/// let push = Message::from_value(json!({"type": "state", "data": {"log": 1},
///     "_outputPath": "†state.log", "_outputMethod": "push"}))?;
/// store.commit(&mut context, &push)?; // the first append creates the context
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct PgStore {
    address: Address,
    client: Option<Client>,
    /// The pool whose connections it takes, one for each call (D114: a
    /// pool per process), and the right to the one it holds.
    pool: Option<PgPool>,
    permit: Option<pool::Permit>,
    /// The server process of the connection and when it started: after a
    /// connection is lost mid-append, that session must be over before
    /// anyone can tell whether the append landed. `None` through a
    /// pooler, where no server session is this store's own.
    backend: Option<(i32, String)>,
    /// The context's row id, once it is known to exist.
    id: Option<i64>,
    /// Rows (message lines) read or appended through this handle.
    rows: usize,
    /// Messages those rows hold (a line may normalise to several, R1).
    messages: usize,
    /// The rows read or appended since the newest snapshot.
    since: Since,
    /// The hashes of the snapshot's chunks as this handle last read or
    /// wrote them (schema version 9): a rewrite sends only the others.
    chunks: Vec<Digest>,
    /// The chain digest after the rows read or appended through this
    /// handle (R34e): the next rows' digests follow from it.
    head: Digest,
    /// How many rows from the context's start carry their digest, as last
    /// read (rows older than schema version 6 are backfilled).
    chained: u64,
    /// How many rows the context counted when it was found: a read that
    /// finds fewer met rows deleted at its end.
    counted: u64,
    /// Requests sent to the server and answered (round trips), for
    /// measuring ([`PgStore::round_trips`]).
    trips: u64,
    /// The connection holds a transaction this store began: if it is
    /// lost, nothing of the transaction may go to another connection
    /// (a statement there would run outside it, a `COMMIT` there would
    /// commit nothing and look done).
    in_transaction: bool,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("name", &self.address.shown)
            .field("connected", &self.client.is_some())
            .field("rows", &self.rows)
            .finish()
    }
}

impl PgStore {
    /// Parses `url`, connects, and creates or upgrades the tables if needed
    /// (one query when they are current). The context need not exist.
    ///
    /// # Errors
    /// [`Error::Address`] when `url` cannot be used (not a URL, no `context` parameter, a bad
    /// context name); [`Error::Database`] when connecting, or creating or upgrading the tables,
    /// fails; [`Error::Malformed`] when the tables are of a newer schema version than this
    /// build knows.
    pub fn open(url: &str) -> Result<PgStore> {
        let mut store = PgStore::at(Address::parse(url)?, None);
        store.client()?;
        Ok(store)
    }

    /// A store at `address`, not yet holding a connection: its own, or
    /// one of `pool`'s for each call.
    fn at(address: Address, pool: Option<PgPool>) -> PgStore {
        PgStore {
            address,
            client: None,
            pool,
            permit: None,
            backend: None,
            id: None,
            rows: 0,
            messages: 0,
            since: Since::default(),
            chunks: Vec::new(),
            head: Digest::GENESIS,
            chained: 0,
            counted: 0,
            trips: 0,
            in_transaction: false,
        }
    }

    /// The context's name within the database.
    pub fn context_name(&self) -> &str {
        &self.address.context
    }
}

impl Store for PgStore {
    fn name(&self) -> &str {
        &self.address.shown
    }

    fn load(&mut self) -> Result<Loaded> {
        self.lent(PgStore::load_all)
    }

    /// Every row checked against the digest stored before it, so each
    /// finding names its row (`verify.rs`), and the snapshot row.
    fn verify(&mut self) -> Result<crate::Verified> {
        self.lent(PgStore::verify_rows)
    }

    fn load_tail(&mut self) -> Result<Loaded> {
        self.lent(PgStore::load_from_snapshot)
    }

    fn snapshot(&mut self, context: &Context, when: SnapshotWhen) -> Result<bool> {
        let since = self.since;
        self.lent(|store| since.write_if_due(when, context, || store.write_snapshot(context)))
    }

    fn catch_up(&mut self, context: &mut Context) -> Result<()> {
        self.lent(|store| store.catch_up_rows(context))
    }

    fn append_at(&mut self, prepared: &Prepared<'_>) -> Result<()> {
        self.lent(|store| store.append_guarded(prepared, None, None).map(|_| ()))
    }

    /// Appends at the length this handle knows first — one round trip when
    /// nobody else wrote — and otherwise under the context's row lock
    /// (`append.rs`).
    fn commit(&mut self, context: &mut Context, messages: &[Message]) -> Result<Range<usize>> {
        let range = self.lent(|store| store.commit_messages(context, messages, None, None))?;
        self.snapshot(context, SnapshotWhen::Due)?;
        Ok(range.range())
    }

    /// As [`PgStore::commit`](Store::commit), with the key kept in
    /// `agentctx_keys` and checked by `agentctx_append` under the
    /// context's row lock, in the append's transaction (schema version 7).
    fn commit_once(
        &mut self,
        context: &mut Context,
        messages: &[Message],
        key: &AppendKey,
    ) -> Result<KeyedOutcome> {
        let once = self.lent(|store| store.commit_messages(context, messages, None, Some(key)))?;
        self.snapshot(context, SnapshotWhen::Due)?;
        Ok(once)
    }

    /// Does nothing: appends are compare-and-append, so writers need no lock.
    fn lock(&mut self) -> Result<()> {
        Ok(())
    }

    fn unlock(&mut self) {}
}

impl PgStore {
    /// The newest snapshot and the rows after it, or the whole log.
    fn load_from_snapshot(&mut self) -> Result<Loaded> {
        self.forget();
        let Some(id) = self.id()? else {
            return Err(Error::Missing {
                name: self.address.shown.clone(),
            });
        };
        let loaded = match self.resume(id)? {
            Some(loaded) => loaded,
            None => self.load()?,
        };
        self.snapshot(&loaded.context, SnapshotWhen::Due)?;
        Ok(loaded)
    }
}
