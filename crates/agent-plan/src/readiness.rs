//! The one readiness rule: whether a call of a plan may run now, and if not
//! why — shared by the in-process runner ([`Plan::run`]), the loop's turn
//! and the workers' schedule, so a call stands the same wherever it runs.
//!
//! [`judge`] decides one call from what is known of the calls before it in
//! write order, what is recorded of the call itself ([`Known`]: a runner's
//! own record, or the store's row), the context as it is now and which
//! tools some runner has. [`standings`] applies it to a whole plan, as
//! `agentctx status` shows it.
//!
//! What a failed *write* means is part of the rule too ([`Written`]): a
//! refusal (the result breaks a schema or a type, R13/R25) fails the call;
//! any other store failure is not the call's outcome — its result is not in
//! the log — so the run stops and says why, and the call is left to be run
//! again (D42: one readiness rule).

use crate::Plan;
use crate::graph::{self, Access};
use agent_core::json::Value;
use agent_core::{Instance, Kind};
use agent_data::Context;
use agent_vars::Resolution;
use std::borrow::Cow;
use std::collections::HashMap;

/// What the store knows of one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Known {
    /// Nobody holds it: never claimed, given back, or its holder's lease ran out.
    Open,
    /// A worker holds it, its lease running.
    Running,
    /// Its result is written.
    Done,
    /// Given up.
    Failed,
}

/// Where one call stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// Its result is written.
    Done,
    /// Given up.
    Failed,
    /// A worker is running it.
    Running,
    /// A worker with its tool may claim it now.
    Ready,
    /// It cannot run now, and why: a call it depends on is not done, a
    /// reference is missing, no worker has its tool.
    Blocked {
        /// Why, in words (`waits for call 3`, `missing †state.x`, …).
        reason: String,
        /// True when it never will run: a reference is missing, or a call
        /// it depends on failed or will never run (it counts as finished
        /// for ordering). A call whose tool no worker has is not stuck: a
        /// worker with the tool may come.
        stuck: bool,
    },
}

impl Standing {
    /// `done`, `failed`, `running`, `ready` or `blocked`.
    pub fn name(&self) -> &'static str {
        match self {
            Standing::Done => "done",
            Standing::Failed => "failed",
            Standing::Running => "running",
            Standing::Ready => "ready",
            Standing::Blocked { .. } => "blocked",
        }
    }

    /// Finished for ordering: done, failed, or never going to run.
    fn settled(&self) -> bool {
        match self {
            Standing::Done | Standing::Failed => true,
            Standing::Blocked { stuck, .. } => *stuck,
            Standing::Running | Standing::Ready => false,
        }
    }
}

impl Plan {
    /// The order calls are considered in: wave by wave (so a call comes
    /// after every call it depends on), each wave in plan order. It is the
    /// order in which `run` writes results.
    pub fn write_order(&self) -> Vec<usize> {
        self.waves().iter().flatten().copied().collect()
    }

    /// For each call, the calls before it in write order (wave by wave,
    /// each wave in plan order: the order in which `run` writes) that
    /// write the same layer at overlapping places: its result is written
    /// after theirs, so results land in the order `run` writes them and
    /// the views do not depend on which worker was faster. Per layer and
    /// first path segment a call waits only for the latest such writer
    /// (which waited for the one before); a write to a layer's root waits
    /// for every writer since the last such write. [`standings`] takes it.
    pub fn writes_after(&self) -> Vec<Vec<usize>> {
        type Scope<'a> = (&'a Kind, Option<&'a Instance>);
        let accesses: Vec<Access> = self
            .calls()
            .iter()
            .enumerate()
            .filter_map(|(i, c)| graph::access(i, c).ok())
            .collect();
        let mut after: Vec<Vec<usize>> = vec![Vec::new(); self.calls().len()];
        if accesses.len() != self.calls().len() {
            return after;
        }
        let mut last_at: HashMap<(Scope<'_>, Cow<'_, str>), usize> = HashMap::new();
        let mut since_root: HashMap<Scope<'_>, Vec<usize>> = HashMap::new();
        let mut last_root: HashMap<Scope<'_>, usize> = HashMap::new();
        for call in self.write_order() {
            let access = &accesses[call];
            let mut before = Vec::new();
            for write in &access.writes {
                let scope = (&write.kind, access.instance.as_ref());
                match write
                    .path
                    .segments()
                    .first()
                    .filter(|s| !graph::negative(s))
                {
                    Some(head) => {
                        let key = (scope, head.as_key());
                        before.extend(last_at.get(&key).copied());
                        before.extend(last_root.get(&scope).copied());
                        last_at.insert(key, call);
                        since_root.entry(scope).or_default().push(call);
                    }
                    None => {
                        before.extend(since_root.remove(&scope).unwrap_or_default());
                        before.extend(last_root.get(&scope).copied());
                        last_root.insert(scope, call);
                        last_at.retain(|(s, _), _| *s != scope);
                    }
                }
            }
            before.retain(|&b| b != call);
            before.sort_unstable();
            before.dedup();
            after[call] = before;
        }
        after
    }
}

