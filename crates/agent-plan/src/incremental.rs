//! Where a plan's calls stand, kept from one look to the next and judged
//! again only where something changed (D113: incremental rounds): a worker
//! looks after every result, and judging every call each time made a run
//! of n calls cost n² judgements.

use crate::Plan;
use crate::graph;
use crate::readiness::{Known, Standing, judge};
use agent_core::{Instance, Kind};
use agent_data::{Context, Identity};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

/// The standings of a plan's calls ([`standings`](crate::standings)),
/// updated by what changed since the last look: the same standings a
/// fresh [`standings`](crate::standings) gives, in time proportional to
/// the calls the changes can touch.
///
/// ```
/// use agent_plan::{Known, Plan, Standing, Standings};
/// use agent_data::{Context, Identity};
/// use agent_core::{json, Kind};
///
/// let plan = Plan::new(vec![
///     json!({"_tool": "fetch", "_outputPath": "†state.page"}),
///     json!({"_tool": "sum", "page": "†state.page", "_outputPath": "†state.sum"}),
/// ])?;
/// let writes_after = plan.writes_after();
/// let mut context = Context::new();
/// let mut known = vec![Known::Open, Known::Open];
/// let mut kept = Standings::new(&plan, &writes_after, &known, &context, &|_| true);
/// assert_eq!(kept.get(1), Some(&Standing::Blocked { reason: "waits for call 0".into(), stuck: false }));
///
/// // Call 0's result lands: its row says done, and `state` changed.
/// let result = agent_data::Message::from_value(json!(
///     {"type": "state", "data": {"page": "<p>"}, "_outputPath": "†state.page"}
/// ))?;
/// context.append(&result[0])?;
/// known[0] = Known::Done;
/// let changed = kept.update(&plan, &writes_after, &known, &context, &|_| true, &[0], &[Identity::global(Kind::new("state")?)]);
/// assert_eq!(changed, [0, 1]);
/// assert_eq!(kept.get(1), Some(&Standing::Ready));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Standings {
    standing: Vec<Standing>,
    /// Each call's place in write order: a call is judged after every call
    /// it waits on.
    rank: Vec<usize>,
    /// The calls whose standing reads this call's: those depending on it
    /// and those writing after it.
    after: Vec<Vec<usize>>,
    /// The calls reading each kind: every such call for a global change,
    /// those of one instance for a change of that instance's layer.
    readers: HashMap<Kind, Readers>,
    /// Calls whose reads cannot be listed (a plan [`Plan::new`] refused
    /// would have none): judged again at every change of the context.
    unlisted: Vec<usize>,
}

#[derive(Debug, Clone, Default)]
struct Readers {
    all: Vec<usize>,
    of: HashMap<Option<Instance>, Vec<usize>>,
}

impl Standings {
    /// Every call judged, as [`standings`](crate::standings) judges them.
    pub fn new(
        plan: &Plan,
        writes_after: &[Vec<usize>],
        known: &[Known],
        context: &Context,
        has_tool: &dyn Fn(&str) -> bool,
    ) -> Standings {
        let n = plan.calls().len();
        let mut rank = vec![0; n];
        for (position, call) in plan.write_order().into_iter().enumerate() {
            if let Some(slot) = rank.get_mut(call) {
                *slot = position;
            }
        }
        let mut after: Vec<Vec<usize>> = vec![Vec::new(); n];
        let deps = plan.dependencies().iter().enumerate();
        let earlier = writes_after.iter().enumerate();
        for (call, before) in deps.chain(earlier) {
            for &b in before {
                if let Some(list) = after.get_mut(b) {
                    list.push(call);
                }
            }
        }
        let mut readers: HashMap<Kind, Readers> = HashMap::new();
        let mut unlisted = Vec::new();
        for (call, parsed) in plan.calls().iter().enumerate() {
            let Ok(access) = graph::access(call, parsed) else {
                unlisted.push(call);
                continue;
            };
            let mut kinds: Vec<&Kind> = access.reads.iter().map(|r| &r.kind).collect();
            kinds.sort_unstable_by(|a, b| a.as_str().cmp(b.as_str()));
            kinds.dedup();
            for kind in kinds {
                let entry = readers.entry(kind.clone()).or_default();
                entry.all.push(call);
                entry
                    .of
                    .entry(access.instance.clone())
                    .or_default()
                    .push(call);
            }
        }
        let standing = crate::standings(plan, writes_after, known, context, has_tool);
        Standings {
            standing,
            rank,
            after,
            readers,
            unlisted,
        }
    }

    /// Call `call`'s standing.
    pub fn get(&self, call: usize) -> Option<&Standing> {
        self.standing.get(call)
    }

    /// Every call's standing, in plan order.
    pub fn all(&self) -> &[Standing] {
        &self.standing
    }

    /// Judges again what the changes since the last look can touch: the
    /// calls whose own record changed (`calls`), the calls reading a layer
    /// a message was appended to (`layers`: a global layer touches every
    /// reader of its kind, an instance's only that instance's readers), and
    /// from there every call waiting on one whose standing changed. Returns
    /// the calls whose standing changed, in write order. The plan, its
    /// `writes_after` and `has_tool` must be those it was built with (when
    /// the tools change, build it again).
    #[allow(clippy::too_many_arguments)] // the judge's inputs, and what changed
    pub fn update(
        &mut self,
        plan: &Plan,
        writes_after: &[Vec<usize>],
        known: &[Known],
        context: &Context,
        has_tool: &dyn Fn(&str) -> bool,
        calls: &[usize],
        layers: &[Identity],
    ) -> Vec<usize> {
        let n = self.standing.len();
        let mut queued = vec![false; n];
        let mut heap: BinaryHeap<Reverse<(usize, usize)>> = BinaryHeap::new();
        let mut push = |call: usize, heap: &mut BinaryHeap<Reverse<(usize, usize)>>| {
            if let Some(flag) = queued.get_mut(call)
                && !std::mem::replace(flag, true)
            {
                heap.push(Reverse((self.rank[call], call)));
            }
        };
        for &call in calls {
            push(call, &mut heap);
        }
        for layer in layers {
            let Some(readers) = self.readers.get(&layer.kind) else {
                continue;
            };
            let touched = match &layer.instance {
                None => &readers.all,
                instance => match readers.of.get(instance) {
                    Some(those) => those,
                    None => continue,
                },
            };
            for &call in touched {
                push(call, &mut heap);
            }
        }
        if !layers.is_empty() {
            for &call in &self.unlisted {
                push(call, &mut heap);
            }
        }
        let none: Vec<usize> = Vec::new();
        let mut changed = Vec::new();
        while let Some(Reverse((_, call))) = heap.pop() {
            let verdict = judge(
                plan,
                call,
                &|d| self.standing.get(d).cloned(),
                writes_after.get(call).unwrap_or(&none),
                known.get(call).copied().unwrap_or(Known::Open),
                context,
                has_tool,
            );
            let now = verdict.standing();
            if self.standing[call] == now {
                continue;
            }
            self.standing[call] = now;
            changed.push(call);
            for i in 0..self.after[call].len() {
                let next = self.after[call][i];
                push(next, &mut heap);
            }
        }
        changed
    }
}
