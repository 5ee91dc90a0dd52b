//! Recognising a file that changed under a writer, and undoing a
//! multi-message append that a crash cut short.
//!
//! One `write(2)` of several lines is not atomic against a crash: a writer
//! killed mid-write (Linux stops a large write between pages) leaves a prefix
//! of the batch, complete lines included, that the torn-last-line rule alone
//! would keep. So before writing a batch of more than one line, the writer
//! records the batch's extent and checksum in a sidecar file `.NAME.pending`,
//! bound to the file by its device and inode, and fsyncs it; the next
//! writer, under the lock, keeps the batch if it is all there and otherwise
//! truncates the file back to where it started. A reader never truncates:
//! it reads only up to where such a batch started.

use super::trust::{self, Found, Log};
use crate::files::LockedFile;
use agent_data::Warning;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// FNV-1a, 64-bit: a checksum that is the same in every build and process
/// (std's hasher may change between Rust releases).
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// How many bytes before the end of what a handle read it remembers, to
/// notice a file rewritten in place under it.
const TAIL: usize = 256;

/// The last bytes (at most [`TAIL`]) before a position in a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tail {
    start: u64,
    len: usize,
    bytes: [u8; TAIL],
}

impl Tail {
    fn new(start: u64, from: &[u8]) -> Tail {
        let mut bytes = [0; TAIL];
        let len = from.len().min(TAIL);
        bytes[..len].copy_from_slice(&from[from.len() - len..]);
        Tail {
            start: start + (from.len() - len) as u64,
            len,
            bytes,
        }
    }
}

/// The last bytes before `end` in `file`.
pub(crate) fn fingerprint(file: &LockedFile, end: u64) -> io::Result<Tail> {
    let start = end.saturating_sub(TAIL as u64);
    Ok(Tail::new(start, &file.read_range(start, end)?))
}

/// The last bytes before `end` after `appended` was appended right after
/// `previous` — from memory when it can be, else read from `file`.
pub(crate) fn fingerprint_after(
    previous: Option<Tail>,
    appended: &[u8],
    end: u64,
    file: &LockedFile,
) -> io::Result<Tail> {
    let start = end - appended.len() as u64;
    match previous {
        _ if appended.len() >= TAIL => Ok(Tail::new(start, appended)),
        Some(tail) if tail.start + tail.len as u64 == start => {
            let mut joined = tail.bytes[..tail.len].to_vec();
            joined.extend_from_slice(appended);
            Ok(Tail::new(tail.start, &joined))
        }
        _ => fingerprint(file, end),
    }
}

/// A file kept beside the real file: `.NAME.{suffix}` (`pending` records
/// a batch in flight; `snapshot` is a context's snapshot).
pub(crate) fn sidecar(target: &Path, suffix: &str) -> PathBuf {
    let mut name = std::ffi::OsString::from(".");
    name.push(target.file_name().unwrap_or_default());
    name.push(".");
    name.push(suffix);
    target.with_file_name(name)
}

/// The directory `target` is in (`.` for a bare file name).
pub(crate) fn dir_of(target: &Path) -> &Path {
    match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

/// Removes the record beside `target`. `durable`: also fsyncs the directory,
/// for a record whose batch never landed — if it came back after a power
/// loss it would cut off appends made since. A record of a batch that is all
/// in the file is harmless if it comes back.
pub(crate) fn clear(target: &Path, durable: bool) -> io::Result<()> {
    match std::fs::remove_file(sidecar(target, "pending")) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    }
    if durable {
        sync_dir(target)?;
    }
    Ok(())
}

fn sync_dir(target: &Path) -> io::Result<()> {
    File::open(dir_of(target))?.sync_all()
}

/// What the first word of a record says: a record agentctx wrote.
const HEADER: &str = "agentctx-pending";

/// The record format this build writes. Fields are `key=value` words
/// after the header and version; readers ignore keys they do not know, so
/// a later format can add fields (a digest of the log, say) and stay
/// readable here.
const VERSION: u32 = 1;

/// The record of one batch in flight: which file it is appended to and
/// where, and a checksum of its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pending {
    /// The log's device.
    pub(crate) dev: u64,
    /// The log's inode number: with `dev`, the file the record is bound
    /// to. A record of another file (a log restored from a backup, a name
    /// reused) describes nothing here.
    pub(crate) ino: u64,
    /// Where the batch starts.
    pub(crate) before: u64,
    /// Where it ends.
    pub(crate) end: u64,
    /// FNV-1a of its bytes ([`checksum`]).
    pub(crate) sum: u64,
}

