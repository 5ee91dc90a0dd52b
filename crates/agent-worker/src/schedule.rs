//! The worker's own rules around the shared readiness rule: reading the
//! stored plan, what a call's row says, when to look again, how long to
//! back off, which store errors are worth waiting out.

use crate::Error;
use agent_core::json::Value;
use agent_plan::{Known, Plan};
use agent_store::{CallRow, CallState, Error as StoreError};
use std::time::Duration;

/// How many times a call may be claimed again after its worker stopped
/// before finishing it (died, or lost its lease), beyond the attempts its
/// retries allow: `--retries` counts failed activities, and a worker that
/// died is not one. Past that, a call whose activity stops its worker every
/// time is given up rather than tried forever.
pub(crate) const TAKEOVERS: u32 = 2;

/// A plan message's calls, checked and ordered.
pub(crate) fn parse_plan(row: u64, line: &str) -> Result<Plan, Error> {
    let bad = |reason: String| Error::BadPlan { row, reason };
    let message: Value = agent_core::json::from_str(line).map_err(|e| bad(e.to_string()))?;
    let calls = match message.get("calls") {
        Some(Value::Array(calls)) => calls.to_vec(),
        Some(other) => {
            return Err(bad(format!(
                "\"calls\" must be an array of calls, found {}",
                agent_core::json_type(other)
            )));
        }
        None => return Err(bad("it has no \"calls\": an array of calls".into())),
    };
    Plan::new(calls).map_err(|e| bad(e.to_string()))
}

/// The stored state of a call as the schedule sees it.
pub(crate) fn known(row: &CallRow) -> Known {
    match row.state {
        CallState::Done => Known::Done,
        CallState::Failed => Known::Failed,
        CallState::Running if !row.claimable() => Known::Running,
        CallState::Running | CallState::Waiting => Known::Open,
    }
}

/// When to look again without a notification: when a lease of another
/// worker runs out or a backoff ends (else a slow poll, in case a
/// notification was lost with a connection).
pub(crate) fn next_wake(rows: &[CallRow], lease: Duration) -> Duration {
    let soonest = rows
        .iter()
        .filter_map(|r| match r.state {
            CallState::Running => r.lease_left,
            CallState::Waiting => r.retry_in,
            _ => None,
        })
        .filter(|s| *s > 0.0)
        .fold(f64::INFINITY, f64::min);
    let poll = lease.min(Duration::from_secs(5));
    if soonest.is_finite() {
        // A little after, so the lease has run out when we look.
        Duration::from_secs_f64(soonest + 0.01).min(poll)
    } else {
        poll
    }
}

/// The pause before attempt `attempt + 1`: 1 s, 2 s, 4 s, … up to a minute.
pub(crate) fn retry_delay(attempt: u32) -> Duration {
    Duration::from_secs(1u64 << attempt.saturating_sub(1).min(6)).min(Duration::from_secs(60))
}

/// Errors worth waiting out: the database unreachable or restarting.
pub(crate) fn transient(error: &StoreError) -> bool {
    matches!(
        error,
        StoreError::Database { .. } | StoreError::InDoubt { .. } | StoreError::Contended { .. }
    )
}

/// True when `tools` (sorted, as [`PgCalls::live_tools`] returns them)
/// holds `tool`.
pub(crate) fn has_tool(tools: &[String], tool: &str) -> bool {
    tools.binary_search_by(|t| t.as_str().cmp(tool)).is_ok()
}

/// The candidates a claim names: at most [`WINDOW`] per free slot (at
/// least [`WINDOW`]), so a claim costs the same at 100 ready calls and at
/// 100,000 (D113: incremental rounds), starting at a place the worker's
/// name picks so that workers looking at once ask for different calls.
/// True as well when some were left out.
pub(crate) fn window(candidates: Vec<usize>, free: usize, worker: &str) -> (Vec<usize>, bool) {
    let most = free.max(1).saturating_mul(WINDOW);
    if candidates.len() <= most {
        return (candidates, false);
    }
    // FNV-1a: stable across runs and builds, unlike the std hasher.
    let hash = worker.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    let start = usize::try_from(hash % candidates.len() as u64).unwrap_or(0);
    let picked = candidates
        .iter()
        .cycle()
        .skip(start)
        .take(most)
        .copied()
        .collect();
    (picked, true)
}

/// Candidates a claim names per free slot ([`window`]).
pub(crate) const WINDOW: usize = 8;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn d113_a_claim_names_a_window_of_the_ready_calls_that_differs_by_worker() {
        let ready: Vec<usize> = (0..10_000).collect();
        let (one, more) = window(ready.clone(), 2, "w1");
        assert!(more);
        assert_eq!(one.len(), 2 * WINDOW);
        let (other, _) = window(ready.clone(), 2, "w2");
        assert_ne!(one, other);
        // Consecutive calls from where the name points, wrapping around.
        assert!(one.windows(2).all(|w| w[1] == (w[0] + 1) % 10_000));
        let (few, more) = window(vec![3, 5], 1, "w1");
        assert_eq!((few, more), (vec![3, 5], false));
    }
}
