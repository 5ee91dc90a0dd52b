//! The in-process runner: every ready call of a plan, wave by wave, its
//! activities concurrently, its results written in plan order.

use crate::readiness::{Blocker, Known, Standing, Verdict, Written, judge, waits_on};
use crate::{Activities, CallReport, Plan, Report, Status, Taken};
use agent_core::Reference;
use agent_core::json::Value;
use agent_data::Message;
use agent_data::{Append, AppendKey, KeyedAppend};
use agent_output::{Clock, Outcome, Ran};
#[cfg(feature = "rayon")]
use rayon::prelude::*;
#[cfg(not(feature = "rayon"))]
use sequential::ParIter;

/// How far a run is, for a progress line ([`Plan::run_observed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Progress {
    /// Calls of the wave whose activities are running.
    pub running: usize,
    /// Calls settled: written, failed, skipped or blocked.
    pub done: usize,
    /// Calls not yet started.
    pub waiting: usize,
}

/// What one ready call came to before its result is written.
enum Step {
    /// When its activity started, and its outcome or why it has none.
    Ran(Ran, Result<Outcome, String>),
    /// It did not run: the rule found it blocked, or it cannot be resolved.
    Settled(Status),
}

impl Plan {
    /// Runs the plan against `target`: every ready call — its dependencies
    /// done and its references present ([`judge`](crate::judge), with
    /// every tool counted as present: a call whose tool has no activity
    /// runs and fails) — runs, activities of a wave concurrently; outcomes
    /// are written through agent-output in plan order (so appended
    /// messages are deterministic), each with when its activity started
    /// (`_started`), and a call without `_outputPath` leaves a `ran` record
    /// (R21b); repeat until nothing is ready. A call
    /// whose dependency did not end as done is skipped as soon as that is
    /// known.
    ///
    /// `target` is a [`Context`](agent_data::Context) in memory, or a
    /// stored context (agent-store's `Stored`): then each result is
    /// committed as it is written — validated against the stored context as
    /// it is then, other writers' appends included — and later calls read
    /// what it holds. When the store fails (not a refusal: the disk is
    /// full, the database gone), the run stops: that call and every call
    /// not yet written are [`Status::Stopped`], and no activity starts
    /// after it.
    ///
    /// Linear in calls and dependencies: each call is judged when its last
    /// dependency is done, or skipped when the first one will not be.
    pub fn run(
        &self,
        target: &mut (impl Append + ?Sized),
        activities: &Activities,
        clock: &(dyn Clock + Sync),
    ) -> Report {
        self.run_keyed(target, activities, clock, None)
    }

    /// [`Plan::run`], with each call's result appended at most once under
    /// a key derived from `key` and the call's index (`KEY/call-3`,
    /// [`AppendKey::derive`]; [`Append::append_once`]): running the plan
    /// again with the same key after an append was in doubt appends
    /// nothing already written. The activities still run again; a result
    /// already written is reported done. Without `key`, [`Plan::run`].
    pub fn run_keyed(
        &self,
        target: &mut (impl Append + ?Sized),
        activities: &Activities,
        clock: &(dyn Clock + Sync),
        key: Option<&AppendKey>,
    ) -> Report {
        self.run_observed(target, activities, clock, key, &mut |_| {})
    }

