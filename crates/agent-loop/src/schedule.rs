//! Running one answer's calls (spec R39): each call judged by the
//! readiness rule once every call it depends on is written, explicit calls
//! run concurrently (at most `parallel` at once), and results written in
//! write order — so what is appended does not depend on which activity
//! finished first. A call held at an approval gate, or waiting on a latent
//! call the model has not evaluated, is carried, not failed (R39c).

use crate::early::Early;
use crate::gate::{GateSet, only_gates, read_gates};
use crate::turn::Rules;
use crate::{Confirm, Tools};
use agent_core::json::Value;
use agent_data::Append;
use agent_output::{Call, Clock, Outcome, apply, check_tool_schema};
use agent_plan::{Activities, Blocker, Known, Plan, Standing, Verdict, Written, judge};
use agent_vars::Resolution;
use std::collections::VecDeque;

/// How one call ended before its result is written: an outcome to write,
/// nothing to write (a latent call without `_output` or `_outputPath`,
/// R21), an error for the model, or not run and carried in the plan: held
/// by gates, rejected by them, or waiting on a call the model has not
/// evaluated.
pub(crate) enum Ended {
    Write(Outcome),
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

/// What running the calls came to.
#[derive(Default)]
pub(crate) struct Ran {
    /// Calls whose result was written (or that had nothing to write).
    pub ran: usize,
    /// `(call index, error)` in write order.
    pub failed: Vec<(usize, String)>,
    /// Calls held at approval gates nobody has written, with the gates.
    pub held: Vec<(usize, GateSet)>,
    /// Calls a gate written `false` rejected, with the gates.
    pub rejected: Vec<(usize, GateSet)>,
    /// Calls waiting on a latent call without `_output`, or that call.
    pub carried: Vec<usize>,
}

/// Runs `plan`'s calls (the admitted `calls`, in plan order; at most
/// `rules.parallel` activities at once) against
/// `target`, telling `on_calls(running, done, waiting)` whenever an
/// activity starts or a result is written, and asking `confirm` about each
/// ready call before it runs. `Err` is the store's failure: the turn ends (D42: one readiness rule),
/// after the activities already started have returned.
#[allow(clippy::too_many_arguments)] // one turn's whole setting
pub(crate) fn run_plan(
    plan: &Plan,
    calls: &[Call],
    rules: &Rules<'_>,
    activities: &Activities,
    target: &mut (impl Append + ?Sized),
    clock: &dyn Clock,
    on_calls: &mut dyn FnMut(usize, usize, usize),
    confirm: &mut dyn FnMut(&Call) -> Confirm,
    early: Early,
) -> Result<Ran, agent_data::AppendError> {
    let tools = rules.tools;
    let n = calls.len();
    let order = plan.write_order();
    let mut waiting: Vec<usize> = plan.dependencies().iter().map(Vec::len).collect();
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (call, deps) in plan.dependencies().iter().enumerate() {
        for &d in deps {
            dependents[d].push(call);
        }
    }
    let mut standing: Vec<Option<Standing>> = vec![None; n];
    let mut fates: Vec<Option<Fate>> = vec![None; n];
    // The call that runs and is recorded, where the application edited it.
    let mut edits: Vec<Option<Call>> = vec![None; n];
    let mut ended: Vec<Option<Ended>> = (0..n).map(|_| None).collect();
    // Calls whose dependencies are all written, to judge; explicit calls
    // judged ready, waiting for a free slot.
    // A call judged while the answer streamed is never judged again: it
    // ended then, or its activity runs.
    let mut judged_early = vec![false; n];
    for started in early.started {
        if let Some(slot) = judged_early.get_mut(started.position) {
            *slot = true;
            edits[started.position] = started.edit;
            ended[started.position] = started.end;
        }
    }
    let mut to_judge: VecDeque<usize> = (0..n)
        .filter(|&c| waiting[c] == 0 && !judged_early[c])
        .collect();
    let mut queued: VecDeque<(usize, Value)> = VecDeque::new();
    let mut ran = Ran::default();
    let mut next = 0;
    let parallel = rules.parallel.max(1);
    std::thread::scope(|scope| {
        let (done, finished) = (early.sender, early.receiver);
        let mut running = early.running;
        let mut told = None;
        while next < order.len() {
            while let Some(i) = to_judge.pop_front() {
                let verdict = judge(
                    plan,
                    i,
                    &|d| standing[d].clone(),
                    &[],
                    Known::Open,
                    target.context(),
                    &|_| true,
                );
                let judged = Judged {
                    plan,
                    call: i,
                    calls,
                    fates: &fates,
                    tools,
                    activities,
                };
                let (step, edit) = ready(&judged, verdict, target.context(), confirm);
                edits[i] = edit;
                match step {
                    Step::Run(resolved) => queued.push_back((i, resolved)),
                    Step::End(end) => ended[i] = Some(end),
                }
            }
            while running < parallel
                && let Some((i, resolved)) = queued.pop_front()
            {
                let runs = edits[i].as_ref().unwrap_or(&calls[i]);
                let tool = runs.tool().unwrap_or_default().to_owned();
                let done = done.clone();
                // `spawn_scoped` says when no thread can be had (`spawn`
                // would panic): that call fails, the turn goes on.
                // Unnamed: a name holding a NUL byte would panic.
                let started = std::thread::Builder::new().spawn_scoped(scope, move || {
                    // The receiver outlives every sender in this scope.
                    let _ = done.send((i, activities.run_caught(&tool, &resolved)));
                });
                match started {
                    Ok(_) => running += 1,
                    Err(error) => {
                        ended[i] = Some(Ended::Failed(format!(
                            "not run: no thread could be started for its activity ({error})"
                        )));
                    }
                }
            }
            let counts = (running, next, (order.len() - next).saturating_sub(running));
            if told != Some(counts) {
                on_calls(counts.0, counts.1, counts.2);
                told = Some(counts);
            }
            // Write every result whose turn it is.
            let mut wrote = false;
            while let Some(&i) = order.get(next) {
                let Some(end) = ended[i].take() else { break };
                let runs = edits[i].as_ref().unwrap_or(&calls[i]);
                let error = match end {
                    Ended::Nothing => None,
                    Ended::Failed(error) => Some(error),
                    Ended::Write(outcome) => match Written::of(apply(target, runs, outcome, clock))
                    {
                        Written::Done(_) => None,
                        Written::StoreFailed(error) => return Err(error),
                        Written::Refused(error) => Some(error.to_string()),
                    },
                    Ended::Held(gates) => {
                        ran.held.push((i, gates.clone()));
                        not_run(&mut fates[i], Fate::Held(gates))
                    }
                    Ended::Rejected(gates) => {
                        ran.rejected.push((i, gates.clone()));
                        not_run(&mut fates[i], Fate::Rejected(gates))
                    }
                    Ended::Carried => {
                        ran.carried.push(i);
                        not_run(&mut fates[i], Fate::Carried)
                    }
                };
                standing[i] = Some(if fates[i].is_some() {
                    // Not run: for ordering it is finished, and a call
                    // depending on it is judged by its fate.
                    Standing::Blocked {
                        reason: "not run".into(),
                        stuck: true,
                    }
                } else {
                    match error {
                        None => {
                            ran.ran += 1;
                            fates[i] = Some(Fate::Done);
                            Standing::Done
                        }
                        Some(error) => {
                            ran.failed.push((i, error));
                            fates[i] = Some(Fate::Failed);
                            Standing::Failed
                        }
                    }
                });
                for &d in &dependents[i] {
                    waiting[d] -= 1;
                    if waiting[d] == 0 && !judged_early[d] {
                        to_judge.push_back(d);
                    }
                }
                next += 1;
                wrote = true;
            }
            if wrote || !to_judge.is_empty() {
                continue;
            }
            if running == 0 {
                // Nothing runs and nothing can be written: cannot happen
                // (the call whose turn it is has every dependency written,
                // so it was judged), but never wait for nothing.
                for &i in &order[next..] {
                    ran.failed.push((i, "never became ready".into()));
                }
                break;
            }
            match finished.recv() {
                Ok((i, outcome)) => {
                    running -= 1;
                    ended[i] = Some(match outcome {
                        Ok(outcome) => Ended::Write(outcome),
                        Err(error) => Ended::Failed(error),
                    });
                }
                Err(_) => break,
            }
        }
        let last = (0, next, order.len() - next.min(order.len()));
        if told != Some(last) {
            on_calls(last.0, last.1, last.2);
        }
        Ok(ran)
    })
}

/// Records that a call was not run, as `fate`: no error for the model.
fn not_run(slot: &mut Option<Fate>, fate: Fate) -> Option<String> {
    *slot = Some(fate);
    None
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
    let schema = Value::Object(tool.for_model(explicit));
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
                .filter(|r| crate::gate::is_gate(r))
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
    let schema = Value::Object(tool.for_model(explicit));
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
