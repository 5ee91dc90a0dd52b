//! The PostgreSQL server the tests use: `AGENTCTX_TEST_DATABASE_URL`, else
//! the one `cargo xtask ci` finds or starts. Tests that need it fail, saying
//! how to provide it: they are never skipped.
//!
//! In CI's pass through PgBouncer, `AGENTCTX_TEST_POOLED` names the pooler
//! in front of that server: the stores under test go through it ([`url`]),
//! while what a test arranges or inspects by hand goes straight to the
//! server ([`direct_url`]).

use std::sync::atomic::{AtomicUsize, Ordering};

/// The variable naming the test server's URL.
pub const VARIABLE: &str = "AGENTCTX_TEST_DATABASE_URL";

/// The URL `cargo xtask ci` provides when [`VARIABLE`] is not set.
pub const DEFAULT: &str = "postgres://root@127.0.0.1:5432/test";

/// What a test says when no server answers.
pub const HOW_TO_PROVIDE: &str = "these tests need PostgreSQL: run `cargo xtask ci` (it finds or \
    starts one), or set AGENTCTX_TEST_DATABASE_URL to a server's URL (default \
    postgres://root@127.0.0.1:5432/test)";

/// The variable naming a transaction pooler in front of the test server,
/// which the stores under test then go through.
pub const POOLED: &str = "AGENTCTX_TEST_POOLED";

/// The URL the stores under test use, without a `context` parameter: the
/// pooler's in a pass through one, else the test server's.
///
/// ```
/// assert!(test_support::database::url().starts_with("postgres://"));
/// ```
pub fn url() -> String {
    std::env::var(POOLED).unwrap_or_else(|_| direct_url())
}

/// The test server's own URL, without a `context` parameter: for raw
/// connections that arrange or inspect (which may name statements), and
/// for proxies a test puts in front of the server.
///
/// ```
/// assert!(test_support::database::direct_url().starts_with("postgres://"));
/// ```
pub fn direct_url() -> String {
    std::env::var(VARIABLE).unwrap_or_else(|_| DEFAULT.to_owned())
}

/// True in a pass through a pooler ([`POOLED`] set).
///
/// ```
/// assert_eq!(test_support::database::pooled(), std::env::var_os("AGENTCTX_TEST_POOLED").is_some());
/// ```
pub fn pooled() -> bool {
    std::env::var_os(POOLED).is_some()
}

/// `PREFIX-NAME-PID-NANOS-N`: a name no other test, process or earlier run
/// uses.
///
/// ```
/// let (a, b) = (test_support::database::unique_name("t", "x"), test_support::database::unique_name("t", "x"));
/// assert!(a.starts_with("t-x-") && a != b);
/// ```
pub fn unique_name(prefix: &str, name: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{prefix}-{name}-{}-{nanos}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// `base` with `context=CONTEXT` added.
///
/// ```
/// use test_support::database::with_context;
/// assert_eq!(with_context("postgres://h/db", "c"), "postgres://h/db?context=c");
/// assert_eq!(with_context("postgres://h/db?sslmode=disable", "c"), "postgres://h/db?sslmode=disable&context=c");
/// ```
pub fn with_context(base: &str, context: &str) -> String {
    let sep = if base.contains('?') { '&' } else { '?' };
    format!("{base}{sep}context={context}")
}
