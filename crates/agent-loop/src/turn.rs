//! One turn (spec R39): the calls of one answer, or those still owed of
//! the carried plan (R39c), run like a plan; every failure collected as an
//! `error` message appended after the turn.

use crate::early::Early;
use crate::errors::shortened;
use crate::gate::Tally;
use crate::guard::Guard;
use crate::schedule::run_plan;
use crate::{Confirm, Error, Result, Tools};
use agent_core::json::Value;
use agent_data::Append;
use agent_output::{Call, Clock};
use agent_plan::{Activities, Plan};

/// Dependencies between one answer's calls, in all: 10,000 calls can make
/// 25 million (half writing a place the other half reads).
const MAX_DEPENDENCIES: usize = 100_000;

/// How many steps of a cycle an error names.
const CYCLE_STEPS: usize = 5;

/// What a turn checks each call of the answer against.
pub(crate) struct Rules<'a> {
    /// The tools a call may name.
    pub tools: &'a Tools,
    /// What a model's call may write and which instances it may name.
    pub guard: Guard<'a>,
    /// Calls run from one answer; the rest are refused with one error.
    pub max_calls: usize,
    /// Activities run at once.
    pub parallel: usize,
}

/// What one turn did.
#[derive(Debug, Clone, Default)]
pub(crate) struct TurnCalls {
    /// Calls whose result was written (or that had nothing to write).
    pub ran: usize,
    /// `(call, error)` for every call that failed; the call is `null` for
    /// an error of the whole answer.
    pub errors: Vec<(Value, String)>,
    /// The calls admitted and ordered, by their index in what was given:
    /// the plan (empty when they could not be ordered: a cycle, too many
    /// dependencies).
    pub admitted: Vec<usize>,
    /// Of those, the calls not run and still owed (held at a gate, or
    /// waiting on a latent call the model has not evaluated), by their
    /// position in `admitted`, in order.
    pub pending: Vec<usize>,
    /// The gates holding calls, and the tools they hold.
    pub held: Tally,
    /// The gates that rejected calls (`false`), and the tools.
    pub rejected: Tally,
}

/// Runs `given` — calls by their index in the answer or the carried plan
/// — against `target` (R39): at most
/// `rules.max_calls` of them, each checked on its own (an object, a known
/// tool, its meta keys, what it may write, R39b), then all of them in
/// dependency order; each ready call is checked against its tool's schema
/// (R23) and the gates it reads (R39c), confirmed by `confirm`, then a latent call writes its `_output` (or nothing) and an
/// explicit one runs its activity; results go through agent-output's
/// `apply`. A store that cannot be written ends the turn with an error.
/// `on_calls(running, done, waiting)` hears the counts as they change.
#[allow(clippy::too_many_arguments)] // one turn's whole setting
pub(crate) fn run_calls(
    given: &[(usize, &Value)],
    rules: &Rules<'_>,
    activities: &Activities,
    target: &mut (impl Append + ?Sized),
    clock: &dyn Clock,
    on_calls: &mut dyn FnMut(usize, usize, usize),
    confirm: &mut dyn FnMut(&Call) -> Confirm,
    mut early: Early,
) -> Result<TurnCalls> {
    let mut turn = TurnCalls::default();
    let count = given.len();
    if count > rules.max_calls {
        turn.errors.push((
            Value::Null,
            format!(
                "the answer has {count} calls; at most {} run from one answer, so calls[{}] to calls[{}] were not run",
                rules.max_calls,
                rules.max_calls,
                count - 1
            ),
        ));
    }
    // Calls that pass the checks that need no context, with their tool.
    let mut calls: Vec<Call> = Vec::new();
    let mut admitted: Vec<usize> = Vec::new();
    for &(at, written) in given.iter().take(rules.max_calls) {
        match admit(written, rules) {
            Ok(call) => {
                calls.push(call);
                admitted.push(at);
            }
            Err(error) => turn.errors.push((written.clone(), error)),
        }
    }
    let written = calls.iter().map(|c| c.as_value().clone()).collect();
    let plan = match Plan::with_dependency_limit(written, MAX_DEPENDENCIES) {
        Ok(plan) => plan,
        // None of them can run; one error says why, however many calls
        // the cycle holds. Calls started while the answer streamed read
        // nothing another call writes: they ran, and are written alone.
        Err(error) => {
            let count = calls.len();
            let none = match early.started.len() {
                0 => format!("none of the answer's {count} calls ran"),
                started => format!(
                    "none of the answer's {count} calls ran but the {started} started before the answer ended"
                ),
            };
            turn.errors.push((
                Value::Null,
                match error {
                    agent_plan::Error::Cycle { calls: cycle } => cycle_error(&none, &cycle, &calls),
                    error => format!("{none}: {error}"),
                },
            ));
            if early.started.is_empty() {
                return Ok(turn);
            }
            let alone: Vec<usize> = early.started.iter().map(|s| s.position).collect();
            early.alone();
            let calls: Vec<Call> = alone
                .iter()
                .filter_map(|&p| calls.get(p).cloned())
                .collect();
            let written = calls.iter().map(|c| c.as_value().clone()).collect();
            let plan = Plan::new(written).map_err(|e| Error::Request(e.to_string()))?;
            let ran = run_plan(
                &plan, &calls, rules, activities, target, clock, on_calls, confirm, early,
            )
            .map_err(Error::Store)?;
            turn.record(ran.ran, ran.failed, &calls);
            return Ok(turn);
        }
    };
    let mut ran = run_plan(
        &plan, &calls, rules, activities, target, clock, on_calls, confirm, early,
    )
    .map_err(Error::Store)?;
    turn.record(ran.ran, std::mem::take(&mut ran.failed), &calls);
    let tool = |i: usize| calls.get(i).and_then(Call::tool).unwrap_or("?");
    for (i, gates) in &ran.held {
        turn.held.add(gates, tool(*i));
    }
    for (i, gates) in &ran.rejected {
        turn.rejected.add(gates, tool(*i));
    }
    let mut pending: Vec<usize> = ran.held.iter().map(|(i, _)| *i).collect();
    pending.extend(ran.carried);
    pending.sort_unstable();
    turn.pending = pending;
    turn.admitted = admitted;
    Ok(turn)
}

