//! `GET /api/plan`: the newest plan of the context at a point, each call
//! in the standing `agentctx status` uses (D78: inspect page).
//!
//! A worker plan of a PostgreSQL context, at the latest point, is shown
//! as `status` shows it: from the calls table (who holds a call, its
//! attempts, its last error, which tools live workers have). Otherwise the
//! log says it: a worker's result carries the call it answers (`_call`),
//! a loop plan marks what it still owes (`_pending`), and the readiness
//! rule every runner shares ([`agent_plan::standings`]) judges the rest.
//! A loop plan's calls are also held or rejected at approval gates as the
//! loop would hold or reject them (R39c).

use agent_core::json;
use agent_core::json::Value;
use agent_core::{Reference, Segment};
use agent_data::{Context, Message, PlanSort};
use agent_plan::{Known, Plan, Standing};
use agent_worker::PlanStatus;
use std::collections::HashMap;

/// The newest plan among the messages of `context` (the context as it was
/// at the point asked), with each call's standing; `null` without one.
/// `stored` is the calls table's view of the newest worker plan, asked
/// only at the latest point.
pub(super) fn plan_at(context: &Context, stored: Option<&PlanStatus>) -> Value {
    let Some((number, sort, fields)) = newest_plan(context) else {
        return Value::Null;
    };
    let (key, sort_name) = match sort {
        PlanSort::Loop => ("plan", "loop"),
        _ => ("calls", "worker"),
    };
    let refused = |raw: Option<&Value>, reason: String| json!({"number": number, "sort": sort_name, "calls": raw, "error": reason});
    let calls = match fields.get(key) {
        Some(Value::Array(calls)) => calls.to_vec(),
        Some(other) => {
            let reason = format!(
                "\"{key}\" must be an array of calls, found {}",
                agent_core::json_type(other)
            );
            return refused(Some(other), reason);
        }
        None => return refused(None, format!("it has no \"{key}\": an array of calls")),
    };
    let plan = match Plan::new(calls.clone()) {
        Ok(plan) => plan,
        Err(e) => return refused(Some(&Value::Array(calls.into())), e.to_string()),
    };
    let same_calls = |s: &&PlanStatus| {
        s.plan.calls().len() == plan.calls().len()
            && s.plan
                .calls()
                .iter()
                .zip(plan.calls())
                .all(|(a, b)| a.as_value() == b.as_value())
    };
    let entries = match stored
        .filter(|_| sort == PlanSort::Worker)
        .filter(same_calls)
    {
        Some(stored) => from_the_table(&plan, stored),
        None => from_the_log(context, &plan, number, sort, &fields),
    };
    json!({"number": number, "sort": sort_name, "calls": entries})
}

/// One call's entry: what `status --calls` says of it, and the call.
struct Entry {
    state: &'static str,
    reason: Option<String>,
    worker: Option<String>,
    attempts: Option<u32>,
    error: Option<String>,
    /// The message that answered it (carrying it as `_call`), when the log
    /// has one.
    result: Option<usize>,
}

fn entries(plan: &Plan, states: Vec<Entry>) -> Vec<Value> {
    states
        .into_iter()
        .enumerate()
        .map(|(index, entry)| {
            let call = &plan.calls()[index];
            json!({
                "index": index,
                "tool": call.tool(),
                "instance": call.instance().map(|i| i.as_str()),
                "state": entry.state,
                "reason": entry.reason,
                "dependsOn": plan.dependencies().get(index),
                "worker": entry.worker,
                "attempts": entry.attempts,
                "error": entry.error,
                "result": entry.result,
                "call": call.as_value(),
            })
        })
        .collect()
}

/// The calls as `status` shows them, from the calls table.
fn from_the_table(plan: &Plan, stored: &PlanStatus) -> Vec<Value> {
    let states = stored
        .calls()
        .into_iter()
        .map(|call| {
            let held = call.held;
            Entry {
                state: call.state,
                reason: call.reason,
                worker: held.as_ref().and_then(|h| h.worker.clone()),
                attempts: held.as_ref().map(|h| h.attempts),
                error: held.and_then(|h| h.error),
                result: None,
            }
        })
        .collect();
    entries(plan, states)
}

/// The calls as the log says they stand.
fn from_the_log(
    context: &Context,
    plan: &Plan,
    number: usize,
    sort: PlanSort,
    fields: &json::Map,
) -> Vec<Value> {
    let pending = pending(fields);
    // Each result answers one call, in order: two equal calls need two
    // results.
    let mut answers = answers(context, number);
    // A call a loop plan no longer owes takes no answer: an equal call
    // still owed may be the one answered after it.
    let owed = |index: usize| pending.as_ref().is_none_or(|owed| owed.contains(&index));
    let results: Vec<Option<usize>> = (0..plan.calls().len())
        .map(|index| {
            if !owed(index) {
                return None;
            }
            answers
                .get_mut(&text(plan.calls()[index].as_value()))
                .and_then(std::collections::VecDeque::pop_front)
        })
        .collect();
    let known: Vec<Known> = (0..plan.calls().len())
        .map(|index| match (&pending, results[index]) {
            (Some(owed), _) if !owed.contains(&index) => Known::Done,
            (_, Some(_)) => Known::Done,
            _ => Known::Open,
        })
        .collect();
    let standings = agent_plan::standings(plan, &plan.writes_after(), &known, context, &|_| true);
    let mut states: Vec<Entry> = standings
        .iter()
        .zip(results)
        .map(|(standing, result)| Entry {
            state: standing.name(),
            reason: match standing {
                Standing::Blocked { reason, .. } => Some(reason.clone()),
                _ => None,
            },
            worker: None,
            attempts: None,
            error: None,
            result: result.filter(|_| standing.name() == "done"),
        })
        .collect();
    if sort == PlanSort::Loop {
        gates(context, plan, &mut states);
    }
    unrecorded(plan, &mut states);
    entries(plan, states)
}

