//! Reading a context file whole, and `verify`: the log read once, its
//! fold looked at where its snapshot was taken on the way, and every
//! digest kept beside it compared with the chain.

use super::lock::LockedFile;
use super::store::{FileStore, Seen};
use super::trust::Log;
use crate::snapshot::Since;
use crate::verify::Sealed;
use crate::{Finding, Result};
use agent_data::{Context, Format, Loaded};
use std::io::{BufRead, Read};

/// A look at the fold after a number of messages, on the way through a
/// whole read.
pub(super) type Look<'a> = (usize, &'a mut dyn FnMut(&Context));

impl FileStore {
    /// [`Store::load`](crate::Store::load); with `look`, the fold after
    /// its number of messages is shown to it on the way, when the lines
    /// before are that many messages (else it is not called).
    pub(super) fn load_looking(&mut self, look: Option<Look<'_>>) -> Result<Loaded> {
        let format = self.format;
        let loaded = self.with_lock(false, |store, file| {
            let mut json = Vec::new();
            let mut stale_snapshot = false;
            let loaded = match format {
                Format::Jsonl => store.read_whole_jsonl(file, look)?,
                Format::Json => {
                    json = file.read_from(0).map_err(store.io("read"))?;
                    // An empty file is an empty context, as for JSONL (D23: readers lock).
                    let bytes: &[u8] = if json.trim_ascii().is_empty() {
                        b"[]"
                    } else {
                        &json
                    };
                    Context::load(bytes, Format::Json).map_err(|source| store.load_error(source))?
                }
            };
            store.seen = Seen {
                messages: loaded.context.len(),
                head: loaded.context.head(),
                items: loaded.items,
                end: loaded.end,
                unterminated: loaded.unterminated,
                file: Some(file.identity().map_err(store.io("read"))?),
                ..Seen::default()
            };
            match format {
                Format::Jsonl => {
                    store.remember_tail(file)?;
                    // Read whole: what the file holds is known, so an open
                    // through the snapshot may trust it from now on.
                    if !loaded.unterminated && loaded.warnings.is_empty() {
                        store.record_whole_read(file, &loaded.context);
                    }
                    stale_snapshot = store.judge_distrusted(&loaded.context);
                }
                Format::Json => store.remember_json(&json),
            }
            // No snapshot was read: the whole log is the tail.
            store.since = Since::default();
            store
                .since
                .add(loaded.context.len(), loaded.end.offset as u64);
            if stale_snapshot {
                // Replaced by one of the log as it is (a cache: failing to
                // write it costs the next open the same check again).
                let _ = store.write_snapshot(&loaded.context);
            }
            Ok(loaded)
        })?;
        Ok(self.with_warnings(loaded))
    }

    /// The whole JSONL file, streamed; with `look`, in two parts, the
    /// first ending after the line of its message.
    fn read_whole_jsonl(&self, file: &LockedFile, look: Option<Look<'_>>) -> Result<Loaded> {
        // Only a hint: without a length the load just grows.
        let size = file.len().ok().and_then(|n| usize::try_from(n).ok());
        let size = size.unwrap_or(0);
        let error = |source| self.load_error(source);
        let whole = || {
            let reader = file.reader_from(0).map_err(self.io("read"))?;
            Context::load_jsonl_reader_sized(reader, &self.name, size).map_err(error)
        };
        let Some((messages, look)) = look.filter(|(messages, _)| *messages > 0) else {
            return whole();
        };
        let Some(cut) = line_end(file.reader_from(0).map_err(self.io("read"))?, messages)
            .map_err(self.io("read"))?
        else {
            return whole();
        };
        let reader = file.reader_from(0).map_err(self.io("read"))?;
        let first = Context::load_jsonl_reader_sized(reader.take(cut as u64), &self.name, cut)
            .map_err(error)?;
        if first.context.len() != messages || first.unterminated || !first.warnings.is_empty() {
            // Its lines are not as many messages: read whole, not looked at.
            return whole();
        }
        look(&first.context);
        let reader = file.reader_from(cut as u64).map_err(self.io("read"))?;
        let rest = first
            .context
            .load_jsonl_onto(
                reader,
                &self.name,
                first.end,
                first.items,
                size - cut.min(size),
            )
            .map_err(error)?;
        Ok(Loaded {
            items: first.items + rest.items,
            ..rest
        })
    }

    /// What is kept beside the file for `verify`, read before the log (a
    /// whole read records the file as it is): the head record, the sealed
    /// snapshot, the checkpoints, and a finding for each that may not be
    /// believed.
    pub(super) fn kept_beside(&mut self) -> Result<KeptBeside> {
        let record = self.recorded()?;
        // Beside the real file, as writers keep it (symlinks resolved).
        let target = std::fs::canonicalize(&self.path).unwrap_or_else(|_| self.path.clone());
        let meta = std::fs::metadata(&target).map_err(self.io("read"))?;
        let mut warnings = Vec::new();
        let log = Log::of(&meta);
        let places = super::place::to_read(&target, &log);
        let sealed = super::snapshot::read_from(&places, &log, &mut warnings);
        let ignored = warnings
            .into_iter()
            .filter_map(|warning| match warning {
                agent_data::Warning::IgnoredSidecar { path, reason } => {
                    Some(Finding::Ignored { path, reason })
                }
                _ => None,
            })
            .collect();
        let points = super::checkpoints::read(&target, &log, &mut Vec::new());
        Ok(KeptBeside {
            record,
            sealed,
            points,
            ignored,
        })
    }