/// The error of an answer whose calls read each other in a cycle: its
/// first steps, each call by its tool and output path, and its length.
impl TurnCalls {
    /// Records what a run of `calls` did: how many ran, and each failure
    /// with the call it names.
    fn record(&mut self, ran: usize, failed: Vec<(usize, String)>, calls: &[Call]) {
        self.ran = ran;
        for (i, error) in failed {
            if let Some(call) = calls.get(i) {
                self.errors.push((call.as_value().clone(), error));
            }
        }
    }
}

fn cycle_error(none: &str, cycle: &[usize], calls: &[Call]) -> String {
    let step = |&c: &usize| {
        let Some(call) = calls.get(c) else {
            return format!("call {c}");
        };
        let path = call.output_path().map(ToString::to_string);
        shortened(
            &format!(
                "{} → {}",
                call.tool().unwrap_or("?"),
                path.as_deref().unwrap_or("nothing")
            ),
            100,
        )
    };
    let mut steps: Vec<String> = cycle.iter().take(CYCLE_STEPS).map(step).collect();
    if cycle.len() > CYCLE_STEPS {
        steps.push("…".into());
    } else if let Some(first) = cycle.first() {
        steps.push(step(first));
    }
    format!(
        "{none}: {} of them read each other's results in a cycle: {}",
        cycle.len(),
        steps.join(", then ")
    )
}

/// The checks a call passes before the turn orders it: an object, with a
/// `_tool` naming a known tool, well-formed meta keys and no unknown one,
/// and nothing R39b forbids.
pub(crate) fn admit(written: &Value, rules: &Rules<'_>) -> std::result::Result<Call, String> {
    let tools = rules.tools;
    let call = Call::parse(written.clone()).map_err(|e| e.to_string())?;
    let Some(name) = call.tool() else {
        return Err("the call has no \"_tool\"".into());
    };
    let Some(tool) = tools.get(name) else {
        let known: Vec<String> = tools.iter().map(|t| agent_core::quoted(t.name())).collect();
        return Err(format!(
            "unknown tool {}; the tools are {}",
            agent_core::quoted(name),
            if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            }
        ));
    };
    // A misspelt `_outputPath` would send the result nowhere; the model is
    // told which key it meant. `_` keys the tool's schema declares are the
    // application's own (D63: typos refused).
    let declared: Vec<String> = tool
        .properties()
        .into_iter()
        .flat_map(|p| p.keys())
        .filter(|k| k.starts_with('_'))
        .map(str::to_owned)
        .collect();
    call.check_keys(&declared).map_err(|e| e.to_string())?;
    rules.guard.check(&call)?;
    Ok(call)
}
