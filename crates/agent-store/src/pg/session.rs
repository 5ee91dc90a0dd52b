//! The connection of a [`PgStore`]: connecting within the timeout,
//! migrating the tables on connect, preparing the statements every append
//! runs (on a direct connection), reconnecting after the server dropped the connection, ending a
//! lost connection's server session, counting round trips, and saying what
//! a PostgreSQL error means.

use super::client::Client;
use super::pool::{Lent, Parked};
use super::sql::Sql;
use super::sql::{ALIVE, APPEND, APPEND_PLAIN, BACKEND, COMMIT_CALL, FIND, LOCK, TAIL, TERMINATE};
use super::{PgStore, SCHEMA_VERSION, schema};
use crate::{Error, Result};
use tokio_postgres::error::SqlState;

/// The statements every append or read runs, prepared when a direct
/// connection opens: each then costs one round trip from the first.
const HOT: [&Sql; 6] = [&FIND, &TAIL, &APPEND, &APPEND_PLAIN, &COMMIT_CALL, &LOCK];

/// How long to wait for a lost connection's server process to end.
const SESSION_END: std::time::Duration = std::time::Duration::from_secs(5);

impl PgStore {
    /// How many requests this store has sent the server and had answered
    /// (round trips: a prepared statement's query is one, an unprepared
    /// one two, connecting and migrating a few), for measuring.
    pub fn round_trips(&self) -> u64 {
        self.trips
    }

    /// True when the connection goes through a transaction pooler (such as
    /// PgBouncer in `pool_mode = transaction`): its statements are then sent
    /// unnamed, no lock timeout lasts past a transaction, and an append
    /// whose connection was lost is in doubt until it shows in the log
    /// (D109: behind a pooler). Found out on connecting (connecting first if
    /// needed), unless the URL says (`agentctx_pooled=yes|no`).
    ///
    /// ```no_run
    /// let mut store = agent_store::PgStore::open("postgres://root@127.0.0.1:6432/test?context=c")?;
    /// println!("pooled: {}", store.pooled()?);
    /// # Ok::<(), agent_store::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Database`] when it cannot connect.
    pub fn pooled(&mut self) -> Result<bool> {
        self.lent(|store| Ok(store.client()?.pooled()))
    }

