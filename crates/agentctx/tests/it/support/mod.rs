//! Setup shared by the facade's test files.

#![allow(dead_code, clippy::unwrap_used, clippy::panic)] // test support code

use agentctx::StoredContext;

/// A new PostgreSQL context on the test server (see
/// `test_support::database`), named so that runs never meet; its URL and
/// the context opened on it. A missing server fails the test saying how to
/// provide one: database tests are never skipped.
pub fn fresh_pg(prefix: &str) -> (String, StoredContext) {
    use test_support::database;
    let url = database::with_context(&database::url(), &database::unique_name(prefix, "facade"));
    let ctx =
        StoredContext::open(&url).unwrap_or_else(|e| panic!("{e}\n{}", database::HOW_TO_PROVIDE));
    (url, ctx)
}
