//! Which call waits for which: reads against possible writes.

use crate::{Error, Result};
use agent_core::{Instance, Reference};
use agent_output::Call;
use std::borrow::Cow;
use std::collections::HashMap;

/// What one call reads and may write, in its instance scope.
#[derive(Debug, Clone)]
pub(crate) struct Access {
    pub(crate) instance: Option<Instance>,
    pub(crate) reads: Vec<Reference>,
    pub(crate) writes: Vec<Reference>,
}

pub(crate) fn access(index: usize, call: &Call) -> Result<Access> {
    let reads = agent_vars::call_reads(call.as_value()).map_err(|e| Error::BadCall {
        index,
        reason: e.to_string(),
    })?;
    let writes = call
        .output_path()
        .map(|path| path.outcomes().iter().flatten().cloned().collect())
        .unwrap_or_default();
    Ok(Access {
        instance: call.instance().cloned(),
        reads: reads.references,
        writes,
    })
}

/// B depends on A when B reads what A may write: same kind, overlapping
/// paths, and A's writes are visible to B (same instance, or A global).
pub(crate) fn depends_on(b: &Access, a: &Access) -> bool {
    let visible = a.instance.is_none() || a.instance == b.instance;
    visible
        && b.reads.iter().any(|r| {
            a.writes
                .iter()
                .any(|w| w.kind == r.kind && w.path.overlaps(&r.path))
        })
}