impl Pending {
    /// The record's text: one line,
    /// `agentctx-pending 1 dev=D ino=I before=B end=E fnv1a=S` (decimal).
    pub(crate) fn encode(&self) -> String {
        format!(
            "{HEADER} {VERSION} dev={} ino={} before={} end={} fnv1a={}\n",
            self.dev, self.ino, self.before, self.end, self.sum
        )
    }

    /// Reads a record's text; `None` unless it is one (of version 1 or a
    /// later one that keeps its fields) with a sane extent.
    pub(crate) fn decode(bytes: &[u8]) -> Option<Pending> {
        let text = std::str::from_utf8(bytes).ok()?;
        let mut words = text.split_ascii_whitespace();
        if words.next()? != HEADER || words.next()?.parse::<u32>().ok()? < VERSION {
            return None;
        }
        let mut fields = [None; 5];
        for word in words {
            let (key, value) = word.split_once('=')?;
            let slot = match key {
                "dev" => 0,
                "ino" => 1,
                "before" => 2,
                "end" => 3,
                "fnv1a" => 4,
                _ => continue,
            };
            fields[slot] = Some(value.parse().ok()?);
        }
        let [Some(dev), Some(ino), Some(before), Some(end), Some(sum)] = fields else {
            return None;
        };
        (before <= end).then_some(Pending {
            dev,
            ino,
            before,
            end,
            sum,
        })
    }

    /// True when the record describes the file `log`.
    fn binds(&self, log: &Log) -> bool {
        (self.dev, self.ino) == (log.dev, log.ino)
    }

    /// True when the whole batch is in `file`, as recorded.
    fn landed(&self, file: &LockedFile) -> io::Result<bool> {
        Ok(file.len()? >= self.end && fnv1a(&file.read_range(self.before, self.end)?) == self.sum)
    }
}

/// What the record beside a log says.
enum Record {
    /// No record, or one that may not be believed (already warned about).
    None,
    /// A trusted record of a batch appended to this very file.
    Bound(Pending),
    /// A trusted file that describes nothing here: not a record, or one of
    /// another file. Why, for the warning.
    Stale(String),
}

/// Longest record text read: a record is one short line.
const MAX_RECORD: u64 = 4096;

/// Reads the record beside the log `file` has locked, if one may be
/// believed; warnings say what was ignored.
fn find(file: &LockedFile, warnings: &mut Vec<Warning>) -> io::Result<Record> {
    let path = sidecar(file.target(), "pending");
    let log = Log::of(&file.metadata()?);
    let found = match trust::open(&path, &log)? {
        Found::Missing => return Ok(Record::None),
        Found::Ignored(warning) => {
            warnings.push(warning);
            return Ok(Record::None);
        }
        Found::Trusted(found) => found,
    };
    let mut text = Vec::new();
    found.take(MAX_RECORD).read_to_end(&mut text)?;
    Ok(match Pending::decode(&text) {
        None => Record::Stale("not a record of a batch in flight that this version reads".into()),
        Some(pending) if !pending.binds(&log) => Record::Stale(format!(
            "it records a batch of another file (device {}, inode {}), not of this one",
            pending.dev, pending.ino
        )),
        Some(pending) => Record::Bound(pending),
    })
}

/// For a reader under the shared lock: where the file must be read up to.
/// A trusted record bound to this file whose batch is not all there means
/// a writer died mid-batch: `Some(start of the batch)`, and nothing after
/// it may be seen. Reading never repairs; the next writer does.
pub(crate) fn in_flight(file: &LockedFile, warnings: &mut Vec<Warning>) -> io::Result<Option<u64>> {
    match find(file, warnings)? {
        Record::None => Ok(None),
        Record::Stale(reason) => {
            let path = sidecar(file.target(), "pending");
            warnings.push(trust::ignored(&path, reason));
            Ok(None)
        }
        Record::Bound(pending) => {
            Ok((!pending.landed(file)? && file.len()? > pending.before).then_some(pending.before))
        }
    }
}

