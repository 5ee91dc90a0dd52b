//! Judging one call of a turn (spec R39, R39b): the rules it is admitted
//! by, whether it is ready, and how it ended. The base of the turn's
//! files: `early.rs`, `schedule.rs` and the turn itself build on it, and it
//! on none of them.

use crate::turn::gate::{GateSet, only_gates, read_gates};
use crate::turn::guard::Guard;
use crate::{Confirm, Tools};
use agent_core::json::Value;
use agent_output::{Call, Outcome, check_tool_schema};
use agent_plan::{Activities, Blocker, Plan, Verdict};
use agent_vars::Resolution;

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

/// How one call ended before its result is written: an outcome to write,
/// nothing to write (a latent call without `_output` or `_outputPath`,
/// R21), an error for the model, or not run and carried in the plan: held
/// by gates, rejected by them, or waiting on a call the model has not
/// evaluated.
pub(crate) enum Ended {
    /// A latent call's `_output`, written as its success (R20).
    Write(Outcome),
    /// An activity's outcome, with when it started (R21b).
    Ran(agent_output::Ran, Outcome),
    Nothing,
    Failed(String),
    Held(GateSet),
    Rejected(GateSet),
    Carried,
}

/// What a judged call does next: run its activity on the resolved call,
/// or end now.
pub(crate) enum Step {
    Run(Value),
    End(Ended),
}

/// Where a call ended, for the calls that depend on it.
#[derive(Clone)]
pub(crate) enum Fate {
    Done,
    Failed,
    Held(GateSet),
    Rejected(GateSet),
    Carried,
}

/// One call being judged, and what its judgement reads.
pub(crate) struct Judged<'a> {
    pub plan: &'a Plan,
    pub call: usize,
    pub calls: &'a [Call],
    pub fates: &'a [Option<Fate>],
    pub tools: &'a Tools,
    pub activities: &'a Activities,
}

/// What a judged call does next: [`Step::Run`] runs its activity;
/// [`Step::End`] ends it now — a latent call's `_output` (or nothing), a
/// schema violation, a blocked call's error, a call held or rejected at a
/// gate or carried. Each comes with the call the application edited it
/// into, if it did (the one that runs and is recorded).
pub(crate) fn ready(
    judged: &Judged<'_>,
    verdict: Verdict,
    context: &agent_data::Context,
    confirm: &mut dyn FnMut(&Call) -> Confirm,
) -> (Step, Option<Call>) {
    let call = &judged.calls[judged.call];
    let resolved = match verdict {
        Verdict::Ready(Ok(resolved)) => resolved,
        Verdict::Ready(Err(error)) => return (Step::End(Ended::Failed(error)), None),
        Verdict::Blocked(Blocker::Dependency(_)) => {
            return (Step::End(after_dependencies(judged, context)), None);
        }
        Verdict::Blocked(Blocker::Missing(names)) => {
            let missing = match call.resolve(context) {
                Ok(Resolution::Pending(missing)) => missing,
                _ => Vec::new(),
            };
            let end = match only_gates(&missing, call.instance()) {
                Some(gates) => Ended::Held(gates),
                None => Ended::Failed(format!(
                    "still pending when nothing else could run: {} not present",
                    names.join(", ")
                )),
            };
            return (Step::End(end), None);
        }
        // Judged once every dependency is written, with every tool: no
        // call it depends on is running.
        other => {
            let error = format!("never became ready: {}", other.standing().name());
            return (Step::End(Ended::Failed(error)), None);
        }
    };
    match read_gates(call, context) {
        Ok(rejected) if rejected.is_empty() => {}
        Ok(rejected) => return (Step::End(Ended::Rejected(rejected)), None),
        Err(error) => return (Step::End(Ended::Failed(error)), None),
    }
    let Some(tool) = call.tool().and_then(|name| judged.tools.get(name)) else {
        return (Step::End(Ended::Failed("unknown tool".into())), None);
    };
    let explicit = judged.activities.get(tool.name()).is_some();
    let schema = Value::Object(tool.for_model(crate::Execution::of(explicit)));
    if let Err(error) = check_tool_schema(call, context, &schema) {
        return (Step::End(Ended::Failed(error.to_string())), None);
    }
    let output = call.as_value().get("_output");
    if !explicit && output.is_none() {
        // A latent call the model has not evaluated: it writes nothing
        // (R21) and, when it has somewhere to write, stays in the plan
        // for a later turn to evaluate (R39c).
        let end = if call.output_path().is_some() {
            Ended::Carried
        } else {
            Ended::Nothing
        };
        return (Step::End(end), None);
    }
    match confirm(call) {
        Confirm::Run => {}
        Confirm::Skip => {
            let error = "not run: the application skipped it".into();
            return (Step::End(Ended::Failed(error)), None);
        }
        Confirm::Edit(edited) => return edited_call(edited, judged, context),
    }
    if explicit {
        return (Step::Run(resolved), None);
    }
    let end = output.map_or(Ended::Nothing, |o| {
        Ended::Write(Outcome::Success(o.clone()))
    });
    (Step::End(end), None)
}