/// For each call, the calls it depends on (never itself), ascending.
///
/// Writers are indexed by kind and first path segment, so a read meets
/// only writers that can overlap it — not every call of the plan (a
/// 32,000-call chain compared every pair took a minute). Writes at a kind's root or
/// behind a negative index overlap any read of the kind and are met by all.
///
/// A call is listed once per bucket however many of its destinations fall
/// in it (`†state.x && †state.x && …` would otherwise make every reader
/// of `†state.x` check it once per destination). More than `limit`
/// dependencies in all is [`Error::TooManyDependencies`]: a plan where
/// thousands of calls read what thousands of others write has quadratically
/// many.
pub(crate) fn dependencies(accesses: &[Access], limit: usize) -> Result<Vec<Vec<usize>>> {
    let mut by_head: HashMap<(&str, Cow<'_, str>), Vec<usize>> = HashMap::new();
    let mut wide: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut by_kind: HashMap<&str, Vec<usize>> = HashMap::new();
    let push = |bucket: &mut Vec<usize>, a: usize| {
        if bucket.last() != Some(&a) {
            bucket.push(a);
        }
    };
    for (a, access) in accesses.iter().enumerate() {
        for write in &access.writes {
            let kind = write.kind.as_str();
            push(by_kind.entry(kind).or_default(), a);
            match write.path.segments().first() {
                Some(head) if !negative(head) => {
                    push(by_head.entry((kind, head.as_key())).or_default(), a)
                }
                _ => push(wide.entry(kind).or_default(), a),
            }
        }
    }
    let none: Vec<usize> = Vec::new();
    let mut total = 0usize;
    accesses
        .iter()
        .enumerate()
        .map(|(b, access_b)| {
            let mut deps: Vec<usize> = Vec::new();
            for read in &access_b.reads {
                let kind = read.kind.as_str();
                let candidates: Vec<&Vec<usize>> = match read.path.segments().first() {
                    Some(head) if !negative(head) => vec![
                        by_head.get(&(kind, head.as_key())).unwrap_or(&none),
                        wide.get(kind).unwrap_or(&none),
                    ],
                    _ => vec![by_kind.get(kind).unwrap_or(&none)],
                };
                deps.extend(
                    candidates
                        .into_iter()
                        .flatten()
                        .copied()
                        .filter(|&a| a != b && depends_on(access_b, &accesses[a])),
                );
            }
            deps.sort_unstable();
            deps.dedup();
            total += deps.len();
            if total > limit {
                return Err(Error::TooManyDependencies { limit });
            }
            Ok(deps)
        })
        .collect()
}

/// The waves of a dependency graph: a call runs one wave after the latest
/// of its dependencies. Fails on a cycle, naming its calls. Linear in
/// calls and dependencies (Kahn's order).
pub(crate) fn waves(deps: &[Vec<usize>]) -> Result<Vec<Vec<usize>>> {
    let n = deps.len();
    let mut waiting: Vec<usize> = deps.iter().map(Vec::len).collect();
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (call, before) in deps.iter().enumerate() {
        for &d in before {
            dependents[d].push(call);
        }
    }
    let mut wave: Vec<Option<usize>> = vec![None; n];
    let mut ready: Vec<usize> = (0..n).filter(|&c| waiting[c] == 0).collect();
    for &call in &ready {
        wave[call] = Some(0);
    }
    while let Some(call) = ready.pop() {
        let w = wave[call].unwrap_or(0);
        for &next in &dependents[call] {
            wave[next] = Some(wave[next].map_or(w + 1, |x| x.max(w + 1)));
            waiting[next] -= 1;
            if waiting[next] == 0 {
                ready.push(next);
            }
        }
    }
    // A call with a dependency still waiting got a provisional wave; only
    // calls whose every dependency was placed count as placed.
    let placed: Vec<bool> = waiting.iter().map(|&w| w == 0).collect();
    if placed.iter().any(|p| !p) {
        let unplaced: Vec<Option<usize>> = (0..n)
            .map(|c| if placed[c] { wave[c] } else { None })
            .collect();
        return Err(Error::Cycle {
            calls: find_cycle(deps, &unplaced),
        });
    }
    let count = wave.iter().flatten().max().map_or(0, |w| w + 1);
    let mut waves = vec![Vec::new(); count];
    for (call, w) in wave.into_iter().enumerate() {
        if let Some(w) = w {
            waves[w].push(call);
        }
    }
    Ok(waves)
}

/// A cycle among the calls left unplaced: walk dependencies until one repeats.
fn find_cycle(deps: &[Vec<usize>], wave: &[Option<usize>]) -> Vec<usize> {
    let Some(start) = wave.iter().position(Option::is_none) else {
        return Vec::new();
    };
    let mut path = vec![start];
    // Where each call sits on the path, so a repeat is found at once.
    let mut at_step: HashMap<usize, usize> = HashMap::from([(start, 0)]);
    let mut current = start;
    loop {
        // Every unplaced call has an unplaced dependency, or it would be placed.
        let Some(next) = deps[current].iter().copied().find(|d| wave[*d].is_none()) else {
            return path;
        };
        if let Some(&at) = at_step.get(&next) {
            return path.split_off(at);
        }
        at_step.insert(next, path.len());
        path.push(next);
        current = next;
    }
}

/// A negative index (`[-1]`) overlaps any position of its array.
pub(crate) fn negative(segment: &agent_core::Segment) -> bool {
    matches!(segment, agent_core::Segment::Index(i) if *i < 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn reference(kind: usize, path: usize) -> Reference {
        const PATHS: [&str; 7] = ["", ".x", ".x.y", ".y", "[0]", "[-1]", ".x[-1].z"];
        format!("†{}{}", ["a", "b"][kind], PATHS[path])
            .parse()
            .unwrap()
    }

    fn accesses() -> impl Strategy<Value = Vec<Access>> {
        let one = (
            any::<bool>(),
            proptest::collection::vec((0..2usize, 0..7usize), 0..3),
            proptest::collection::vec((0..2usize, 0..7usize), 0..3),
        )
            .prop_map(|(instanced, reads, writes)| Access {
                instance: instanced.then(|| Instance::new("①").unwrap()),
                reads: reads.into_iter().map(|(k, p)| reference(k, p)).collect(),
                writes: writes.into_iter().map(|(k, p)| reference(k, p)).collect(),
            });
        proptest::collection::vec(one, 0..12)
    }

    proptest! {
        #[test]
        fn indexed_dependencies_equal_comparing_every_pair(accesses in accesses()) {
            let naive: Vec<Vec<usize>> = accesses
                .iter()
                .enumerate()
                .map(|(b, access_b)| {
                    (0..accesses.len())
                        .filter(|&a| a != b && depends_on(access_b, &accesses[a]))
                        .collect()
                })
                .collect();
            prop_assert_eq!(dependencies(&accesses, usize::MAX).unwrap(), naive);
        }

        #[test]
        fn each_call_runs_one_wave_after_its_latest_dependency(accesses in accesses()) {
            let deps = dependencies(&accesses, usize::MAX).unwrap();
            match waves(&deps) {
                Ok(waves) => {
                    let mut wave_of = vec![usize::MAX; deps.len()];
                    for (w, calls) in waves.iter().enumerate() {
                        for &c in calls {
                            wave_of[c] = w;
                        }
                    }
                    for (c, before) in deps.iter().enumerate() {
                        let expected = before.iter().map(|&d| wave_of[d] + 1).max().unwrap_or(0);
                        prop_assert_eq!(wave_of[c], expected);
                    }
                }
                Err(Error::Cycle { calls }) => {
                    // Each call of the reported cycle depends on the next.
                    prop_assert!(!calls.is_empty());
                    for (i, &c) in calls.iter().enumerate() {
                        let next = calls[(i + 1) % calls.len()];
                        prop_assert!(deps[c].contains(&next), "{calls:?}");
                    }
                }
                Err(other) => prop_assert!(false, "{other}"),
            }
        }
    }
}