    /// [`Plan::run_keyed`], telling `observe` the calls' [`Progress`]
    /// before each wave's activities start and once the run has settled:
    /// what a live progress line shows.
    pub fn run_observed(
        &self,
        target: &mut (impl Append + ?Sized),
        activities: &Activities,
        clock: &(dyn Clock + Sync),
        key: Option<&AppendKey>,
        observe: &mut dyn FnMut(Progress),
    ) -> Report {
        let mut run = Run::new(self);
        run.key = key.cloned();
        let mut frontier: Vec<usize> = (0..self.calls().len())
            .filter(|&c| self.dependencies()[c].is_empty())
            .collect();
        let mut wave = 0;
        let total = self.calls().len();
        let settled = |run: &Run| run.status.iter().filter(|s| s.is_some()).count();
        while !frontier.is_empty() && run.stopped.is_none() {
            frontier.sort_unstable();
            let done = settled(&run);
            observe(Progress {
                running: frontier.len(),
                done,
                waiting: total.saturating_sub(done + frontier.len()),
            });
            let standing = &run.standing;
            let shared = target.context();
            let steps: Vec<(usize, Step)> = frontier
                .par_iter()
                .map(|&call| {
                    let verdict = judge(
                        self,
                        call,
                        &|d| standing[d].clone(),
                        &[],
                        Known::Open,
                        shared,
                        &|_| true,
                    );
                    (call, self.step(call, verdict, activities, clock))
                })
                .collect();
            let mut next = Vec::new();
            for (call, step) in steps {
                run.wave[call] = Some(wave);
                let status = match step {
                    Step::Settled(status) => status,
                    Step::Ran(_, Err(error)) => Status::Failed {
                        error,
                        failure: None,
                    },
                    Step::Ran(_, Ok(_)) if run.stopped.is_some() => run.stopped_status(),
                    Step::Ran(ran, Ok(outcome)) => {
                        run.write(self, target, call, outcome, (clock, &ran))
                    }
                };
                run.settle(self, call, status, &mut next);
            }
            frontier = next;
            wave += 1;
        }
        let done = settled(&run);
        observe(Progress {
            running: 0,
            done,
            waiting: total.saturating_sub(done),
        });
        run.report(self)
    }

    /// Runs a call the rule found ready; any other verdict is how it ended.
    fn step(
        &self,
        call: usize,
        verdict: Verdict,
        activities: &Activities,
        clock: &(dyn Clock + Sync),
    ) -> Step {
        let failed = |error: String| {
            Step::Settled(Status::Failed {
                error,
                failure: None,
            })
        };
        match verdict {
            Verdict::Ready(Ok(resolved)) => {
                let ran = Ran::started_at(clock.now());
                let tool = self.calls()[call].tool().unwrap_or_default();
                Step::Ran(ran, activities.run_caught(tool, &resolved))
            }
            Verdict::Ready(Err(error)) => failed(error),
            Verdict::Blocked(Blocker::Missing(missing)) => {
                Step::Settled(Status::Blocked { missing })
            }
            Verdict::Blocked(Blocker::Dependency(because)) => {
                Step::Settled(Status::Skipped { because })
            }
            // A frontier call has every dependency done, no earlier writer
            // to wait for and every tool: none of these can be.
            Verdict::Blocked(other) => failed(format!("never became ready: {other}")),
            Verdict::Known(_) => failed("never became ready".into()),
        }
    }
}

/// A run in progress: how each call ended, and what the rule sees of it.
struct Run {
    status: Vec<Option<Status>>,
    standing: Vec<Option<Standing>>,
    wave: Vec<Option<usize>>,
    /// Dependencies of each call not yet done.
    waiting: Vec<usize>,
    dependents: Vec<Vec<usize>>,
    /// The store's error, once it failed.
    stopped: Option<String>,
    /// The key each call's key is derived from ([`Plan::run_keyed`]).
    key: Option<AppendKey>,
}

impl Run {
    fn new(plan: &Plan) -> Run {
        let n = plan.calls().len();
        let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (call, deps) in plan.dependencies().iter().enumerate() {
            for &d in deps {
                dependents[d].push(call);
            }
        }
        Run {
            status: vec![None; n],
            standing: vec![None; n],
            wave: vec![None; n],
            waiting: plan.dependencies().iter().map(Vec::len).collect(),
            dependents,
            stopped: None,
            key: None,
        }
    }

    fn stopped_status(&self) -> Status {
        Status::Stopped {
            error: self.stopped.clone().unwrap_or_default(),
        }
    }

