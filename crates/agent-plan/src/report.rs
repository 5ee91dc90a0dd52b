//! What running a plan in process did: one report per call, serialisable
//! as the JSON `agentctx run` prints.

use agent_core::json::Value;
use agent_output::Outcome;
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

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
    pub(crate) fn of(outcome: &Outcome) -> (Taken, Option<Value>) {
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
#[non_exhaustive]
pub enum Status {
    /// The activity ran and its outcome was written (or there was no
    /// `_outputPath`, R21). A handled failure is done (D17: run statuses).
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
    /// Not written, or not run: the store failed, so the run stopped
    /// (D42: one readiness rule). Nothing of the call is in the log; running the plan
    /// again runs it.
    Stopped {
        /// The store's error.
        error: String,
    },
}

impl Status {
    /// `done`, `failed`, `blocked`, `skipped` or `stopped`.
    pub fn name(&self) -> &'static str {
        match self {
            Status::Done { .. } => "done",
            Status::Failed { .. } => "failed",
            Status::Blocked { .. } => "blocked",
            Status::Skipped { .. } => "skipped",
            Status::Stopped { .. } => "stopped",
        }
    }
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

/// `{"index", "tool", "wave", "status", …}`: the status's own fields
/// follow its name (`outcome`, `outcomeIndex`, `paths`, `failure`;
/// `error`; `missing`; `because`).
impl Serialize for CallReport {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("index", &self.index)?;
        map.serialize_entry("tool", &self.tool)?;
        map.serialize_entry("wave", &self.wave)?;
        map.serialize_entry("status", self.status.name())?;
        let failure = match &self.status {
            Status::Done {
                taken,
                paths,
                failure,
            } => {
                map.serialize_entry("outcome", taken.name())?;
                map.serialize_entry("outcomeIndex", &taken.index())?;
                map.serialize_entry("paths", paths)?;
                failure
            }
            Status::Failed { error, failure } => {
                map.serialize_entry("error", error)?;
                failure
            }
            Status::Blocked { missing } => {
                map.serialize_entry("missing", missing)?;
                &None
            }
            Status::Skipped { because } => {
                map.serialize_entry("because", because)?;
                &None
            }
            Status::Stopped { error } => {
                map.serialize_entry("error", error)?;
                &None
            }
        };
        if let Some(value) = failure {
            map.serialize_entry("failure", value)?;
        }
        map.end()
    }
}

/// What running a plan did, one report per call in plan order; serialises
/// as `{"calls": [...]}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
}
