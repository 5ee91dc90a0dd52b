//! What the PostgreSQL benchmarks share (`pg-bench`, `pg-fleet`): the
//! server they run against, a schema of a run's own, and small helpers.
//!
//! The server is `AGENTCTX_TEST_DATABASE_URL`, else
//! `postgres://root@127.0.0.1:5432/test`; when it does not answer, a
//! benchmark fails saying how to provide one.
//!
//! Every `Err` here is a message saying what failed, for the benchmark to
//! print and stop.
#![allow(clippy::missing_errors_doc)] // one rule for all: see above

use agent_core::{json, json::Value};
use agent_data::{Context, Message};
use agent_store::{PgStore, Store};
use postgres::{Client, NoTls};
use std::time::Duration;

/// The variable naming the server (the tests read it too).
pub const VARIABLE: &str = "AGENTCTX_TEST_DATABASE_URL";
/// The server when the variable is not set.
pub const DEFAULT: &str = "postgres://root@127.0.0.1:5432/test";

/// A result whose error is a message.
pub type Outcome<T> = Result<T, String>;

/// The server the benchmarks run against.
pub struct Server {
    /// Its URL.
    pub url: String,
}

impl Server {
    /// The server named by [`VARIABLE`] (or [`DEFAULT`]), if it answers.
    pub fn find() -> Outcome<Server> {
        let url = std::env::var(VARIABLE).unwrap_or_else(|_| DEFAULT.to_owned());
        let server = Server { url };
        match connect(&server.url) {
            Ok(_) => Ok(server),
            Err(why) => Err(format!(
                "no PostgreSQL server answers at {} ({why}). The PostgreSQL benchmarks need \
                 one: set {VARIABLE} to the URL of a server where they may create and drop \
                 schemas (postgres://USER[:PASSWORD]@HOST:PORT/DB)",
                self::shown(&server.url)
            )),
        }
    }

    /// Its URL (without password), version and durability settings.
    pub fn describe(&self) -> Outcome<Value> {
        let mut client = connect(&self.url)?;
        let row = client
            .query_one(
                "SELECT version(), current_setting('fsync'), \
                 current_setting('synchronous_commit'), current_setting('wal_sync_method')",
                &[],
            )
            .map_err(|e| pg(&e))?;
        let setting = |i: usize| row.try_get::<_, String>(i).map_err(|e| pg(&e));
        Ok(json!({
            "url": shown(&self.url),
            "version": setting(0)?,
            "fsync": setting(1)?,
            "synchronous_commit": setting(2)?,
            "wal_sync_method": setting(3)?,
        }))
    }
}

/// A schema of this process's own, dropped when it goes out of scope.
pub struct Scratch {
    admin: Client,
    /// The schema's name.
    pub schema: String,
    /// The server's URL with `search_path` set to the schema.
    pub url: String,
}

impl Scratch {
    /// A fresh schema `agentctx_bench_PART_…` on `server`.
    pub fn create(server: &Server, part: &str) -> Outcome<Scratch> {
        let schema = format!("agentctx_bench_{part}_{}", unique('_'));
        let mut admin = connect(&server.url)?;
        admin
            .batch_execute(&format!("CREATE SCHEMA {schema}"))
            .map_err(|e| format!("cannot create schema {schema}: {}", pg(&e)))?;
        let url = with_parameter(&server.url, &format!("options=-c%20search_path%3D{schema}"));
        Ok(Scratch { admin, schema, url })
    }

    /// The address of context `name` in the schema.
    pub fn context(&self, name: &str) -> String {
        with_parameter(&self.url, &format!("context={name}"))
    }

    /// A plain client whose tables are the schema's.
    pub fn client(&self) -> Outcome<Client> {
        connect(&self.url)
    }

    /// A store on context `name` in the schema.
    pub fn store(&self, name: &str) -> Outcome<PgStore> {
        PgStore::open(&self.context(name)).map_err(|e| e.to_string())
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let drop = format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema);
        if let Err(e) = self.admin.batch_execute(&drop) {
            eprintln!(
                "agentctx-tests: cannot drop schema {} (drop it by hand): {}",
                self.schema,
                pg(&e)
            );
        }
    }
}

/// Normalises one message (R1).
pub fn message(value: Value) -> Outcome<Vec<Message>> {
    Message::from_value(value).map_err(|e| e.to_string())
}

/// Commits one message through `store`.
pub fn commit(store: &mut PgStore, context: &mut Context, value: Value) -> Outcome<()> {
    let batch = message(value)?;
    store
        .commit(context, &batch)
        .map(drop)
        .map_err(|e| e.to_string())
}

/// A positive number from the environment, else `default`.
pub fn setting(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|n| n.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(default)
}

/// The middle of `samples` (the upper one of an even count).
pub fn median(mut samples: Vec<u128>) -> f64 {
    samples.sort_unstable();
    samples.get(samples.len() / 2).copied().unwrap_or_default() as f64
}

/// This process's id and the time, joined by `separator`: unique per run.
pub fn unique(separator: char) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!("{}{separator}{nanos}", std::process::id())
}

/// A plain client connection to `url` (5 s to connect unless it says).
pub fn connect(url: &str) -> Outcome<Client> {
    let mut config: postgres::Config = url
        .parse()
        .map_err(|e| format!("not a connection URL: {}", pg(&e)))?;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(Duration::from_secs(5));
    }
    config.connect(NoTls).map_err(|e| pg(&e))
}

/// `url` with `parameter` (`key=value`) added to its query.
pub fn with_parameter(url: &str, parameter: &str) -> String {
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}{parameter}")
}

/// `url` without its password, for messages.
pub fn shown(url: &str) -> String {
    agent_store::without_password(url)
}

/// A PostgreSQL error as one line: the server's message, or the client's
/// error and its causes.
pub fn pg(error: &postgres::Error) -> String {
    if let Some(db) = error.as_db_error() {
        return format!("{} (SQLSTATE {})", db.message(), db.code().code());
    }
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}
