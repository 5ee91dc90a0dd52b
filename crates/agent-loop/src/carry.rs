//! The plan carried across turns and runs (spec R39c, decision D71): each
//! answer's calls are appended as a loop plan message, with the indices of
//! those still owed under `_pending` (not shown to the model, R29); a run
//! starts by running what the newest one still owes and is ready.

use crate::{Error, Result};
use agent_core::json::Value;
use agent_core::{Reference, json};
use agent_data::{Context, DataMessage, Message, PlanSort};
use agent_output::Call;

/// The newest loop plan of a context, as [`newest_loop_plan`] finds it.
pub(crate) struct Carried {
    /// Its message's index in the context.
    pub at: usize,
    /// Its calls.
    pub calls: Vec<Value>,
    /// The indices it marks as still owed; `None` when it marks none (a
    /// plan the application wrote, all of whose calls are owed).
    pub pending: Option<Vec<usize>>,
}

/// The newest loop plan of `context`.
pub(crate) fn newest_loop_plan(context: &Context) -> Option<Carried> {
    for index in (0..context.len()).rev() {
        if context.message_layer(index).is_some() {
            continue;
        }
        let Some(Message::Opaque(opaque)) = context.message(index) else {
            continue;
        };
        if opaque.plan_sort() != Some(PlanSort::Loop) {
            continue;
        }
        let fields = opaque.into_fields();
        let calls = match fields.get("plan") {
            Some(Value::Array(calls)) => calls.to_vec(),
            _ => Vec::new(),
        };
        // Anything but an array of indices marks nothing: all are owed.
        let pending = match fields.get("_pending") {
            Some(Value::Array(pending)) => Some(
                pending
                    .iter()
                    .filter_map(|i| i.as_u64().and_then(|i| usize::try_from(i).ok()))
                    .collect(),
            ),
            _ => None,
        };
        return Some(Carried {
            at: index,
            calls,
            pending,
        });
    }
    None
}

/// The calls of a carried plan still owed: those marked pending (all, when
/// none are marked). A call with an activity (held at a gate, or waiting
/// on one) is owed as long as it is marked: what its destination holds
/// says nothing about whether it ran, since an earlier write, another
/// call of the plan or the application may have put a value there. A
/// latent call is settled once a message appended after the plan writes
/// one of its destinations — the model evaluated it (protocol 012: a step
/// is done when its output path has a value written for it).
pub(crate) fn owed(
    context: &Context,
    plan: &Carried,
    explicit: &dyn Fn(&Call) -> bool,
) -> Vec<usize> {
    let calls = &plan.calls;
    let marked: Vec<usize> = match &plan.pending {
        Some(pending) => {
            let mut marked: Vec<usize> = pending
                .iter()
                .copied()
                .filter(|&i| i < calls.len())
                .collect();
            marked.sort_unstable();
            marked.dedup();
            marked
        }
        None => (0..calls.len()).collect(),
    };
    // What was written after the plan: `(kind, instance, path)` of each
    // data message since.
    let since: Vec<DataMessage> = (plan.at + 1..context.len())
        .filter_map(|i| match context.message(i) {
            Some(Message::Data(data)) => Some(data),
            _ => None,
        })
        .collect();
    marked
        .into_iter()
        .filter(|&i| {
            let Ok(call) = Call::parse(calls[i].clone()) else {
                // The turn's checks say what is wrong with it.
                return true;
            };
            if explicit(&call) {
                return true;
            }
            let written = |r: &Reference| {
                since.iter().any(|m| {
                    m.kind() == &r.kind
                        && (m.instance().is_none() || m.instance() == call.instance())
                        && m.destination().overlaps(&r.path)
                })
            };
            !call
                .output_path()
                .is_some_and(|p| p.outcomes().iter().flatten().any(written))
        })
        .collect()
}

/// True when the newest loop plan still owes a latent call: something only
/// the model can evaluate, so a run must go on asking rather than stop as
/// waiting for approvals.
pub(crate) fn owes_the_model(context: &Context, explicit: &dyn Fn(&Call) -> bool) -> bool {
    let Some(plan) = newest_loop_plan(context) else {
        return false;
    };
    owed(context, &plan, explicit)
        .into_iter()
        .any(|i| Call::parse(plan.calls[i].clone()).is_ok_and(|call| !explicit(&call)))
}

/// The loop plan message `{"type":"plan","plan":[CALL, …],"_pending":[I, …]}`.
pub(crate) fn plan_message(calls: Vec<Value>, pending: &[usize]) -> Result<Message> {
    let mut built = Message::from_value(json!({
        "type": "plan",
        "plan": calls,
        "_pending": pending,
    }))
    .map_err(Error::Record)?;
    built
        .pop()
        .ok_or_else(|| Error::Request("the plan message normalised to nothing".into()))
}
