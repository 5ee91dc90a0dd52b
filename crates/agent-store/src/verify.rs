//! `verify`: the whole log read again, its chain recomputed, and every
//! digest recorded beside it — a snapshot's, a row's, one kept elsewhere —
//! compared with it. A finding says what does not match and where; nothing
//! is ever repaired.

use agent_data::{Context, Digest};
use serde::Serialize;

/// What [`crate::Store::verify`] found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verified {
    /// The context's name (a path, or a URL without its password).
    pub name: String,
    /// Its messages, as [`Context`] numbers them.
    pub messages: usize,
    /// The chain's digest after the last one.
    pub head: Digest,
    /// What does not match, in the order found; empty when clean.
    pub findings: Vec<Finding>,
    /// True when the log was folded again, so a snapshot's views were
    /// compared with the fold too; false for
    /// [`Store::verify_chain`](crate::Store::verify_chain), which checked the
    /// chain and every digest by hashing the lines as stored (D111: verify
    /// at hashing speed).
    pub folded: bool,
}

impl Verified {
    /// The result for `context`, a whole log read with nothing recorded
    /// beside it: its length and head, no findings yet.
    pub fn of(name: &str, context: &Context) -> Verified {
        Verified {
            name: name.to_owned(),
            messages: context.len(),
            head: context.head(),
            findings: Vec::new(),
            folded: true,
        }
    }

    /// Adds a finding when the head is not `expected` — a head kept where
    /// whoever can rewrite the log cannot reach.
    pub fn expect(&mut self, expected: Digest) {
        if self.head != expected {
            self.findings.push(Finding::Head {
                expected,
                found: self.head,
            });
        }
    }

    /// True when nothing was found.
    pub fn is_clean(&self) -> bool {
        self.findings.is_empty()
    }
}

/// One thing that does not match the log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "finding", rename_all = "camelCase")]
#[non_exhaustive]
pub enum Finding {
    /// The head is not the one expected: the log is not the one whose head
    /// was kept (changed anywhere, or cut, or grown).
    Head {
        /// The head kept elsewhere.
        expected: Digest,
        /// The head of the log as it is.
        found: Digest,
    },
    /// A snapshot summarises more messages than the log has.
    #[serde(rename_all = "camelCase")]
    SnapshotPastEnd {
        /// The messages it summarises.
        summarises: usize,
    },
    /// A snapshot's digest is not the log's at its length: a message before
    /// that point changed since it was taken, or the snapshot is not this
    /// log's.
    #[serde(rename_all = "camelCase")]
    SnapshotChain {
        /// The messages it summarises.
        summarises: usize,
        /// Its digest.
        snapshot: Digest,
        /// The log's digest after as many messages.
        log: Digest,
    },
    /// A snapshot's views are not the fold of the messages it summarises,
    /// though its digest matches: the snapshot was edited.
    #[serde(rename_all = "camelCase")]
    SnapshotViews {
        /// The messages it summarises.
        summarises: usize,
    },
    /// A snapshot that cannot be read (damaged, or another format).
    SnapshotUnreadable {
        /// Why.
        reason: String,
    },
    /// The head record beside a file says the log held `messages` messages
    /// ending at `record` when agentctx last wrote it; the log's digest
    /// there is `log` (or it is shorter): a message before that point
    /// changed, or the log was cut, since.
    RecordChain {
        /// The messages the record counts.
        messages: usize,
        /// Its digest.
        record: Digest,
        /// The log's digest after as many messages (`None`: it has fewer).
        log: Option<Digest>,
    },
    /// The log's digest after `before` messages is not the checkpoint's: a
    /// message from `after` (the checkpoint before, or 0) to `before`
    /// changed, or the log was cut there (`log` is `None`).
    Checkpoint {
        /// The checkpoint before, which matched (0: the start).
        after: usize,
        /// The first checkpoint that does not match.
        before: usize,
        /// The log's digest there (`None`: it has fewer messages).
        log: Option<Digest>,
    },
    /// Rows `from` to `to` (inclusive) are not there: deleted.
    RowsMissing {
        /// The first missing row.
        from: u64,
        /// The last.
        to: u64,
    },
    /// The row's digest was removed.
    RowUnchained {
        /// The row.
        row: u64,
    },
    /// The row's digest does not follow from the row before it: its line
    /// (or digest) was edited.
    RowEdited {
        /// The row.
        row: u64,
    },
    /// The row does not belong: the row after it follows from the one
    /// before it.
    RowInserted {
        /// The row.
        row: u64,
    },
    /// A row stands, line and digest together, where another row did: it
    /// follows from the row before `from`, where it was written.
    RowMoved {
        /// Where it stands now.
        row: u64,
        /// Where it was written.
        from: u64,
    },
    /// Two rows' lines stand in each other's places.
    RowsReordered {
        /// The first of them.
        row: u64,
        /// The other.
        with: u64,
    },
    /// A file beside the log that may not be believed (not a regular file,
    /// another user's, writable by others, …), so it is not used.
    Ignored {
        /// The file.
        path: String,
        /// Why it is not believed.
        reason: String,
    },
}

