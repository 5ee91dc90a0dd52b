//! # agent-output
//!
//! The write side of agentctx's data flow. A tool call says where its
//! result goes with `_outputPath` (`"†state.summary"`, `"†state.receipt ||
//! †state.error"` for success or failure, `"†data.a && †data.b"` to fan
//! out); when it finishes, the engine *appends* data messages that record
//! the write and the call that made it (spec R19–R23):
//!
//! - [`Call`]: a tool call, its `_tool`, `_instance`, `_outputPath` and
//!   `_outputMethod` parsed once (R18–R20).
//! - [`OutputPath`]: `_outputPath` parsed into outcomes of destinations (R19).
//! - [`Outcome`] and [`messages_for`]: the messages for a result (R20–R22),
//!   stamped by an injectable [`Clock`].
//! - [`apply`]: validate everything, then append all messages of one result
//!   together or none (R13, R25); [`check_tool_schema`] for R23.
//! - [`Ran`], [`messages_for_run`] and [`apply_run`]: the same for a
//!   runner, recording when (and by which worker) a call ran, and that a
//!   call writing nothing ran at all (R21b).
//!
//! Durable writes are not this layer's business: [`apply`] appends to any
//! [`agent_data::Append`] — a context in memory, or a stored context whose
//! append is a commit (agent-store's `Stored`, which this crate never sees).
//!
//! ```
//! use agent_data::Context;
//! use agent_output::{apply, Call, FixedClock, Outcome};
//! use agent_core::json;
//!
//! let mut ctx = Context::new();
//! let clock = FixedClock::parse("2026-01-01T00:00:00Z")?;
//! let call = Call::parse(json!({"_tool": "charge", "_outputPath": "†state.receipt || †state.error"}))?;
//!
//! apply(&mut ctx, &call, Outcome::Failure(json!("card declined")), &clock)?;
//! assert_eq!(ctx.read(&"†state.error".parse()?, None), Some(&json!("card declined")));
//! assert!(ctx.read(&"†state.receipt".parse()?, None).is_none());
//!
//! // One outcome and a failure: an error, and nothing is appended.
//! let strict = Call::parse(json!({"_tool": "charge", "_outputPath": "†state.receipt"}))?;
//! assert!(apply(&mut ctx, &strict, Outcome::Failure(json!("declined")), &clock).is_err());
//! assert_eq!(ctx.len(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Rule numbers (R1–R41) are those of agentctx's normative spec,
//! `docs/spec.md` in the repository; `docs/concepts.md` introduces them.
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod apply;
mod call;
mod clock;
mod error;
mod outcome;
mod output_path;
mod ran;

pub use apply::{apply, check_tool_schema};
pub use call::Call;
pub use clock::{Clock, FixedClock, SystemClock};
pub use error::{Error, Result};
pub use outcome::{Outcome, messages_for};
pub use output_path::OutputPath;
pub use ran::{Ran, apply_run, messages_for_run};
