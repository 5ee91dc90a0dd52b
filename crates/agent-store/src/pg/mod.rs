//! Contexts in PostgreSQL, shared by processes on many machines (R34b).
//!
//! A context is a row of `agentctx_contexts` holding its length; its
//! messages are rows of `agentctx_messages` keyed by `(context, seq)`. An
//! append is one call of `agentctx_append` — one transaction — which locks
//! the context's row and appends only if the context still has the length
//! the batch was validated against (compare-and-append). Loading is one
//! streamed query; catching up is one query for the rows after a length.

mod address;
mod calls;
mod commit;
mod rows;
mod schema;

use crate::snapshot::{self, Since};
use crate::{Error, Result, Store};
use address::Address;
use agent_data::{Context, Loaded, Message, Position, Prepared};
use postgres::error::SqlState;
use postgres::{Client, NoTls};
use rows::Lines;
use std::ops::Range;

pub use address::MAX_NAME_BYTES;
pub use calls::{CallRow, CallState, Claim, Listener, PgCalls};
pub use schema::SCHEMA_VERSION;

/// The context's id, when it exists.
const FIND: &str = "SELECT id FROM agentctx_contexts WHERE name = $1";

/// The compare-and-append (schema version 2): context name, the id read
/// (or NULL), the expected length, the lines.
const APPEND: &str = "SELECT o_id, o_length FROM agentctx_append($1, $2, $3, $4)";

/// The compare-and-append of a call's result (schema version 4): as
/// [`APPEND`], then the plan's row, the call's index and the worker;
/// appends only if the call has no result yet.
const COMMIT_CALL: &str =
    "SELECT o_id, o_length, o_state FROM agentctx_commit_call($1, $2, $3, $4, $5, $6, $7)";

/// Locks a context's row for the rest of the transaction.
const LOCK: &str = "SELECT 1 FROM agentctx_contexts WHERE id = $1 FOR UPDATE";

/// This connection's server process and its start time (together unique).
const BACKEND: &str =
    "SELECT pid, backend_start::text FROM pg_stat_activity WHERE pid = pg_backend_pid()";

/// A context's lines from a position on, in order.
const TAIL: &str =
    "SELECT line::text FROM agentctx_messages WHERE context = $1 AND seq >= $2 ORDER BY seq";

/// A context's snapshot (schema version 3).
const SNAPSHOT: &str = "SELECT rows, body FROM agentctx_snapshots WHERE context = $1";

/// Stores a snapshot unless one at least as long is there: snapshots are
/// only a cache, so writers need no lock beyond the row's own.
const SAVE_SNAPSHOT: &str = "INSERT INTO agentctx_snapshots (context, rows, body) \
     VALUES ($1, $2, $3) ON CONFLICT (context) DO UPDATE \
     SET rows = EXCLUDED.rows, body = EXCLUDED.body, written_at = now() \
     WHERE agentctx_snapshots.rows < EXCLUDED.rows";

/// One line of a context.
const LINE: &str = "SELECT line::text FROM agentctx_messages WHERE context = $1 AND seq = $2";

/// The statements a store runs, prepared when it connects: each then costs
/// one round trip instead of two.
#[derive(Clone)]
struct Statements {
    find: postgres::Statement,
    tail: postgres::Statement,
    append: postgres::Statement,
    commit_call: postgres::Statement,
    lock: postgres::Statement,
}

impl Statements {
    fn prepare(client: &mut Client) -> Result<Statements, postgres::Error> {
        Ok(Statements {
            find: client.prepare(FIND)?,
            tail: client.prepare(TAIL)?,
            append: client.prepare(APPEND)?,
            commit_call: client.prepare(COMMIT_CALL)?,
            lock: client.prepare(LOCK)?,
        })
    }
}

/// How long to wait for a lost connection's server process to end.
const SESSION_END: std::time::Duration = std::time::Duration::from_secs(5);

