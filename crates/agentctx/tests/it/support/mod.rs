//! Setup shared by the facade's test files.

#![allow(dead_code, clippy::unwrap_used, clippy::panic)] // test support code

use agentctx::StoredContext;

/// A new PostgreSQL context on the test server (`AGENTCTX_TEST_DATABASE_URL`,
/// else the local one), named `PREFIX-PID-NANOS` so that runs never meet;
/// its URL and the context opened on it. A missing server fails the test
/// saying how to provide one: database tests are never skipped.
pub fn fresh_pg(prefix: &str) -> (String, StoredContext) {
    let base = std::env::var("AGENTCTX_TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://root@127.0.0.1:5432/test".to_owned());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let sep = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{sep}context={prefix}-{}-{nanos}", std::process::id());
    let ctx = StoredContext::open(&url).unwrap_or_else(|e| {
        panic!(
            "{e}\nthis test needs PostgreSQL: run `cargo xtask ci` (it finds or starts one), or \
             set AGENTCTX_TEST_DATABASE_URL to a server's URL"
        )
    });
    (url, ctx)
}