    /// Writes `outcome` with when it ran (R21b: a `ran` record for a call
    /// that writes nothing); a store failure stops the run.
    fn write(
        &mut self,
        plan: &Plan,
        target: &mut (impl Append + ?Sized),
        call: usize,
        outcome: Outcome,
        (clock, ran): (&(dyn Clock + Sync), &Ran),
    ) -> Status {
        let (taken, failure) = Taken::of(&outcome);
        let applied = match &self.key {
            None => agent_output::apply_run(target, &plan.calls()[call], outcome, clock, ran),
            Some(key) => match key.derive(&format!("call-{call}")) {
                Ok(key) => {
                    let mut keyed = KeyedAppend::new(target, key);
                    agent_output::apply_run(&mut keyed, &plan.calls()[call], outcome, clock, ran)
                }
                Err(e) => Err(e.into()),
            },
        };
        match Written::of(applied) {
            Written::Done(appended) => Status::Done {
                taken,
                paths: appended.iter().filter_map(written_path).collect(),
                failure,
            },
            Written::Refused(e) => Status::Failed {
                error: e.to_string(),
                failure,
            },
            Written::StoreFailed(e) => {
                self.stopped = Some(e.to_string());
                self.stopped_status()
            }
        }
    }

    /// Records how `call` ended. Its dependents become ready (into `next`)
    /// once their last dependency is done, and are skipped — they and
    /// theirs, at once — when it will not be done. A stopped call settles
    /// nothing: the run ends.
    fn settle(&mut self, plan: &Plan, call: usize, status: Status, next: &mut Vec<usize>) {
        let mut todo = vec![(call, status)];
        while let Some((call, status)) = todo.pop() {
            let standing = match &status {
                Status::Done { .. } => Some(Standing::Done),
                Status::Failed { .. } => Some(Standing::Failed),
                Status::Blocked { missing } => {
                    Some(Verdict::Blocked(Blocker::Missing(missing.clone())).standing())
                }
                Status::Skipped { because } => {
                    Some(Verdict::Blocked(Blocker::Dependency(*because)).standing())
                }
                Status::Stopped { .. } => None,
            };
            let done = matches!(status, Status::Done { .. });
            self.status[call] = Some(status);
            self.standing[call] = standing.clone();
            if standing.is_none() {
                continue;
            }
            for &dependent in &self.dependents[call] {
                if self.status[dependent].is_some() {
                    continue;
                }
                if done {
                    self.waiting[dependent] -= 1;
                    if self.waiting[dependent] == 0 {
                        next.push(dependent);
                    }
                    continue;
                }
                // The rule names the dependency that will not be done.
                let because = match waits_on(plan, dependent, &|d| self.standing[d].clone(), &[]) {
                    Some(Blocker::Dependency(d)) => d,
                    _ => call,
                };
                // Marked now so a second failing dependency skips it once.
                self.status[dependent] = Some(Status::Skipped { because });
                todo.push((dependent, Status::Skipped { because }));
            }
        }
    }

    fn report(self, plan: &Plan) -> Report {
        let stopped = self.stopped;
        let calls = self
            .status
            .into_iter()
            .zip(self.wave)
            .enumerate()
            .map(|(index, (status, wave))| CallReport {
                index,
                tool: plan.calls()[index].tool().unwrap_or_default().to_owned(),
                wave,
                status: status.unwrap_or_else(|| match &stopped {
                    Some(error) => Status::Stopped {
                        error: error.clone(),
                    },
                    None => Status::Failed {
                        error: "never became ready".into(),
                        failure: None,
                    },
                }),
            })
            .collect();
        Report { calls }
    }
}

/// Where an appended message wrote: its `_outputPath` destination, or for
/// a message returned whole (R22) without one, the reference to what it
/// wrote in its kind.
fn written_path(message: &Message) -> Option<String> {
    let data = message.as_data()?;
    Some(
        match data.fields().get("_outputPath").and_then(Value::as_str) {
            Some(destination) => destination.to_owned(),
            None => Reference::new(data.kind().clone(), data.destination().clone()).to_string(),
        },
    )
}

/// Without the `rayon` feature the same pipelines run in sequence on the
/// calling thread, with the same results (D61: features cut).
#[cfg(not(feature = "rayon"))]
mod sequential {
    /// `par_iter` as a plain `iter`.
    pub(crate) trait ParIter<T> {
        fn par_iter(&self) -> std::slice::Iter<'_, T>;
    }
    impl<T> ParIter<T> for [T] {
        fn par_iter(&self) -> std::slice::Iter<'_, T> {
            self.iter()
        }
    }
}
