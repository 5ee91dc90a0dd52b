//! Which call waits for which: reads against possible writes.

use crate::{Error, Result};
use agent_core::{Instance, Reference};
use agent_output::Call;

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

/// For each call, the calls it depends on (never itself).
pub(crate) fn dependencies(accesses: &[Access]) -> Vec<Vec<usize>> {
    accesses
        .iter()
        .enumerate()
        .map(|(b, access_b)| {
            accesses
                .iter()
                .enumerate()
                .filter(|(a, access_a)| *a != b && depends_on(access_b, access_a))
                .map(|(a, _)| a)
                .collect()
        })
        .collect()
}

/// The waves of a dependency graph: a call runs one wave after the latest
/// of its dependencies. Fails on a cycle, naming its calls.
pub(crate) fn waves(deps: &[Vec<usize>]) -> Result<Vec<Vec<usize>>> {
    let mut wave: Vec<Option<usize>> = vec![None; deps.len()];
    let mut done = 0;
    while done < deps.len() {
        let mut progressed = false;
        for call in 0..deps.len() {
            if wave[call].is_some() {
                continue;
            }
            let before: Option<Vec<usize>> = deps[call].iter().map(|d| wave[*d]).collect();
            if let Some(before) = before {
                wave[call] = Some(before.into_iter().max().map_or(0, |w| w + 1));
                done += 1;
                progressed = true;
            }
        }
        if !progressed {
            return Err(Error::Cycle {
                calls: find_cycle(deps, &wave),
            });
        }
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
    let mut current = start;
    loop {
        // Every unplaced call has an unplaced dependency, or it would be placed.
        let Some(next) = deps[current].iter().copied().find(|d| wave[*d].is_none()) else {
            return path;
        };
        if let Some(at) = path.iter().position(|c| *c == next) {
            return path.split_off(at);
        }
        path.push(next);
        current = next;
    }
}
