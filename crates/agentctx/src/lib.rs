//! # agentctx
//!
//! One crate for building with agentctx: every layer re-exported under a
//! short name, a [`prelude`], one [`Error`] over all of theirs, and the
//! conveniences a small agent flow reaches for first —
//! [`ContextExt::get`] (`ctx.get("†state.x")`: parse and read in one call;
//! [`ContextExt::get_ref`] borrows one reference's value),
//! [`StoredContext`] (a file or PostgreSQL context that opens, applies and
//! saves in one motion; [`StoredContext::apply_all`] writes many results in
//! one commit), appends and applies that read the same on a context in
//! memory ([`ContextExt::append_value`], [`ContextExt::apply`]),
//! [`payload()`] (what the model sees, in a provider's format, as one JSON value) and [`activity`]
//! (activity closures that use `?` on any error).
//!
//! The layers stay usable alone; this crate adds no behaviour of its own.
//! Each layer's module here ([`core`], [`data`], …) shows that crate's own
//! documentation, whose examples name the crate (`agent_core::…`): the
//! same items as the module (`agentctx::core::…`).
//! A [`StoredContext`] opens as the `agentctx` commands that read views
//! do, in O(tail): the store's snapshot and the messages after it. What
//! walks every message ([`StoredContext::render`],
//! [`StoredContext::message`], [`StoredContext::whole`]) reads the whole
//! log the first time it is asked, once (D50: facade opens in O(tail)).
//! Rule numbers (R1–R41) are those of agentctx's normative spec,
//! `docs/spec.md` in the repository; `docs/concepts.md` introduces them.
//!
//! ```
//! use agentctx::prelude::*;
//! use agentctx::{json, json::Value};
//!
//! // A task, two tools and a plan that wires them by reference.
//! let mut ctx = Context::from_json(r#"[{"type": "input", "data": {"user": 7}}]"#)?;
//! let mut activities = Activities::new();
//! activities.register("fetch", activity(|call: &Value| {
//!     let id = call["id"].as_i64().ok_or("id must be an integer")?;
//!     Ok(json!({"name": format!("user {id}")}))
//! }));
//! activities.register("greet", activity(|call: &Value| {
//!     Ok(json!(format!("Hello, {}!", call["name"].as_str().ok_or("no name")?)))
//! }));
//! let plan = Plan::new(vec![
//!     json!({"_tool": "greet", "name": "†state.profile.name", "_outputPath": "†state.greeting"}),
//!     json!({"_tool": "fetch", "id": "†input.user", "_outputPath": "†state.profile"}),
//! ])?;
//! assert!(plan.run(&mut ctx, &activities, &SystemClock).all_done());
//!
//! assert_eq!(ctx.get("†state.greeting")?, json!("Hello, user 7!"));
//! let openai = payload(&ctx, PayloadFormat::OpenAi, RenderMode::Merged)?;
//! assert_eq!(openai["messages"][0]["role"], "user");
//!
//! // A forgotten † is a syntax error whose text points at it.
//! let error = ctx.get("state.greeting").unwrap_err();
//! assert_eq!(error.to_string(), "syntax error at byte 0: expected '†' (an expression \
//!     starts with a reference): did you mean \"†state.greeting\"?\nstate.greeting\n^");
//! # Ok::<(), agentctx::Error>(())
//! ```
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod activity;
mod address;
mod append;
mod error;
mod get;
mod stored;

pub use activity::{BoxError, Failure, FnActivity, activity};
pub use address::Address;
pub use append::Appendable;
pub use error::{Error, Result};
pub use get::ContextExt;
pub use stored::StoredContext;

/// agentctx's JSON value (`Value`, `Map`, `Number`, reading and writing
/// text) and the [`json!`](crate::json!) macro: numbers kept exactly,
/// members in order, depth bounded — without changing how serde_json
/// behaves in the application's own code (D58: own JSON value).
pub use agent_core::json;

/// Paths, references, kinds, instance ids and the six write methods
/// (the `agent-core` crate).
#[doc(inline)]
pub use agent_core as core;
/// Messages, loading, identity and layers, the fold, schemas, `Context`
/// (the `agent-data` crate).
#[doc(inline)]
pub use agent_data as data;
/// Batches of instances (the `agent-instancing` crate).
#[doc(inline)]
pub use agent_instancing as instancing;
/// The model in the loop: tools, the answer schema, OpenAI-compatible and
/// Anthropic providers over HTTP, turns until a final output (the
/// `agent-loop` crate; the `loop` feature).
#[cfg(feature = "loop")]
#[cfg_attr(docsrs, doc(cfg(feature = "loop")))]
#[doc(inline)]
pub use agent_loop;
/// Recording a call's result at its `_outputPath` (the `agent-output` crate).
#[doc(inline)]
pub use agent_output as output;
/// Plans of calls in dependency order, and activities (the `agent-plan`
/// crate).
#[doc(inline)]
pub use agent_plan as plan;
/// What the model sees: chat messages and provider payloads (the
/// `agent-render` crate). The function [`payload()`] is its common case.
#[doc(inline)]
pub use agent_render as render;
/// Where contexts live: files and PostgreSQL (the `agent-store` crate).
#[doc(inline)]
pub use agent_store as store;
/// `†` expressions: parse, evaluate, resolve calls (the `agent-vars`
/// crate).
#[doc(inline)]
pub use agent_vars as vars;
/// Many workers, on any machines, running one plan stored in PostgreSQL
/// (the `agent-worker` crate; the `postgres` feature).
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
#[doc(inline)]
pub use agent_worker as worker;

/// What a small agent flow imports: `use agentctx::prelude::*;`.
pub mod prelude {
    pub use crate::{ContextExt, Failure, StoredContext, activity, payload};
    pub use agent_core::{Instance, Kind, Method, Path, Reference};
    pub use agent_core::{json, json::Value};
    pub use agent_data::{Context, Message};
    #[cfg(feature = "loop")]
    pub use agent_loop::{Anthropic, Finish, Loop, OpenAi, Tool};
    pub use agent_output::{Call, Clock, FixedClock, Outcome, SystemClock};
    pub use agent_plan::{Activities, Activity, Plan, Report, Status};
    pub use agent_render::{PayloadFormat, RenderMode};
}

/// What the model sees of `context`: rendered in `mode` (spec R28, R30)
/// and serialised in `format` (R31) as one JSON value — the payload for
/// `plain`, `openai` and `anthropic`, a JSON string for `text`.
///
/// ```
/// use agentctx::prelude::*;
/// let ctx = Context::from_json(r#"[{"type": "text", "text": "Hello"}]"#)?;
/// let openai = payload(&ctx, PayloadFormat::OpenAi, RenderMode::Merged)?;
/// assert_eq!(openai["messages"][0]["content"], json!("Hello"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// [`Error::Render`] when the provider cannot carry the rendered
/// conversation (an Anthropic payload opening with an assistant turn, a
/// role it has no place for).
pub fn payload(
    context: &data::Context,
    format: agent_render::PayloadFormat,
    mode: agent_render::RenderMode,
) -> Result<agent_core::json::Value> {
    let chat = agent_render::Renderer::new().render(context, mode);
    Ok(agent_render::payload(&chat, format)?.into_value())
}
