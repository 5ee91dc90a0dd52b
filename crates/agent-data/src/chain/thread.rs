//! The chain of a large load, computed on a thread of its own while the
//! loader reads on.
//!
//! Without SHA extensions in the CPU, SHA-256 over the normalised lines
//! costs about as much as reading them, and each digest depends on the
//! last, so it cannot be split. It does not depend on the reading,
//! though: the loader copies each batch of finished lines to a second
//! thread, which chains them in order while the next batch is read. The
//! head is the same either way; only the wall time changes.

use crate::Digest;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::JoinHandle;

/// A load of at least this many bytes hands its chain to a second thread;
/// below it, starting the thread costs more than it saves.
pub(crate) const CHAINED_APART_FROM: usize = 1 << 20;

/// Lines are sent in batches of about this many bytes: each wakes the
/// thread, which costs a system call or two, so a batch is large.
pub(crate) const BATCH: usize = 256 << 10;

/// Lines given at once past this size are chained where they are, not
/// copied ([`ChainThread::give`]): a batch is at most this much over
/// [`BATCH`], and six batches at most are held at once.
const COPIED_AT_MOST: usize = 1 << 20;

/// Batches waiting for the thread, at most: the copies held at once are
/// bounded, whichever side is faster.
const QUEUED: usize = 4;

/// Chains lines, each `\n`-terminated, in the order they are given.
pub(crate) struct ChainThread {
    batch: Vec<u8>,
    sender: SyncSender<Vec<u8>>,
    worker: JoinHandle<Digest>,
}

impl ChainThread {
    /// Starts chaining after `head`; `None` when a thread cannot be
    /// started or would have no core to run on (the caller chains as it
    /// goes).
    pub(crate) fn start(head: Digest) -> Option<ChainThread> {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        if cores < 2 {
            return None;
        }
        let (sender, receiver) = mpsc::sync_channel(QUEUED);
        let worker = std::thread::Builder::new()
            .name("agentctx-chain".to_owned())
            .spawn(move || chain(head, &receiver))
            .ok()?;
        Some(ChainThread {
            batch: Vec::new(),
            sender,
            worker,
        })
    }

    /// Adds `lines` (whole lines, each ending in `\n`) after those given
    /// before; `None` when the thread is gone (it cannot be, short of a
    /// panic) and the caller must chain the log itself.
    ///
    /// Lines of more than [`COPIED_AT_MOST`] bytes together are not
    /// copied: the thread is joined, they are chained here, and a new
    /// thread goes on from their digest. So a log of a few huge lines
    /// costs no copy of them.
    pub(crate) fn give(mut self, lines: &[u8]) -> Option<ChainThread> {
        if lines.len() > COPIED_AT_MOST {
            let head = chain_lines(self.finish()?, lines);
            return ChainThread::start(head);
        }
        if self.batch.is_empty() && lines.len() >= BATCH {
            self.sender.send(lines.to_vec()).ok()?;
            return Some(self);
        }
        self.batch.extend_from_slice(lines);
        if self.batch.len() < BATCH {
            return Some(self);
        }
        let full = std::mem::take(&mut self.batch);
        self.sender.send(full).ok()?;
        Some(self)
    }

    /// The digest after the last line given; `None` if the thread failed.
    pub(crate) fn finish(self) -> Option<Digest> {
        let ChainThread {
            batch,
            sender,
            worker,
        } = self;
        let sent = batch.is_empty() || sender.send(batch).is_ok();
        // Closing the channel ends the thread's loop.
        drop(sender);
        let head = worker.join().ok();
        head.filter(|_| sent)
    }
}

/// The thread's work: every batch's lines, in order.
fn chain(head: Digest, batches: &Receiver<Vec<u8>>) -> Digest {
    batches
        .iter()
        .fold(head, |head, batch| chain_lines(head, &batch))
}

/// The chain after `head` over `lines`, each ending in `\n`.
pub(crate) fn chain_lines(head: Digest, lines: &[u8]) -> Digest {
    lines
        .split_inclusive(|&b| b == b'\n')
        .fold(head, |head, line| {
            head.next(line.strip_suffix(b"\n").unwrap_or(line))
        })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::log::Log;

    const LINES: [&str; 4] = [r#"{"a":1}"#, r#"{"b":2}"#, "{}", r#"{"c":"x"}"#];

    fn expected() -> Digest {
        Digest::of(LINES.iter().map(|line| line.as_bytes()))
    }

    #[test]
    fn r34e_a_chain_given_back_without_a_head_is_chained_from_the_log_where_it_left() {
        let mut log = Log::default();
        let written = log.write_text(LINES[0]);
        log.seal(written, None);
        log.chain_apart();
        for line in &LINES[1..] {
            let written = log.write_text(line);
            log.seal(written, None);
        }
        log.rejoin_chain(None);
        assert_eq!(log.head(), expected());
    }

    #[test]
    fn r34e_lines_too_large_to_copy_are_chained_in_place_and_a_new_thread_starts_empty() {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        let Some(thread) = ChainThread::start(Digest::GENESIS) else {
            // One core: loads chain as they go, and no thread starts.
            assert_eq!(cores, 1);
            return;
        };
        assert!(cores >= 2);
        let huge = format!("{{\"x\":\"{}\"}}\n", "y".repeat(COPIED_AT_MOST));
        let small = format!("{}\n", LINES[0]);
        let thread = thread.give(small.as_bytes()).unwrap();
        assert_eq!(thread.batch.len(), small.len());
        let thread = thread.give(huge.as_bytes()).unwrap();
        // Nothing of the huge line was copied: the batch before it was
        // chained by the thread that ended, and the new one holds nothing.
        assert!(thread.batch.is_empty());
        let thread = thread.give(small.as_bytes()).unwrap();
        let expected =
            Digest::of([small.trim_end(), huge.trim_end(), small.trim_end()].map(str::as_bytes));
        assert_eq!(thread.finish(), Some(expected));
    }

    #[test]
    fn r34e_the_chain_thread_chains_lines_given_in_any_pieces_in_order() {
        let text: String = LINES.iter().map(|line| format!("{line}\n")).collect();
        for cut in 0..=LINES.len() {
            let at = text.match_indices('\n').nth(cut).map_or(0, |(i, _)| i + 1);
            let Some(thread) = ChainThread::start(Digest::GENESIS) else {
                // One core: loads chain as they go, and no thread starts.
                let cores = std::thread::available_parallelism().map_or(1, usize::from);
                assert_eq!(cores, 1);
                return;
            };
            let thread = thread.give(&text.as_bytes()[..at]).unwrap();
            let thread = thread.give(&text.as_bytes()[at..]).unwrap();
            assert_eq!(thread.finish(), Some(expected()), "cut after {cut} lines");
        }
    }
}
