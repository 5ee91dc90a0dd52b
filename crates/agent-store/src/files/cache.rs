//! The caches of a JSONL file: its snapshot (R34c) and its head record
//! (`record.rs`), beside it or in the user's cache directory (`place.rs`). Opening through the snapshot needs both to agree
//! with the file: the snapshot's anchor with the file's end, and the
//! record with the file's identity and, after the tail is read, with the
//! chain's head (R34e). Anything else reads the whole file.

use super::anchor::{FileAnchor, window};
use super::lock::LockedFile;
use super::place;
use super::record::{self, Identity, Record};
use super::store::{FileStore, Seen};
use super::trust::{self, Log};
use crate::Result;
use crate::snapshot::{self, Since};
use agent_data::{Context, Digest, Format, Loaded};
use std::io;
use std::os::unix::fs::MetadataExt;

impl FileStore {
    /// Opens the context from the snapshot beside the file and the lines
    /// after it, under the held lock; `None` when there is no snapshot or
    /// it does not match the file (then the whole file is read).
    pub(super) fn resume(&mut self, file: &mut LockedFile) -> Result<Option<Loaded>> {
        let log = Log::of(&file.metadata().map_err(self.io("read"))?);
        let mut warnings = Vec::new();
        let places = place::to_read(file.target(), &log);
        let found = place::open_first(&places, "snapshot", &log, &mut warnings);
        self.note(warnings);
        let Some((found, snapshot_place)) = found else {
            return Ok(None);
        };
        let size = found.metadata().map_or(0, |meta| meta.len());
        let size = usize::try_from(size).unwrap_or(usize::MAX);
        // Streamed into the context as it is read (no whole copy of it
        // held), and believed only once its whole body matched its seal.
        let Some(mut reader) =
            snapshot::Unsealing::new(io::BufReader::with_capacity(1 << 16, found))
        else {
            return Ok(None);
        };
        let read = Context::from_snapshot_reader(&mut reader, size);
        if !reader.sealed() {
            return Ok(None);
        }
        let Some((mut context, anchor)) = read
            .ok()
            .and_then(|(context, anchor)| Some((context, FileAnchor::read(&anchor)?)))
        else {
            return Ok(None);
        };
        let (identity, len) = file.stat().map_err(self.io("read"))?;
        if !anchor.matches(file, len).map_err(self.io("read"))? {
            return Ok(None);
        }
        self.seen = Seen {
            messages: context.len(),
            items: anchor.items,
            end: anchor.end,
            file: Some(identity),
            ..Seen::default()
        };
        self.remember_tail(file)?;
        self.since = Since::taken(size);
        let summarised = (context.len(), context.head());
        let warnings = self.read_jsonl_tail(file, &mut context, identity, len)?;
        self.seen.messages = context.len();
        // The file exactly as an agentctx writer left it, and the chain
        // from the snapshot through the tail ending where it left it:
        // else another program wrote, copied over, moved or restored the
        // file, and the lines the snapshot summarises are checked first.
        let meta = file.metadata().map_err(self.io("read"))?;
        let mut ignored = Vec::new();
        let log = Log::of(&meta);
        let found = record::read(&place::to_read(file.target(), &log), &log, &mut ignored);
        self.note(ignored);
        let expected = Record {
            identity: Identity::of(&meta),
            messages: context.len(),
            digest: context.head(),
        };
        if found.as_ref().map(|(record, _)| *record) != Some(expected) {
            // As after a whole read, the record is judged and the file
            // recorded only when nothing was warned about (a torn last line
            // is no writer's state).
            let settled = warnings.is_empty() && !self.seen.unterminated;
            let confirmed =
                self.first_sight(file, &context, (summarised, anchor), found, settled)?;
            if confirmed && settled {
                self.write_record(file);
            }
            if !confirmed {
                self.distrusted = snapshot_place
                    .names_this_file()
                    .then(|| (snapshot_place.path("snapshot"), summarised));
                return Ok(None);
            }
        }
        Ok(Some(Loaded {
            context,
            warnings,
            end: self.seen.end,
            items: self.seen.items,
            unterminated: self.seen.unterminated,
        }))
    }

