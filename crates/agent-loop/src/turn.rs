//! One turn (spec R39): the calls of one answer, run like a plan; every
//! failure collected as an `error` message appended after the turn.

use crate::{Answer, Error, Result, Tools};
use agent_data::Message;
use agent_output::{Call, Clock, Outcome, apply, check_tool_schema};
use agent_plan::{Activities, Plan};
use agent_store::Append;
use agent_vars::Resolution;
use serde_json::{Value, json};

/// What one turn did.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct TurnCalls {
    /// Calls whose result was written (or that had nothing to write).
    pub ran: usize,
    /// `(call, error)` for every call that failed; the call is `null` for
    /// an error of the whole answer.
    pub errors: Vec<(Value, String)>,
}

/// Runs the calls of `answer` against `target` (R39): each call checked on
/// its own (an object, a known tool, its meta keys), then all of them in
/// dependency order; each ready call is checked against its tool's schema
/// (R23), then a latent call writes its `_output` (or nothing) and an
/// explicit one runs its activity; results go through agent-output's
/// `apply`. A store that cannot be written ends the turn with an error.
pub(crate) fn run_calls(
    answer: &Answer,
    tools: &Tools,
    activities: &Activities,
    target: &mut (impl Append + ?Sized),
    clock: &dyn Clock,
) -> Result<TurnCalls> {
    let mut turn = TurnCalls::default();
    // Calls that pass the checks that need no context, with their tool.
    let mut calls: Vec<Call> = Vec::new();
    for written in &answer.calls {
        match admit(written, tools) {
            Ok(call) => calls.push(call),
            Err(error) => turn.errors.push((written.clone(), error)),
        }
    }
    let plan = match Plan::new(calls.iter().map(|c| c.as_value().clone()).collect()) {
        Ok(plan) => plan,
        Err(error) => {
            // A cycle: none of them can run.
            for call in calls {
                turn.errors.push((call.into_value(), error.to_string()));
            }
            return Ok(turn);
        }
    };
    let mut done = vec![false; calls.len()];
    for wave in plan.waves() {
        for &i in wave {
            let call = &calls[i];
            if let Some(&dep) = plan.dependencies()[i].iter().find(|&&d| !done[d]) {
                turn.errors.push((
                    call.as_value().clone(),
                    format!(
                        "not run: it reads what another call of this answer writes ({}), and that call failed",
                        calls[dep].tool().unwrap_or("?")
                    ),
                ));
                continue;
            }
            match run_one(call, tools, activities, target, clock)? {
                Ok(()) => {
                    done[i] = true;
                    turn.ran += 1;
                }
                Err(error) => turn.errors.push((call.as_value().clone(), error)),
            }
        }
    }
    Ok(turn)
}

/// The checks a call passes before the turn orders it: an object, with a
/// `_tool` naming a known tool and well-formed meta keys.
fn admit(written: &Value, tools: &Tools) -> std::result::Result<Call, String> {
    let call = Call::parse(written.clone()).map_err(|e| e.to_string())?;
    let Some(name) = call.tool() else {
        return Err("the call has no \"_tool\"".into());
    };
    if tools.get(name).is_none() {
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
    }
    Ok(call)
}

/// Runs one ready call. `Ok(Err(text))` is the call's error, for the
/// model; `Err` ends the turn (the store could not be written).
fn run_one(
    call: &Call,
    tools: &Tools,
    activities: &Activities,
    target: &mut (impl Append + ?Sized),
    clock: &dyn Clock,
) -> Result<std::result::Result<(), String>> {
    let Some(tool) = call.tool().and_then(|name| tools.get(name)) else {
        return Ok(Err("unknown tool".into()));
    };
    let activity = activities.get(tool.name());
    let resolved = match call.resolve(target.context()) {
        Ok(Resolution::Ready(resolved)) => resolved,
        Ok(Resolution::Pending(missing)) => {
            let names: Vec<String> = missing.iter().map(ToString::to_string).collect();
            return Ok(Err(format!(
                "still pending when nothing else could run: {} not present",
                names.join(", ")
            )));
        }
        Err(error) => return Ok(Err(error.to_string())),
    };
    let schema = Value::Object(tool.for_model(activity.is_some()));
    if let Err(error) = check_tool_schema(call, target.context(), &schema) {
        return Ok(Err(error.to_string()));
    }
    let outcome = match activity {
        Some(activity) => activity.run(&resolved),
        None => match call.as_value().get("_output") {
            Some(output) => Outcome::Success(output.clone()),
            // A latent call without `_output` writes nothing (R21).
            None => return Ok(Ok(())),
        },
    };
    match apply(target, call, outcome, clock) {
        Ok(_) => Ok(Ok(())),
        Err(agent_output::Error::Store(error)) => Err(Error::Store(error)),
        Err(error) => Ok(Err(error.to_string())),
    }
}

/// The `error` message for a failed call (R39): `data` is `{"call": CALL,
/// "error": TEXT}`, pushed onto the `error` view so every error stays
/// visible in merged rendering (decision D32). A call too deep to record
/// is replaced by `null` and the text says so.
pub(crate) fn error_message(call: Value, error: &str) -> Result<Message> {
    let build = |call: Value, error: String| {
        Message::from_value(json!({
            "type": "data",
            "kind": "error",
            "data": {"call": call, "error": error},
            "_outputMethod": "push"
        }))
    };
    let built = match build(call, error.to_owned()) {
        Ok(built) => built,
        Err(_) => build(
            Value::Null,
            format!("{error} (the call is too deep to record)"),
        )
        .map_err(Error::Record)?,
    };
    built
        .into_iter()
        .next()
        .ok_or_else(|| Error::Request("an error message normalised to nothing".into()))
}
