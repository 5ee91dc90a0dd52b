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
    /// counts the time since against every kept lease and backoff.
    pub(crate) fn refresh(&mut self, calls: &mut PgCalls, plan: u64) -> Result<(), StoreError> {
        let (changed, horizon) = calls.rows_changed(plan, self.horizon)?;
        let now = Instant::now();
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
                // plan's set-up on: a gap cannot be; read them all again.
                None => {
                    self.rows.clear();
                    self.horizon = Horizon::START;
                    self.read_at = None;
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// The rows, in plan order.
    pub(crate) fn rows(&self) -> &[CallRow] {
        &self.rows
    }
}