/// A call with no `_outputPath` writes nothing (D10: no path, nothing
/// appended), so the log cannot show that it ran: where the readiness rule
/// would call it ready, it is `unrecorded` instead, saying why (D107: the
/// inspector at scale).
fn unrecorded(plan: &Plan, states: &mut [Entry]) {
    for (entry, call) in states.iter_mut().zip(plan.calls()) {
        let writes = call
            .as_value()
            .as_object()
            .is_some_and(|fields| fields.contains_key("_outputPath"));
        if entry.state == "ready" && !writes {
            entry.state = "unrecorded";
            entry.reason = Some(
                "it writes nothing (no _outputPath): the log cannot show whether it ran".to_owned(),
            );
        }
    }
}

/// Holds and rejects a loop plan's calls at their approval gates (R39c):
/// held when every reference it misses is a gate, or when a call it
/// depends on is held; rejected when a gate it reads holds `false`, or a
/// call it depends on was rejected; failed when a gate holds anything but
/// `true`, `false` or nothing.
fn gates(context: &Context, plan: &Plan, states: &mut [Entry]) {
    for call in plan.write_order() {
        if states[call].state == "done" {
            continue;
        }
        let before = plan.dependencies().get(call).cloned().unwrap_or_default();
        let after = |name: &str| before.iter().copied().find(|&d| states[d].state == name);
        let verdict = if let Some(held) = after("held") {
            Some((
                "held",
                format!("held: it depends on call {held}, held at an approval gate"),
            ))
        } else if let Some(rejected) = after("rejected") {
            Some((
                "rejected",
                format!("rejected: it depends on call {rejected}, rejected"),
            ))
        } else {
            gate_verdict(context, &plan.calls()[call], states[call].state)
        };
        if let Some((state, reason)) = verdict {
            states[call].state = state;
            states[call].reason = Some(reason);
        }
    }
}

/// What the gates one call reads say of it, standing as `state` otherwise.
fn gate_verdict(
    context: &Context,
    call: &agent_output::Call,
    state: &str,
) -> Option<(&'static str, String)> {
    let reads = agent_vars::call_reads(call.as_value()).ok()?;
    let read = |r: &Reference| context.read(r, call.instance());
    if state == "blocked" {
        let missing: Vec<&Reference> = reads
            .references
            .iter()
            .filter(|r| read(r).is_none())
            .collect();
        if !missing.is_empty() && missing.iter().all(|r| is_gate(r)) {
            let names: Vec<String> = missing.iter().map(|r| r.to_string()).collect();
            return Some((
                "held",
                format!("held at an approval gate: missing {}", names.join(", ")),
            ));
        }
        return None;
    }
    for gate in reads.references.iter().filter(|r| is_gate(r)) {
        match read(gate) {
            None | Some(Value::Null | Value::Bool(true)) => {}
            Some(Value::Bool(false)) => {
                return Some(("rejected", format!("rejected at the approval gate {gate}")));
            }
            Some(other) => {
                return Some((
                    "failed",
                    format!(
                        "not run: the approval gate {gate} holds {}; a gate is true (run the \
                         calls it holds) or false (reject them)",
                        agent_core::json_type(other)
                    ),
                ));
            }
        }
    }
    None
}

/// True when `reference` is at or under `†state.approvals` (R39c).
fn is_gate(reference: &Reference) -> bool {
    reference.kind.as_str() == "state"
        && matches!(reference.path.segments().first(), Some(Segment::Key(k)) if k == "approvals")
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

/// The messages after the plan that answer each call (their `_call`, as
/// JSON text), oldest first: one pass over the log, however many calls
/// the plan has.
fn answers(context: &Context, plan: usize) -> HashMap<String, std::collections::VecDeque<usize>> {
    let mut answers: HashMap<String, std::collections::VecDeque<usize>> = HashMap::new();
    for index in plan + 1..context.len() {
        // Only a message whose text names `_call` is parsed; of a result
        // fanned out to several messages, only the first carries `_call`.
        let names = context
            .message_json(index)
            .is_some_and(|line| line.contains("\"_call\""));
        let call = names
            .then(|| context.message(index))
            .flatten()
            .and_then(|m| m.fields().get("_call").map(text));
        if let Some(call) = call {
            answers.entry(call).or_default().push_back(index);
        }
    }
    answers
}

/// A value's compact JSON text.
fn text(value: &Value) -> String {
    let mut out = String::new();
    json::write_into(&mut out, value, json::Style::Compact);
    out
}
