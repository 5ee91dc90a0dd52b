//! The real PostgreSQL server the store's tests run against, shared by
//! every test file that needs one: its URL, fresh contexts on it, a raw
//! connection for arranging and inspecting.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)] // each file uses a part

use agent_store::{PgStore, Store};

/// The test server's URL, without a `context` parameter.
pub fn database() -> String {
    test_support::database::url()
}

/// A context name no other test (or earlier run) uses.
pub fn fresh_name(name: &str) -> String {
    test_support::database::unique_name("test", name)
}

/// The URL of the context `context` on the test server.
pub fn with_context(context: &str) -> String {
    test_support::database::with_context(&database(), context)
}

/// A URL for a context no other test (or earlier run) uses.
pub fn fresh(name: &str) -> String {
    with_context(&fresh_name(name))
}

/// The store at `url`; fails saying how to provide a server when none
/// answers.
pub fn open(url: &str) -> PgStore {
    PgStore::open(url).unwrap_or_else(|e| panic!("{e}\n{}", test_support::database::HOW_TO_PROVIDE))
}

/// A raw connection to the test database, for arranging and inspecting.
pub fn raw() -> postgres::Client {
    postgres::Client::connect(&test_support::database::direct_url(), postgres::NoTls).unwrap()
}

/// A raw connection to a test database whose agentctx tables exist, for
/// rows another program appends: a store sets the tables up when it first
/// connects, and on a fresh database no test may have connected yet.
pub fn raw_with_tables() -> postgres::Client {
    let error = open(&fresh("setup")).load().unwrap_err();
    assert!(error.is_missing(), "{error}");
    raw()
}

/// The strings pushed to `†state.log` of the context `store` holds, in
/// order; fails when there is no such list.
pub fn pushed_log(store: &mut PgStore) -> Vec<String> {
    let context = store.load().unwrap().context;
    match context.read(&"†state.log".parse().unwrap(), None) {
        Some(agent_core::json::Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect(),
        other => panic!("no log: {other:?}"),
    }
}

/// A message pushing `tag` onto `†state.log` (read back by [`pushed_log`]).
pub fn push(tag: String) -> Vec<agent_data::Message> {
    agent_data::Message::from_value(agent_core::json!({"type": "state", "data": {"log": tag},
        "_outputPath": "†state.log", "_outputMethod": "push"}))
    .unwrap()
}
