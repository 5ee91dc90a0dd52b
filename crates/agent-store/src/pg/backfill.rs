//! Rows written before schema version 6 carry no chain digest: the first
//! client to find such a context computes them from the rows as they are
//! and stores them, a batch at a time (R34e). What was changed before then
//! cannot be told; from then on, every change can.

use super::PgStore;
use super::client::RowIter;
use super::sql::{BACKFILL, BACKFILL_ROWS};
use crate::Result;
use agent_data::Digest;

/// Rows digested and stored per round trip.
const BATCH: i64 = 10_000;

impl PgStore {
    /// Gives the rows of context `id` from `chained` on their digests;
    /// returns how many rows are chained now. Another client backfilling
    /// at once computes the same digests; only one moves `chained`.
    pub(super) fn backfill(&mut self, id: i64, chained: u64) -> Result<u64> {
        let mut from = i64::try_from(chained).unwrap_or(i64::MAX);
        let mut head = if from == 0 {
            Digest::GENESIS
        } else {
            match self.stored_digest(id, from - 1, "backfill the chain of")? {
                Some(digest) => digest,
                // Its chained rows lost their digests: leave it to reads
                // and `verify`, which say so.
                None => return Ok(chained),
            }
        };
        loop {
            let client = self.client()?;
            let params: [&(dyn tokio_postgres::types::ToSql + Sync); 3] = [&id, &from, &BATCH];
            let rows = client
                .query_raw(&BACKFILL_ROWS, params)
                .and_then(|rows| collect(rows, &mut head))
                .map_err(|e| self.database("backfill the chain of", &e))?;
            self.trips += 2;
            let Some(&(last, _)) = rows.last() else {
                return Ok(u64::try_from(from).unwrap_or(0));
            };
            let seqs: Vec<i64> = rows.iter().map(|(seq, _)| *seq).collect();
            let digests: Vec<Vec<u8>> = rows.into_iter().map(|(_, d)| d).collect();
            let client = self.client()?;
            let moved = client
                .execute(&BACKFILL, &[&id, &seqs, &digests, &(last + 1), &from])
                .map_err(|e| self.database("backfill the chain of", &e))?;
            self.trips += 2;
            if moved == 0 || seqs.len() < BATCH as usize {
                // Another client got there first, or the end was reached.
                return Ok(u64::try_from(last + 1).unwrap_or(0));
            }
            from = last + 1;
        }
    }
}

/// The rows' positions and digests, following `head` (which ends at the
/// last); a gap in the positions ends the batch there.
fn collect(
    mut rows: RowIter<'_>,
    head: &mut Digest,
) -> Result<Vec<(i64, Vec<u8>)>, tokio_postgres::Error> {
    let mut out: Vec<(i64, Vec<u8>)> = Vec::new();
    while let Some(row) = rows.next()? {
        let seq: i64 = row.try_get(0)?;
        if out.last().is_some_and(|(last, _)| *last + 1 != seq) {
            break;
        }
        let line: &str = row.try_get(1)?;
        *head = head.next(line.as_bytes());
        out.push((seq, head.as_bytes().to_vec()));
    }
    Ok(out)
}
