//! What the stores share about snapshots (D37: snapshots): when one is due,
//! and how its bytes are sealed with a checksum (a file context keeps its
//! snapshot beside it: `files/snapshot.rs`).
//!
//! A snapshot is a cache of the folded views at a known length, verified
//! against the log before it is used and ignored when it does not match:
//! losing one, or finding it damaged, costs one full read and nothing else.
//! So it is written without fsync, through a fresh file renamed into place.

use crate::Result;
use agent_data::Context;
use std::io::{self, Read, Write};

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

    /// Writes a snapshot of `context` with `write` when one is due and
    /// pays ([`Context::snapshot_pays`], D106: snapshots that pay), or
    /// `now` (what [`crate::Store::snapshot`] does for every store):
    /// whether one was written. Without `now` a failure is not an error —
    /// a snapshot is only a cache, and one that cannot be written
    /// (permissions, a full or read-only file system, a lost connection)
    /// costs later opens time.
    pub(crate) fn write_if_due(
        &self,
        when: crate::SnapshotWhen,
        context: &Context,
        write: impl FnOnce() -> Result<()>,
    ) -> Result<bool> {
        let now = when == crate::SnapshotWhen::Now;
        if !(now || self.due() && context.snapshot_pays()) {
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
pub(crate) fn word_checksum(bytes: &[u8]) -> u64 {
    let mut sum = Checksum::default();
    sum.update(bytes);
    sum.finish()
}

/// [`word_checksum`] of bytes given a piece at a time, so a snapshot can be
/// sealed as it is written instead of held whole.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Checksum {
    hash: u64,
    /// The start of a word whose end has not come yet.
    pending: [u8; 8],
    filled: usize,
    /// Bytes summed.
    pub(crate) len: u64,
}

impl Default for Checksum {
    fn default() -> Self {
        Checksum {
            hash: 0xcbf2_9ce4_8422_2325,
            pending: [0; 8],
            filled: 0,
            len: 0,
        }
    }
}

const K: u64 = 0x9e37_79b9_7f4a_7c15;

fn mix(hash: u64, word: u64) -> u64 {
    (hash ^ word).wrapping_mul(K).rotate_left(29)
}

impl Checksum {
    /// Adds the next bytes.
    pub(crate) fn update(&mut self, mut bytes: &[u8]) {
        self.len = self.len.wrapping_add(bytes.len() as u64);
        if self.filled > 0 {
            let take = (8 - self.filled).min(bytes.len());
            let (head, rest) = bytes.split_at(take);
            self.pending[self.filled..self.filled + take].copy_from_slice(head);
            self.filled += take;
            bytes = rest;
            if self.filled < 8 {
                return;
            }
            self.hash = mix(self.hash, u64::from_le_bytes(self.pending));
            self.filled = 0;
        }
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0; 8];
            word.copy_from_slice(chunk);
            self.hash = mix(self.hash, u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        self.pending[..rest.len()].copy_from_slice(rest);
        self.filled = rest.len();
    }

    /// The checksum of everything added.
    pub(crate) fn finish(&self) -> u64 {
        let hash = self.pending[..self.filled]
            .iter()
            .fold(self.hash, |hash, &b| mix(hash, u64::from(b)));
        let hash = mix(hash, self.len);
        hash ^ (hash >> 32)
    }
}

/// A writer that checksums what passes through it.
pub(crate) struct Summing<W> {
    pub(crate) inner: W,
    pub(crate) sum: Checksum,
}

impl<W: Write> Write for Summing<W> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let written = self.inner.write(bytes)?;
        self.sum.update(bytes.get(..written).unwrap_or_default());
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// What the first line of a sealed snapshot starts with.
const MAGIC: &str = "agentctx-snapshot";

/// `body` behind a first line naming its checksum. The line is put in
/// front of `body` in place (a snapshot of a large context is tens of MB;
/// a copy would double what writing it holds).
#[cfg(any(feature = "postgres", test))]
pub(crate) fn seal(mut body: Vec<u8>) -> Vec<u8> {
    let head = seal_line(word_checksum(&body));
    body.splice(0..0, head.into_bytes());
    body
}

/// The first line of a sealed snapshot whose body has checksum `sum`:
/// always the same length, so it can be written last, over a placeholder.
pub(crate) fn seal_line(sum: u64) -> String {
    format!("{MAGIC} {sum:016x}\n")
}

/// The body of a sealed snapshot, if its checksum holds.
pub(crate) fn unseal(sealed: &[u8]) -> Option<&[u8]> {
    let newline = sealed.iter().position(|&b| b == b'\n')?;
    let head = std::str::from_utf8(&sealed[..newline]).ok()?;
    let sum = u64::from_str_radix(head.strip_prefix(MAGIC)?.trim(), 16).ok()?;
    let body = &sealed[newline + 1..];
    (word_checksum(body) == sum).then_some(body)
}

/// A sealed snapshot read as it streams by: its first line names the
/// checksum of the rest, which is summed as it is consumed. What was read
/// counts only once [`Unsealing::sealed`] says the whole rest was read and
/// matches.
pub(crate) struct Unsealing<R> {
    inner: R,
    expected: u64,
    sum: Checksum,
}

impl<R: io::BufRead> Unsealing<R> {
    /// Reads the seal line; `None` when there is none.
    pub(crate) fn new(mut inner: R) -> Option<Unsealing<R>> {
        let mut head = Vec::new();
        inner.read_until(b'\n', &mut head).ok()?;
        let head = std::str::from_utf8(head.strip_suffix(b"\n")?).ok()?;
        let expected = u64::from_str_radix(head.strip_prefix(MAGIC)?.trim(), 16).ok()?;
        Some(Unsealing {
            inner,
            expected,
            sum: Checksum::default(),
        })
    }

    /// True when everything after the seal line was read and has the
    /// checksum the seal names.
    pub(crate) fn sealed(mut self) -> bool {
        let at_end = self.inner.fill_buf().is_ok_and(|rest| rest.is_empty());
        at_end && self.sum.finish() == self.expected
    }
}

impl<R: io::BufRead> Read for Unsealing<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.inner.read(buf)?;
        self.sum.update(buf.get(..read).unwrap_or_default());
        Ok(read)
    }
}