/// Gates a call inherits from the calls it depends on, at most this many:
/// each gate is named in full by the call that reads it, and copying all
/// of them into every dependant would cost gates × dependants.
const INHERITED_GATES: usize = 16;

/// Adds `gates` to `into` up to [`INHERITED_GATES`].
fn inherit(into: &mut GateSet, gates: &GateSet) {
    let room = INHERITED_GATES.saturating_sub(into.len());
    into.extend(gates.iter().take(room).cloned());
}

/// A call whose dependency was not run or failed: failed with the first
/// that failed; else rejected, held or carried with them.
fn after_dependencies(judged: &Judged<'_>, context: &agent_data::Context) -> Ended {
    let call = &judged.calls[judged.call];
    let mut held = GateSet::new();
    let mut rejected = GateSet::new();
    for &d in &judged.plan.dependencies()[judged.call] {
        match &judged.fates[d] {
            Some(Fate::Failed) => {
                return Ended::Failed(format!(
                    "not run: it reads what another call of its plan writes ({}), and that call failed",
                    judged.calls.get(d).and_then(Call::tool).unwrap_or("?")
                ));
            }
            Some(Fate::Rejected(gates)) => inherit(&mut rejected, gates),
            Some(Fate::Held(gates)) => inherit(&mut held, gates),
            Some(Fate::Carried | Fate::Done) | None => {}
        }
    }
    if !rejected.is_empty() {
        return Ended::Rejected(rejected);
    }
    if let Ok(Resolution::Pending(missing)) = call.resolve(context) {
        let instance = call.instance();
        held.extend(
            missing
                .iter()
                .filter(|r| crate::turn::gate::is_gate(r))
                .map(|r| (r.to_string(), instance.cloned())),
        );
    }
    if held.is_empty() {
        Ended::Carried
    } else {
        Ended::Held(held)
    }
}

/// The call the application edited a ready call into: resolved and
/// checked like the model's, then run (explicit) or its `_output` written.
fn edited_call(
    edited: Call,
    judged: &Judged<'_>,
    context: &agent_data::Context,
) -> (Step, Option<Call>) {
    let fail = |error: String, edited: Call| (Step::End(Ended::Failed(error)), Some(edited));
    let Some(tool) = edited.tool().and_then(|name| judged.tools.get(name)) else {
        let name = edited.tool().unwrap_or("").to_owned();
        return fail(
            format!(
                "not run: the application edited it into a call of unknown tool {}",
                agent_core::quoted(&name)
            ),
            edited,
        );
    };
    let explicit = judged.activities.get(tool.name()).is_some();
    let resolved = match edited.resolve(context) {
        Ok(Resolution::Ready(resolved)) => resolved,
        Ok(Resolution::Pending(missing)) => {
            let names: Vec<String> = missing.iter().map(ToString::to_string).collect();
            return fail(
                format!(
                    "not run: the application's edit of it reads {}, not present",
                    names.join(", ")
                ),
                edited,
            );
        }
        Err(error) => return fail(error.to_string(), edited),
    };
    let schema = Value::Object(tool.for_model(crate::Execution::of(explicit)));
    if let Err(error) = check_tool_schema(&edited, context, &schema) {
        return fail(error.to_string(), edited);
    }
    if explicit {
        return (Step::Run(resolved), Some(edited));
    }
    let end = edited
        .as_value()
        .get("_output")
        .map_or(Ended::Nothing, |o| {
            Ended::Write(Outcome::Success(o.clone()))
        });
    (Step::End(end), Some(edited))
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
