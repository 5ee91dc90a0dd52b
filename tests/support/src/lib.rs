//! What the workspace's tests share, in one crate instead of copies and
//! `#[path]` includes (a dev-dependency only; `cargo xtask layers` keeps it
//! out of every layer's library graph).
//!
//! It sees no layer of agentctx, so every layer, the bottom one included,
//! can test with it; what it hands over is text, bytes and std types.
//!
//! - [`http`]: a loopback server whose connections a script answers;
//! - [`sse`]: the providers' documented event streams, as a server sends them;
//! - [`database`]: the PostgreSQL server the tests use, and names on it
//!   no other test uses; [`cluster`]: a throwaway cluster of one's own;
//!   [`pooler`]: PgBouncer in transaction mode in front of it;
//! - [`growth`]: linear growth checked as a ratio of two sizes' times;
//! - [`process`]: a finished process's exit code and text;
//! - [`files`]: a directory's names, to check a command left it as it was.
//!
//! ```
//! let server = test_support::http::Server::start(|stream, _, _| {
//!     test_support::http::respond(stream, "200 OK", "", "{}");
//! });
//! assert!(server.base.starts_with("http://127.0.0.1:"));
//! assert_eq!(server.connections(), 0);
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support: a failure is the test's

pub mod cluster;
pub mod database;
pub mod files;
pub mod growth;
pub mod http;
pub mod pooler;
pub mod process;
pub mod sse;
