//! Recognising a file that changed under a writer, and undoing a
//! multi-message append that a crash cut short.
//!
//! One `write(2)` of several lines is not atomic against a crash: a writer
//! killed mid-write (Linux stops a large write between pages) leaves a prefix
//! of the batch, complete lines included, that the torn-last-line rule alone
//! would keep. So before writing a batch of more than one line, the writer
//! records the batch's extent and checksum in a sidecar file `.NAME.pending`
//! and fsyncs it; the next writer, under the lock, keeps the batch if it is
//! all there and otherwise truncates the file back to where it started.

use crate::files::LockedFile;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// FNV-1a, 64-bit: a checksum that is the same in every build and process
/// (std's hasher may change between Rust releases).
pub(crate) fn checksum(bytes: &[u8]) -> u64 {
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

/// True when a batch record is waiting beside the file at `path`.
pub(crate) fn pending(path: &Path) -> bool {
    std::fs::canonicalize(path)
        .ok()
        .and_then(|target| std::fs::symlink_metadata(sidecar(&target, "pending")).ok())
        .is_some_and(|m| m.is_file())
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

/// Records, durably, that the bytes `batch` are about to be appended at
/// `before`. `Ok(false)` when the directory cannot take the record (no
/// write permission, a read-only file system): the append goes on without
/// it, as appends to such a directory could before.
pub(crate) fn record(target: &Path, before: u64, batch: &[u8]) -> io::Result<bool> {
    match write_record(target, before, batch) {
        Ok(()) => Ok(true),
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem
            ) =>
        {
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

/// Written like a JSON rewrite — a fresh `O_EXCL` file renamed into place —
/// so a planted symlink named like the record is replaced, never written
/// through.
fn write_record(target: &Path, before: u64, batch: &[u8]) -> io::Result<()> {
    let end = before + batch.len() as u64;
    let dir = dir_of(target);
    let mut file = tempfile::Builder::new()
        .prefix(".pending.")
        .suffix(".tmp")
        .tempfile_in(dir)?;
    writeln!(file.as_file_mut(), "{before} {end} {}", checksum(batch))?;
    file.as_file().sync_data()?;
    file.persist(sidecar(target, "pending"))
        .map_err(|e| e.error)?;
    sync_dir(target)
}

/// Under the exclusive lock: if the record beside the file names a batch
/// that is not all in the file, truncates the file to where the batch began.
/// Clears the record either way. Returns the length truncated to, if it
/// truncated. A symlink named like the record is not ours and is ignored.
pub(crate) fn recover(file: &mut LockedFile) -> io::Result<Option<u64>> {
    let target = file.target().to_path_buf();
    let path = sidecar(&target, "pending");
    match std::fs::symlink_metadata(&path) {
        Ok(meta) if meta.is_file() => {}
        Ok(_) => return Ok(None),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    }
    let mut text = String::new();
    File::open(&path)?.read_to_string(&mut text)?;
    let numbers: Vec<u64> = text
        .split_whitespace()
        .filter_map(|n| n.parse().ok())
        .collect();
    let [before, end, sum] = numbers[..] else {
        clear(&target, true)?;
        return Ok(None);
    };
    let len = file.len()?;
    if len >= end && checksum(&file.read_range(before, end)?) == sum {
        clear(&target, false)?;
        return Ok(None);
    }
    let cut = (len > before).then_some(before);
    if let Some(before) = cut {
        file.truncate(before)?;
    }
    clear(&target, true)?;
    Ok(cut)
}

/// Under the exclusive lock: removes temporary files a writer killed during
/// a JSON rewrite left beside `target` (`.NAME.XXXXXX.tmp`, regular files
/// only). A live writer holds the lock while its temporary file exists, so
/// under the lock every such file is a dead writer's.
pub(crate) fn sweep_temps(target: &Path) {
    let (Some(dir), Some(name)) = (target.parent(), target.file_name()) else {
        return;
    };
    let prefix = format!(".{}.", name.to_string_lossy());
    let Ok(entries) = std::fs::read_dir(if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    }) else {
        return;
    };
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let file_name = file_name.to_string_lossy();
        let random = file_name
            .strip_prefix(&prefix)
            .and_then(|rest| rest.strip_suffix(".tmp"));
        // tempfile's names: six random alphanumerics.
        let ours =
            random.is_some_and(|r| r.len() == 6 && r.bytes().all(|b| b.is_ascii_alphanumeric()));
        if ours && entry.file_type().is_ok_and(|t| t.is_file()) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}
