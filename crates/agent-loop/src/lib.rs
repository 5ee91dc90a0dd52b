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
//! - [`Provider`] (R38, R41): one [`Request`] in, one [`Reply`] out;
//!   [`Provider::send_streaming`] also reports each call of the answer as
//!   soon as it is complete. [`OpenAi`] (Chat Completions, also local
//!   OpenAI-compatible servers) and [`Anthropic`] (Messages) over HTTP
//!   stream their answers (server-sent events, read whole when a server
//!   does not stream), retry 429, 5xx, timeouts and dropped connections
//!   as [`Retry`] says, within one timeout per request, and fail at once
//!   on what no retry mends (no connection, no key for the provider's own
//!   server, 401, 404, decision D56); the
//!   server is untrusted: no redirect is followed, a response is read up
//!   to [`MAX_ANSWER_BYTES`] (or the provider's `max_answer_bytes`), its
//!   error text is quoted, and [`RetryNotice`]s go to the caller's
//!   observer rather than to the terminal (D53: untrusted server).
//!
//! ```
//! use agent_data::Context;
//! use agent_loop::{answer_schema, Answer, CallInstances, Tools};
//! use agent_core::json;
//!
//! let ctx = Context::from_json(r#"[
//!   {"type": "tool", "tool": {"type": "object", "properties": {
//!     "_tool": {"const": "summarize"}, "text": {"type": "string"},
//!     "_output": {"type": "string"}}}},
//!   {"type": "input", "data": {"text": "A long text."}}
//! ]"#)?;
//! let tools = Tools::from_context(&ctx)?;
//! let schema = answer_schema(&tools, |_| false, CallInstances::Existing(&[]), None);
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
#![cfg_attr(docsrs, feature(doc_cfg))]

mod answer;
mod carry;
mod error;
mod provider;
mod run;
mod system;
mod tools;
mod turn;

pub use answer::{Answer, CallInstances, answer_schema};
pub use error::{Error, Result};
pub use provider::anthropic::Anthropic;
pub use provider::http::{MAX_ANSWER_BYTES, Retry, RetryNotice};
pub use provider::openai::OpenAi;
pub use provider::{Provider, Reply, Request, Usage};
pub use run::{Event, Finish, Loop, RunReport, TurnReport};
pub use system::SYSTEM_TEXT;
pub use tools::{Execution, Tool, Tools};
pub use turn::gate::{Confirm, Gate, Gates};
