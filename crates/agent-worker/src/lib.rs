//! # agent-worker
//!
//! Many processes, on any machines, running one plan stored in a
//! PostgreSQL context together (spec R34d, decision D41). The plan is the
//! newest `plan` message of the context; each call's progress is a row of
//! the calls table ([`agent_store::PgCalls`]). A [`Worker`]:
//!
//! - **claims** ready calls — ready by the same rule the in-process runner
//!   uses ([`agent_plan::judge`]) — up to its concurrency, each as a
//!   lease it renews while its activity runs (**heartbeats**); a worker
//!   that dies leaves its calls to others once their leases run out;
//! - **commits** each result once, with the call marked done in the same
//!   transaction ([`agent_store::PgStore::commit_call`]), however often
//!   its activity ran — and only while its claim is the call's current
//!   one: a result from a claim another worker took over, or of a call
//!   that finished or failed meanwhile, is fenced off (D43: fencing);
//! - **retries** failed activities with backoff, and waits out a database
//!   that is down for its patience;
//! - sleeps between rounds until a notification, a finished activity, a
//!   lease or a backoff wakes it.
//!
//! [`plan_status`] says where every call stands, as `agentctx status`
//! prints it. Report shapes ([`WorkerReport`], [`Counts`], [`CallStatus`])
//! are serde types.
//!
//! ```
//! use agent_plan::Activities;
//! use agent_worker::{Worker, WorkerOptions, plan_status};
//! use agent_core::{json, json::Value};
//!
//! // Runs against the test database when there is one (CI sets it).
//! let Ok(server) = std::env::var("AGENTCTX_TEST_DATABASE_URL") else { return Ok(()) };
//! let url = format!("{server}?context=worker-doc-{}", std::process::id());
//! # let url = if server.contains('?') { format!("{server}&context=worker-doc-{}", std::process::id()) } else { url };
//! let mut store = agent_store::open(&url)?;
//! let mut context = agent_data::Context::new();
//! store.commit(&mut context, &agent_data::Message::from_value(json!({"type": "plan", "calls": [
//!     {"_tool": "greet", "name": "Ada", "_outputPath": "†state.greeting"}]}))?)?;
//!
//! let mut activities = Activities::new();
//! activities.register("greet", |call: &Value| Ok(json!(format!("Hello, {}!", call["name"].as_str().unwrap_or("?")))));
//! let mut options = WorkerOptions::new("doc-worker");
//! options.until_idle = true;
//! let report = Worker::new(url.clone(), activities, Box::new(agent_output::SystemClock), options).run()?;
//! assert_eq!(report.written, 1);
//! assert_eq!(plan_status(&url)?.counts().done, 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Rule numbers (R1–R41) are those of agentctx's normative spec,
//! `docs/spec.md` in the repository; `docs/workers.md` is the operator's
//! guide.
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod error;
mod judged;
mod listen;
mod options;
mod report;
mod schedule;
mod status;
mod worker;

pub use error::Error;
pub use options::WorkerOptions;
pub use report::{CallStatus, Counts, Held, PlanStatus, Progress, WorkerReport};
pub use status::plan_status;
pub use worker::Worker;
