//! The plan carried across turns and runs (spec R39c, decision D71): each
//! answer's calls are appended as a loop plan message, with the indices of
//! those still owed under `_pending` (not shown to the model, R29); a run
//! starts by running what the newest one still owes and is ready.

use crate::{Error, Result};
use agent_core::json::Value;
use agent_core::{Reference, json};
use agent_data::{Context, Message, PlanSort};
use agent_output::Call;

/// The newest loop plan of `context`: its calls, and the indices it marks
/// as still owed (`None` when it marks none: a plan the application wrote,
/// all of whose calls are owed).
pub(crate) fn newest_loop_plan(context: &Context) -> Option<(Vec<Value>, Option<Vec<usize>>)> {
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
            Some(Value::Array(calls)) => calls.clone(),
            _ => Vec::new(),
        };
        let pending = fields.get("_pending").map(|p| {
            p.as_array()
                .into_iter()
                .flatten()
                .filter_map(|i| i.as_u64().and_then(|i| usize::try_from(i).ok()))
                .collect()
        });
        return Some((calls, pending));
    }
    None
}

/// The calls of a carried plan still owed: marked pending (all, when none
/// are marked), and none of whose output destinations holds a value yet —
/// a step is evaluated when its output path has a value (protocol 012).
pub(crate) fn owed(context: &Context, calls: &[Value], pending: Option<&[usize]>) -> Vec<usize> {
    let marked: Vec<usize> = match pending {
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
    marked
        .into_iter()
        .filter(|&i| {
            let Ok(call) = Call::parse(calls[i].clone()) else {
                // The turn's checks say what is wrong with it.
                return true;
            };
            let written = |r: &Reference| {
                context
                    .read(r, call.instance())
                    .is_some_and(|v| !v.is_null())
            };
            !call
                .output_path()
                .is_some_and(|p| p.outcomes().iter().flatten().any(written))
        })
        .collect()
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
