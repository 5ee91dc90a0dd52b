//! Running one answer's calls (spec R39): each call judged by the
//! readiness rule once every call it depends on is written, explicit calls
//! run concurrently (at most `parallel` at once), and results written in
//! write order — so what is appended does not depend on which activity
//! finished first.

use crate::Tools;
use crate::turn::Rules;
use agent_core::json::Value;
use agent_output::{Call, Clock, Outcome, apply, check_tool_schema};
use agent_plan::{Activities, Blocker, Known, Plan, Standing, Verdict, Written, judge};
use agent_store::Append;
use std::collections::VecDeque;
use std::sync::mpsc;

/// How one call ended before its result is written: an outcome to write,
/// nothing to write (a latent call without `_output`, R21), or an error
/// for the model.
enum Ended {
    Write(Outcome),
    Nothing,
    Failed(String),
}

/// What running the calls came to.
pub(crate) struct Ran {
    /// Calls whose result was written (or that had nothing to write).
    pub ran: usize,
    /// `(call index, error)` in write order.
    pub failed: Vec<(usize, String)>,
}

/// Runs `plan`'s calls (the admitted `calls`, in plan order; at most
/// `rules.parallel` activities at once) against
/// `target`, telling `on_calls(running, done, waiting)` whenever an
/// activity starts or a result is written. `Err` is the store's failure: the turn ends (decision D42),
/// after the activities already started have returned.
pub(crate) fn run_plan(
    plan: &Plan,
    calls: &[Call],
    rules: &Rules<'_>,
    activities: &Activities,
    target: &mut (impl Append + ?Sized),
    clock: &dyn Clock,
    on_calls: &mut dyn FnMut(usize, usize, usize),
) -> Result<Ran, agent_store::Error> {
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
    let mut ended: Vec<Option<Ended>> = (0..n).map(|_| None).collect();
    // Calls whose dependencies are all written, to judge; explicit calls
    // judged ready, waiting for a free slot.
    let mut to_judge: VecDeque<usize> = (0..n).filter(|&c| waiting[c] == 0).collect();
    let mut queued: VecDeque<(usize, Value)> = VecDeque::new();
    let mut ran = Ran {
        ran: 0,
        failed: Vec::new(),
    };
    let mut next = 0;
    let parallel = rules.parallel.max(1);
    std::thread::scope(|scope| {
        let (done, finished) = mpsc::channel::<(usize, Result<Outcome, String>)>();
        let mut running = 0;
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
                match ready(&calls[i], verdict, calls, tools, activities, target) {
                    Ok(resolved) => queued.push_back((i, resolved)),
                    Err(end) => ended[i] = Some(end),
                }
            }
            while running < parallel
                && let Some((i, resolved)) = queued.pop_front()
            {
                let tool = calls[i].tool().unwrap_or_default();
                let done = done.clone();
                // `spawn_scoped` says when no thread can be had (`spawn`
                // would panic): that call fails, the turn goes on.
                // Unnamed: a name holding a NUL byte would panic.
                let started = std::thread::Builder::new().spawn_scoped(scope, move || {
                    // The receiver outlives every sender in this scope.
                    let _ = done.send((i, activities.run_caught(tool, &resolved)));
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
                let error = match end {
                    Ended::Nothing => None,
                    Ended::Failed(error) => Some(error),
                    Ended::Write(outcome) => {
                        match Written::of(apply(target, &calls[i], outcome, clock)) {
                            Written::Done(_) => None,
                            Written::StoreFailed(error) => return Err(error),
                            Written::Refused(error) => Some(error.to_string()),
                        }
                    }
                };
                standing[i] = Some(match error {
                    None => {
                        ran.ran += 1;
                        Standing::Done
                    }
                    Some(error) => {
                        ran.failed.push((i, error));
                        Standing::Failed
                    }
                });
                for &d in &dependents[i] {
                    waiting[d] -= 1;
                    if waiting[d] == 0 {
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

/// What a judged call does next: `Ok(resolved)` runs its activity;
/// `Err(end)` ends it now — a latent call's `_output` (or nothing), a
/// schema violation, a blocked call's error.
fn ready(
    call: &Call,
    verdict: Verdict,
    calls: &[Call],
    tools: &Tools,
    activities: &Activities,
    target: &(impl Append + ?Sized),
) -> Result<Value, Ended> {
    let resolved = match verdict {
        Verdict::Ready(Ok(resolved)) => resolved,
        Verdict::Ready(Err(error)) => return Err(Ended::Failed(error)),
        Verdict::Blocked(Blocker::Dependency(dep)) => {
            return Err(Ended::Failed(format!(
                "not run: it reads what another call of this answer writes ({}), and that call failed",
                calls.get(dep).and_then(Call::tool).unwrap_or("?")
            )));
        }
        Verdict::Blocked(Blocker::Missing(names)) => {
            return Err(Ended::Failed(format!(
                "still pending when nothing else could run: {} not present",
                names.join(", ")
            )));
        }
        // Judged once every dependency is written, with every tool: no
        // call it depends on is running.
        other => {
            return Err(Ended::Failed(format!(
                "never became ready: {}",
                other.standing().name()
            )));
        }
    };
    let Some(tool) = call.tool().and_then(|name| tools.get(name)) else {
        return Err(Ended::Failed("unknown tool".into()));
    };
    let explicit = activities.get(tool.name()).is_some();
    let schema = Value::Object(tool.for_model(explicit));
    if let Err(error) = check_tool_schema(call, target.context(), &schema) {
        return Err(Ended::Failed(error.to_string()));
    }
    if explicit {
        return Ok(resolved);
    }
    Err(match call.as_value().get("_output") {
        Some(output) => Ended::Write(Outcome::Success(output.clone())),
        // A latent call without `_output` writes nothing (R21).
        None => Ended::Nothing,
    })
}
