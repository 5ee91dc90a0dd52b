//! `GET /api/plan`: the newest plan of the context at a point, each call
//! in the standing `agentctx status` uses (decision D78).
//!
//! What the log says is enough for most of it: a worker's result carries
//! the call it answers (`_call`), a loop plan marks what it still owes
//! (`_pending`), and the readiness rule every runner shares
//! ([`agent_plan::standings`]) says of the rest whether it is ready or
//! blocked, and on what. Who holds a call, its attempts and its last error
//! live only in the calls table of a PostgreSQL context, so they are shown
//! at the latest point only, and only when that table's newest plan is the
//! one the log shows.

use agent_core::json;
use agent_core::json::Value;
use agent_data::{Context, Message, PlanSort};
use agent_plan::{Known, Plan, Standing};
use agent_worker::PlanStatus;
use std::collections::HashSet;

/// The references under which a person approves a call (spec R39c).
const GATES: &str = "state.approvals";

/// The newest plan among the messages of `context` (the context as it was
/// at the point asked), with each call's standing; `null` without one.
/// `stored` is the calls table's view of the newest worker plan, when
/// there is one to ask.
pub(super) fn plan_at(context: &Context, stored: Option<&PlanStatus>) -> Value {
    let Some((number, sort, fields)) = newest_plan(context) else {
        return Value::Null;
    };
    let (key, sort_name) = match sort {
        PlanSort::Loop => ("plan", "loop"),
        _ => ("calls", "worker"),
    };
    let calls = match fields.get(key) {
        Some(Value::Array(calls)) => calls.clone(),
        _ => Vec::new(),
    };
    let plan = match Plan::new(calls.clone()) {
        Ok(plan) => plan,
        Err(e) => {
            return json!({"number": number, "sort": sort_name, "calls": calls,
                          "error": e.to_string()});
        }
    };
    let pending = pending(&fields);
    let answered = answered(context, number);
    let stored = stored.filter(|s| {
        sort == PlanSort::Worker
            && s.plan.calls().len() == plan.calls().len()
            && s.plan
                .calls()
                .iter()
                .zip(plan.calls())
                .all(|(a, b)| a.as_value() == b.as_value())
    });
    let known: Vec<Known> = (0..plan.calls().len())
        .map(|index| {
            if let Some(Some(row)) = stored.map(|s| s.standings.get(index)) {
                return match row {
                    Standing::Done => Known::Done,
                    Standing::Failed => Known::Failed,
                    Standing::Running => Known::Running,
                    Standing::Ready | Standing::Blocked { .. } => Known::Open,
                };
            }
            match &pending {
                Some(owed) if !owed.contains(&index) => Known::Done,
                _ if answered.contains(&text(plan.calls()[index].as_value())) => Known::Done,
                _ => Known::Open,
            }
        })
        .collect();
    let standings = agent_plan::standings(&plan, &plan.writes_after(), &known, context, &|_| true);
    let held = stored.map(PlanStatus::calls);
    let entries: Vec<Value> = standings
        .iter()
        .enumerate()
        .map(|(index, standing)| {
            let call = &plan.calls()[index];
            let mut state = standing.name();
            let mut reason = match standing {
                Standing::Blocked { reason, .. } => Some(reason.clone()),
                _ => None,
            };
            if reason.as_deref().is_some_and(waits_for_approval) {
                state = "held";
                reason = reason.map(|r| format!("held at an approval gate: {r}"));
            }
            let row = held.as_ref().and_then(|h| h.get(index));
            let row = row.and_then(|r| r.held.as_ref());
            json!({
                "index": index,
                "tool": call.tool(),
                "instance": call.instance().map(|i| i.as_str()),
                "state": state,
                "reason": reason,
                "dependsOn": plan.dependencies().get(index),
                "worker": row.and_then(|r| r.worker.as_deref()),
                "attempts": row.map(|r| r.attempts),
                "error": row.and_then(|r| r.error.as_deref()),
                "call": call.as_value(),
            })
        })
        .collect();
    json!({"number": number, "sort": sort_name, "calls": entries})
}

/// The newest plan message: its number, its sort and its fields.
fn newest_plan(context: &Context) -> Option<(usize, PlanSort, json::Map)> {
    (0..context.len()).rev().find_map(|index| {
        // Data messages are not plans, and only a message whose text names
        // a plan is parsed.
        let named = context
            .message_json(index)
            .is_some_and(|line| line.contains("\"plan\""));
        if context.message_layer(index).is_some() || !named {
            return None;
        }
        let Some(Message::Opaque(opaque)) = context.message(index) else {
            return None;
        };
        let sort = opaque.plan_sort()?;
        Some((index, sort, opaque.into_fields()))
    })
}

/// A loop plan's `_pending`: the calls it still owes; `None` (all owed)
/// when it marks none.
fn pending(fields: &json::Map) -> Option<Vec<usize>> {
    match fields.get("_pending") {
        Some(Value::Array(owed)) => Some(
            owed.iter()
                .filter_map(|i| i.as_u64().and_then(|i| usize::try_from(i).ok()))
                .collect(),
        ),
        _ => None,
    }
}

/// The calls the messages after the plan's answer (their `_call`), as
/// JSON text: one pass over the log, however many calls the plan has.
fn answered(context: &Context, plan: usize) -> HashSet<String> {
    (plan + 1..context.len())
        // Only a message whose text names `_call` is parsed.
        .filter(|&index| {
            context
                .message_json(index)
                .is_some_and(|line| line.contains("\"_call\""))
        })
        .filter_map(|index| context.message(index)?.fields().get("_call").map(text))
        .collect()
}

/// A value's compact JSON text.
fn text(value: &Value) -> String {
    let mut out = String::new();
    json::write_into(&mut out, value, false);
    out
}

/// True when a blocked call's reason is a missing approval.
fn waits_for_approval(reason: &str) -> bool {
    reason.contains(&format!("†{GATES}"))
}
