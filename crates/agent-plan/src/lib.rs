//! # agent-plan
//!
//! A model's answer is often a list of calls wired together: `fetchUserProfile`
//! writes `†state.profile`, `summarizeProfile` reads it. This crate executes
//! such a list — a [`Plan`] — against a context:
//!
//! - **Order.** Call B depends on call A when a reference B reads and a
//!   destination A may write name the same kind and overlapping paths, in a
//!   scope where B sees A's writes (same instance, or A global). Cycles are
//!   errors naming their calls. [`Plan::waves`] is the dry run.
//! - **Activities.** An [`Activity`] per tool name runs the resolved call;
//!   closures work. Failures are values; panics are caught and reported.
//!   With the `async` feature, `Activities::register_async` takes an
//!   `AsyncActivity` (a future per call), driven by a small built-in executor.
//! - **Readiness.** [`judge`] is the one rule for whether a call may run
//!   now, and why not: the in-process runner, the loop's turn and the
//!   workers (crate `agent-worker`) all use it; [`standings`] applies it to
//!   a whole plan, and [`Standings`] keeps it from one look to the next,
//!   judging again only the calls a change can touch. [`Written`] says what a failed write means: a refusal
//!   fails the call, any other store failure stops the run.
//! - **Execution.** [`Plan::run`] runs every ready call (independent calls
//!   and instances concurrently), writes outcomes through agent-output in
//!   plan order, and repeats; the [`Report`] (a serde type) says per call:
//!   done, failed, blocked (missing references), skipped, or stopped (the
//!   store failed).
//!
//! ```
//! use agent_data::Context;
//! use agent_output::SystemClock;
//! use agent_plan::{Activities, Plan, Status};
//! use agent_core::{json, json::Value};
//!
//! let mut ctx = Context::from_json(r#"[{"type": "input", "data": {"id": 7}}]"#)?;
//! let plan = Plan::new(vec![
//!     json!({"_tool": "summarize", "text": "†state.profile.name", "_outputPath": "†state.summary"}),
//!     json!({"_tool": "fetch", "id": "†input.id", "_outputPath": "†state.profile"}),
//! ])?;
//! let mut activities = Activities::new();
//! activities.register("fetch", |call: &Value| Ok(json!({"name": format!("user {}", call["id"])})));
//! activities.register("summarize", |call: &Value| Ok(json!(format!("This is {}.", call["text"].as_str().unwrap_or("?")))));
//!
//! let report = plan.run(&mut ctx, &activities, &SystemClock);
//! assert!(report.all_done());
//! assert_eq!(ctx.read(&"†state.summary".parse()?, None), Some(&json!("This is user 7.")));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Rule numbers (R1–R41) are those of agentctx's normative spec,
//! `docs/spec.md` in the repository; `docs/concepts.md` introduces them.
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod activity;
#[cfg(feature = "async")]
mod async_activity;
mod error;
mod graph;
mod incremental;
mod plan;
mod readiness;
mod report;
mod run;

pub use activity::{Activities, Activity, Stop};
#[cfg(feature = "async")]
#[cfg_attr(docsrs, doc(cfg(feature = "async")))]
pub use async_activity::{ActivityFuture, AsyncActivity};
pub use error::{Error, Result};
pub use incremental::Standings;
pub use plan::Plan;
pub use readiness::{Blocker, Known, Standing, Verdict, Written, judge, standings};
pub use report::{CallReport, Report, Status, Taken};
pub use run::Progress;
