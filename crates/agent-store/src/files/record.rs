//! The head record beside a JSONL file, `.NAME.head`: what the file was
//! when an agentctx writer last left it — its identity (device, inode,
//! size, modification and change times), how many messages it held, and
//! the chain's digest there (R34e).
//!
//! It is a cache, checked against the file before it counts: an open that
//! finds the file exactly as the record says may trust the snapshot (whose
//! tail then ends at the record's digest); anything else — another
//! program wrote, the file was copied over, moved or restored — reads the
//! whole file once. So it needs no fsync: a lost or stale record costs a
//! full read, never a wrong one. It is written under the log's lock, by
//! writers after every append and by readers after a full read, through a
//! temporary file and a rename, with the log's group and mode.

use super::place::Place;
use super::trust::{self, Log};
use agent_data::{Digest, Warning};
use std::fs::{File, Metadata};
use std::io::{self, Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// What the first word of a record says.
const MAGIC: &str = "agentctx-head";

/// Every record is padded with spaces to this many bytes, so one written
/// over another in place is one `pwrite` that never needs a truncate.
const WIDTH: usize = 256;

/// A file's identity: what changes when anything writes, replaces or
/// restores it (the change time cannot be set back by a user).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Identity {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Identity {
    /// The identity an `fstat` of the file shows.
    pub(crate) fn of(meta: &Metadata) -> Identity {
        Identity {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }
}

/// A head record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Record {
    /// The file as the writer left it.
    pub(crate) identity: Identity,
    /// The messages it held then.
    pub(crate) messages: usize,
    /// The chain's digest after them.
    pub(crate) digest: Digest,
}

impl Record {
    /// One line: `agentctx-head 1 dev=D ino=I size=S mtime=S.N ctime=S.N
    /// messages=M digest=HEX`.
    pub(crate) fn encode(&self) -> String {
        let i = &self.identity;
        let line = format!(
            "{MAGIC} 1 dev={} ino={} size={} mtime={}.{} ctime={}.{} messages={} digest={}",
            i.dev,
            i.ino,
            i.size,
            i.mtime.0,
            i.mtime.1,
            i.ctime.0,
            i.ctime.1,
            self.messages,
            self.digest
        );
        format!("{line:<width$}\n", width = WIDTH - 1)
    }

    /// Reads a record: `None` for anything else (keys it does not know
    /// are passed over, so later versions may add some).
    pub(crate) fn decode(text: &str) -> Option<Record> {
        let mut words = text.trim_end().split(' ');
        if words.next()? != MAGIC || words.next()?.parse::<u32>().ok()? < 1 {
            return None;
        }
        let (mut dev, mut ino, mut size, mut mtime, mut ctime) = (None, None, None, None, None);
        let (mut messages, mut digest) = (None, None);
        let time = |v: &str| {
            let (s, n) = v.split_once('.')?;
            Some((s.parse().ok()?, n.parse().ok()?))
        };
        for word in words {
            let (key, value) = word.split_once('=')?;
            match key {
                "dev" => dev = value.parse().ok(),
                "ino" => ino = value.parse().ok(),
                "size" => size = value.parse().ok(),
                "mtime" => mtime = time(value),
                "ctime" => ctime = time(value),
                "messages" => messages = value.parse().ok(),
                "digest" => digest = value.parse().ok(),
                _ => {}
            }
        }
        Some(Record {
            identity: Identity {
                dev: dev?,
                ino: ino?,
                size: size?,
                mtime: mtime?,
                ctime: ctime?,
            },
            messages: messages?,
            digest: digest?,
        })
    }
}

/// The record in the first of `places` that has one (the log `log`
/// describes), with its place, when it may be believed and reads as a record; a record
/// that may not be believed is ignored with a warning, and the next place
/// is looked in.
pub(crate) fn read(
    places: &[Place],
    log: &Log,
    warnings: &mut Vec<Warning>,
) -> Option<(Record, Place)> {
    let (mut file, place) = super::place::open_first(places, "head", log, warnings)?;
    let mut text = String::new();
    // A record is one short line: a larger file is not one.
    Read::by_ref(&mut file)
        .take(512)
        .read_to_string(&mut text)
        .ok()?;
    Record::decode(&text).map(|record| (record, place.clone()))
}

/// Writes `record` in `place` (not synced: it is a cache). A record of
/// ours already there, a regular file no wider than the log, is
/// overwritten in place (`open` keeps it open, with its path) — no
/// directory entry changes, which costs an append far less than a new
/// file and a rename; anything else is replaced through a fresh temporary
/// file and a rename. A record torn by a crash fails to read or to match
/// the file: a full read, never a wrong one.
pub(crate) fn write(
    place: &Place,
    log: &Log,
    record: &Record,
    open: &mut Option<(PathBuf, File)>,
) -> io::Result<()> {
    let text = record.encode();
    let path = place.path("head");
    // Reopened when the place changed or the record was replaced under us
    // (another writer renamed a new one in, leaving ours unlinked).
    let stale = open
        .as_ref()
        .is_none_or(|(at, file)| *at != path || file.metadata().map_or(true, |m| m.nlink() != 1));
    if stale {
        *open = ours(&path, log).map(|file| (path.clone(), file));
    }
    if let Some((_, file)) = open {
        use std::os::unix::fs::FileExt;
        file.write_all_at(text.as_bytes(), 0)?;
        if file.metadata()?.len() > text.len() as u64 {
            file.set_len(text.len() as u64)?;
        }
        return Ok(());
    }
    let mut file = tempfile::Builder::new()
        .prefix(&place.temp_prefix("head."))
        .suffix(".tmp")
        .tempfile_in(place.dir())?;
    log.dress(file.as_file())?;
    file.as_file_mut().write_all(text.as_bytes())?;
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// The record at `path` opened for writing in place, when it is ours
/// ([`trust::open_own`]) and no wider than the log.
fn ours(path: &Path, log: &Log) -> Option<File> {
    let (file, meta) = trust::open_own(path, std::fs::OpenOptions::new().write(true)).ok()??;
    let fits = meta.mode() & 0o7777 & !log.sidecar_mode() == 0;
    fits.then_some(file)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn r34e_a_head_record_reads_back_and_anything_else_is_none() {
        let record = Record {
            identity: Identity {
                dev: 2049,
                ino: 7,
                size: 120,
                mtime: (1_700_000_000, 5),
                ctime: (1_700_000_001, 999_999_999),
            },
            messages: 3,
            digest: Digest::GENESIS.next(b"{}"),
        };
        let text = record.encode();
        assert!(text.starts_with("agentctx-head 1 dev=2049 ino=7 size=120 mtime=1700000000.5 "));
        assert_eq!(Record::decode(&text), Some(record));
        assert_eq!(
            Record::decode(&text.replace("agentctx-head 1", "agentctx-head 2 later=1")),
            Some(record)
        );
        for bad in [
            "",
            "agentctx-head",
            "agentctx-pending 1 dev=1",
            &text.replace("digest=", "d="),
        ] {
            assert_eq!(Record::decode(bad), None, "{bad}");
        }
    }
}