impl Finding {
    /// The first row (on PostgreSQL) a finding is about, for ordering
    /// findings by where the log first changed; findings about the log as a
    /// whole come after every row.
    pub fn position(&self) -> u64 {
        match self {
            Finding::RowsMissing { from: row, .. }
            | Finding::RowUnchained { row }
            | Finding::RowEdited { row }
            | Finding::RowInserted { row }
            | Finding::RowMoved { row, .. }
            | Finding::RowsReordered { row, .. } => *row,
            _ => u64::MAX,
        }
    }
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Finding::Head { expected, found } => {
                write!(f, "the head is {found}, not the expected {expected}")
            }
            Finding::SnapshotPastEnd { summarises } => write!(
                f,
                "the snapshot summarises {summarises} messages, more than the log has"
            ),
            Finding::SnapshotChain {
                summarises,
                snapshot,
                log,
            } => write!(
                f,
                "the snapshot of the first {summarises} messages has digest {snapshot}, the log \
                 {log} there: a message before {summarises} changed, or the snapshot is not \
                 this log's"
            ),
            Finding::SnapshotViews { summarises } => write!(
                f,
                "the snapshot's views are not the fold of the first {summarises} messages"
            ),
            Finding::SnapshotUnreadable { reason } => {
                write!(f, "the snapshot cannot be read: {reason}")
            }
            Finding::Ignored { path, reason } => write!(f, "ignored {path}: {reason}"),
            Finding::Checkpoint {
                after,
                before,
                log: Some(_),
            } => write!(
                f,
                "the chain after {before} messages is not its checkpoint's: a message from \
                 {after} to {before} changed"
            ),
            Finding::Checkpoint { after, before, .. } => write!(
                f,
                "a checkpoint at {before} messages, past the log's end: the log was cut after \
                 {after}"
            ),
            Finding::RecordChain {
                messages,
                record,
                log: Some(log),
            } => write!(
                f,
                "agentctx last left the log at {messages} messages with digest {record}; the \
                 log's digest there is {log}: a message before {messages} changed since"
            ),
            Finding::RecordChain {
                messages, record, ..
            } => write!(
                f,
                "agentctx last left the log at {messages} messages with digest {record}; the \
                 log has fewer: it was cut since"
            ),
            Finding::RowsMissing { from, to } if from == to => {
                write!(f, "row {from} is missing: deleted")
            }
            Finding::RowsMissing { from, to } => {
                write!(f, "rows {from} to {to} are missing: deleted")
            }
            Finding::RowUnchained { row } => write!(f, "row {row}'s digest was removed"),
            Finding::RowEdited { row } => write!(
                f,
                "row {row} does not follow from the row before it: edited"
            ),
            Finding::RowInserted { row } => write!(
                f,
                "row {row} does not belong: the row after it follows from the one before: \
                 inserted"
            ),
            Finding::RowMoved { row, from } => write!(
                f,
                "row {row} is the row written at {from}, its digest with it: moved"
            ),
            Finding::RowsReordered { row, with } => {
                write!(
                    f,
                    "rows {row} and {with} stand in each other's places: reordered"
                )
            }
        }
    }
}

/// Checks the checkpoints `points` (ascending) against `log`, a whole log:
/// the first that does not match places the change after the one before.
pub(crate) fn check_checkpoints(log: &Context, points: &[(usize, Digest)]) -> Vec<Finding> {
    let mut digest = Digest::GENESIS;
    let mut at = 0;
    check_checkpoints_by(points, |messages| {
        if messages > log.len() {
            return None;
        }
        while at < messages {
            digest = digest.next(log.message_json(at).unwrap_or_default().as_bytes());
            at += 1;
        }
        Some(digest)
    })
}