/// Why a call cannot run now, or never will.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Blocker {
    /// A call it depends on has not finished.
    WaitsFor(usize),
    /// A call before it in write order writes the same place and has not
    /// finished: its result lands first.
    WritesAfter(usize),
    /// A call it depends on failed, or will never run.
    Dependency(usize),
    /// References it reads are missing though every call it depends on is
    /// done (R18).
    Missing(Vec<String>),
    /// No runner has an activity for its tool.
    NoTool(String),
}

impl Blocker {
    /// True when the call never will run: a dependency will not be done, or
    /// a reference is missing with nothing left to write it. A call whose
    /// tool no runner has is not stuck: a runner with the tool may come.
    pub fn stuck(&self) -> bool {
        matches!(self, Blocker::Dependency(_) | Blocker::Missing(_))
    }
}

impl std::fmt::Display for Blocker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Blocker::WaitsFor(d) => write!(f, "waits for call {d}"),
            Blocker::WritesAfter(b) => {
                write!(f, "waits for call {b}, which writes the same place first")
            }
            Blocker::Dependency(d) => {
                write!(f, "call {d}, which it depends on, will not be done")
            }
            Blocker::Missing(missing) => write!(f, "missing {}", missing.join(", ")),
            Blocker::NoTool(tool) => write!(
                f,
                "no worker has an activity for tool {}",
                agent_core::quoted(tool)
            ),
        }
    }
}

/// What [`judge`] decides for one call.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Recorded as finished or held: done, failed, or running.
    Known(Known),
    /// It may run now: its call resolved against the context, or why it
    /// cannot be resolved (then running it fails it).
    Ready(Result<Value, String>),
    /// It cannot run now, or never will.
    Blocked(Blocker),
}

impl Verdict {
    /// The verdict as `agentctx status` names it.
    pub fn standing(&self) -> Standing {
        match self {
            Verdict::Known(Known::Done) => Standing::Done,
            Verdict::Known(Known::Failed) => Standing::Failed,
            Verdict::Known(Known::Running) => Standing::Running,
            Verdict::Known(Known::Open) | Verdict::Ready(_) => Standing::Ready,
            Verdict::Blocked(blocker) => Standing::Blocked {
                reason: blocker.to_string(),
                stuck: blocker.stuck(),
            },
        }
    }
}

