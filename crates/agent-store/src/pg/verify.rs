//! `verify` on PostgreSQL: every row read in order, each checked on its own
//! against the digest stored with the row before it, so a finding names
//! the exact row — edited, deleted, inserted, or rows reordered — and the
//! snapshot row checked against the log (R34e).

use super::PgStore;
use super::load::to_u64;
use super::sql::{CHAIN_ROWS, COUNTS};
use crate::{Error, Finding, Result, Verified};
use agent_data::{Context, Digest, Format};

/// One row as stored.
struct Row {
    seq: u64,
    line: String,
    digest: Option<Digest>,
}

impl PgStore {
    /// [`Store::verify`](crate::Store::verify) for PostgreSQL.
    pub(super) fn verify_rows(&mut self) -> Result<Verified> {
        self.forget();
        let Some(id) = self.id()? else {
            return Err(Error::Missing {
                name: self.address.shown.clone(),
            });
        };
        let (rows, length, chained) = self.all_rows(id)?;
        let mut jsonl = Vec::new();
        for row in &rows {
            jsonl.extend(row.line.bytes().map(|b| if b == b'\n' { b' ' } else { b }));
            jsonl.push(b'\n');
        }
        let context = Context::load(&jsonl, Format::Jsonl)
            .map_err(|source| Error::Load {
                name: self.address.shown.clone(),
                source: Box::new(source),
            })?
            .context;
        let mut verified = Verified::of(&self.address.shown, &context);
        verified.findings = row_findings(&rows, length, chained);
        if let Some(stored) = self.read_snapshot(id)? {
            verified
                .findings
                .extend(crate::verify::check_snapshot(&context, &stored.sealed));
        }
        Ok(verified)
    }

    /// Every row of context `id`, its recorded length and chained count.
    fn all_rows(&mut self, id: i64) -> Result<(Vec<Row>, u64, u64)> {
        let client = self.client()?;
        let read = (|| {
            let counts = client.query_one(&COUNTS, &[&id])?;
            let (length, chained): (i64, i64) = (counts.try_get(0)?, counts.try_get(1)?);
            let mut rows = Vec::new();
            for row in client.query(&CHAIN_ROWS, &[&id])? {
                let digest: Option<Vec<u8>> = row.try_get(2)?;
                rows.push(Row {
                    seq: to_u64(row.try_get(0)?),
                    line: row.try_get(1)?,
                    digest: digest.as_deref().and_then(Digest::from_slice),
                });
            }
            Ok::<_, tokio_postgres::Error>((rows, to_u64(length), to_u64(chained)))
        })();
        self.trips += 3;
        read.map_err(|e| self.read_error(&e))
    }
}

/// How many broken places a row that may have moved is tried against.
const MOVES_SEARCHED: usize = 64;

