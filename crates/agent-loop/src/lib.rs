//! # agent-loop
//!
//! The model in the loop (spec §12, R35–R41): context → request → answer →
//! calls → results appended → next request, until the model gives its
//! final output.
//!
//! - [`Tools`] (R35, R36): tool definitions from the context's
//!   `{"type": "tool"}` messages and from the caller, later ones winning;
//!   [`Tool::for_model`] hides an explicit tool's `_output`.
//! - [`answer_schema`] (R37): the one JSON object a request asks for, and
//!   [`Answer`] to read it back.
//! - [`SYSTEM_TEXT`] (R38): what the model reads before the context.
//!
//! ```
//! use agent_data::Context;
//! use agent_loop::{answer_schema, Answer, Tools};
//! use serde_json::json;
//!
//! let ctx = Context::from_json(r#"[
//!   {"type": "tool", "tool": {"type": "object", "properties": {
//!     "_tool": {"const": "summarize"}, "text": {"type": "string"},
//!     "_output": {"type": "string"}}}},
//!   {"type": "input", "data": {"text": "A long text."}}
//! ]"#)?;
//! let tools = Tools::from_context(&ctx)?;
//! let schema = answer_schema(&tools, |_| false, &[], None);
//! assert_eq!(schema["required"], json!(["calls", "output"]));
//!
//! let answer = Answer::from_text(r#"{"calls": [{"_tool": "summarize", "text": "†input.text",
//!     "_output": "Short.", "_outputPath": "†state.summary"}], "output": null}"#)?;
//! assert_eq!(answer.calls.len(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Rule numbers (R1–R41) are those of agentctx's normative spec,
//! `docs/spec.md` in the repository; `docs/concepts.md` introduces them.
#![forbid(unsafe_code)]

mod answer;
mod error;
mod system;
mod tools;

pub use answer::{Answer, answer_schema};
pub use error::{Error, Result};
pub use system::SYSTEM_TEXT;
pub use tools::{Tool, Tools};
