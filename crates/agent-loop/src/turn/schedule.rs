//! Running one answer's calls (spec R39): each call judged by the
//! readiness rule once every call it depends on is written, explicit calls
//! run concurrently (at most `parallel` at once), and results written in
//! write order — so what is appended does not depend on which activity
//! finished first. A call held at an approval gate, or waiting on a latent
//! call the model has not evaluated, is carried, not failed (R39c).

use crate::Confirm;
use crate::turn::early::Early;
use crate::turn::gate::GateSet;
use crate::turn::judge::{Ended, Fate, Judged, Rules, Step, ready};
use agent_core::json::Value;
use agent_data::Append;
use agent_output::{Call, Clock, apply, apply_run};
use agent_plan::{Activities, Known, Plan, Standing, Written, judge};
use std::collections::VecDeque;

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
                let ran = agent_output::Ran::started_at(clock.now());
                // `spawn_scoped` says when no thread can be had (`spawn`
                // would panic): that call fails, the turn goes on.
                // Unnamed: a name holding a NUL byte would panic.
                let started = std::thread::Builder::new().spawn_scoped(scope, move || {
                    // The receiver outlives every sender in this scope.
                    let _ = done.send((i, ran, activities.run_caught(&tool, &resolved)));
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
                    Ended::Write(outcome) => refusal(apply(target, runs, outcome, clock))?,
                    // With when it started, and a `ran` record for a call
                    // that writes nothing (R21b).
                    Ended::Ran(started, outcome) => {
                        refusal(apply_run(target, runs, outcome, clock, &started))?
                    }
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
                Ok((i, started, outcome)) => {
                    running -= 1;
                    ended[i] = Some(match outcome {
                        Ok(outcome) => Ended::Ran(started, outcome),
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

/// What writing a result came to: nothing when it was written, the
/// refusal's text for the model, or the store's failure, which ends the
/// turn.
fn refusal<T>(
    written: Result<T, agent_output::Error>,
) -> Result<Option<String>, agent_data::AppendError> {
    match Written::of(written) {
        Written::Done(_) => Ok(None),
        Written::StoreFailed(error) => Err(error),
        Written::Refused(error) => Ok(Some(error.to_string())),
    }
}

/// Records that a call was not run, as `fate`: no error for the model.
fn not_run(slot: &mut Option<Fate>, fate: Fate) -> Option<String> {
    *slot = Some(fate);
    None
}