/// What the rows say of themselves: gaps, missing digests, and rows whose
/// digest does not follow from the one stored before them — told apart as
/// an inserted row (the next row follows from the one before it), two
/// rows reordered (each follows where the other stands), a row moved with
/// its digest (it follows from the row before another broken place, and
/// the row after that place follows from it), or an edit.
fn row_findings(rows: &[Row], length: u64, chained: u64) -> Vec<Finding> {
    let mut findings = Vec::new();
    // Rows whose digest does not follow from the row before them.
    let mut broken: Vec<usize> = Vec::new();
    let mut expected = 0u64;
    for (i, row) in rows.iter().enumerate() {
        if row.seq != expected {
            findings.push(Finding::RowsMissing {
                from: expected,
                to: row.seq.saturating_sub(1),
            });
        }
        expected = row.seq + 1;
        let Some(stored) = row.digest else {
            if row.seq < chained {
                findings.push(Finding::RowUnchained { row: row.seq });
            }
            continue;
        };
        let before = match i.checked_sub(1) {
            None if row.seq == 0 => Some(Digest::GENESIS),
            None => None,
            // After a gap the digest before is not there to check against.
            Some(p) if rows[p].seq + 1 == row.seq => rows[p].digest,
            Some(_) => None,
        };
        if before.is_some_and(|d| d.next(row.line.as_bytes()) != stored) {
            broken.push(i);
        }
    }
    if expected < length {
        findings.push(Finding::RowsMissing {
            from: expected,
            to: length - 1,
        });
    }
    // The digest stored before place `at` (the chain's start at 0).
    let stored_before = |at: usize| {
        at.checked_sub(1)
            .map_or(Some(Digest::GENESIS), |p| rows[p].digest)
    };
    // Whether `line` after `prior` gives `digest`.
    let chains = |prior: Option<Digest>, line: &str, digest: Option<Digest>| {
        prior.is_some_and(|d| Some(d.next(line.as_bytes())) == digest)
    };
    // Whether row `row`'s line, at place `before`, gives the digest stored there.
    let follows = |before: usize, row: usize| {
        chains(stored_before(before), &rows[row].line, rows[before].digest)
    };
    let mut told = vec![false; rows.len()];
    // Moved with its digest: a broken row that fits back exactly at another
    // broken place — it follows from the row before that place, and the
    // row after that place follows from it. The row after the place it
    // left then stands after a stranger: a consequence, not an edit of its
    // own. Looked for among the first broken places only, so a log broken
    // everywhere costs linear time.
    let searched = &broken[..broken.len().min(MOVES_SEARCHED)];
    let mut moved: Vec<(usize, usize)> = Vec::new();
    for &i in searched {
        // Where row `i` would stand back at place `k`: the row before it
        // is the one before `k`, or — when `i` stands right before `k`,
        // the two neighbours exchanged — the one now at `k`; the row after
        // it likewise.
        let fits_at = |k: usize| {
            let prior = if k == i + 1 {
                rows[k].digest
            } else {
                stored_before(k)
            };
            let after = if k + 1 == i {
                rows.get(k)
            } else {
                rows.get(k + 1)
            };
            k != i
                && chains(prior, &rows[i].line, rows[i].digest)
                && after.is_none_or(|after| chains(rows[i].digest, &after.line, after.digest))
        };
        if let Some(home) = searched.iter().copied().find(|&k| fits_at(k)) {
            moved.push((i, home));
        }
    }
    // The row after a moved row's place follows from it (`fits_at`): it
    // stayed, and stands after a stranger only by the move — at the end of
    // the log it may look as if it fits elsewhere too, so it is no move.
    // (Of two neighbours exchanged, the row after the first's place is the
    // other moved row itself.)
    let after_places: Vec<usize> = moved
        .iter()
        .filter(|&&(m, home)| home + 1 != m)
        .map(|&(_, home)| home + 1)
        .collect();
    moved.retain(|(m, _)| !after_places.contains(m));
    for &(m, home) in &moved {
        if home + 1 != m
            && let Some(stayed) = told.get_mut(home + 1)
        {
            *stayed = true;
        }
    }
    for (n, &i) in broken.iter().enumerate() {
        if told[i] {
            continue;
        }
        if let Some(&(_, home)) = moved.iter().find(|(m, _)| *m == i) {
            findings.push(Finding::RowMoved {
                row: rows[i].seq,
                from: rows[home].seq,
            });
            told[i] = true;
            continue;
        }
        // Inserted: the next row follows from the row before this one.
        if let Some(&next) = broken.get(n + 1).filter(|&&next| next == i + 1)
            && chains(stored_before(i), &rows[next].line, rows[next].digest)
        {
            findings.push(Finding::RowInserted { row: rows[i].seq });
            told[i] = true;
            told[next] = true;
            continue;
        }
        // Reordered: this row's line belongs where another broken row
        // stands, and that one's here.
        if let Some(&other) = broken
            .iter()
            .skip(n + 1)
            .find(|&&j| !told[j] && follows(i, j) && follows(j, i))
        {
            findings.push(Finding::RowsReordered {
                row: rows[i].seq,
                with: rows[other].seq,
            });
            told[i] = true;
            told[other] = true;
            continue;
        }
        findings.push(Finding::RowEdited { row: rows[i].seq });
        told[i] = true;
    }
    findings.sort_by_key(Finding::position);
    findings
}
