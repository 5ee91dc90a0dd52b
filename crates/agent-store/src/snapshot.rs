//! What the stores share about snapshots (decision D37): when one is due,
//! how its bytes are sealed with a checksum, and how a file context keeps
//! one beside it.
//!
//! A snapshot is a cache of the folded views at a known length, verified
//! against the log before it is used and ignored when it does not match:
//! losing one, or finding it damaged, costs one full read and nothing else.
//! So it is written without fsync, through a fresh file renamed into place.

use crate::Result;
use crate::recovery::{dir_of, sidecar, temp_prefix};
use crate::trust::{self, Found, Log};
use agent_data::Warning;
use std::io::{self, Read, Write};
use std::path::Path;

/// A snapshot is due once this many messages followed the last one…
pub const SNAPSHOT_AFTER: usize = 64;

/// …and the bytes that followed it are at least the last snapshot's size
/// divided by this: each snapshot written is paid for by a quarter of its
/// size in appended bytes, so writing them stays linear in what is
/// appended, while opening reads at most the snapshot and a bounded tail.
const SIZE_SHARE: u64 = 4;

/// What a store tracks to decide when a new snapshot is due.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Since {
    /// Messages after the newest snapshot this handle knows of.
    pub(crate) messages: usize,
    /// Bytes of those messages.
    pub(crate) bytes: u64,
    /// The size of that snapshot (0: none).
    pub(crate) snapshot: u64,
}

impl Since {
    /// Counts messages that arrived after the snapshot.
    pub(crate) fn add(&mut self, messages: usize, bytes: u64) {
        self.messages = self.messages.saturating_add(messages);
        self.bytes = self.bytes.saturating_add(bytes);
    }

    /// True when the tail is long enough to be worth a new snapshot.
    pub(crate) fn due(&self) -> bool {
        self.messages >= SNAPSHOT_AFTER && self.bytes.saturating_mul(SIZE_SHARE) >= self.snapshot
    }

