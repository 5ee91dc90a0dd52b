//! A validated plan and its execution in waves.

use crate::graph::{self, Access};
use crate::{Activities, Error, Result};
use agent_core::Reference;
use agent_data::{Context, Message};
use agent_output::{Call, Clock, Outcome};
use agent_store::Append;
use agent_vars::Resolution;
use rayon::prelude::*;
use serde_json::{Value, json};

/// A list of calls wired together through references and output paths,
/// checked and ordered: B runs after A when B reads what A may write.
///
/// ```
/// use agent_plan::Plan;
/// use serde_json::json;
///
/// let plan = Plan::new(vec![
///     json!({"_tool": "summarize", "text": "†state.profile", "_outputPath": "†state.summary"}),
///     json!({"_tool": "fetchUserProfile", "id": "†input.id", "_outputPath": "†state.profile"}),
/// ])?;
/// assert_eq!(plan.waves(), [vec![1], vec![0]]);
/// # Ok::<(), agent_plan::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Plan {
    calls: Vec<Call>,
    deps: Vec<Vec<usize>>,
    waves: Vec<Vec<usize>>,
}

/// Which of a call's outcomes its activity took (R20, R22).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Taken {
    /// Success: outcome 0.
    Success,
    /// A failure: outcome 1 (handled), or unhandled when there is none.
    Failure,
    /// An outcome the activity chose.
    Chosen(usize),
    /// A whole message returned by the activity (R22).
    Message,
}

impl Taken {
    fn of(outcome: &Outcome) -> (Taken, Option<Value>) {
        match outcome {
            Outcome::Success(_) => (Taken::Success, None),
            Outcome::Failure(value) => (Taken::Failure, Some(value.clone())),
            Outcome::Chosen { index, .. } => (Taken::Chosen(*index), None),
            Outcome::Message(_) => (Taken::Message, None),
        }
    }

    /// `success`, `failure`, `chosen` or `message`.
    pub fn name(self) -> &'static str {
        match self {
            Taken::Success => "success",
            Taken::Failure => "failure",
            Taken::Chosen(_) => "chosen",
            Taken::Message => "message",
        }
    }

    /// The position of the outcome in `_outputPath` (none for a message).
    pub fn index(self) -> Option<usize> {
        match self {
            Taken::Success => Some(0),
            Taken::Failure => Some(1),
            Taken::Chosen(index) => Some(index),
            Taken::Message => None,
        }
    }
}

/// How one call of a plan ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    /// The activity ran and its outcome was written (or there was no
    /// `_outputPath`, R21). A handled failure is done (D17).
    Done {
        /// Which outcome it took.
        taken: Taken,
        /// The places it wrote, one per appended message, as
        /// `_outputPath` destinations (`†state.score`); empty when nothing
        /// was appended.
        paths: Vec<String>,
        /// The activity's failure value, when it took its failure outcome.
        failure: Option<Value>,
    },
    /// An unhandled failure, a refused write, a missing activity, or a panic.
    Failed {
        /// What went wrong.
        error: String,
        /// The activity's failure value, when the activity failed.
        failure: Option<Value>,
    },
    /// Its dependencies finished but references are still missing (R18).
    Blocked {
        /// The missing references.
        missing: Vec<String>,
    },
    /// Not run because a call it depends on did not finish as done.
    Skipped {
        /// That call.
        because: usize,
    },
}

/// The result of one call.
#[derive(Debug, Clone, PartialEq)]
pub struct CallReport {
    /// Position in the plan.
    pub index: usize,
    /// Its `_tool` (empty when it has none).
    pub tool: String,
    /// The wave it ran in (`None` if it never ran).
    pub wave: Option<usize>,
    /// How it ended.
    pub status: Status,
}

/// What running a plan did, one report per call in plan order.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The calls.
    pub calls: Vec<CallReport>,
}

impl Report {
    /// True when every call is done.
    pub fn all_done(&self) -> bool {
        self.calls
            .iter()
            .all(|c| matches!(c.status, Status::Done { .. }))
    }

    /// `{"calls": [{"index", "tool", "status", …}]}`.
    pub fn to_json(&self) -> Value {
        let calls = self.calls.iter().map(|c| {
            let mut entry = json!({"index": c.index, "tool": c.tool, "wave": c.wave});
            let (status, mut detail) = match &c.status {
                Status::Done { taken, paths, .. } => (
                    "done",
                    json!({"outcome": taken.name(), "outcomeIndex": taken.index(), "paths": paths}),
                ),
                Status::Failed { error, .. } => ("failed", json!({"error": error})),
                Status::Blocked { missing } => ("blocked", json!({"missing": missing})),
                Status::Skipped { because } => ("skipped", json!({"because": because})),
            };
            if let (
                Status::Done {
                    failure: Some(value),
                    ..
                }
                | Status::Failed {
                    failure: Some(value),
                    ..
                },
                Value::Object(d),
            ) = (&c.status, &mut detail)
            {
                d.insert("failure".into(), value.clone());
            }
            entry["status"] = status.into();
            if let (Value::Object(e), Value::Object(d)) = (&mut entry, detail) {
                e.extend(d);
            }
            entry
        });
        json!({"calls": calls.collect::<Vec<_>>()})
    }
}

