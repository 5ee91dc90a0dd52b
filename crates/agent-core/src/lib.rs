//! # agent-core
//!
//! The bottom layer of agentctx: the vocabulary every other layer speaks.
//!
//! - [`Path`] and [`Segment`]: the path grammar (spec R7), canonical
//!   display, and read traversal with negative indexes (R8).
//! - [`Reference`]: one `†kind.path` operand (R15).
//! - [`Kind`] and [`Instance`]: the two halves of a data message's identity,
//!   validated on construction (R2).
//! - [`Method`], [`write`](fn@write) and [`check_write`]: the six write methods and
//!   writing at a path (R10, R10b, R11). Type errors are values, never panics.
//! - [`MAX_DEPTH`], [`within_depth`] and [`drop_deep`]: the one nesting
//!   limit (R33) and its one way of counting.
//! - [`json`](mod@json): agentctx's own JSON value — exact numbers, ordered members,
//!   the depth limit as the reader's own check — which every layer holds
//!   (D58: own JSON value; D66: serde_json defaults): the `agent-json` crate, re-exported.
//! - [`CALL_KEYS`], [`MESSAGE_KEYS`], [`check_keys`] and [`nearest`]: the
//!   `_` keys the engine reads, and the name a typo most likely meant.
//!
//! Facts every layer reports — [`InvalidKind`], [`UnknownMethod`],
//! [`TooDeep`] — are declared here once; the layers above wrap them.
//!
//! A view is an `Option<agent_core::json::Value>`: `None` is *absent*, which is
//! different from `null`.
//!
//! ```
//! use agent_core::{json, write, Method, Reference};
//!
//! let mut view = Some(json!({"user": {"name": "Alex", "status": "active"}}));
//! let status: Reference = "†data.user.status".parse()?;
//! write(&mut view, &status.path, Method::Set, json!("inactive"))?;
//! write(&mut view, &".user".parse()?, Method::Merge, json!({"age": 30}))?;
//! assert_eq!(
//!     view,
//!     Some(json!({"user": {"name": "Alex", "status": "inactive", "age": 30}}))
//! );
//!
//! // Pushing onto a string is a type error, reported with where it happened.
//! let err = write(&mut view, &".user.name".parse()?, Method::Push, json!(1)).unwrap_err();
//! assert_eq!(err.to_string(), "type error at .user.name: cannot push onto a string");
//! # Ok::<(), agent_core::Error>(())
//! ```
//!
//! Rule numbers (R1–R41) are those of agentctx's normative spec,
//! `docs/spec.md` in the repository; `docs/concepts.md` introduces them.
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod depth;
mod error;
mod ident;
mod keys;
mod path;
mod reference;
mod write;

/// agentctx's JSON value (the `agent-json` crate).
#[doc(inline)]
pub use agent_json as json;
/// A JSON value from JSON-like syntax (the `agent-json` crate's).
pub use agent_json::json;
pub use depth::{MAX_DEPTH, TooDeep, drop_deep, json_type, within_depth};
pub use error::{
    DisplayPath, Error, InvalidKind, Result, UnknownMethod, json_for_terminal, quoted,
};
pub use ident::{Instance, Kind, MAX_INSTANCE_CHARS};
pub use keys::{CALL_KEYS, MESSAGE_KEYS, UnknownKey, check_keys, did_you_mean, nearest};
pub use path::{Path, Segment};
pub use reference::{DAGGER, Reference, dagger_meant};
pub use write::{Method, check_write, merge_deep, write, write_checked};
