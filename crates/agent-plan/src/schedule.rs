//! Where each call of a plan stands when its calls are run by many workers
//! (decision D41): what is finished is stored; what is ready, and why the
//! rest is blocked, follows from the plan, the context and which tools
//! some worker has. Shared by workers (what to claim) and `status`.

use crate::Plan;
use crate::graph::{self, Access};
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
    pub(crate) fn write_order(&self) -> Vec<usize> {
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

/// Where every call of `plan` stands, in plan order, given what the store
/// knows of each (`known`, in plan order), the context as it is now, and
/// whether some worker has a tool (`has_tool`).
pub fn standings(
    plan: &Plan,
    writes_after: &[Vec<usize>],
    known: &[Known],
    context: &Context,
    has_tool: &dyn Fn(&str) -> bool,
) -> Vec<Standing> {
    let n = plan.calls().len();
    let mut standing: Vec<Option<Standing>> = vec![None; n];
    let blocked = |reason: String, stuck: bool| Standing::Blocked { reason, stuck };
    for call in plan.write_order() {
        let deps = &plan.dependencies()[call];
        let of = |d: usize, standing: &[Option<Standing>]| standing[d].clone();
        let now = match known.get(call).copied().unwrap_or(Known::Open) {
            Known::Done => Standing::Done,
            Known::Failed => Standing::Failed,
            Known::Running => Standing::Running,
            Known::Open => {
                let failed = deps.iter().find(|&&d| {
                    matches!(
                        of(d, &standing),
                        Some(Standing::Failed | Standing::Blocked { stuck: true, .. })
                    )
                });
                let unfinished = deps
                    .iter()
                    .find(|&&d| !matches!(of(d, &standing), Some(Standing::Done)));
                let first = writes_after[call]
                    .iter()
                    .find(|&&b| !of(b, &standing).is_some_and(|s| s.settled()));
                let tool = plan.calls()[call].tool().unwrap_or_default();
                if let Some(&d) = failed {
                    blocked(
                        format!("call {d}, which it depends on, will not be done"),
                        true,
                    )
                } else if let Some(&d) = unfinished {
                    blocked(format!("waits for call {d}"), false)
                } else if let Some(&b) = first {
                    blocked(
                        format!("waits for call {b}, which writes the same place first"),
                        false,
                    )
                } else {
                    match plan.calls()[call].resolve(context) {
                        Ok(Resolution::Pending(missing)) => {
                            let missing: Vec<String> =
                                missing.iter().map(ToString::to_string).collect();
                            blocked(format!("missing {}", missing.join(", ")), true)
                        }
                        // Not stuck: a worker with the tool may start
                        // later, and then this call's result must still
                        // land before those of later writers of its place.
                        _ if !has_tool(tool) => blocked(
                            format!(
                                "no worker has an activity for tool {}",
                                agent_core::quoted(tool)
                            ),
                            false,
                        ),
                        // A call that cannot be resolved fails when claimed.
                        _ => Standing::Ready,
                    }
                }
            }
        };
        standing[call] = Some(now);
    }
    standing
        .into_iter()
        .map(|s| s.unwrap_or(Standing::Ready))
        .collect()
}