/// Records, durably, that the bytes `batch` are about to be appended at
/// `before` to the file `file` has locked. `Ok(false)` when the directory
/// cannot take the record (no write permission, a read-only file system,
/// another user's record in a sticky directory, a directory of that name):
/// the append goes on without it, as appends to such a directory could
/// before.
pub(crate) fn record(
    file: &LockedFile,
    before: u64,
    batch: &[u8],
    warnings: &mut Vec<Warning>,
) -> io::Result<bool> {
    let path = sidecar(file.target(), "pending");
    match std::fs::symlink_metadata(&path) {
        // rename(2) cannot replace a directory (and must not try).
        Ok(meta) if meta.is_dir() => {
            warnings.push(trust::ignored(
                &path,
                "a directory; the batch is appended without a record",
            ));
            return Ok(false);
        }
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let log = Log::of(&file.metadata()?);
    let pending = Pending {
        dev: log.dev,
        ino: log.ino,
        before,
        end: before + batch.len() as u64,
        sum: fnv1a(batch),
    };
    match write_record(file.target(), &log, &pending) {
        Ok(()) => Ok(true),
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::PermissionDenied
                    | io::ErrorKind::ReadOnlyFilesystem
                    | io::ErrorKind::IsADirectory
                    | io::ErrorKind::DirectoryNotEmpty
            ) =>
        {
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

/// Written like a JSON rewrite — a fresh `O_EXCL` file renamed into place —
/// so a planted symlink named like the record is replaced, never written
/// through. It gets the log's group and no more than its mode.
fn write_record(target: &Path, log: &Log, pending: &Pending) -> io::Result<()> {
    let mut file = tempfile::Builder::new()
        .prefix(&temp_prefix(target, "pending."))
        .suffix(".tmp")
        .tempfile_in(dir_of(target))?;
    log.dress(file.as_file())?;
    file.as_file_mut().write_all(pending.encode().as_bytes())?;
    file.as_file().sync_data()?;
    file.persist(sidecar(target, "pending"))
        .map_err(|e| e.error)?;
    sync_dir(target)
}

/// Under the exclusive lock: if a trusted record bound to this file names
/// a batch that is not all in the file, truncates the file to where the
/// batch began, and clears the record; a trusted record that describes
/// nothing here is cleared too. Returns the length truncated to, if it
/// truncated. Anything that may not be believed is left alone, warned
/// about, and changes nothing.
pub(crate) fn recover(
    file: &mut LockedFile,
    warnings: &mut Vec<Warning>,
) -> io::Result<Option<u64>> {
    let target = file.target().to_path_buf();
    let pending = match find(file, warnings)? {
        Record::None => return Ok(None),
        Record::Stale(reason) => {
            warnings.push(trust::ignored(&sidecar(&target, "pending"), reason));
            // Best effort: it describes nothing here, so leaving it is harmless.
            let _ = clear(&target, true);
            return Ok(None);
        }
        Record::Bound(pending) => pending,
    };
    if pending.landed(file)? {
        clear(&target, false)?;
        return Ok(None);
    }
    let cut = (file.len()? > pending.before).then_some(pending.before);
    if let Some(before) = cut {
        file.truncate(before)?;
    }
    clear(&target, true)?;
    Ok(cut)
}

/// `.NAME.{kind}` — the start of a temporary file's name of ours beside
/// `target`; tempfile adds six random characters and `.tmp`.
pub(crate) fn temp_prefix(target: &Path, kind: &str) -> std::ffi::OsString {
    let mut prefix = std::ffi::OsString::from(".");
    prefix.push(target.file_name().unwrap_or_default());
    prefix.push(".");
    prefix.push(kind);
    prefix
}

/// How old a temporary file whose writer does not hold our lock must be
/// before it counts as a dead writer's: writing a record or a snapshot
/// takes far less, so a file this old is not being written.
const TEMP_AGE: std::time::Duration = std::time::Duration::from_secs(120);

/// Under the exclusive lock: removes temporary files that writers killed
/// mid-write left beside `target`. Only regular files (never followed
/// through a symlink) owned by this user and named exactly as we name
/// them: a JSON rewrite's `.NAME.XXXXXX.tmp` (its writer held this lock,
/// so under the lock it is dead), and — once older than [`TEMP_AGE`], as
/// their writers need not hold this lock — a record's or a snapshot's
/// `.NAME.pending.XXXXXX.tmp`, `.NAME.snapshot.XXXXXX.tmp`,
/// `.NAME.head.XXXXXX.tmp`, and the
/// `.pending.XXXXXX.tmp`, `.snapshot.XXXXXX.tmp` of earlier versions.
pub(crate) fn sweep_temps(target: &Path) {
    let Some(name) = target.file_name() else {
        return;
    };
    let name = name.to_string_lossy();
    let Ok(entries) = std::fs::read_dir(dir_of(target)) else {
        return;
    };
    let me = trust::me();
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let file_name = file_name.to_string_lossy();
        let Some(kind) = temp_kind(&file_name, &name) else {
            continue;
        };
        // `DirEntry::metadata` does not follow symlinks.
        let Ok(meta) = entry.metadata() else {
            continue;
        };
        let old = meta
            .modified()
            .ok()
            .and_then(|m| m.elapsed().ok())
            .is_some_and(|age| age >= TEMP_AGE);
        if meta.is_file() && meta.uid() == me && (kind == Temp::Locked || old) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Whose a temporary file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Temp {
    /// Written only under the log's lock.
    Locked,
    /// Written without it.
    Unlocked,
}

/// Which of our temporary files beside the log `name` `file_name` is, if
/// it is one (tempfile's names end in six random alphanumerics).
fn temp_kind(file_name: &str, name: &str) -> Option<Temp> {
    let random = |rest: &str| rest.len() == 6 && rest.bytes().all(|b| b.is_ascii_alphanumeric());
    let rest = file_name.strip_suffix(".tmp")?.strip_prefix('.')?;
    if let Some(kind) = rest.strip_prefix(name).and_then(|r| r.strip_prefix('.')) {
        if random(kind) {
            return Some(Temp::Locked);
        }
        if let Some(r) = kind
            .strip_prefix("pending.")
            .or_else(|| kind.strip_prefix("snapshot."))
            .or_else(|| kind.strip_prefix("head."))
            .or_else(|| kind.strip_prefix("keys."))
        {
            return random(r).then_some(Temp::Unlocked);
        }
    }
    let legacy = rest
        .strip_prefix("pending.")
        .or_else(|| rest.strip_prefix("snapshot."))?;
    random(legacy).then_some(Temp::Unlocked)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_and_names_its_file() {
        let pending = Pending {
            dev: 2049,
            ino: 77,
            before: 10,
            end: 30,
            sum: u64::MAX,
        };
        let text = pending.encode();
        assert_eq!(
            text,
            format!(
                "agentctx-pending 1 dev=2049 ino=77 before=10 end=30 fnv1a={}\n",
                u64::MAX
            )
        );
        assert_eq!(Pending::decode(text.as_bytes()), Some(pending));
        // A later version may add keys; they are skipped.
        let later = "agentctx-pending 2 chain=ab12 dev=2049 ino=77 before=10 end=30 fnv1a=18446744073709551615";
        assert_eq!(Pending::decode(later.as_bytes()), Some(pending));
    }

    #[test]
    fn anything_else_is_not_a_record() {
        for text in [
            &b"0 999999999 1\n"[..],
            b"",
            b"\xff\xfe 1 2 3",
            b"agentctx-pending 1 dev=1 ino=2 before=3 end=4",
            b"agentctx-pending 1 dev=1 ino=2 before=9 end=4 fnv1a=0",
            b"agentctx-pending 0 dev=1 ino=2 before=3 end=4 fnv1a=0",
            b"agentctx-pending 1 dev=x ino=2 before=3 end=4 fnv1a=0",
        ] {
            assert_eq!(
                Pending::decode(text),
                None,
                "{}",
                String::from_utf8_lossy(text)
            );
        }
    }

    #[test]
    fn only_our_exact_temporary_names_are_swept() {
        let cases = [
            (".c.jsonl.Ab12Cd.tmp", Some(Temp::Locked)),
            (".c.jsonl.pending.Ab12Cd.tmp", Some(Temp::Unlocked)),
            (".c.jsonl.snapshot.Ab12Cd.tmp", Some(Temp::Unlocked)),
            (".pending.Ab12Cd.tmp", Some(Temp::Unlocked)),
            (".snapshot.Ab12Cd.tmp", Some(Temp::Unlocked)),
            (".c.jsonl.pending.Ab12C.tmp", None),
            (".c.jsonl.pending.Ab-2Cd.tmp", None),
            (".c.jsonl.keep.tmp", None),
            (".d.jsonl.Ab12Cd.tmp", None),
            ("c.jsonl.Ab12Cd.tmp", None),
            (".c.jsonl.pending", None),
            (".c.jsonl.Ab12Cd.tmp.x", None),
        ];
        for (file_name, kind) in cases {
            assert_eq!(temp_kind(file_name, "c.jsonl"), kind, "{file_name}");
        }
    }
}
