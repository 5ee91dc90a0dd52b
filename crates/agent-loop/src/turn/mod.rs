//! One turn (spec R39): the calls of one answer, or those still owed of
//! the carried plan (R39c), run like a plan; every failure collected as an
//! `error` message appended after the turn.
//!
//! The turn's files, each building only on those listed before it (no
//! circle): `guard.rs` (what a model's call may do, R39b), `gate.rs`
//! (approval gates), `error_messages.rs` (the bounded `error` messages), `judge.rs`
//! (the rules a call is admitted by, whether it is ready, how it ended),
//! `early.rs` (calls started while the answer streams), `schedule.rs`
//! (running the calls in write order), and this file, the turn.

pub(crate) mod early;
pub(crate) mod error_messages;
pub(crate) mod gate;
pub(crate) mod guard;
pub(crate) mod judge;
pub(crate) mod schedule;

use crate::turn::early::Early;
use crate::turn::error_messages::shortened;
use crate::turn::gate::Tally;
use crate::turn::judge::{Rules, admit};
use crate::turn::schedule::run_plan;
use crate::{Confirm, Error, Result};
use agent_core::json::Value;
use agent_data::Append;
use agent_output::{Call, Clock};
use agent_plan::{Activities, Plan};

/// Dependencies between one answer's calls, in all: 10,000 calls can make
/// 25 million (half writing a place the other half reads).
const MAX_DEPENDENCIES: usize = 100_000;

/// How many steps of a cycle an error names.
const CYCLE_STEPS: usize = 5;

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
