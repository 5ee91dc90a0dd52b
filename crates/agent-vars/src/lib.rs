//! # agent-vars
//!
//! The read side of agentctx's data flow. Instead of copying data into a
//! tool call, a model writes a reference (`"†input.userName"`), a fallback
//! (`"†input.optional || †state.default"`) or a gate
//! (`"†state.profile && †state.permissions"`), and this crate fills in the
//! values (spec R15–R18):
//!
//! - [`parse`] / [`Expression::parse`]: the expression grammar (R15), with
//!   syntax errors that carry a byte offset and print a caret
//!   ([`SyntaxError::caret`]). `Display` is canonical and round-trips.
//! - [`Expression::evaluate`]: presence (R16) and `||` / `&&` (R17) through
//!   any [`Lookup`]; [`Scope`] reads an `agent_data::Context` for one
//!   instance (R5).
//! - [`resolve_call`]: a whole call (R18), ready or pending with every
//!   missing reference; [`call_reads`] lists what a call reads, for
//!   schedulers.
//!
//! ```
//! use agent_data::Context;
//! use agent_vars::{resolve_call, Resolution};
//! use agent_core::json;
//!
//! let ctx = Context::from_json(r#"[
//!   {"type": "input", "data": {"user": "ada"}},
//!   {"type": "state", "data": {"lang": "en"}, "_instance": "①"}
//! ]"#)?;
//! let call = json!({
//!     "_tool": "greet", "_instance": "①",
//!     "who": "†input.user",
//!     "options": {"lang": "†input.lang || †state.lang", "tone": "warm"}
//! });
//! let Resolution::Ready(resolved) = resolve_call(&call, &ctx)? else { panic!() };
//! assert_eq!(resolved["who"], "ada");
//! assert_eq!(resolved["options"], json!({"lang": "en", "tone": "warm"}));
//!
//! let pending = json!({"_tool": "greet", "who": "†state.lang"}); // global scope: absent
//! assert!(matches!(resolve_call(&pending, &ctx)?, Resolution::Pending(_)));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Performance
//!
//! Parsing is one pass over the text; evaluation reads each reference once
//! through the context's materialised views. `cargo bench -p agent-vars`
//! measures parsing a five-segment reference and resolving a 20-parameter
//! call against a 10,000-message context; see `docs/performance.md` for
//! the numbers.
//!
//! Rule numbers (R1–R41) are those of agentctx's normative spec,
//! `docs/spec.md` in the repository; `docs/concepts.md` introduces them.
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod call;
mod error;
mod eval;
mod expr;
mod parse;

pub use call::{CallReads, Resolution, call_instance, call_reads, resolve_call, resolve_call_with};
pub use error::{Error, Result, SyntaxError};
pub use eval::{Evaluation, Lookup, Scope};
pub use expr::{Alternative, Expression};
pub use parse::{Text, parse};