/// The readiness rule for call `call` of `plan`.
///
/// - `before(d)`: the standing of call `d`, which comes before `call` in
///   write order (its dependencies and [`Plan::writes_after`] do); `None`
///   while it has none yet (not finished, for this rule).
/// - `writes_after`: the calls whose results must land before this one's
///   (`plan.writes_after()[call]`, or none for a runner that writes in
///   write order itself).
/// - `known`: what is recorded of the call itself.
///
/// In order: a recorded state stands; a dependency that failed or will
/// never run blocks it for good; an unfinished dependency, or an
/// unfinished earlier writer of its place, makes it wait; then its
/// references must all be there (else it is stuck, R18) and some runner
/// must have its tool. Otherwise it is ready, with its resolved call.
pub fn judge(
    plan: &Plan,
    call: usize,
    before: &dyn Fn(usize) -> Option<Standing>,
    writes_after: &[usize],
    known: Known,
    context: &Context,
    has_tool: &dyn Fn(&str) -> bool,
) -> Verdict {
    if known != Known::Open {
        return Verdict::Known(known);
    }
    if let Some(blocker) = waits_on(plan, call, before, writes_after) {
        return Verdict::Blocked(blocker);
    }
    let the_call = &plan.calls()[call];
    let resolved = match the_call.resolve(context) {
        Ok(Resolution::Pending(missing)) => {
            let missing = missing.iter().map(ToString::to_string).collect();
            return Verdict::Blocked(Blocker::Missing(missing));
        }
        Ok(Resolution::Ready(resolved)) => Ok(resolved),
        Err(e) => Err(e.to_string()),
    };
    let tool = the_call.tool().unwrap_or_default();
    if !has_tool(tool) {
        // Not stuck: a runner with the tool may start later, and then this
        // call's result must still land before those of later writers of
        // its place.
        return Verdict::Blocked(Blocker::NoTool(tool.to_owned()));
    }
    Verdict::Ready(resolved)
}

/// The part of [`judge`] that looks at other calls only: a dependency that
/// will not be done, an unfinished dependency, an unfinished earlier writer
/// of the same place — or `None` when the call waits on no other call.
pub(crate) fn waits_on(
    plan: &Plan,
    call: usize,
    before: &dyn Fn(usize) -> Option<Standing>,
    writes_after: &[usize],
) -> Option<Blocker> {
    let deps = &plan.dependencies()[call];
    let stuck = |d: &usize| {
        matches!(
            before(*d),
            Some(Standing::Failed | Standing::Blocked { stuck: true, .. })
        )
    };
    if let Some(&d) = deps.iter().find(|d| stuck(d)) {
        return Some(Blocker::Dependency(d));
    }
    if let Some(&d) = deps
        .iter()
        .find(|&&d| !matches!(before(d), Some(Standing::Done)))
    {
        return Some(Blocker::WaitsFor(d));
    }
    writes_after
        .iter()
        .find(|&&b| !before(b).is_some_and(|s| s.settled()))
        .map(|&b| Blocker::WritesAfter(b))
}

/// Where every call of `plan` stands, in plan order, given what the store
/// knows of each (`known`, in plan order), the context as it is now, and
/// whether some worker has a tool (`has_tool`): [`judge`] over the plan in
/// write order.
pub fn standings(
    plan: &Plan,
    writes_after: &[Vec<usize>],
    known: &[Known],
    context: &Context,
    has_tool: &dyn Fn(&str) -> bool,
) -> Vec<Standing> {
    let n = plan.calls().len();
    let none: Vec<usize> = Vec::new();
    let mut standing: Vec<Option<Standing>> = vec![None; n];
    for call in plan.write_order() {
        let verdict = judge(
            plan,
            call,
            &|d| standing.get(d).cloned().flatten(),
            writes_after.get(call).unwrap_or(&none),
            known.get(call).copied().unwrap_or(Known::Open),
            context,
            has_tool,
        );
        standing[call] = Some(verdict.standing());
    }
    standing
        .into_iter()
        .map(|s| s.unwrap_or(Standing::Ready))
        .collect()
}

/// What writing a call's result came to, the same for every runner.
#[derive(Debug)]
pub enum Written<T> {
    /// It is in the log.
    Done(T),
    /// Refused: the result breaks the context's rules, or the outcome could
    /// not be turned into messages. The call has failed.
    Refused(agent_output::Error),
    /// The store failed: nothing of the call is in the log, so the call has
    /// not failed — the run stops, and the call is run again by whoever
    /// runs the plan next.
    StoreFailed(agent_data::AppendError),
}

impl<T> Written<T> {
    /// Classifies what [`agent_output::apply`] (or a commit through it)
    /// returned.
    pub fn of(result: std::result::Result<T, agent_output::Error>) -> Written<T> {
        match result {
            Ok(done) => Written::Done(done),
            Err(agent_output::Error::Store(e)) => Written::StoreFailed(e),
            Err(e) => Written::Refused(e),
        }
    }
}
