//! # agent-store
//!
//! Where contexts live, and the one write path to them. A context is an
//! append-only log; this layer makes appending to a *stored* one safe when
//! many processes do it at once (spec R34, R34b): every append is validated
//! against the context as it is when the append lands, lands whole or not
//! at all, and is never lost once acknowledged.
//!
//! - [`Store`]: the seam — load, catch up with what others appended,
//!   compare-and-append at an expected length ([`Error::Conflict`]), and
//!   [`Store::commit`], which retries on conflict.
//! - [`FileStore`]: JSONL and JSON array files, with an advisory lock held
//!   from reading the tail to the fsync.
//! - [`MemoryStore`]: the same behaviour without the file, in this
//!   process's memory (tests, scratch contexts).
//! - [`Stored`]: a stored context behind the append seam ([`Append`], from
//!   agent-data), whose every append is a commit: what the layers above
//!   write through without depending on this crate.
//!
//! [`Context`]: agent_data::Context
//!
//! ```
//! use agent_data::{Context, Message};
//! use agent_store::{FileStore, Store};
//! use agent_core::json;
//!
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("c.jsonl");
//! std::fs::write(&path, r#"{"type":"state","data":{"items":[]},"schema":{"properties":{"items":{"maxItems":1}}}}"#)?;
//!
//! let mut store = FileStore::open(&path)?;
//! let mut context = store.load()?.context;
//! let push = |n: i64| Message::from_value(json!({"type": "state", "data": {"items": n},
//!     "_outputPath": "†state.items", "_outputMethod": "push"}));
//! store.commit(&mut context, &push(1)?)?;
//! // The schema allows one item: the second push is refused, and nothing is written.
//! let refused = store.commit(&mut context, &push(2)?).unwrap_err();
//! assert!(refused.to_string().contains("schema violated"));
//! assert_eq!(FileStore::open(&path)?.load()?.context.len(), 2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! `docs/store.md` says what is atomic, what is linearizable, and what a
//! program that is not agentctx must do to write a context file safely.
//!
//! Rule numbers (R1–R41) are those of agentctx's normative spec,
//! `docs/spec.md` in the repository; `docs/concepts.md` introduces them.
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod append;
mod error;
mod files;
mod memory;
#[cfg(feature = "postgres")]
mod pg;
mod retry;
mod snapshot;
mod store;
mod url;
mod verify;

/// The append seam, from agent-data: what the layers above write through.
pub use agent_data::{
    Append, AppendError, AppendKey, BuildMessages, KeyedAppend, KeyedOutcome, MAX_KEY_BYTES,
};
pub use append::Stored;
pub use error::{Error, Fenced, Result};
pub use files::{CACHE_DIR_VARIABLE, CHECKPOINT_EVERY, FileStore};
pub use memory::MemoryStore;
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub use pg::{
    CallRow, CallState, Claim, ClaimRequest, Horizon, Listener, MAX_NAME_BYTES, MAX_NAMES, PgCalls,
    PgPool, PgStore, SCHEMA_VERSION,
};
pub use snapshot::SNAPSHOT_AFTER;
pub use store::{KEY_DAYS, MAX_ATTEMPTS, SnapshotWhen, Store, copy, copy_context, open};
pub use url::{is_mistyped_postgres_url, is_postgres_url, without_password};
pub use verify::{Finding, Verified};
