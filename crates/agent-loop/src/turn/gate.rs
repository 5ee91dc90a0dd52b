//! Approval gates (spec R39c, decision D70): any path under
//! `†state.approvals` holds the calls that read it, directly or through
//! the calls they depend on, until a person writes it — `true` runs them,
//! `false` rejects them. A held call is waiting, not failed: it is carried
//! in the plan and named once, when the run ends.

use crate::turn::guard::GATES;
use agent_core::{Instance, Reference};
use agent_core::{json, json::Value};
use agent_data::Context;
use agent_output::Call;
use std::collections::BTreeMap;

/// True when `reference` is at or under `†state.approvals`.
pub(crate) fn is_gate(reference: &Reference) -> bool {
    let (kind, key) = GATES;
    reference.kind.as_str() == kind
        && reference
            .path
            .segments()
            .first()
            .is_some_and(|s| s.as_key() == key)
}

/// The gates one call is held or rejected by, each with the instance it
/// is read in.
pub(crate) type GateSet = std::collections::BTreeSet<(String, Option<Instance>)>;

/// What the gates a ready call reads say: `Ok(rejected)` — the gates
/// holding `false` (none: it may run) — or `Err(text)` when a gate holds
/// something else.
pub(crate) fn read_gates(call: &Call, context: &Context) -> Result<GateSet, String> {
    let mut rejected = GateSet::new();
    let Ok(reads) = agent_vars::call_reads(call.as_value()) else {
        return Ok(rejected);
    };
    for reference in reads.references.iter().filter(|r| is_gate(r)) {
        match context.read(reference, call.instance()) {
            None | Some(Value::Null | Value::Bool(true)) => {}
            Some(Value::Bool(false)) => {
                rejected.insert((reference.to_string(), call.instance().cloned()));
            }
            Some(other) => {
                return Err(format!(
                    "not run: the approval gate {reference} holds {}; a gate is true (run the calls it holds) or false (reject them)",
                    agent_core::json_type(other)
                ));
            }
        }
    }
    Ok(rejected)
}

/// The gates among `missing` when every one of them is a gate; `None`
/// when one is not (a reference nothing will write: the call is broken,
/// however it is gated).
pub(crate) fn only_gates(missing: &[Reference], instance: Option<&Instance>) -> Option<GateSet> {
    if missing.is_empty() || !missing.iter().all(is_gate) {
        return None;
    }
    Some(
        missing
            .iter()
            .map(|r| (r.to_string(), instance.cloned()))
            .collect(),
    )
}

/// One gate and the tools of the calls it holds (or rejected).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Gate {
    /// The gate as a reference, `†state.approvals.send`.
    pub gate: String,
    /// The instance it is read in, for a call with `_instance`.
    pub instance: Option<Instance>,
    /// The tools of the calls it holds, each once, in plan order.
    pub tools: Vec<String>,
}

impl Gate {
    /// `{"gate": …, "tools": […]}`, with `"instance"` when there is one.
    pub fn to_json(&self) -> Value {
        let mut value = json!({"gate": self.gate, "tools": self.tools});
        if let (Some(instance), Value::Object(fields)) = (&self.instance, &mut value) {
            fields.insert("instance".into(), json!(instance.as_str()));
        }
        value
    }
}

impl std::fmt::Display for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.gate)?;
        if let Some(instance) = &self.instance {
            write!(f, " (instance {instance})")?;
        }
        write!(f, " holds {}", self.tools.join(", "))
    }
}

/// What a run leaves at approval gates: the calls still waiting, and those
/// a gate holding `false` rejected in this run (never run). Each gate is
/// named once.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Gates {
    /// Gates nobody has written yet, with the calls they hold.
    pub waiting: Vec<Gate>,
    /// Gates written `false`, with the calls they rejected.
    pub rejected: Vec<Gate>,
}

impl Gates {
    /// True when no call waits at a gate and none was rejected.
    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty() && self.rejected.is_empty()
    }

    /// `{"waiting": [GATE, …], "rejected": [GATE, …]}`, each GATE as
    /// [`Gate::to_json`].
    pub fn to_json(&self) -> Value {
        let list = |gates: &[Gate]| Value::Array(gates.iter().map(Gate::to_json).collect());
        json!({"waiting": list(&self.waiting), "rejected": list(&self.rejected)})
    }
}

/// Gathers gates and the tools they hold, each once, in the order met.
#[derive(Debug, Default, Clone)]
pub(crate) struct Tally {
    order: Vec<(String, Option<Instance>)>,
    tools: BTreeMap<(String, Option<Instance>), Vec<String>>,
}

impl Tally {
    /// Notes that `gates` hold a call of `tool`.
    pub(crate) fn add(&mut self, gates: &GateSet, tool: &str) {
        for gate in gates {
            let tools = self.tools.entry(gate.clone()).or_insert_with(|| {
                self.order.push(gate.clone());
                Vec::new()
            });
            if !tools.iter().any(|t| t == tool) {
                tools.push(tool.to_owned());
            }
        }
    }

    /// True when no gate was noted.
    pub(crate) fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// Notes what `other` noted, after what this one did.
    pub(crate) fn extend(&mut self, other: &Tally) {
        for gate in other.gates() {
            let set: GateSet = std::iter::once((gate.gate, gate.instance)).collect();
            for tool in &gate.tools {
                self.add(&set, tool);
            }
        }
    }

    /// The gates, in the order first met.
    pub(crate) fn gates(&self) -> Vec<Gate> {
        self.order
            .iter()
            .map(|key| Gate {
                gate: key.0.clone(),
                instance: key.1.clone(),
                tools: self.tools.get(key).cloned().unwrap_or_default(),
            })
            .collect()
    }
}

/// What an application decides for a ready call before it runs
/// ([`Loop::run_confirmed`](crate::Loop::run_confirmed)): run it as it is,
/// run another call in its place (what runs and what its result records
/// as `_call`), or skip it (not run; the model is told).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Confirm {
    /// Run the call as the model wrote it.
    Run,
    /// Run this call instead: resolved and checked against its tool's
    /// schema like the model's; its dependencies stay the original's.
    Edit(Call),
    /// Do not run it: an error tells the model the application skipped
    /// it, and the calls depending on it are not run.
    Skip,
}