/// Checks the checkpoints `points` (ascending) against the log's digests
/// after their counts of messages, as `digest_at` gives them (`None` past
/// the log's end): the first that does not match places the change after
/// the one before.
pub(crate) fn check_checkpoints_by(
    points: &[(usize, Digest)],
    mut digest_at: impl FnMut(usize) -> Option<Digest>,
) -> Vec<Finding> {
    let mut after = 0;
    for &(messages, expected) in points {
        let log = digest_at(messages);
        if log != Some(expected) {
            return vec![Finding::Checkpoint {
                after,
                before: messages,
                log,
            }];
        }
        after = messages;
    }
    Vec::new()
}

/// Checks what a head record says against `log`, a whole log: the digest
/// after its first `messages` messages.
pub(crate) fn check_record(log: &Context, messages: usize, record: Digest) -> Vec<Finding> {
    if messages > log.len() {
        return vec![Finding::RecordChain {
            messages,
            record,
            log: None,
        }];
    }
    // A record of the whole log (the common case) is checked against the
    // chain the read computed, not hashed again.
    let at = if messages == log.len() {
        log.head()
    } else {
        Digest::of((0..messages).map(|i| log.message_json(i).unwrap_or_default().as_bytes()))
    };
    if at == record {
        return Vec::new();
    }
    vec![Finding::RecordChain {
        messages,
        record,
        log: Some(at),
    }]
}

/// A sealed snapshot read for checking: its body, what it summarises,
/// and its anchor.
pub(crate) struct Sealed<'a> {
    body: &'a [u8],
    summary: Context,
    anchor: agent_core::json::Value,
}