/// A context stored in PostgreSQL, addressed by a URL whose `context`
/// parameter names it (spec §10).
///
/// The store holds one connection, opened by [`PgStore::open`] and opened
/// again when the server dropped it. It takes no lock: every append is a
/// compare-and-append, and [`Store::commit`] retries when another writer
/// appended first. An append whose outcome cannot be known — the connection
/// died while it was committing, and the rows after the expected length
/// are exactly this batch — is [`Error::InDoubt`]; when the context shows
/// it did not land, the append is retried as after a conflict.
///
/// ```no_run
/// use agent_data::Message;
/// use agent_store::{PgStore, Store};
/// use serde_json::json;
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
    /// The server process of the connection and when it started: after a
    /// connection is lost mid-append, that session must be over before
    /// anyone can tell whether the append landed.
    backend: Option<(i32, String)>,
    /// The statements this store runs, prepared once per connection.
    statements: Option<Statements>,
    /// The context's row id, once it is known to exist.
    id: Option<i64>,
    /// Rows (message lines) read or appended through this handle.
    rows: usize,
    /// Messages those rows hold (a line may normalise to several, R1).
    messages: usize,
    /// The rows read or appended since the newest snapshot.
    since: Since,
    /// Requests sent to the server and answered (round trips), for
    /// measuring ([`PgStore::round_trips`]).
    trips: u64,
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
    pub fn open(url: &str) -> Result<PgStore> {
        let mut store = PgStore {
            address: Address::parse(url)?,
            client: None,
            backend: None,
            statements: None,
            id: None,
            rows: 0,
            messages: 0,
            since: Since::default(),
            trips: 0,
        };
        store.client()?;
        Ok(store)
    }

    /// How many requests this store has sent the server and had answered
    /// (round trips: a prepared statement's query is one, an unprepared
    /// one two, connecting and migrating a few), for measuring.
    pub fn round_trips(&self) -> u64 {
        self.trips
    }

    /// Counts `n` round trips.
    pub(crate) fn trip(&mut self, n: u64) {
        self.trips += n;
    }

    /// The server session of the connection (its process and start time):
    /// another one after a reconnection.
    pub(crate) fn backend(&self) -> Option<&(i32, String)> {
        self.backend.as_ref()
    }

    /// The context's name within the database.
    pub fn context_name(&self) -> &str {
        &self.address.context
    }

    /// The open connection, connecting (and migrating) first if there is
    /// none or the server closed it.
    pub fn client(&mut self) -> Result<&mut Client> {
        Ok(self.session()?.0)
    }

    /// The connection and its prepared statements, connecting first if
    /// needed.
    fn session(&mut self) -> Result<(&mut Client, Statements)> {
        if self.client.as_ref().is_some_and(Client::is_closed) {
            self.client = None;
        }
        let (client, statements) = match (self.client.take(), self.statements.take()) {
            (Some(client), Some(statements)) => (client, statements),
            _ => {
                let (client, statements, backend) = self.connect()?;
                self.backend = Some(backend);
                // The version check, the session query, five statements.
                self.trips += 7;
                (client, statements)
            }
        };
        self.statements = Some(statements.clone());
        Ok((self.client.insert(client), statements))
    }

    fn connect(&self) -> Result<(Client, Statements, (i32, String))> {
        let mut client =
            connect_within(&self.address.config).map_err(|reason| Error::Database {
                action: "connect to",
                name: self.address.shown.clone(),
                reason,
            })?;
        schema::migrate(&mut client).map_err(|e| match e {
            // The connection failing while the version is checked is still
            // connecting; a refusal is about the tables.
            schema::SchemaError::Database(e) if outcome_unknown(&e) => {
                self.database("connect to", &e)
            }
            schema::SchemaError::Database(e) => self.database("set up the tables of", &e),
            schema::SchemaError::Newer(version) => Error::Malformed {
                name: self.address.shown.clone(),
                reason: format!(
                    "the database has agentctx schema version {version}; this agentctx knows \
                     versions up to {SCHEMA_VERSION}: upgrade agentctx"
                ),
            },
        })?;
        let backend = client
            .query_one(BACKEND, &[])
            .and_then(|row| Ok((row.try_get(0)?, row.try_get(1)?)))
            .map_err(|e| self.database("connect to", &e))?;
        let statements =
            Statements::prepare(&mut client).map_err(|e| match outcome_unknown(&e) {
                true => self.database("connect to", &e),
                false => self.database("set up the tables of", &e),
            })?;
        Ok((client, statements, backend))
    }

    /// Ends the session `(pid, started)` of a lost connection if it is still
    /// running — a connection can die on this side while its server process
    /// lives on and commits later — and waits until it is gone.
    fn end_session(&mut self, (pid, started): (i32, String)) -> Result<(), String> {
        let client = self.client().map_err(|e| e.to_string())?;
        let _ = client.query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE pid = $1 AND backend_start::text = $2",
            &[&pid, &started],
        );
        let deadline = std::time::Instant::now() + SESSION_END;
        loop {
            let alive = client
                .query_opt(
                    "SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND backend_start::text = $2",
                    &[&pid, &started],
                )
                .map_err(|e| describe(&e))?;
            if alive.is_none() {
                return Ok(());
            }
            if std::time::Instant::now() > deadline {
                return Err(format!("its server process {pid} is still running"));
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    fn database(&self, action: &'static str, error: &postgres::Error) -> Error {
        Error::Database {
            action,
            name: self.address.shown.clone(),
            reason: describe(error),
        }
    }

    /// The context's id: `None` while it does not exist.
    fn id(&mut self) -> Result<Option<i64>> {
        if self.id.is_none() {
            let name = self.address.context.clone();
            let (client, statements) = self.session()?;
            let found = client.query_opt(&statements.find, &[&name]);
            self.trips += 1;
            let row = found.map_err(|e| self.read_error(&e))?;
            self.id = match row {
                Some(row) => Some(row.try_get(0).map_err(|e| self.read_error(&e))?),
                None => None,
            };
        }
        Ok(self.id)
    }

    /// Reads the lines from `from` on into `into`: `None` when the context
    /// does not exist, else how many.
    fn read(&mut self, from: usize, into: &mut Vec<u8>) -> Result<Option<usize>> {
        let Some(id) = self.id()? else {
            return Ok(None);
        };
        let from = i64::try_from(from).unwrap_or(i64::MAX);
        let (client, statements) = self.session()?;
        let result = Lines::read_all(client, &statements.tail, id, from, into);
        self.trips += 1;
        result.map(Some).map_err(|e| self.read_error(&e))
    }

    /// A failed read. A connection that broke is replaced by the next
    /// [`PgStore::session`], which drops a closed client.
    fn read_error(&self, error: &postgres::Error) -> Error {
        self.database("read", error)
    }

    /// Opens the context `id` from its snapshot and the rows after it;
    /// `None` when there is none or it does not match the rows (then the
    /// whole context is read).
    fn resume(&mut self, id: i64) -> Result<Option<Loaded>> {
        let (client, _) = self.session()?;
        let found = client
            .query_opt(SNAPSHOT, &[&id])
            .inspect(|_| self.trips += 2)
            .and_then(|row| {
                row.map(|row| Ok((row.try_get::<_, i64>(0)?, row.try_get::<_, Vec<u8>>(1)?)))
                    .transpose()
            })
            .map_err(|e| self.read_error(&e))?;
        let Some((rows, sealed)) = found else {
            return Ok(None);
        };
        let Some((mut context, anchor)) =
            snapshot::unseal(&sealed).and_then(|body| Context::from_snapshot(body).ok())
        else {
            return Ok(None);
        };
        let last = anchor
            .get("last")
            .and_then(serde_json::Value::as_str)
            .and_then(|hex| u64::from_str_radix(hex, 16).ok());
        let (Some(last), Ok(count)) = (last, usize::try_from(rows)) else {
            return Ok(None);
        };
        if count == 0 || anchor.get("rows").and_then(serde_json::Value::as_i64) != Some(rows) {
            return Ok(None);
        }
        // The last row the snapshot summarises, then the tail.
        let mut tail = Vec::new();
        self.read(count - 1, &mut tail)?;
        let Some(newline) = tail.iter().position(|&b| b == b'\n') else {
            return Ok(None);
        };
        if snapshot::checksum(&tail[..newline]) != last {
            return Ok(None);
        }
        let after = &tail[newline + 1..];
        let extended = context
            .extend_jsonl(
                after,
                Position {
                    line: count,
                    offset: 0,
                },
            )
            .map_err(|source| Error::Load {
                name: self.address.shown.clone(),
                source: Box::new(source),
            })?;
        let summarised = context.len();
        self.rows = count + extended.items;
        self.messages = context.len();
        self.since = Since::taken(sealed.len());
        self.since
            .add(self.messages - summarised, after.len() as u64);
        Ok(Some(Loaded {
            context,
            warnings: extended.warnings,
            end: Position {
                line: self.rows,
                offset: 0,
            },
            items: self.rows,
            unterminated: false,
        }))
    }

    /// Stores a snapshot of `context`, which holds every row read or
    /// appended through this handle.
    fn write_snapshot(&mut self, context: &Context) -> Result<()> {
        self.check_position(context.len())?;
        let (Some(id), Some(last)) = (self.id, self.rows.checked_sub(1)) else {
            return Ok(());
        };
        let rows = i64::try_from(self.rows).unwrap_or(i64::MAX);
        let last = i64::try_from(last).unwrap_or(i64::MAX);
        let (client, _) = self.session()?;
        let line: String = client
            .query_one(LINE, &[&id, &last])
            .inspect(|_| self.trips += 2)
            .and_then(|row| row.try_get(0))
            .map_err(|e| self.read_error(&e))?;
        let anchor = serde_json::json!({
            "rows": rows,
            "last": format!("{:016x}", snapshot::checksum(line.as_bytes())),
        });
        let body = context.snapshot(&anchor).map_err(|source| Error::Load {
            name: self.address.shown.clone(),
            source: Box::new(source),
        })?;
        let sealed = snapshot::seal(body);
        let (client, _) = self.session()?;
        client
            .execute(SAVE_SNAPSHOT, &[&id, &rows, &sealed])
            .inspect(|_| self.trips += 2)
            .map_err(|e| self.database("write a snapshot of", &e))?;
        self.since = Since::taken(sealed.len());
        Ok(())
    }

    /// [`Store::append_at`], or with `claim` the append of that call's
    /// result, refused with [`Error::AlreadyWritten`] when the call has
    /// one (schema version 4).
    fn append_guarded(&mut self, prepared: &Prepared<'_>, claim: Option<&Claim>) -> Result<()> {
        self.check_position(prepared.base())?;
        let lines: Vec<&str> = prepared.lines().collect();
        let expected = self.rows;
        let name = self.address.context.clone();
        let at = i64::try_from(expected).unwrap_or(i64::MAX);
        let id = self.id;
        let (client, statements) = self.session()?;
        let found = match claim {
            None => client
                .query_one(&statements.append, &[&name, &id, &at, &lines])
                .and_then(|row| {
                    Ok((
                        row.try_get::<_, Option<i64>>(0)?,
                        row.try_get::<_, i64>(1)?,
                        None,
                    ))
                }),
            Some(claim) => {
                let plan = i64::try_from(claim.plan).unwrap_or(i64::MAX);
                let call = i32::try_from(claim.call).unwrap_or(i32::MAX);
                client
                    .query_one(
                        &statements.commit_call,
                        &[&name, &id, &at, &lines, &plan, &call, &claim.worker],
                    )
                    .and_then(|row| {
                        Ok((
                            row.try_get::<_, Option<i64>>(0)?,
                            row.try_get::<_, i64>(1)?,
                            Some(row.try_get::<_, String>(2)?),
                        ))
                    })
            }
        };
        self.trips += 1;
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
            // The call's row decides before the length does (schema v4).
            Ok((_, _, Some(state))) if state == "done" => {
                let (plan, call) = claim.map_or((0, 0), |c| (c.plan, c.call));
                Err(Error::AlreadyWritten {
                    name: self.address.shown.clone(),
                    plan,
                    call,
                })
            }
            Ok((_, _, Some(state))) if state == "missing" => {
                Err(replaced("deleted and created again"))
            }
            Ok((_, _, Some(state))) if state == "unknown" => {
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
                self.messages += prepared.len();
                let bytes = lines.iter().map(|l| l.len() as u64 + 1).sum();
                self.since.add(prepared.len(), bytes);
                Ok(())
            }
            // The log only grows: shorter than it was read is another log.
            Ok((_, found, _)) if found < at => Err(replaced("deleted and created again")),
            Ok((_, found, _)) => Err(Error::Conflict {
                name: self.address.shown.clone(),
                expected,
                current: usize::try_from(found).unwrap_or(usize::MAX),
            }),
            Err(e) if outcome_unknown(&e) => Err(self.settle(expected, &lines, &e)),
            Err(e) => Err(self.database("append to", &e)),
        }
    }

    fn check_position(&self, messages: usize) -> Result<()> {
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
    fn settle(&mut self, expected: usize, lines: &[&str], cause: &postgres::Error) -> Error {
        let in_doubt = |store: &PgStore, why: String| Error::InDoubt {
            name: store.address.shown.clone(),
            reason: format!("{}; {why}", describe(cause)),
        };
        self.client = None;
        self.statements = None;
        if let Some(Err(why)) = self.backend.take().map(|b| self.end_session(b)) {
            return in_doubt(self, format!("then: {why}"));
        }
        let mut landed = Vec::new();
        let found = match self.read(expected, &mut landed) {
            Ok(found) => found,
            Err(e) => return in_doubt(self, format!("then: {e}")),
        };
        let ours: String = lines.iter().map(|l| format!("{l}\n")).collect();
        match found {
            Some(0) | None => Error::Conflict {
                name: self.address.shown.clone(),
                expected,
                current: expected,
            },
            Some(n) if landed.starts_with(ours.as_bytes()) => in_doubt(
                self,
                format!(
                    "the context now has {} more rows, beginning with exactly these",
                    n
                ),
            ),
            Some(n) => Error::Conflict {
                name: self.address.shown.clone(),
                expected,
                current: expected + n,
            },
        }
    }
}

impl Store for PgStore {
    fn name(&self) -> &str {
        &self.address.shown
    }

    fn load(&mut self) -> Result<Loaded> {
        let shown = self.address.shown.clone();
        (self.id, self.rows, self.messages) = (None, 0, 0);
        let Some(id) = self.id()? else {
            return Err(Error::Missing { name: shown });
        };
        let (client, statements) = self.session()?;
        let (loaded, read) = match Lines::query(client, &statements.tail, id, 0) {
            Ok(mut lines) => {
                let loaded = Context::load_jsonl_reader(&mut lines, &shown);
                (Some(loaded), lines.finish())
            }
            Err(e) => (None, Err(e)),
        };
        read.map_err(|e| self.read_error(&e))?;
        let Some(loaded) = loaded else {
            return Err(Error::Missing { name: shown });
        };
        let loaded = loaded.map_err(|source| Error::Load {
            name: shown,
            source: Box::new(source),
        })?;
        self.rows = loaded.items;
        self.messages = loaded.context.len();
        // No snapshot was read: the whole context is the tail.
        self.since = Since::default();
        self.since.add(self.messages, loaded.end.offset as u64);
        Ok(loaded)
    }

    fn load_tail(&mut self) -> Result<Loaded> {
        (self.id, self.rows, self.messages) = (None, 0, 0);
        let Some(id) = self.id()? else {
            return Err(Error::Missing {
                name: self.address.shown.clone(),
            });
        };
        let loaded = match self.resume(id)? {
            Some(loaded) => loaded,
            None => self.load()?,
        };
        self.snapshot(&loaded.context, false)?;
        Ok(loaded)
    }

    fn snapshot(&mut self, context: &Context, now: bool) -> Result<bool> {
        let since = self.since;
        since.write_if_due(now, || self.write_snapshot(context))
    }

    fn catch_up(&mut self, context: &mut Context) -> Result<()> {
        self.check_position(context.len())?;
        let mut tail = Vec::new();
        match self.read(self.rows, &mut tail)? {
            Some(_) => {}
            // Not created yet: nothing to catch up with.
            None if self.rows == 0 => return Ok(()),
            None => {
                return Err(Error::Replaced {
                    name: self.address.shown.clone(),
                    what: "deleted",
                });
            }
        }
        let at = Position {
            line: self.rows,
            offset: 0,
        };
        let extended = context
            .extend_jsonl(&tail, at)
            .map_err(|source| Error::Load {
                name: self.address.shown.clone(),
                source: Box::new(source),
            })?;
        self.rows += extended.items;
        self.since
            .add(context.len() - self.messages, tail.len() as u64);
        self.messages = context.len();
        Ok(())
    }

    fn append_at(&mut self, prepared: &Prepared<'_>) -> Result<()> {
        self.append_guarded(prepared, None)
    }

    /// Appends at the length this handle knows first — one round trip when
    /// nobody else wrote — and otherwise under the context's row lock
    /// (`commit.rs`).
    fn commit(&mut self, context: &mut Context, messages: &[Message]) -> Result<Range<usize>> {
        let range = self.commit_messages(context, messages, None)?;
        self.snapshot(context, false)?;
        Ok(range)
    }

    /// Does nothing: appends are compare-and-append, so writers need no lock.
    fn lock(&mut self) -> Result<()> {
        Ok(())
    }

    fn unlock(&mut self) {}
}

/// Connects, giving up after the connect timeout even when the server
/// accepts the connection and then says nothing (the client's own timeout
/// covers only the TCP handshake). A connection that gives up is left to a
/// thread that ends when the server answers or drops it.
fn connect_within(config: &postgres::Config) -> Result<Client, String> {
    let limit = config
        .get_connect_timeout()
        .copied()
        .unwrap_or(std::time::Duration::from_secs(10));
    let (sender, receiver) = std::sync::mpsc::sync_channel(1);
    let config = config.clone();
    std::thread::Builder::new()
        .name("agentctx-pg-connect".into())
        .spawn(move || {
            let _ = sender.send(config.connect(NoTls));
        })
        .map_err(|e| format!("cannot start connecting: {e}"))?;
    match receiver.recv_timeout(limit) {
        Ok(result) => result.map_err(|e| describe(&e)),
        Err(_) => Err(format!(
            "timeout waiting for server ({} s; set connect_timeout=SECONDS in the URL)",
            limit.as_secs_f64()
        )),
    }
}

/// True when a failed append may have committed: the connection broke, or
/// the server was shutting down or terminated the session (which can
/// happen after the commit, before the reply).
fn outcome_unknown(error: &postgres::Error) -> bool {
    match error.as_db_error() {
        Some(db) => {
            let code = db.code().code();
            code.starts_with("57") || code.starts_with("08")
        }
        None => true,
    }
}

/// A PostgreSQL error as one line: the server's message and SQLSTATE, or
/// the client's error and its cause. Shape errors get a hint.
pub(crate) fn describe(error: &postgres::Error) -> String {
    if let Some(db) = error.as_db_error() {
        let mut text = format!("{} (SQLSTATE {})", db.message(), db.code().code());
        if let Some(detail) = db.detail() {
            text.push_str(&format!(": {detail}"));
        }
        let shape = [
            SqlState::UNDEFINED_TABLE,
            SqlState::UNDEFINED_COLUMN,
            SqlState::UNDEFINED_FUNCTION,
            SqlState::DATATYPE_MISMATCH,
            SqlState::DUPLICATE_TABLE,
            SqlState::DUPLICATE_FUNCTION,
        ];
        if shape.contains(db.code()) {
            text.push_str(&format!(
                "; the agentctx tables do not have the shape of schema version {SCHEMA_VERSION} \
                 (see docs/store.md)"
            ));
        }
        return text;
    }
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}