    /// Runs `f`, then gives a pool's connection back unless a transaction
    /// of this store's is open (D114: a pool per process) — also when `f`
    /// panics, after closing a connection a transaction was left open on.
    pub(crate) fn lent<T>(&mut self, f: impl FnOnce(&mut PgStore) -> T) -> T {
        struct Returning<'a>(&'a mut PgStore);
        impl Drop for Returning<'_> {
            fn drop(&mut self) {
                if std::thread::panicking() && self.0.in_transaction {
                    // Closing the connection ends its transaction: the
                    // server rolls it back.
                    self.0.client = None;
                    self.0.in_transaction = false;
                }
                self.0.give_back();
            }
        }
        let returning = Returning(self);
        f(&mut *returning.0)
    }

    /// Gives the connection back to the pool, if the store has one and no
    /// transaction of its own is open; one the server closed makes room
    /// for another.
    fn give_back(&mut self) {
        if self.in_transaction {
            return;
        }
        let (Some(pool), Some(permit)) = (&self.pool, self.permit.take()) else {
            return;
        };
        let backend = self.backend.take();
        match self.client.take() {
            Some(client) if !client.is_closed() => pool.park(Parked {
                client,
                backend,
                permit,
            }),
            _ => drop(permit),
        }
    }

    /// Counts `n` round trips.
    pub(crate) fn trip(&mut self, n: u64) {
        self.trips += n;
    }

    /// The open connection, connecting (and migrating) first if there is
    /// none or the server closed it.
    pub(crate) fn client(&mut self) -> Result<&mut Client> {
        if self.client.as_ref().is_some_and(Client::is_closed) {
            self.client = None;
        }
        if self.in_transaction && self.client.is_none() {
            // Lost mid-transaction: the server rolls it back (or, behind
            // a pooler, may still be finishing it); its rest must never
            // run on a new connection. Refused until the transaction is
            // given up (a rollback, or a lost append settled).
            return Err(Error::Database {
                action: "finish a transaction on",
                name: self.address.shown.clone(),
                reason: "the connection was lost inside the transaction".into(),
            });
        }
        if self.client.is_none()
            && self.permit.is_none()
            && let Some(pool) = &self.pool
        {
            match pool.take(&self.address.shown)? {
                Lent::Open(mut parked) => {
                    // It may have waited long: a session the server ended
                    // meanwhile is replaced now, not found out by the call.
                    parked.client.look();
                    self.permit = Some(parked.permit);
                    if !parked.client.is_closed() {
                        self.client = Some(parked.client);
                        self.backend = parked.backend;
                    }
                }
                Lent::Room(permit) => self.permit = Some(permit),
            }
        }
        let client = match self.client.take() {
            Some(client) => client,
            None => {
                let (client, backend) = self.connect()?;
                // Direct: who is asking, the version check, the session
                // query, the lock timeout, six statements; pooled: the
                // first two.
                self.trips += if backend.is_some() { 10 } else { 2 };
                self.backend = backend;
                client
            }
        };
        Ok(self.client.insert(client))
    }

    /// Connects and migrates; on a direct connection also sets the lock
    /// timeout, prepares the [`HOT`] statements and names the server
    /// session (which a lost append's settling ends). Through a pooler no
    /// session is this store's own (D109: behind a pooler).
    fn connect(&self) -> Result<(Client, Option<(i32, String)>)> {
        let mut client = Client::connect(&self.address).map_err(|reason| Error::Database {
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
        if client.pooled() {
            return Ok((client, None));
        }
        let backend = client
            .query_one(&BACKEND, &[])
            .and_then(|row| Ok((row.try_get(0)?, row.try_get(1)?)))
            .map_err(|e| self.database("connect to", &e))?;
        client
            .set_lock_timeout()
            .map_err(|e| self.database("connect to", &e))?;
        client
            .prepare_all(&HOT)
            .map_err(|e| match outcome_unknown(&e) {
                true => self.database("connect to", &e),
                false => self.database("set up the tables of", &e),
            })?;
        Ok((client, Some(backend)))
    }

    /// Ends the session `(pid, started)` of a lost connection if it is still
    /// running — a connection can die on this side while its server process
    /// lives on and commits later — and waits until it is gone.
    pub(super) fn end_session(&mut self, (pid, started): (i32, String)) -> Result<(), String> {
        let client = self.client().map_err(|e| e.to_string())?;
        let _ = client.query(&TERMINATE, &[&pid, &started]);
        let deadline = std::time::Instant::now() + SESSION_END;
        loop {
            let alive = client
                .query_opt(&ALIVE, &[&pid, &started])
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use test_support::database::{HOW_TO_PROVIDE, direct_url};

    #[test]
    fn a_panic_inside_a_pools_transaction_closes_its_connection_and_frees_its_place() {
        let pool = super::super::PgPool::open(&direct_url(), 1).expect(HOW_TO_PROVIDE);
        let mut store = pool.store("panic-guard").unwrap();
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            store.lent(|store| {
                store.client().unwrap().begin().unwrap();
                store.in_transaction = true;
                panic!("inside the transaction");
            })
        }));
        assert!(caught.is_err());
        assert!(!store.in_transaction && store.client.is_none() && store.permit.is_none());
        assert_eq!((pool.connections(), pool.idle()), (0, 0));
        // Outside a transaction a panic gives the connection back as it is.
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            store.lent(|store| {
                store.client().unwrap().batch_execute("SELECT 1").unwrap();
                panic!("outside a transaction");
            })
        }));
        assert!(caught.is_err());
        assert_eq!((pool.connections(), pool.idle()), (1, 1));
    }

    #[test]
    fn a_transactions_rest_never_goes_to_a_new_connection() {
        let url = format!("{}?context=transaction-guard", direct_url());
        let mut store = PgStore::open(&url).expect(HOW_TO_PROVIDE);
        store.client().unwrap().begin().unwrap();
        store.in_transaction = true;
        let (pid, _) = store.backend.clone().unwrap();
        let mut other = postgres::Client::connect(&direct_url(), postgres::NoTls).unwrap();
        other
            .execute("SELECT pg_terminate_backend($1)", &[&pid])
            .unwrap();
        // The next statements find the connection gone.
        for _ in 0..50 {
            let client = store.client.as_mut().unwrap();
            if client.is_closed() {
                break;
            }
            assert!(client.batch_execute("SELECT 1").is_err());
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(store.client.as_ref().unwrap().is_closed());
        let refused = store.client().map(|_| ()).unwrap_err().to_string();
        assert!(
            refused.contains("the connection was lost inside the transaction"),
            "{refused}"
        );
        // Refused again until the transaction is given up; then a lost
        // connection is simply opened again.
        assert!(store.client().is_err());
        store.in_transaction = false;
        let client = store.client().unwrap();
        client.batch_execute("SELECT 1").unwrap();
        assert!(!store.in_transaction);
    }
}