    /// A file whose record does not match it, seen through its snapshot
    /// (D110: first sight by the chain): true when its lines before the
    /// snapshot's `end`, hashed as stored, chain to the snapshot's digest
    /// after as many messages (`summarised`). Then the record `found` is
    /// judged as after a whole read, against the chain the check and the
    /// tail give (the caller records the file as it is now).
    fn first_sight(
        &mut self,
        file: &LockedFile,
        context: &Context,
        (summarised, anchor): ((usize, Digest), FileAnchor),
        found: Option<(Record, place::Place)>,
        judge: bool,
    ) -> Result<bool> {
        // A cached record that may be of an earlier file is no evidence.
        let evidence = found.filter(|(_, at)| at.names_this_file() && judge);
        let wanted: Vec<usize> = evidence.iter().map(|(record, _)| record.messages).collect();
        let end = anchor.end.offset as u64;
        let prefix =
            super::first_sight::chain_prefix(file, end, &wanted).map_err(self.io("read"))?;
        // The anchor's own counts too: its lines and message lines.
        let counted = (prefix.all_lines, prefix.lines) == (anchor.end.line, anchor.items);
        if !counted || prefix.unterminated || (prefix.lines, prefix.head) != summarised {
            return Ok(false);
        }
        if let Some((record, at)) = evidence {
            let (n, head) = summarised;
            let log = match record.messages {
                m if m <= n => prefix.digest_at(m),
                m if m <= context.len() => Some((n..m).fold(head, |digest, i| {
                    digest.next(context.message_json(i).unwrap_or_default().as_bytes())
                })),
                _ => None,
            };
            if log != Some(record.digest) {
                self.contradicted(&at, &record);
            }
        }
        Ok(true)
    }

    /// Writes a snapshot of `context` — everything this handle read or
    /// appended — beside the file, or in the user's cache directory for a
    /// handle that only read it (D101: reads leave nothing beside).
    pub(super) fn write_snapshot(&mut self, context: &Context) -> Result<()> {
        if self.format != Format::Jsonl
            || self.seen.unterminated
            || self.seen.file.is_none()
            || context.len() != self.seen.messages
        {
            return Ok(());
        }
        let target = std::fs::canonicalize(&self.path).map_err(self.io("read"))?;
        let file = trust::open_regular(&target, std::fs::OpenOptions::new().read(true))
            .map_err(self.io("read"))?;
        let meta = file.metadata().map_err(self.io("read"))?;
        if self.seen.file != Some((meta.dev(), meta.ino())) {
            // Not the file this handle read: the snapshot would not be of it.
            return Ok(());
        }
        let anchor = FileAnchor {
            items: self.seen.items,
            end: self.seen.end,
            window: window(&file, self.seen.end.offset as u64).map_err(self.io("read"))?,
        };
        let anchor = anchor.value();
        let log = Log::of(&meta);
        let Some(place) = place::to_write(&target, &log, self.wrote) else {
            return Ok(());
        };
        let size = super::snapshot::write_to(&place, &log, |out| {
            context.snapshot_to(&anchor, out).map_err(io::Error::other)
        })
        .map_err(self.io("write a snapshot of"))?;
        self.since = Since::taken(usize::try_from(size).unwrap_or(usize::MAX));
        Ok(())
    }

    /// Records the file as this handle leaves it (under the held lock):
    /// its identity now, its messages and the chain's head. A cache: not
    /// writing it costs the next open a full read, so failing is no error.
    pub(super) fn write_record(&mut self, file: &LockedFile) {
        if self.format != Format::Jsonl || self.seen.unterminated || self.record_disagrees {
            return;
        }
        let Ok(meta) = file.metadata() else {
            return;
        };
        let found = Record {
            identity: Identity::of(&meta),
            messages: self.seen.messages,
            digest: self.seen.head,
        };
        let log = Log::of(&meta);
        let Some(place) = place::to_write(file.target(), &log, self.wrote) else {
            return;
        };
        let written = record::write(&place, &log, &found, &mut self.record);
        if written.is_err() {
            // Perhaps replaced under us: look for it again next time.
            self.record = None;
        }
    }