    /// [`Store::verify`](crate::Store::verify): the log read whole, and
    /// the snapshot, checkpoints and record beside the file checked
    /// against it.
    pub(super) fn verify_file(&mut self) -> Result<crate::Verified> {
        let kept = self.kept_beside()?;
        self.verify_kept(kept)
    }

    /// [`FileStore::verify_file`] with what is kept beside the file
    /// already read.
    pub(super) fn verify_kept(&mut self, kept: KeptBeside) -> Result<crate::Verified> {
        // The snapshot is read first, so the log is folded once: looked
        // at where the snapshot was taken on the way, or, when its
        // lines are not as many messages, folded again up to there after.
        let snapshot = kept.sealed.as_deref().map(Sealed::read);
        let mut looked = None;
        let loaded = match &snapshot {
            Some(Ok(snapshot)) => {
                let mut look = |prefix: &Context| looked = Some(snapshot.check_prefix(prefix));
                self.load_looking(Some((snapshot.summarises(), &mut look)))?
            }
            _ => self.load_looking(None)?,
        };
        let mut verified = crate::Verified::of(&self.name, &loaded.context);
        verified.findings = kept.ignored;
        match (snapshot, looked) {
            (Some(Err(unreadable)), _) => verified.findings.push(unreadable),
            (Some(Ok(_)), Some(found)) => verified.findings.extend(found),
            (Some(Ok(_)), None) => verified.findings.extend(crate::verify::check_snapshot(
                &loaded.context,
                kept.sealed.as_deref().unwrap_or_default(),
            )),
            (None, _) => {}
        }
        verified.findings.extend(crate::verify::check_checkpoints(
            &loaded.context,
            &kept.points,
        ));
        if let Some(found) = kept.record {
            verified.findings.extend(crate::verify::check_record(
                &loaded.context,
                found.messages,
                found.digest,
            ));
        }
        Ok(verified)
    }
}

/// What is kept beside a file, read for `verify`.
pub(super) struct KeptBeside {
    /// The head record, when one may be believed for this file.
    pub(super) record: Option<super::record::Record>,
    /// The sealed snapshot's bytes.
    pub(super) sealed: Option<Vec<u8>>,
    /// The checkpoints, ascending.
    pub(super) points: Vec<(usize, agent_data::Digest)>,
    /// A finding for each file beside that may not be believed.
    pub(super) ignored: Vec<Finding>,
}