    /// Writes a snapshot with `write` when one is due or `now` (what
    /// [`crate::Store::snapshot`] does for every store): whether one was
    /// written. Without `now` a failure is not an error — a snapshot is
    /// only a cache, and one that cannot be written (permissions, a full or
    /// read-only file system, a lost connection) costs later opens time.
    pub(crate) fn write_if_due(
        &self,
        now: bool,
        write: impl FnOnce() -> Result<()>,
    ) -> Result<bool> {
        if !(now || self.due()) {
            return Ok(false);
        }
        match write() {
            Ok(()) => Ok(true),
            Err(_) if !now => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// A snapshot of `size` bytes was taken at the end of what was read.
    pub(crate) fn taken(size: usize) -> Since {
        Since {
            snapshot: size as u64,
            ..Since::default()
        }
    }
}

/// A checksum of `bytes`, the same in every build: eight bytes at a time,
/// so checking a snapshot costs little beside parsing it.
pub(crate) fn checksum(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut chunks = bytes.chunks_exact(8);
    let mut hash = 0xcbf2_9ce4_8422_2325 ^ bytes.len() as u64;
    for chunk in &mut chunks {
        let mut word = [0; 8];
        word.copy_from_slice(chunk);
        hash = (hash ^ u64::from_le_bytes(word))
            .wrapping_mul(K)
            .rotate_left(29);
    }
    for &b in chunks.remainder() {
        hash = (hash ^ u64::from(b)).wrapping_mul(K).rotate_left(29);
    }
    hash ^ (hash >> 32)
}

/// What the first line of a sealed snapshot starts with.
const MAGIC: &str = "agentctx-snapshot";

/// `body` behind a first line naming its checksum. The line is put in
/// front of `body` in place (a snapshot of a large context is tens of MB;
/// a copy would double what writing it holds).
pub(crate) fn seal(mut body: Vec<u8>) -> Vec<u8> {
    let head = format!("{MAGIC} {:016x}\n", checksum(&body));
    body.splice(0..0, head.into_bytes());
    body
}

/// The body of a sealed snapshot, if its checksum holds.
pub(crate) fn unseal(sealed: &[u8]) -> Option<&[u8]> {
    let newline = sealed.iter().position(|&b| b == b'\n')?;
    let head = std::str::from_utf8(&sealed[..newline]).ok()?;
    let sum = u64::from_str_radix(head.strip_prefix(MAGIC)?.trim(), 16).ok()?;
    let body = &sealed[newline + 1..];
    (checksum(body) == sum).then_some(body)
}

/// Reads the snapshot beside `target`, the log `log` describes; `None`
/// when there is none, it may not be believed (a warning says why: see
/// [`trust`]), or it cannot be read — it is only a cache.
pub(crate) fn read_beside(
    target: &Path,
    log: &Log,
    warnings: &mut Vec<Warning>,
) -> Option<Vec<u8>> {
    let path = sidecar(target, "snapshot");
    match trust::open(&path, log).ok()? {
        Found::Missing => None,
        Found::Ignored(warning) => {
            warnings.push(warning);
            None
        }
        Found::Trusted(mut file) => {
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes).ok()?;
            Some(bytes)
        }
    }
}

/// Replaces the snapshot beside `target` with `sealed`: a fresh file
/// (`O_EXCL`, random name) renamed into place, so a reader sees the old
/// snapshot or the new one, and a planted symlink is replaced, never
/// written through. It gets the log's group and read and write bits (never
/// set-id bits): it holds the same data, so whoever may read the context
/// may read its snapshot (and nobody else). No fsync: a snapshot lost in a
/// crash is rebuilt.
pub(crate) fn write_beside(target: &Path, log: &Log, sealed: &[u8]) -> io::Result<()> {
    let mut file = tempfile::Builder::new()
        .prefix(&temp_prefix(target, "snapshot."))
        .suffix(".tmp")
        .tempfile_in(dir_of(target))?;
    log.dress(file.as_file())?;
    file.as_file_mut().write_all(sealed)?;
    file.persist(sidecar(target, "snapshot"))
        .map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn r34c_a_sealed_snapshot_reads_back_and_a_changed_byte_is_caught() {
        let body = br#"{"format":"agentctx-snapshot","version":1}"#;
        let sealed = seal(body.to_vec());
        assert_eq!(unseal(&sealed), Some(&body[..]));
        for at in 0..sealed.len() {
            let mut bad = sealed.clone();
            bad[at] ^= 0x01;
            assert_eq!(unseal(&bad), None, "byte {at} changed unnoticed");
        }
        assert_eq!(unseal(&sealed[..sealed.len() - 1]), None);
    }

    #[cfg(unix)]
    #[test]
    fn r34c_a_snapshot_has_the_permissions_of_its_context_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        for mode in [0o600, 0o640, 0o644] {
            let target = dir.path().join(format!("c{mode:o}.jsonl"));
            std::fs::write(&target, "").unwrap();
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(mode)).unwrap();
            let log = Log::of(&std::fs::metadata(&target).unwrap());
            write_beside(&target, &log, b"sealed").unwrap();
            let written = std::fs::metadata(sidecar(&target, "snapshot")).unwrap();
            assert_eq!(written.permissions().mode() & 0o777, mode);
        }
    }

    #[test]
    fn r34c_a_snapshot_is_due_after_enough_messages_and_bytes() {
        let mut since = Since::taken(4000);
        since.add(SNAPSHOT_AFTER - 1, 10_000);
        assert!(!since.due(), "too few messages");
        since.add(1, 0);
        assert!(since.due());
        let mut big = Since::taken(1_000_000);
        big.add(1000, 200_000);
        assert!(
            !big.due(),
            "a quarter of the snapshot's size has not followed it"
        );
        big.add(0, 50_000);
        assert!(big.due());
    }
}
