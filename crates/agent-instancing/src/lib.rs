//! # agent-instancing
//!
//! Many independent copies of a task in one context. One request can carry
//! a hundred comments to moderate, each its own instance (`"_instance":
//! "①"`), sharing one global input and one plan. Reads and writes are
//! already scoped by agent-data (spec R5, R6); this crate is the batch layer
//! on top, and the place where isolation is proven:
//!
//! - [`fresh_ids`] / [`nth_id`]: short ids (`①`…`⑳`, …) that never collide.
//! - [`assign_inputs`]: one new instance per input.
//! - [`split`], [`group_calls`], [`views`]: per-instance contexts, calls and views.
//! - [`resolve_batch`], [`apply_batch`]: many calls, each in its own
//!   instance scope, on all cores ([`Schedule::Parallel`]) with exactly the
//!   results and message order of [`Schedule::Sequential`].
//!
//! ```
//! use agent_core::Kind;
//! use agent_data::Context;
//! use agent_instancing::{apply_batch, assign_inputs, views, Schedule};
//! use agent_output::{Call, FixedClock, Outcome};
//! use agent_core::json;
//!
//! let mut ctx = Context::from_json(r#"[{"type":"input","data":{"policy":"be kind"}}]"#)?;
//! let (ids, _) = assign_inputs(&mut ctx, vec![json!({"comment": "great post"}), json!({"comment": "spam!!"})])?;
//! assert_eq!(ids.iter().map(|x| x.as_str()).collect::<Vec<_>>(), ["①", "②"]);
//!
//! let verdicts = ids.iter().zip(["ok", "remove"]).map(|(x, verdict)| {
//!     let call = json!({"_tool": "moderate", "_instance": x.as_str(), "_outputPath": "†state.verdict"});
//!     Ok((Call::parse(call)?, Outcome::Success(json!(verdict))))
//! }).collect::<Result<_, agent_output::Error>>()?;
//! let clock = FixedClock::parse("2026-01-01T00:00:00Z")?;
//! for result in apply_batch(&mut ctx, verdicts, &clock, Schedule::Parallel) {
//!     result?;
//! }
//! let state = views(&ctx, &Kind::new("state")?);
//! assert_eq!(state["①"], Some(json!({"verdict": "ok"})));
//! assert_eq!(state["②"], Some(json!({"verdict": "remove"})));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Rule numbers (R1–R41) are those of agentctx's normative spec,
//! `docs/spec.md` in the repository; `docs/concepts.md` introduces them.
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod batch;
mod error;
mod ids;

pub use batch::{Schedule, apply_batch, assign_inputs, group_calls, resolve_batch, split, views};
pub use error::{Error, Result};
pub use ids::{fresh_ids, nth_id};
