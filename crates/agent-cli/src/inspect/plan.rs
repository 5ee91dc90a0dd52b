//! `GET /api/plan`: the newest plan of the context at a point, each call
//! in the standing `agentctx status` uses (D78: inspect page).
//!
//! A worker plan of a PostgreSQL context, at the latest point, is shown
//! as `status` shows it: from the calls table (who holds a call, its
//! attempts, its last error, which tools live workers have). Otherwise the
//! log says it: a result carries the call it answers (`_call`) and when it
//! ran, a call that writes nothing leaves a `ran` record (R21b), a loop
//! plan marks what it still owes (`_pending`), and the readiness
//! rule every runner shares ([`agent_plan::standings`]) judges the rest.
//! A loop plan's calls are also held or rejected at approval gates as the
//! loop would hold or reject them (R39c).

use agent_core::json;
use agent_core::json::Value;
use agent_core::{Reference, Segment};
use agent_data::{Context, Message, PlanSort};
use agent_plan::{Known, Plan, Standing};
use agent_worker::PlanStatus;
use std::collections::{HashMap, VecDeque};

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
        Some(stored) => from_the_table(context, number, &plan, stored),
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
    /// When it ran, as that message says.
    ran: Timing,
}

/// When a call ran, as its answering message records it (R21b): its
/// activity's start (`_started`), the write (`_date`) and how long between,
/// in milliseconds; whether a call that writes nothing failed.
#[derive(Default)]
struct Timing {
    started: Option<String>,
    ended: Option<String>,
    ms: Option<u64>,
    failed: bool,
}

impl Timing {
    /// What message `index` records of the run, filling `entry`'s worker
    /// and attempt when the calls table did not.
    fn of(context: &Context, index: usize, entry: &mut Entry) {
        let Some(message) = context.message(index) else {
            return;
        };
        let fields = message.fields();
        let date = |key: &str| fields.get(key).and_then(Value::as_str).map(str::to_owned);
        let (started, ended) = (date("_started"), date("_date"));
        let ms = took_ms(fields);
        if entry.worker.is_none() {
            entry.worker = date("_worker");
        }
        if entry.attempts.is_none() {
            entry.attempts = fields
                .get("_attempt")
                .and_then(Value::as_u64)
                .and_then(|a| u32::try_from(a).ok());
        }
        let failed = fields.get("_failed") == Some(&Value::Bool(true));
        if failed && entry.error.is_none() {
            entry.error = Some("it failed; with no _outputPath its failure is not written".into());
        }
        entry.ran = Timing {
            started,
            ended,
            ms,
            failed,
        };
    }
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
                "started": entry.ran.started,
                "ended": entry.ran.ended,
                "ms": entry.ran.ms,
                "failed": entry.ran.failed,
                "call": call.as_value(),
            })
        })
        .collect()
}

/// How long the run a message records took, in milliseconds: from its
/// `_started` to its `_date` (R21b); `None` when it does not say.
pub(super) fn took_ms(fields: &json::Map) -> Option<u64> {
    let time = |key: &str| {
        let clock = agent_output::FixedClock::parse(fields.get(key)?.as_str()?).ok()?;
        Some(agent_output::Clock::now(&clock))
    };
    let took = time("_date")?.duration_since(time("_started")?).ok()?;
    Some(u64::try_from(took.as_millis()).unwrap_or(u64::MAX))
}

/// The calls as `status` shows them, from the calls table; a call done
/// is linked to its answer in the log.
fn from_the_table(
    context: &Context,
    number: usize,
    plan: &Plan,
    stored: &PlanStatus,
) -> Vec<Value> {
    let mut answers = answers(context, number + 1..context.len());
    let mut states: Vec<Entry> = stored
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
                ran: Timing::default(),
            }
        })
        .collect();
    for (entry, call) in states.iter_mut().zip(plan.calls()) {
        if entry.state == "done" {
            entry.result = answers
                .get_mut(&text(call.as_value()))
                .and_then(VecDeque::pop_front);
        }
        if let Some(index) = entry.result {
            Timing::of(context, index, entry);
        }
    }
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
    let mut after = answers(context, number + 1..context.len());
    // A loop plan is appended after the results of its turn (R39c): a
    // call it no longer owes was answered between the loop plan before it
    // and it; a call still owed, after it.
    let mut before = match sort {
        PlanSort::Loop => answers(context, previous_loop_plan(context, number)..number),
        _ => HashMap::new(),
    };
    let owed = |index: usize| pending.as_ref().is_none_or(|owed| owed.contains(&index));
    // After the plan the oldest answer is the first; before it, the
    // newest (an older one may be another plan's).
    let results: Vec<Option<usize>> = (0..plan.calls().len())
        .map(|index| {
            let call = text(plan.calls()[index].as_value());
            if owed(index) {
                after.get_mut(&call).and_then(VecDeque::pop_front)
            } else {
                before.get_mut(&call).and_then(VecDeque::pop_back)
            }
        })
        .collect();
    let known: Vec<Known> = (0..plan.calls().len())
        .map(|index| {
            if !owed(index) || results[index].is_some() {
                Known::Done
            } else {
                Known::Open
            }
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
            ran: Timing::default(),
        })
        .collect();
    for entry in &mut states {
        if let Some(index) = entry.result {
            Timing::of(context, index, entry);
        }
    }
    if sort == PlanSort::Loop {
        gates(context, plan, &mut states);
    }
    unrecorded(plan, &mut states);
    entries(plan, states)
}

/// A call with no `_outputPath` writes nothing (D10: no path, nothing
/// appended); a runner records that it ran (D112: what ran is recorded),
/// but a log written otherwise (by hand, or before runners did) cannot
/// show it: where the readiness rule would call it ready, it is
/// `unrecorded` instead, saying why (D107: the inspector at scale).
fn unrecorded(plan: &Plan, states: &mut [Entry]) {
    for (entry, call) in states.iter_mut().zip(plan.calls()) {
        let writes = call
            .as_value()
            .as_object()
            .is_some_and(|fields| fields.contains_key("_outputPath"));
        if entry.state == "ready" && !writes {
            entry.state = "unrecorded";
            entry.reason = Some(
                "it writes nothing (no _outputPath) and no `ran` record says it ran: the log \
                 cannot show whether it did"
                    .to_owned(),
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
        plan_message(context, index).map(|(sort, plan)| (index, sort, plan.into_fields()))
    })
}

/// Message `index` when it is a plan, with its sort.
fn plan_message(context: &Context, index: usize) -> Option<(PlanSort, agent_data::OpaqueMessage)> {
    // Data messages are not plans, and only a message whose text names a
    // plan is parsed.
    let named = context
        .message_json(index)
        .is_some_and(|line| line.contains("\"plan\""));
    if context.message_layer(index).is_some() || !named {
        return None;
    }
    let Some(Message::Opaque(opaque)) = context.message(index) else {
        return None;
    };
    Some((opaque.plan_sort()?, opaque))
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

/// Where the loop plan before the one at `number` is (just after it), or
/// the log's start.
fn previous_loop_plan(context: &Context, number: usize) -> usize {
    (0..number)
        .rev()
        .find(|&index| plan_message(context, index).is_some_and(|(sort, _)| sort == PlanSort::Loop))
        .map_or(0, |index| index + 1)
}

/// The messages of `range` that answer each call (their `_call`, as JSON
/// text), oldest first: one pass, however many calls the plan has.
fn answers(context: &Context, range: std::ops::Range<usize>) -> HashMap<String, VecDeque<usize>> {
    let mut answers: HashMap<String, VecDeque<usize>> = HashMap::new();
    for index in range {
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