impl<'a> Sealed<'a> {
    /// Reads a sealed snapshot; the finding that it cannot be, if not.
    pub(crate) fn read(sealed: &'a [u8]) -> Result<Sealed<'a>, Finding> {
        let unreadable = |reason: String| Finding::SnapshotUnreadable { reason };
        let Some(body) = crate::snapshot::unseal(sealed) else {
            return Err(unreadable("its seal does not match its bytes".into()));
        };
        let (summary, anchor) =
            Context::from_snapshot(body).map_err(|e| unreadable(e.to_string()))?;
        Ok(Sealed {
            body,
            summary,
            anchor,
        })
    }

    /// The messages it summarises.
    pub(crate) fn summarises(&self) -> usize {
        self.summary.len()
    }

    /// Checks its digest against the log's after as many messages,
    /// `None` when the log has fewer.
    pub(crate) fn check_digest(&self, log: Option<Digest>) -> Option<Finding> {
        let summarises = self.summarises();
        match log {
            None => Some(Finding::SnapshotPastEnd { summarises }),
            Some(log) if log != self.summary.head() => Some(Finding::SnapshotChain {
                summarises,
                snapshot: self.summary.head(),
                log,
            }),
            Some(_) => None,
        }
    }

    /// Checks it against `prefix`, the log's first [`Sealed::summarises`]
    /// messages folded: its digest against theirs, then its views against
    /// their fold.
    pub(crate) fn check_prefix(&self, prefix: &Context) -> Vec<Finding> {
        let summarises = self.summarises();
        if let Some(finding) = self.check_digest(Some(prefix.head())) {
            return vec![finding];
        }
        // The prefix's snapshot, under the same anchor, is the snapshot's
        // body byte for byte when the views are the fold — or what the body
        // reads as, written again by this build, for a body spelled
        // otherwise with the same content (an older build's, its held lines
        // not packed, D87: packed snapshot lines): what it opens as is what
        // counts.
        match prefix.snapshot(&self.anchor) {
            Ok(again) if again == self.body => Vec::new(),
            Ok(again)
                if self
                    .summary
                    .snapshot(&self.anchor)
                    .is_ok_and(|read| read == again) =>
            {
                Vec::new()
            }
            Ok(_) => vec![Finding::SnapshotViews { summarises }],
            Err(e) => vec![Finding::SnapshotUnreadable {
                reason: e.to_string(),
            }],
        }
    }
}

/// Checks a sealed snapshot against `log`, a whole log: its digest against
/// the log's at its length, then its views against the fold of that prefix
/// (folded again here: a store that can stop its read there checks
/// [`Sealed::check_prefix`] on the way instead).
pub(crate) fn check_snapshot(log: &Context, sealed: &[u8]) -> Vec<Finding> {
    let sealed = match Sealed::read(sealed) {
        Ok(sealed) => sealed,
        Err(finding) => return vec![finding],
    };
    let summarises = sealed.summarises();
    if summarises > log.len() {
        return vec![Finding::SnapshotPastEnd { summarises }];
    }
    let mut lines = Vec::new();
    for i in 0..summarises {
        lines.extend_from_slice(log.message_json(i).unwrap_or_default().as_bytes());
        lines.push(b'\n');
    }
    match Context::load(&lines, agent_data::Format::Jsonl) {
        Ok(loaded) => sealed.check_prefix(&loaded.context),
        Err(e) => vec![Finding::SnapshotUnreadable {
            reason: format!("the log's first {summarises} messages: {e}"),
        }],
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use crate::snapshot::seal;
    use agent_core::json;

    fn log(n: usize) -> Context {
        let text: String = (0..n)
            .map(|i| format!("{}\n", json!({"type": "state", "data": {"n": i}})))
            .collect();
        Context::load(text.as_bytes(), agent_data::Format::Jsonl)
            .unwrap()
            .context
    }

    #[test]
    fn r34e_a_snapshot_of_a_prefix_of_the_log_is_clean() {
        let sealed = seal(log(3).snapshot(&json!({"rows": 3})).unwrap());
        assert_eq!(check_snapshot(&log(5), &sealed), []);
    }

    #[test]
    fn r34e_a_snapshot_with_the_right_digest_and_forged_views_is_found() {
        let body = String::from_utf8(log(3).snapshot(&json!(null)).unwrap()).unwrap();
        assert!(body.contains(r#"{"n":2}"#), "{body}");
        let forged = seal(body.replace(r#"{"n":2}"#, r#"{"n":9}"#).into_bytes());
        assert_eq!(
            check_snapshot(&log(5), &forged),
            [Finding::SnapshotViews { summarises: 3 }]
        );
    }

    /// A log of three global writes and three one-write instances.
    fn with_instances() -> Context {
        let text: String = (0..6)
            .map(|i| match i % 2 {
                0 => format!("{}\n", json!({"type": "state", "data": {"n": i}})),
                _ => format!(
                    "{}\n",
                    json!({"type": "state", "data": {"v": i}, "_instance": format!("i{i}")})
                ),
            })
            .collect();
        Context::load(text.as_bytes(), agent_data::Format::Jsonl)
            .unwrap()
            .context
    }

    #[test]
    fn d87_a_snapshot_an_older_build_wrote_is_checked_by_what_it_reads_as() {
        let log = with_instances();
        let body = String::from_utf8(log.snapshot(&json!(null)).unwrap()).unwrap();
        let (header, held) = body.split_once('\n').unwrap();
        assert!(held.starts_with(r#"["state","i1",{"v":1}]"#), "{held}");
        // What version 3 wrote: every held line as the log holds it.
        let lines: String = [1, 3, 5]
            .iter()
            .map(|&i| format!("{}\n", log.message_json(i).unwrap()))
            .collect();
        let old = format!(
            "{}\n{lines}",
            header.replace(r#""version":4"#, r#""version":3"#)
        );
        assert_eq!(check_snapshot(&log, &seal(old.clone().into_bytes())), []);
        let forged = old.replace(r#""view":{"n":4}"#, r#""view":{"n":9}"#);
        assert_ne!(forged, old);
        assert_eq!(
            check_snapshot(&log, &seal(forged.into_bytes())),
            [Finding::SnapshotViews { summarises: 6 }]
        );
    }

    #[test]
    fn r34e_a_snapshot_of_another_log_or_past_the_end_or_damaged_is_found() {
        let other = seal(log(3).snapshot(&json!(null)).unwrap());
        let mut changed = log(2);
        changed
            .append_all(
                &agent_data::Message::from_value(json!({"type": "state", "data": {"n": 7}}))
                    .unwrap(),
            )
            .unwrap();
        changed
            .append_all(
                &agent_data::Message::from_value(json!({"type": "state", "data": {"n": 8}}))
                    .unwrap(),
            )
            .unwrap();
        assert!(matches!(
            check_snapshot(&changed, &other)[..],
            [Finding::SnapshotChain { summarises: 3, .. }]
        ));
        assert_eq!(
            check_snapshot(&log(2), &other),
            [Finding::SnapshotPastEnd { summarises: 3 }]
        );
        let mut damaged = other.clone();
        let last = damaged.len() - 1;
        damaged[last] ^= 1;
        assert_eq!(
            check_snapshot(&log(5), &damaged)[0].to_string(),
            "the snapshot cannot be read: its seal does not match its bytes"
        );
    }
}