    /// The head record beside the file (or in the user's cache), when one
    /// may be believed.
    pub(super) fn recorded(&mut self) -> Result<Option<Record>> {
        let target = std::fs::canonicalize(&self.path).map_err(self.io("read"))?;
        let meta = std::fs::metadata(&target).map_err(self.io("read"))?;
        let mut ignored = Vec::new();
        let log = Log::of(&meta);
        let found = record::read(&place::to_read(&target, &log), &log, &mut ignored);
        self.note(ignored);
        // A cached record of another file (its inode reused) says nothing.
        Ok(found
            .filter(|(record, at)| at.names_this_file() || record.identity == Identity::of(&meta))
            .map(|(record, _)| record))
    }

    /// After a whole read of `context`: records the file, unless the record
    /// there says the log held other messages before its end — evidence of
    /// a change since agentctx last wrote it, kept for `verify` (and
    /// warned about) rather than written over. Removing the record once the
    /// change is understood lets opens go through the snapshot again.
    pub(super) fn record_whole_read(&mut self, file: &LockedFile, context: &Context) {
        if self.judge_record(file, context) {
            self.write_record(file);
        }
    }

    /// Whether the record beside the file agrees with `context`, the whole
    /// log: none there, or one whose messages and digest are a prefix of
    /// its chain. One that disagrees is warned about, and this handle never
    /// writes over it.
    pub(super) fn judge_record(&mut self, file: &LockedFile, context: &Context) -> bool {
        let Ok(meta) = file.metadata() else {
            return false;
        };
        let mut ignored = Vec::new();
        let log = Log::of(&meta);
        let found = record::read(&place::to_read(file.target(), &log), &log, &mut ignored);
        self.note(ignored);
        let Some((found, at)) = found else {
            return true;
        };
        // A cached record that may be of an earlier file (its inode
        // reused) is only a cache: written over, not kept as evidence.
        if !at.names_this_file()
            || crate::verify::check_record(context, found.messages, found.digest).is_empty()
        {
            return true;
        }
        self.contradicted(&at, &found);
        false
    }

    /// Warns that the record `found` at `at`, of this very file, says the
    /// log held other messages than it does; this handle never writes
    /// over it.
    fn contradicted(&mut self, at: &place::Place, found: &Record) {
        self.record_disagrees = true;
        self.note(vec![trust::ignored(
            &at.path("head"),
            format!(
                "it says the log held {} messages ending at digest {}, and the log differs \
                 before that: it changed since agentctx last wrote it (agentctx verify says \
                 where; remove the record once that is understood)",
                found.messages, found.digest
            ),
        )]);
    }

    /// After a whole read that a snapshot could not spare (its prefix
    /// did not chain to its digest as stored): warns when the log's own
    /// chain disagrees with it too — the log changed before the point it
    /// summarises — and says nothing when the lines only are not spelled
    /// as agentctx writes them.
    /// True when it warned: the snapshot is then of another log, and the
    /// caller replaces it, or every open would hash, read whole and warn
    /// again.
    pub(super) fn judge_distrusted(&mut self, context: &Context) -> bool {
        let Some((path, (messages, digest))) = self.distrusted.take() else {
            return false;
        };
        let json = |i: usize| context.message_json(i).unwrap_or_default().as_bytes();
        let log = (messages <= context.len()).then(|| Digest::of((0..messages).map(json)));
        if log == Some(digest) {
            return false;
        }
        let differs = match log {
            Some(log) => format!("the log's first {messages} end at digest {log}"),
            None => format!("the log has only {}", context.len()),
        };
        self.note(vec![trust::ignored(
            &path,
            format!(
                "it summarises {messages} messages ending at digest {digest}, and {differs}: the \
                 log changed before that since it was taken, so the whole log was read \
                 (agentctx verify says where)"
            ),
        )]);
        true
    }
}
