//! Append keys of a JSONL file (R34b, decision D47): `.NAME.keys` beside
//! the log, one line per keyed append — the key, where its lines begin and
//! end in the file, their checksum, its first message and how many, and
//! when — written and fsynced *before* the lines are appended, under the
//! log's exclusive lock.
//!
//! An entry counts only when the file holds exactly the bytes it names: a
//! writer that died between the entry and the append leaves an entry whose
//! bytes are not there, and the key is free again. So a retry with the
//! same key appends once whatever happened to the first try, and the log
//! itself stays exactly the messages written. Entries older than
//! [`KEY_DAYS`] are forgotten, and pruned when the file grows past
//! [`PRUNE_AT`].

use crate::SnapshotWhen;

use super::lock::LockedFile;
use super::recovery::{dir_of, fnv1a, sidecar, temp_prefix};
use super::store::FileStore;
use super::trust::{self, Found, Log};
use crate::{AppendKey, Error, KEY_DAYS, KeyedOutcome, Result, Store};
use agent_data::{Context, Format, Message, Prepared};
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;

/// Size past which expired entries are dropped (rewriting the file).
const PRUNE_AT: u64 = 1 << 20;

/// One keyed append.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    key: String,
    /// Where its lines begin and end in the file.
    start: u64,
    end: u64,
    sum: u64,
    /// Its first message and how many.
    first: usize,
    count: usize,
    /// Seconds since the epoch when it was written.
    at: u64,
}

impl Entry {
    fn encode(&self) -> String {
        format!(
            "{} {} {} {:016x} {} {} {}\n",
            self.key, self.start, self.end, self.sum, self.first, self.count, self.at
        )
    }

    fn decode(line: &str) -> Option<Entry> {
        let mut w = line.split(' ');
        let entry = Entry {
            key: w.next()?.to_owned(),
            start: w.next()?.parse().ok()?,
            end: w.next()?.parse().ok()?,
            sum: u64::from_str_radix(w.next()?, 16).ok()?,
            first: w.next()?.parse().ok()?,
            count: w.next()?.parse().ok()?,
            at: w.next()?.parse().ok()?,
        };
        w.next().is_none().then_some(entry)
    }

    fn fresh(&self, now: u64) -> bool {
        now.saturating_sub(self.at) < u64::from(KEY_DAYS) * 86_400
    }
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl FileStore {
    /// [`Store::commit_once`] for a JSONL file: under the exclusive lock,
    /// the key looked up (and its bytes checked), else an entry written and
    /// fsynced, then the append.
    pub(super) fn commit_keyed(
        &mut self,
        context: &mut Context,
        messages: &[Message],
        key: &AppendKey,
    ) -> Result<KeyedOutcome> {
        if self.format != Format::Jsonl {
            return Err(Error::KeysUnsupported {
                name: self.name.clone(),
            });
        }
        if messages.is_empty() {
            return Ok(KeyedOutcome::Appended(context.len()..context.len()));
        }
        let name = self.name.clone();
        let once = crate::retry::retry_on_conflict(&name, || {
            self.lock()?;
            let result = self.commit_keyed_locked(context, messages, key);
            self.unlock();
            result
        })?;
        self.snapshot(context, SnapshotWhen::Due)?;
        Ok(once)
    }

    fn commit_keyed_locked(
        &mut self,
        context: &mut Context,
        messages: &[Message],
        key: &AppendKey,
    ) -> Result<KeyedOutcome> {
        if self.lock.is_none() {
            // Missing: created now, so the key is checked and kept under
            // the lock like any other (it stays, empty, if the append is
            // then refused).
            let created =
                LockedFile::open(&self.path, true).map_err(self.io("open for writing"))?;
            self.lock = Some(created);
        }
        self.catch_up(context)?;
        let now = now();
        let (found, log, entries) = self.with_held(|store, file| {
            let log = Log::of(&file.metadata().map_err(store.io("read"))?);
            let entries = store.entries(file, &log)?;
            // The newest entry of the key whose bytes are in the file.
            let mut found = None;
            for entry in entries.iter().rev().filter(|e| e.key == key.as_str()) {
                if entry.fresh(now) && store.landed(file, entry)? {
                    found = Some(entry.first..entry.first + entry.count);
                    break;
                }
            }
            Ok((found, log, entries))
        })?;
        if let Some(range) = found {
            // The bytes may be only in the page cache (their writer died
            // before its fsync): durable before they are called landed.
            self.with_held(|store, file| file.sync().map_err(store.io("sync")))?;
            return Ok(KeyedOutcome::Already(range));
        }
        let prepared = context
            .prepare(messages)
            .map_err(|e| Error::Refused(Box::new(e)))?;
        let entry = self.entry_for(key, &prepared, now);
        self.with_held(|store, file| store.write_entry(file, &log, &entry, &entries, now))?;
        self.append_at(&prepared)?;
        let range = context
            .append_prepared(prepared)
            .map_err(|e| Error::Refused(Box::new(e)))?;
        Ok(KeyedOutcome::Appended(range))
    }

    /// Runs `f` with the exclusive lock [`Store::lock`] took.
    fn with_held<T>(
        &mut self,
        f: impl FnOnce(&mut Self, &mut LockedFile) -> Result<T>,
    ) -> Result<T> {
        let Some(mut file) = self.lock.take() else {
            return Err(Error::Malformed {
                name: self.name.clone(),
                reason: "a keyed append runs under the file's lock".into(),
            });
        };
        let result = f(self, &mut file);
        self.lock = Some(file);
        result
    }

    /// Where `prepared`'s lines will land and what they will hold.
    fn entry_for(&self, key: &AppendKey, prepared: &Prepared<'_>, at: u64) -> Entry {
        let start = self.seen.end.offset as u64 + u64::from(self.seen.unterminated);
        let mut bytes = Vec::new();
        for line in prepared.lines() {
            bytes.extend_from_slice(line.as_bytes());
            bytes.push(b'\n');
        }
        Entry {
            key: key.as_str().to_owned(),
            start,
            end: start + bytes.len() as u64,
            sum: fnv1a(&bytes),
            first: prepared.base(),
            count: prepared.len(),
            at,
        }
    }

    /// True when the file holds exactly the bytes `entry` names.
    fn landed(&self, file: &LockedFile, entry: &Entry) -> Result<bool> {
        if entry.end > self.seen.end.offset as u64 || entry.start > entry.end {
            return Ok(false);
        }
        let bytes = file
            .read_range(entry.start, entry.end)
            .map_err(self.io("read"))?;
        Ok(fnv1a(&bytes) == entry.sum)
    }

    /// The entries beside the file; none when there is no keys file. One
    /// that may not be believed is an error: keys cannot be kept safely.
    fn entries(&self, file: &LockedFile, log: &Log) -> Result<Vec<Entry>> {
        let path = sidecar(file.target(), "keys");
        self.no_wider(&path, log)?;
        match trust::open(&path, log).map_err(self.io("read"))? {
            Found::Missing => Ok(Vec::new()),
            Found::Ignored(warning) => Err(Error::Malformed {
                name: self.name.clone(),
                reason: format!("cannot keep append keys: {warning}"),
            }),
            Found::Trusted(mut keys) => {
                let mut text = String::new();
                keys.read_to_string(&mut text).map_err(self.io("read"))?;
                Ok(text.lines().filter_map(Entry::decode).collect())
            }
        }
    }

    /// Refuses a keys file whose mode is wider than the log's, as the head
    /// record and the checkpoints are refused: whoever could read or write
    /// it but not the log may have changed which appends count as landed,
    /// so it is not quietly tightened and believed.
    fn no_wider(&self, path: &std::path::Path, log: &Log) -> Result<()> {
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            return Ok(());
        };
        let mode = std::os::unix::fs::MetadataExt::mode(&meta) & 0o7777;
        if !meta.is_file() || mode & !log.sidecar_mode() == 0 {
            return Ok(());
        }
        Err(Error::Malformed {
            name: self.name.clone(),
            reason: format!(
                "cannot keep append keys: {} has mode {mode:04o}, wider than the context file's \
                 {:04o}; if nobody else could have written it, `chmod {:o} {}` (else remove it: \
                 keys then start afresh)",
                path.display(),
                log.mode,
                log.sidecar_mode(),
                path.display()
            ),
        })
    }

