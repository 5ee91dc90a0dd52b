//! Where the current plan's calls stand, kept from round to round and
//! judged again only where something changed (D113: incremental rounds):
//! a round follows every commit, and judging every call each round made
//! a plan of n calls cost n² judgements.

use crate::schedule::{has_tool, known};
use agent_data::{Context, Identity};
use agent_plan::{Known, Plan, Standing, Standings};
use agent_store::{CallRow, Error as StoreError, Horizon, PgCalls};
use std::collections::HashSet;
use std::time::Instant;

/// The standings of the last round, and what they were judged from.
pub(crate) struct Judged {
    standings: Standings,
    known: Vec<Known>,
    /// How many messages of the context they saw.
    seen: usize,
    /// The live workers' tools they saw.
    live: Vec<String>,
}

impl Judged {
    /// The standings now, given the calls' rows, the context and the live
    /// workers' tools: the kept ones updated for the rows whose state
    /// changed and the layers appended to since, or every call judged
    /// afresh on the first round, when the tools changed, or when the
    /// rows no longer match the plan.
    pub(crate) fn now<'j>(
        kept: &'j mut Option<Judged>,
        plan: &Plan,
        writes_after: &[Vec<usize>],
        rows: &[CallRow],
        context: &Context,
        live: &[String],
    ) -> &'j [Standing] {
        let known: Vec<Known> = rows.iter().map(known).collect();
        let has = |tool: &str| has_tool(live, tool);
        let same = kept.as_ref().is_some_and(|j| {
            j.live == live && j.known.len() == known.len() && j.seen <= context.len()
        });
        match kept {
            Some(judged) if same => {
                let calls: Vec<usize> = (0..known.len())
                    .filter(|&c| known[c] != judged.known[c])
                    .collect();
                let mut seen_layers: HashSet<&Identity> = HashSet::new();
                let layers: Vec<Identity> = (judged.seen..context.len())
                    .filter_map(|i| context.message_identity(i))
                    .filter(|layer| seen_layers.insert(layer))
                    .cloned()
                    .collect();
                if !calls.is_empty() || !layers.is_empty() {
                    judged.standings.update(
                        plan,
                        writes_after,
                        &known,
                        context,
                        &has,
                        &calls,
                        &layers,
                    );
                }
                judged.known = known;
                judged.seen = context.len();
            }
            _ => {
                *kept = Some(Judged {
                    standings: Standings::new(plan, writes_after, &known, context, &has),
                    known,
                    seen: context.len(),
                    live: live.to_vec(),
                });
            }
        }
        kept.as_ref().map_or(&[], |judged| judged.standings.all())
    }
}

/// A plan's call rows as last read, brought up to date each round by
/// reading only the rows changed since (D113: incremental rounds).
pub(crate) struct KeptRows {
    rows: Vec<CallRow>,
    horizon: Horizon,
    /// When they were read: the leases and backoffs they hold are seconds
    /// from then.
    read_at: Option<Instant>,
}

impl KeptRows {
    /// Nothing read yet: the first read reads every row.
    pub(crate) fn new() -> KeptRows {
        KeptRows {
            rows: Vec::new(),
            horizon: Horizon::START,
            read_at: None,
        }
    }

    /// Reads the rows changed since the last read into the kept ones, and
    /// counts the time since against every kept lease and backoff. Rows
    /// that cannot be brought up to date — a horizon that went back (the
    /// database is another cluster now, with transaction ids of its own),
    /// or a gap in the rows — are read again whole, at once.
    pub(crate) fn refresh(&mut self, calls: &mut PgCalls, plan: u64) -> Result<(), StoreError> {
        if !self.catch_up(calls, plan)? {
            *self = KeptRows::new();
            self.catch_up(calls, plan)?;
        }
        Ok(())
    }

    /// [`KeptRows::refresh`]'s read; false when the kept rows cannot be
    /// brought up to date by it.
    fn catch_up(&mut self, calls: &mut PgCalls, plan: u64) -> Result<bool, StoreError> {
        let (changed, horizon) = calls.rows_changed(plan, self.horizon)?;
        Ok(self.merge(changed, horizon, Instant::now()))
    }

    /// Takes `changed`, read at `now` up to `horizon`, into the kept rows;
    /// false (the kept rows left as they were, or partly merged) when they
    /// cannot be brought up to date so.
    fn merge(&mut self, changed: Vec<CallRow>, horizon: Horizon, now: Instant) -> bool {
        if horizon < self.horizon {
            return false;
        }
        if let Some(at) = self.read_at {
            let gone = now.duration_since(at).as_secs_f64();
            for row in &mut self.rows {
                row.lease_left = row.lease_left.map(|left| left - gone);
                row.retry_in = row.retry_in.map(|left| left - gone);
            }
        }
        self.read_at = Some(now);
        self.horizon = horizon;
        for row in changed {
            let len = self.rows.len();
            match self.rows.get_mut(row.call) {
                Some(kept) => *kept = row,
                None if row.call == len => self.rows.push(row),
                // Rows come in plan order and every call has one from the
                // plan's set-up on: a gap cannot be.
                None => return false,
            }
        }
        true
    }

    /// The rows, in plan order.
    pub(crate) fn rows(&self) -> &[CallRow] {
        &self.rows
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use agent_store::CallState;

    fn row(call: usize, state: CallState, lease_left: Option<f64>) -> CallRow {
        CallRow {
            call,
            state,
            worker: None,
            attempts: 0,
            claimed_at: None,
            lease_left,
            retry_in: None,
            error: None,
        }
    }

    #[test]
    fn d113_kept_rows_take_changes_age_leases_and_refuse_a_horizon_that_went_back_or_a_gap() {
        let start = Instant::now();
        let mut kept = KeptRows::new();
        let first = vec![
            row(0, CallState::Waiting, None),
            row(1, CallState::Running, Some(10.0)),
        ];
        assert!(kept.merge(first, Horizon::at(100), start));
        // Four seconds on, call 0 is claimed; call 1 was not read again.
        let later = start + std::time::Duration::from_secs(4);
        assert!(kept.merge(
            vec![row(0, CallState::Running, Some(30.0))],
            Horizon::at(105),
            later
        ));
        let rows = kept.rows();
        assert_eq!(
            (rows[0].state, rows[0].lease_left),
            (CallState::Running, Some(30.0))
        );
        assert_eq!(rows[1].lease_left, Some(6.0));
        // Transaction ids of another cluster: below the kept horizon.
        assert!(!kept.merge(Vec::new(), Horizon::at(7), later));
        // A row past the end with none between.
        assert!(!kept.merge(vec![row(5, CallState::Done, None)], Horizon::at(106), later));
    }
}
