//! # agent-render
//!
//! The last step before the model: a context becomes chat messages and a
//! provider payload (spec R28–R32).
//!
//! - [`Renderer::render`] walks the context. Text passes through; each layer
//!   of data becomes one block at its first message ([`RenderMode::Merged`], R28),
//!   or each write its own block ([`RenderMode::Append`], R30) so earlier output
//!   stays byte-stable for prompt caching. Opaque messages (`plan`, `tool`,
//!   …) go through a registry of [`OpaqueRenderer`]s, [`GenericBlock`] by
//!   default; a runner's `ran` record is left out (R21b). Nothing starting
//!   with `_` is rendered (R29).
//! - [`payload`] serialises for a [`PayloadFormat`]: `plain`, `openai`,
//!   `anthropic`, or a `text` transcript (R31). Output is deterministic (R32).
//! - [`count_tokens`] sizes a payload (`o200k_base`).
//!
//! ```
//! use agent_data::Context;
//! use agent_render::{payload, RenderMode, Payload, PayloadFormat, Renderer};
//!
//! let ctx = Context::from_json(r#"[
//!   {"type": "text", "role": "system", "text": "You moderate comments."},
//!   {"type": "input", "data": {"comment": "great post"}, "_instance": "①"}
//! ]"#)?;
//! let chat = Renderer::new().render(&ctx, RenderMode::Merged);
//! let Payload::Json(p) = payload(&chat, PayloadFormat::OpenAi)? else { unreachable!() };
//! assert_eq!(p["messages"][0]["role"], "system");
//! assert!(p["messages"][1]["content"].as_str().unwrap().starts_with("## Data: ¶input@①\n"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Rule numbers (R1–R41) are those of agentctx's normative spec,
//! `docs/spec.md` in the repository; `docs/concepts.md` introduces them.
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod chat;
mod error;
mod native;
mod payload;
mod render;

pub use chat::ChatMessage;
pub use error::{Error, Result};
#[cfg(feature = "tiktoken")]
pub use payload::count_tokens;
pub use payload::{Payload, PayloadFormat, payload};
pub use render::{GenericBlock, INPUT_LINE, OpaqueRenderer, RenderMode, Renderer};