impl Plan {
    /// Checks every call (object, `_instance`, parameter syntax,
    /// `_outputPath`, `_outputMethod`) and orders them; a cycle is an error
    /// naming its calls.
    pub fn new(calls: Vec<Value>) -> Result<Plan> {
        let calls: Vec<Call> = calls
            .into_iter()
            .enumerate()
            .map(|(index, call)| {
                Call::parse(call).map_err(|e| Error::BadCall {
                    index,
                    reason: e.to_string(),
                })
            })
            .collect::<Result<_>>()?;
        let accesses: Vec<Access> = calls
            .iter()
            .enumerate()
            .map(|(i, c)| graph::access(i, c))
            .collect::<Result<_>>()?;
        let deps = graph::dependencies(&accesses);
        let waves = graph::waves(&deps)?;
        Ok(Plan { calls, deps, waves })
    }

    /// The calls, parsed.
    pub fn calls(&self) -> &[Call] {
        &self.calls
    }

    /// The calls each call waits for.
    pub fn dependencies(&self) -> &[Vec<usize>] {
        &self.deps
    }

    /// The waves the calls would run in if every call succeeded (dry run).
    pub fn waves(&self) -> &[Vec<usize>] {
        &self.waves
    }

    /// The tools the plan calls that have no activity in `activities`, in
    /// order of first use, each once: running the plan would fail those
    /// calls.
    pub fn tools_without_activity(&self, activities: &Activities) -> Vec<String> {
        let mut missing: Vec<String> = Vec::new();
        for call in &self.calls {
            let tool = call.tool().unwrap_or_default();
            if activities.get(tool).is_none() && !missing.iter().any(|m| m == tool) {
                missing.push(tool.to_owned());
            }
        }
        missing
    }

    /// Runs the plan against `context`: every ready call — its dependencies
    /// finished and its references present — runs, activities of a wave
    /// concurrently; outcomes are written through agent-output in plan order
    /// (so appended messages are deterministic); repeat until nothing is
    /// ready.
    ///
    /// `target` is a [`Context`] in memory, or a stored context
    /// ([`agent_store::Stored`]): then each result is committed as it is
    /// written — validated against the stored context as it is then, other
    /// writers' appends included — and later calls read what it holds.
    pub fn run(
        &self,
        target: &mut (impl Append + ?Sized),
        activities: &Activities,
        clock: &(dyn Clock + Sync),
    ) -> Report {
        let n = self.calls.len();
        let mut status: Vec<Option<Status>> = vec![None; n];
        let mut wave_of: Vec<Option<usize>> = vec![None; n];
        let mut wave = 0;
        loop {
            // Calls whose dependencies have all finished: skipped when one of
            // those did not end as done, else ready.
            let mut ready = Vec::new();
            let mut skipped = false;
            for call in 0..n {
                let deps = &self.deps[call];
                if status[call].is_some() || deps.iter().any(|d| status[*d].is_none()) {
                    continue;
                }
                match deps
                    .iter()
                    .find(|d| !matches!(status[**d], Some(Status::Done { .. })))
                {
                    Some(&because) => {
                        status[call] = Some(Status::Skipped { because });
                        skipped = true;
                    }
                    None => ready.push(call),
                }
            }
            if ready.is_empty() {
                // The graph is acyclic, so a round without progress means done.
                if skipped {
                    continue;
                }
                break;
            }
            let shared: &Context = target.context();
            let ran: Vec<(usize, std::result::Result<Outcome, Status>)> = ready
                .par_iter()
                .map(|&call| (call, self.run_call(call, shared, activities)))
                .collect();
            for (call, outcome) in ran {
                wave_of[call] = Some(wave);
                status[call] = Some(match outcome {
                    Err(status) => status,
                    Ok(outcome) => {
                        let (taken, failure) = Taken::of(&outcome);
                        match agent_output::apply(target, &self.calls[call], outcome, clock) {
                            Ok(appended) => Status::Done {
                                taken,
                                paths: appended.iter().filter_map(written_path).collect(),
                                failure,
                            },
                            Err(e) => Status::Failed {
                                error: e.to_string(),
                                failure,
                            },
                        }
                    }
                });
            }
            wave += 1;
        }
        let calls = status
            .into_iter()
            .enumerate()
            .map(|(index, status)| CallReport {
                index,
                tool: self.calls[index].tool().unwrap_or_default().to_owned(),
                wave: wave_of[index],
                status: status.unwrap_or(Status::Failed {
                    error: "never became ready".into(),
                    failure: None,
                }),
            })
            .collect();
        Report { calls }
    }

    /// Resolves and runs one call; the outcome to write, or why not.
    fn run_call(
        &self,
        call: usize,
        context: &Context,
        activities: &Activities,
    ) -> std::result::Result<Outcome, Status> {
        let failed = |error: String| Status::Failed {
            error,
            failure: None,
        };
        let call = &self.calls[call];
        let resolved = match call.resolve(context) {
            Ok(Resolution::Ready(resolved)) => resolved,
            Ok(Resolution::Pending(missing)) => {
                return Err(Status::Blocked {
                    missing: missing.iter().map(ToString::to_string).collect(),
                });
            }
            Err(e) => return Err(failed(e.to_string())),
        };
        activities
            .run_caught(call.tool().unwrap_or_default(), &resolved)
            .map_err(failed)
    }
}

/// Where an appended message wrote: its `_outputPath` destination, or for
/// a message returned whole (R22) without one, the reference to what it
/// wrote in its kind.
fn written_path(message: &Message) -> Option<String> {
    let data = message.as_data()?;
    Some(
        match data.fields().get("_outputPath").and_then(Value::as_str) {
            Some(destination) => destination.to_owned(),
            None => Reference::new(data.kind().clone(), data.destination().clone()).to_string(),
        },
    )
}
