//! What a worker did, and where a stored plan stands: serde types, so the
//! JSON `agentctx worker` and `agentctx status` print is
//! `serde_json::to_value` of them.

use agent_plan::{Plan, Standing};
use agent_store::CallRow;
use serde::Serialize;

/// What a worker did; serialises as `{"ran", "written", "alreadyWritten",
/// "fenced", "stopped", "retried", "failed", "roundTrips"}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkerReport {
    /// Activities it ran.
    pub ran: usize,
    /// Results it wrote.
    pub written: usize,
    /// Results it did not write because the call already had one.
    pub already_written: usize,
    /// Outcomes it did not write, give back or give up because its claim was
    /// no longer the call's current one: another worker claimed the call
    /// after this one's lease ran out, or it finished or failed meanwhile
    /// (D43: fencing). Not tried again.
    pub fenced: usize,
    /// Activities it stopped because their claim was lost while they ran
    /// (a renewal found another worker holding the call): stopped as soon
    /// as the renewal said so, their results dropped.
    pub stopped: usize,
    /// Failed attempts it gave back to be tried again.
    pub retried: usize,
    /// Calls it gave up on.
    pub failed: usize,
    /// Requests it sent the database and had answered (its store's and its
    /// claims' connections; the listener only receives).
    pub round_trips: u64,
}

/// Where the newest plan of a context stands ([`plan_status`](crate::plan_status)).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PlanStatus {
    /// The plan message's row.
    pub row: u64,
    /// The plan.
    pub plan: Plan,
    /// Each call's standing, in plan order.
    pub standings: Vec<Standing>,
    /// Each call's row (absent before a worker first saw the plan).
    pub rows: Vec<Option<CallRow>>,
}

impl PlanStatus {
    /// The standing of the plan at `row`: each call's standing and row, in
    /// plan order (what [`plan_status`](crate::plan_status) reads).
    pub fn new(row: u64, plan: Plan, standings: Vec<Standing>, rows: Vec<Option<CallRow>>) -> Self {
        PlanStatus {
            row,
            plan,
            standings,
            rows,
        }
    }

    /// How many calls stand as `name` (`done`, `running`, `ready`,
    /// `blocked`, `failed`).
    pub fn count(&self, name: &str) -> usize {
        self.standings.iter().filter(|s| s.name() == name).count()
    }

    /// How many calls stand where.
    pub fn counts(&self) -> Counts {
        Counts::of(self.row, &self.standings)
    }

    /// Each call's state, in plan order: its tool, instance, standing, why
    /// it is blocked, the worker holding or having finished it, since when,
    /// its attempts and last error.
    pub fn calls(&self) -> Vec<CallStatus> {
        self.standings
            .iter()
            .enumerate()
            .map(|(index, standing)| {
                let call = &self.plan.calls()[index];
                let row = self.rows.get(index).cloned().flatten();
                CallStatus {
                    index,
                    tool: call.tool().unwrap_or_default().to_owned(),
                    instance: call.instance().map(|i| i.as_str().to_owned()),
                    state: standing.name(),
                    reason: match standing {
                        Standing::Blocked { reason, .. } => Some(reason.clone()),
                        _ => None,
                    },
                    held: row.map(|row| Held {
                        worker: row.worker,
                        since: row.claimed_at,
                        attempts: row.attempts,
                        error: row.error,
                    }),
                }
            })
            .collect()
    }
}

/// How many calls of a plan stand where; serialises as `{"plan", "total",
/// "done", "running", "ready", "blocked", "failed"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Counts {
    /// The plan message's row.
    pub plan: u64,
    /// Its calls.
    pub total: usize,
    /// Calls whose result is written.
    pub done: usize,
    /// Calls a worker holds.
    pub running: usize,
    /// Calls a worker may claim now.
    pub ready: usize,
    /// Calls that cannot run now, or never will.
    pub blocked: usize,
    /// Calls given up.
    pub failed: usize,
}

impl Counts {
    /// The counts of the plan at `row` whose calls stand as `standings`.
    pub(crate) fn of(row: u64, standings: &[Standing]) -> Counts {
        let count = |name: &str| standings.iter().filter(|s| s.name() == name).count();
        Counts {
            plan: row,
            total: standings.len(),
            done: count("done"),
            running: count("running"),
            ready: count("ready"),
            blocked: count("blocked"),
            failed: count("failed"),
        }
    }
}

/// Where a running worker stands, told to [`Worker::run_observed`]'s
/// observer after each round in which it changed.
///
/// [`Worker::run_observed`]: crate::Worker::run_observed
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Progress {
    /// Where the plan's calls stand, as every worker sees them.
    pub plan: Counts,
    /// Activities running in this worker now.
    pub here: usize,
    /// What this worker did so far.
    pub did: WorkerReport,
}

/// One call of a stored plan; serialises as `{"index", "tool", "instance",
/// "state", "reason"?, "worker", "since", "attempts", "error"?}` (the last
/// four once a worker has seen the plan).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct CallStatus {
    /// Its position in the plan.
    pub index: usize,
    /// Its `_tool`.
    pub tool: String,
    /// Its `_instance`.
    pub instance: Option<String>,
    /// Its standing: `done`, `running`, `ready`, `blocked` or `failed`.
    pub state: &'static str,
    /// Why it is blocked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Its row in the calls table.
    #[serde(flatten)]
    pub held: Option<Held>,
}

/// Who holds or held a call, from its row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Held {
    /// The worker holding it, or that wrote or gave it up.
    pub worker: Option<String>,
    /// When it was last claimed (RFC 3339).
    pub since: Option<String>,
    /// How many times it was claimed.
    pub attempts: u32,
    /// The last attempt's error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
