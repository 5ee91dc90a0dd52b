//! First sight of a JSONL file through its snapshot: a copy, a restore or
//! a checkout no longer matches its head record (its identity changed), so
//! nothing says the file is as a writer left it — but its snapshot may
//! still summarise it. The lines before the snapshot's anchor are hashed
//! as stored, not parsed: when they chain to the snapshot's digest, line
//! for line, they are exactly the messages the snapshot folded, and only
//! the tail after it needs reading (D110: first sight by the chain).
//!
//! A line not in the compact form agentctx writes hashes differently from
//! its message, so a log written by another program never confirms a
//! snapshot this way: it is read whole, as before.

use super::lock::LockedFile;
use agent_data::Digest;
use std::io::{self, BufRead, Read};

/// The chain over a file's first lines, hashed as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Prefix {
    /// The lines hashed: every line before the end but blank ones, which
    /// a load passes over too.
    pub(super) lines: usize,
    /// Every line before the end, blank ones too.
    pub(super) all_lines: usize,
    /// The chain's digest after them.
    pub(super) head: Digest,
    /// The digest after each count of lines asked for that the prefix
    /// has, ascending.
    pub(super) at: Vec<(usize, Digest)>,
    /// The last line lacks its newline.
    pub(super) unterminated: bool,
}

impl Prefix {
    /// The digest after `lines` lines, if it was asked for and reached.
    pub(super) fn digest_at(&self, lines: usize) -> Option<Digest> {
        // A binary search: `verify --chain` asks once per checkpoint.
        let found = self.at.binary_search_by_key(&lines, |(n, _)| *n).ok()?;
        self.at.get(found).map(|(_, digest)| *digest)
    }
}

/// Hashes the lines of `file` before byte `end` (a line end) into the
/// chain, each line without its newline as one message, and keeps the
/// digests after the counts of lines in `at` on the way.
pub(super) fn chain_prefix(file: &LockedFile, end: u64, at: &[usize]) -> io::Result<Prefix> {
    chain_lines(file.reader_from(0)?.take(end), at)
}

/// [`chain_prefix`] over any reader of lines.
fn chain_lines(mut reader: impl BufRead, at: &[usize]) -> io::Result<Prefix> {
    let mut wanted: Vec<usize> = at.to_vec();
    wanted.sort_unstable();
    wanted.dedup();
    let mut wanted = wanted.into_iter().peekable();
    let mut prefix = Prefix {
        lines: 0,
        all_lines: 0,
        head: Digest::GENESIS,
        at: Vec::new(),
        unterminated: false,
    };
    let mut line = Vec::new();
    loop {
        while let Some(n) = wanted.next_if(|&n| n <= prefix.lines) {
            if n == prefix.lines {
                prefix.at.push((n, prefix.head));
            }
        }
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            return Ok(prefix);
        }
        prefix.all_lines += 1;
        let text = match line.strip_suffix(b"\n") {
            Some(text) => text,
            None => {
                prefix.unterminated = true;
                &line
            }
        };
        if text.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        prefix.head = prefix.head.next(text);
        prefix.lines += 1;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn chained(text: &str, at: &[usize]) -> Prefix {
        chain_lines(text.as_bytes(), at).unwrap()
    }

    #[test]
    fn d110_the_prefix_chain_is_the_chain_of_its_lines_blank_ones_passed_over() {
        let lines = [r#"{"type":"state","data":{"a":1}}"#, r#"{"type":"state"}"#];
        let prefix = chained(
            &format!("{}\n\n  \n{}\n", lines[0], lines[1]),
            &[2, 1, 1, 5],
        );
        assert_eq!((prefix.lines, prefix.all_lines), (2, 4));
        assert_eq!(prefix.head, Digest::of(lines.map(str::as_bytes)));
        let first = Digest::GENESIS.next(lines[0].as_bytes());
        assert_eq!(prefix.at, [(1, first), (2, prefix.head)]);
        assert_eq!(prefix.digest_at(1), Some(first));
        assert_eq!(prefix.digest_at(5), None);
        assert!(!prefix.unterminated);
        assert_eq!(chained("", &[0]).at, [(0, Digest::GENESIS)]);
        assert_eq!(chained("{}\n", &[2]).at, []);
        assert!(chained("{}\n{}", &[]).unterminated);
    }
}
