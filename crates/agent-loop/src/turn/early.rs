//! Calls started while the answer is still streaming (spec R39, decision
//! D77). A call starts early only when nothing not yet seen can change
//! it: an explicit call that reads nothing a call of the answer may write
//! — so no later call can be one it depends on — among the answer's
//! leading such calls, so it is judged in the same order and against
//! the same context, with the same checks and the same confirmation, as
//! it would be once the answer has ended. Its result is held and written
//! in write order with the others, so what is appended is the same
//! whether the answer streamed or came whole.

use crate::Confirm;
use crate::turn::guard::RESERVED_KINDS;
use crate::turn::judge::{Ended, Judged, Rules, Step, admit, ready};
use agent_core::json::Value;
use agent_data::Context;
use agent_output::{Call, Clock, Outcome, Ran};
use agent_plan::{Activities, Known, Plan, judge};
use std::sync::mpsc;
use std::thread::Scope;

/// An activity's result, by the call's position among the admitted calls,
/// with when it started.
pub(crate) type Finished = (usize, Ran, Result<Outcome, String>);

/// One call judged before the answer ended.
pub(crate) struct Started {
    /// Its index in the answer.
    pub at: usize,
    /// Its position among the answer's admitted calls (its index in the
    /// plan).
    pub position: usize,
    /// The call the application edited it into, if it did.
    pub edit: Option<Call>,
    /// How it ended, when it ended without running; `None` while its
    /// activity runs (its result comes on the channel).
    pub end: Option<Ended>,
}

/// The calls of one answer started while it streamed, and the channel
/// their activities' results come back on.
pub(crate) struct Early {
    pub(crate) sender: mpsc::Sender<Finished>,
    pub(crate) receiver: mpsc::Receiver<Finished>,
    /// In answer order.
    pub(crate) started: Vec<Started>,
    /// Activities started, whose results have not been taken.
    pub(crate) running: usize,
    /// Calls of the answer admitted so far.
    admitted: usize,
    /// Whether every call admitted so far started early.
    open: bool,
}

impl Early {
    /// Nothing started yet.
    pub(crate) fn new() -> Early {
        let (sender, receiver) = mpsc::channel();
        Early {
            sender,
            receiver,
            started: Vec::new(),
            running: 0,
            admitted: 0,
            open: true,
        }
    }

    /// Judges call `at` of the answer, reported while it streams: when it
    /// is admitted, explicit, reads nothing a call may write, a slot is
    /// free and every admitted call before it started early, it is judged
    /// (gates, tool schema, `confirm`) and, if ready, its activity starts
    /// in `scope`. Every other call waits for the answer's end. Calls must
    /// be offered in answer order, each once.
    #[allow(clippy::too_many_arguments)] // one turn's whole setting
    pub(crate) fn offer<'scope, 'env: 'scope>(
        &mut self,
        scope: &'scope Scope<'scope, 'env>,
        at: usize,
        written: &Value,
        rules: &Rules<'_>,
        activities: &'env Activities,
        context: &Context,
        confirm: &mut dyn FnMut(&Call) -> Confirm,
        clock: &dyn Clock,
    ) {
        if at >= rules.max_calls {
            return;
        }
        let Ok(call) = admit(written, rules) else {
            return;
        };
        let position = self.admitted;
        self.admitted += 1;
        // Only the answer's leading calls start early: the calls judged
        // once it has ended come after them, so every call is judged, and
        // the confirm hook asked, in the order a whole answer would see.
        if !self.open {
            return;
        }
        if self.running >= rules.parallel.max(1) || !unaffected(&call, activities) {
            self.open = false;
            return;
        }
        let Ok(plan) = Plan::new(vec![call.as_value().clone()]) else {
            return;
        };
        let verdict = judge(&plan, 0, &|_| None, &[], Known::Open, context, &|_| true);
        let judged = Judged {
            plan: &plan,
            call: 0,
            calls: std::slice::from_ref(&call),
            fates: &[None],
            tools: rules.tools,
            activities,
        };
        let (step, edit) = ready(&judged, verdict, context, confirm);
        let end = match step {
            Step::End(end) => Some(end),
            Step::Run(resolved) => {
                let tool = edit
                    .as_ref()
                    .unwrap_or(&call)
                    .tool()
                    .unwrap_or_default()
                    .to_owned();
                let done = self.sender.clone();
                let ran = Ran::started_at(clock.now());
                let started = std::thread::Builder::new().spawn_scoped(scope, move || {
                    // The receiver outlives every sender in this scope.
                    let _ = done.send((position, ran, activities.run_caught(&tool, &resolved)));
                });
                match started {
                    Ok(_) => {
                        self.running += 1;
                        None
                    }
                    Err(error) => Some(Ended::Failed(format!(
                        "not run: no thread could be started for its activity ({error})"
                    ))),
                }
            }
        };
        self.started.push(Started {
            at,
            position,
            edit,
            end,
        });
    }

    /// Keeps only the calls started, numbered among themselves (for a
    /// turn that runs nothing else: a reply that turned out invalid, a
    /// failed request, an answer whose calls cannot be ordered); returns
    /// their indices in the answer.
    pub(crate) fn alone(&mut self) -> Vec<usize> {
        for (position, started) in self.started.iter_mut().enumerate() {
            started.position = position;
        }
        self.started.iter().map(|s| s.at).collect()
    }
}

/// Whether nothing a call of the answer may write can change `call`: an
/// explicit call whose every read is of a kind only the loop writes. A
/// later call then cannot be one it depends on.
fn unaffected(call: &Call, activities: &Activities) -> bool {
    let explicit = call.tool().is_some_and(|t| activities.get(t).is_some());
    explicit
        && agent_vars::call_reads(call.as_value()).is_ok_and(|reads| {
            reads
                .references
                .iter()
                .all(|r| RESERVED_KINDS.contains(&r.kind.as_str()))
        })
}