/// Where the line of the `messages`-th message line ends: the bytes of
/// that many non-blank lines and the blank ones among them; `None` when
/// `reader` has fewer.
fn line_end(mut reader: impl BufRead, messages: usize) -> std::io::Result<Option<usize>> {
    let (mut seen, mut offset) = (0, 0);
    let mut line = Vec::new();
    while seen < messages {
        line.clear();
        let read = reader.read_until(b'\n', &mut line)?;
        if read == 0 || line.last() != Some(&b'\n') {
            return Ok(None);
        }
        offset += read;
        if !line.iter().all(u8::is_ascii_whitespace) {
            seen += 1;
        }
    }
    Ok(Some(offset))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::snapshot::{seal, unseal};
    use crate::{SnapshotWhen, Store};
    use agent_core::json;
    use agent_data::Message;

    /// A file of 600 messages, each writing `k<i % 50>`, its snapshot
    /// taken after 580.
    fn written(dir: &std::path::Path) -> std::path::PathBuf {
        let path = dir.join("c.jsonl");
        std::fs::write(&path, "").unwrap();
        let mut store = FileStore::open(&path).unwrap();
        let mut context = store.load().unwrap().context;
        let message = |i: usize| {
            Message::from_value(json!({"type": "state", "data": {format!("k{}", i % 50): i}}))
                .unwrap()
        };
        let first: Vec<Message> = (0..580).flat_map(message).collect();
        store.commit(&mut context, &first).unwrap();
        store.snapshot(&context, SnapshotWhen::Now).unwrap();
        let rest: Vec<Message> = (580..600).flat_map(message).collect();
        store.commit(&mut context, &rest).unwrap();
        path
    }

    #[test]
    fn d110_a_whole_read_shows_the_fold_after_the_messages_asked_for_on_the_way() {
        let dir = tempfile::tempdir().unwrap();
        let path = written(dir.path());
        let text = std::fs::read_to_string(&path).unwrap();
        let first: String = text.lines().take(580).map(|l| format!("{l}\n")).collect();
        let expected = Context::load(first.as_bytes(), Format::Jsonl)
            .unwrap()
            .context;
        let mut seen = None;
        let mut look = |prefix: &Context| seen = Some((prefix.len(), prefix.head()));
        let loaded = FileStore::open(&path)
            .unwrap()
            .load_looking(Some((580, &mut look)))
            .unwrap();
        assert_eq!(seen, Some((580, expected.head())));
        let whole = Context::load(text.as_bytes(), Format::Jsonl).unwrap();
        assert_eq!(loaded.context.head(), whole.context.head());
        assert_eq!((loaded.items, loaded.end), (whole.items, whole.end));
        assert_eq!(
            loaded.context.read(&"†state".parse().unwrap(), None),
            whole.context.read(&"†state".parse().unwrap(), None)
        );
        // Past the end: not looked at, read all the same.
        let mut called = false;
        let mut look = |_: &Context| called = true;
        let loaded = FileStore::open(&path)
            .unwrap()
            .load_looking(Some((601, &mut look)))
            .unwrap();
        assert!(!called);
        assert_eq!(loaded.context.head(), whole.context.head());
    }

    #[test]
    fn d110_verify_finds_forged_views_and_a_changed_prefix_at_the_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        let path = written(dir.path());
        assert_eq!(
            FileStore::open(&path).unwrap().verify().unwrap().findings,
            []
        );
        let snapshot = dir.path().join(".c.jsonl.snapshot");
        let sealed = std::fs::read(&snapshot).unwrap();
        let body = String::from_utf8(unseal(&sealed).unwrap().to_vec()).unwrap();
        assert!(body.contains(r#""k10":560"#), "{body}");
        let forged = body.replacen(r#""k10":560"#, r#""k10":561"#, 1);
        std::fs::write(&snapshot, seal(forged.into_bytes())).unwrap();
        assert_eq!(
            FileStore::open(&path).unwrap().verify().unwrap().findings,
            [Finding::SnapshotViews { summarises: 580 }]
        );
        // The snapshot as written, a line before it changed (its length kept).
        std::fs::write(&snapshot, &sealed).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replacen(r#"{"k10":10}"#, r#"{"k10":99}"#, 1)).unwrap();
        let findings = FileStore::open(&path).unwrap().verify().unwrap().findings;
        assert!(
            matches!(
                findings.first(),
                Some(Finding::SnapshotChain {
                    summarises: 580,
                    ..
                })
            ),
            "{findings:?}"
        );
    }

    #[test]
    fn d111_verify_chain_compares_the_snapshots_and_checkpoints_digests_with_the_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = written(dir.path());
        let full = FileStore::open(&path).unwrap().verify().unwrap();
        let hashed = FileStore::open(&path).unwrap().verify_chain().unwrap();
        assert!(!hashed.folded && full.folded);
        assert_eq!((hashed.head, hashed.messages), (full.head, 600));
        assert_eq!(hashed.findings, []);

        let snapshot = dir.path().join(".c.jsonl.snapshot");
        let sealed = std::fs::read(&snapshot).unwrap();
        let body = String::from_utf8(unseal(&sealed).unwrap().to_vec()).unwrap();
        let other = agent_data::Digest::GENESIS.next(b"{}").to_string();
        let (at, _) = body.match_indices(r#""head":""#).next().unwrap();
        let forged = format!("{}{other}{}", &body[..at + 8], &body[at + 8 + 64..]);
        std::fs::write(&snapshot, seal(forged.into_bytes())).unwrap();
        let found = FileStore::open(&path).unwrap().verify_chain().unwrap();
        assert!(!found.folded);
        assert!(
            matches!(
                found.findings[..],
                [Finding::SnapshotChain { summarises: 580, snapshot, .. }] if snapshot.to_string() == other
            ),
            "{:?}",
            found.findings
        );
        std::fs::write(&snapshot, &sealed).unwrap();

        let checkpoints = dir.path().join(".c.jsonl.chain");
        let text = std::fs::read_to_string(&checkpoints).unwrap();
        assert!(text.starts_with("256 "), "{text}");
        let (first, rest) = text.split_once('\n').unwrap();
        std::fs::write(&checkpoints, format!("256 {other}\n{rest}")).unwrap();
        assert_ne!(first, format!("256 {other}"));
        let found = FileStore::open(&path).unwrap().verify_chain().unwrap();
        assert!(
            matches!(
                found.findings[..],
                [Finding::Checkpoint {
                    after: 0,
                    before: 256,
                    log: Some(_)
                }]
            ),
            "{:?}",
            found.findings
        );
    }

    #[test]
    fn d110_a_line_end_counts_message_lines_not_blank_ones() {
        let text = "{}\n\n {}\n{}\n{}";
        assert_eq!(line_end(text.as_bytes(), 1).unwrap(), Some(3));
        assert_eq!(line_end(text.as_bytes(), 2).unwrap(), Some(8));
        assert_eq!(line_end(text.as_bytes(), 3).unwrap(), Some(11));
        // The fourth has no newline: not a line the snapshot could end at.
        assert_eq!(line_end(text.as_bytes(), 4).unwrap(), None);
    }
}