impl<R: io::BufRead> io::BufRead for Unsealing<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, amount: usize) {
        if amount == 0 {
            return;
        }
        // What is consumed is in the buffer already: no read happens here.
        if let Ok(buffered) = self.inner.fill_buf() {
            self.sum.update(buffered.get(..amount).unwrap_or(buffered));
        }
        self.inner.consume(amount);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn d87_a_snapshot_streamed_by_is_believed_only_when_read_whole_and_matching() {
        use std::io::BufRead;
        let body = b"{\"format\":\"agentctx-snapshot\"}\n[\"k\",\"i\",1]\n".to_vec();
        let sealed = seal(body.clone());
        let read_all = |bytes: &[u8]| {
            let mut reader = Unsealing::new(std::io::BufReader::with_capacity(4, bytes))?;
            let mut out = Vec::new();
            while reader.read_until(b'\n', &mut out).ok()? > 0 {}
            reader.sealed().then_some(out)
        };
        assert_eq!(read_all(&sealed), Some(body));
        for at in 0..sealed.len() {
            let mut bad = sealed.clone();
            bad[at] ^= 0x01;
            assert_eq!(read_all(&bad), None, "byte {at} changed unnoticed");
        }
        // Stopping early is not reading it whole.
        let mut reader = Unsealing::new(std::io::BufReader::new(&sealed[..])).unwrap();
        reader.read_until(b'\n', &mut Vec::new()).unwrap();
        assert!(!reader.sealed());
    }

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

    #[test]
    fn r34c_a_checksum_taken_in_pieces_is_the_checksum_of_the_whole() {
        let bytes: Vec<u8> = (0..100u8).map(|b| b.wrapping_mul(37)).collect();
        for first in 0..bytes.len() {
            for second in first..bytes.len().min(first + 11) {
                let mut sum = Checksum::default();
                sum.update(&bytes[..first]);
                sum.update(&bytes[first..second]);
                sum.update(&bytes[second..]);
                assert_eq!(
                    sum.finish(),
                    word_checksum(&bytes),
                    "cut at {first} and {second}"
                );
            }
        }
        assert_ne!(
            word_checksum(b"ab"),
            word_checksum(b"ab\0"),
            "the length counts"
        );
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