    /// Appends `entry` to the keys file and fsyncs it (creating the file,
    /// and syncing its directory, the first time); past [`PRUNE_AT`] the
    /// file is rewritten with only fresh entries first.
    fn write_entry(
        &self,
        file: &LockedFile,
        log: &Log,
        entry: &Entry,
        entries: &[Entry],
        now: u64,
    ) -> Result<()> {
        let target = file.target();
        let path = sidecar(target, "keys");
        let io = self.io("keep the append key of");
        let size = std::fs::symlink_metadata(&path).map_or(0, |m| m.len());
        if size > PRUNE_AT {
            let kept: String = entries
                .iter()
                .filter(|e| e.fresh(now))
                .map(Entry::encode)
                .collect();
            let mut fresh = tempfile::Builder::new()
                .prefix(&temp_prefix(target, "keys."))
                .suffix(".tmp")
                .tempfile_in(dir_of(target))
                .map_err(&io)?;
            log.dress(fresh.as_file()).map_err(&io)?;
            fresh.write_all(kept.as_bytes()).map_err(&io)?;
            fresh.as_file().sync_all().map_err(&io)?;
            fresh.persist(&path).map_err(|e| io(e.error))?;
            // The new name must survive a crash before the entry does.
            std::fs::File::open(dir_of(target))
                .and_then(|dir| dir.sync_all())
                .map_err(&io)?;
        }
        let own = trust::open_own(
            &path,
            std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .mode(log.sidecar_mode()),
        )
        .map_err(&io)?;
        let Some((mut keys, meta)) = own else {
            return Err(Error::Malformed {
                name: self.name.clone(),
                reason: format!("cannot keep append keys: {} is not ours", path.display()),
            });
        };
        let created = meta.len() == 0;
        if created {
            log.dress(&keys).map_err(&io)?;
        }
        keys.write_all(entry.encode().as_bytes()).map_err(&io)?;
        keys.sync_all().map_err(&io)?;
        if created {
            std::fs::File::open(dir_of(target))
                .and_then(|dir| dir.sync_all())
                .map_err(&io)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn r34b_a_key_entry_reads_back_and_anything_else_is_none() {
        let entry = Entry {
            key: "job-7/call-2".into(),
            start: 10,
            end: 52,
            sum: 0xdead_beef,
            first: 3,
            count: 2,
            at: 1_700_000_000,
        };
        assert_eq!(
            Entry::decode(entry.encode().trim_end()),
            Some(entry.clone())
        );
        assert_eq!(Entry::decode("k 1 2"), None);
        assert_eq!(
            Entry::decode(&format!("{} extra", entry.encode().trim_end())),
            None
        );
        assert!(entry.fresh(1_700_000_000 + 86_400));
        assert!(!entry.fresh(1_700_000_000 + 8 * 86_400));
    }
}
