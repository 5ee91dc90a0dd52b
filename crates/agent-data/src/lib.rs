//! # agent-data
//!
//! The layer that turns a list of messages into values: loading every wire
//! form (spec R1–R3), identity and layers (R4, R5), the fold that defines
//! every view (R9–R12, R14), validated atomic appends (R13) and JSON Schema
//! checks (R24–R27). Everything is owned by a [`Context`].
//!
//! ```
//! use agent_core::Kind;
//! use agent_data::{CheckMode, Context};
//! use agent_core::json;
//!
//! // spec §11, example 1: two `user` messages merge into one view.
//! let ctx = Context::from_json(r#"[
//!   {"type": "text", "text": "Update the user's city to Austin"},
//!   {"type": "data", "kind": "user", "data": {"name": "John Doe"},
//!    "schema": {"type": "object", "properties": {"age": {"type": "number"}}}},
//!   {"type": "data", "kind": "user", "data": {"age": 30}}
//! ]"#)?;
//! let user = Kind::new("user")?;
//! assert_eq!(ctx.view(&user, None), Some(&json!({"name": "John Doe", "age": 30})));
//! assert!(ctx.check(CheckMode::Normal).is_empty());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Messages are built through constructors that accept only what loading
//! would give back unchanged — [`TextMessage::new`], [`DataMessage::builder`],
//! [`OpaqueMessage::new`], [`NativeMessage::new`], [`Message::from_value`] —
//! so a context built through this API always loads back as itself. The
//! vocabulary those take ([`Kind`], [`Instance`], [`Method`], [`Path`],
//! [`Reference`]) is re-exported from agent-core.
//!
//! Reads never fail: an absent path is `None`, and a write the fold cannot
//! apply is skipped and reported by [`Context::diagnostics`]. Appends are
//! where validation happens; a refused append changes nothing.
//!
//! Every layer above this one writes through [`Append`], the append seam:
//! a [`Context`] in memory implements it, and so does a stored context
//! (agent-store), so writing code never depends on where a context lives.
//!
//! Views are kept folded as messages arrive, so a read borrows and costs one
//! traversal however long the log. The messages themselves are stored as
//! compact JSON text (about 1.3× the size of the JSONL file in memory);
//! [`Context::message`] parses one again when it is needed.
//!
//! Rule numbers (R1–R41) are those of agentctx's normative spec,
//! `docs/spec.md` in the repository; `docs/concepts.md` introduces them.
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod append;
mod builder;
mod chain;
mod check;
mod context;
mod elements;
mod error;
mod identity;
mod identity_map;
mod instances;
mod jsonl;
mod layer;
mod load;
mod log;
mod message;
mod normalise;
mod prepare;
mod read;
mod refs;
mod schema;
mod scratch;
mod snapshot;
mod stage;
#[cfg(feature = "proptest")]
#[cfg_attr(docsrs, doc(cfg(feature = "proptest")))]
pub mod testing;
mod unread;
mod verbatim;

pub use agent_core::{Instance, Kind, Method, Path, Reference, json};
pub use append::{
    Append, AppendError, AppendKey, BuildMessages, KeyedAppend, KeyedOutcome, MAX_KEY_BYTES,
};
pub use builder::DataMessageBuilder;
pub use chain::{BadDigest, Digest};
pub use check::Problem;
pub use context::Context;
pub use error::{Error, MessageFault, Result, SchemaViolation};
pub use identity::Identity;
pub use layer::Diagnostic;
pub use load::{Extended, Format, Loaded, Position, Warning};
pub use message::{DataMessage, Message, TextMessage};
pub use prepare::Prepared;
pub use refs::MAX_REF_DEPTH;
pub use schema::{CheckMode, Schema};
pub use stage::{Committed, Staged};
pub use verbatim::{NativeMessage, OpaqueMessage, PlanSort, RAN_TYPE, plan_sort};

use agent_core::json_type;
