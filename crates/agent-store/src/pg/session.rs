//! The connection of a [`PgStore`]: connecting within the timeout,
//! migrating the tables on connect, preparing the statements every append
//! runs, reconnecting after the server dropped the connection, ending a
//! lost connection's server session, counting round trips, and saying what
//! a PostgreSQL error means.

use super::client::Client;
use super::sql::{ALIVE, APPEND, APPEND_PLAIN, BACKEND, COMMIT_CALL, FIND, LOCK, TAIL, TERMINATE};
use super::{PgStore, SCHEMA_VERSION, schema};
use crate::{Error, Result};
use tokio_postgres::error::SqlState;

/// The statements a store runs, prepared when it connects: each then costs
/// one round trip instead of two.
#[derive(Clone)]
pub(super) struct Statements {
    pub(super) find: tokio_postgres::Statement,
    pub(super) tail: tokio_postgres::Statement,
    pub(super) append: tokio_postgres::Statement,
    pub(super) append_plain: tokio_postgres::Statement,
    pub(super) commit_call: tokio_postgres::Statement,
    pub(super) lock: tokio_postgres::Statement,
}

impl Statements {
    pub(super) fn prepare(client: &mut Client) -> Result<Statements, tokio_postgres::Error> {
        Ok(Statements {
            find: client.prepare(FIND)?,
            tail: client.prepare(TAIL)?,
            append: client.prepare(APPEND)?,
            append_plain: client.prepare(APPEND_PLAIN)?,
            commit_call: client.prepare(COMMIT_CALL)?,
            lock: client.prepare(LOCK)?,
        })
    }
}

/// How long to wait for a lost connection's server process to end.
const SESSION_END: std::time::Duration = std::time::Duration::from_secs(5);

impl PgStore {
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

    /// The open connection, connecting (and migrating) first if there is
    /// none or the server closed it.
    pub(crate) fn client(&mut self) -> Result<&mut Client> {
        Ok(self.session()?.0)
    }

    /// The connection and its prepared statements, connecting first if
    /// needed.
    pub(super) fn session(&mut self) -> Result<(&mut Client, Statements)> {
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
            Client::connect(&self.address.config, self.address.idle).map_err(|reason| {
                Error::Database {
                    action: "connect to",
                    name: self.address.shown.clone(),
                    reason,
                }
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
    pub(super) fn end_session(&mut self, (pid, started): (i32, String)) -> Result<(), String> {
        let client = self.client().map_err(|e| e.to_string())?;
        let _ = client.query(TERMINATE, &[&pid, &started]);
        let deadline = std::time::Instant::now() + SESSION_END;
        loop {
            let alive = client
                .query_opt(ALIVE, &[&pid, &started])
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

    pub(super) fn database(&self, action: &'static str, error: &tokio_postgres::Error) -> Error {
        Error::Database {
            action,
            name: self.address.shown.clone(),
            reason: describe(error),
        }
    }

    /// A failed read. A connection that broke is replaced by the next
    /// [`PgStore::session`], which drops a closed client.
    pub(super) fn read_error(&self, error: &tokio_postgres::Error) -> Error {
        self.database("read", error)
    }
}

/// True when a failed append may have committed: the connection broke, or
/// the server was shutting down or terminated the session (which can
/// happen after the commit, before the reply).
pub(super) fn outcome_unknown(error: &tokio_postgres::Error) -> bool {
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
pub(crate) fn describe(error: &tokio_postgres::Error) -> String {
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
