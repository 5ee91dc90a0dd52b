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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Prefix {
    /// The lines hashed: every line before the end but blank ones, which
    /// a load passes over too.
    pub(super) lines: usize,
    /// The chain's digest after them.
    pub(super) head: Digest,
    /// The digest after the line asked for (`at`), when the prefix has it.
    pub(super) at: Option<Digest>,
}

/// Hashes the lines of `file` before byte `end` (a line end) into the
/// chain, each line without its newline as one message, and keeps the
/// digest after `at` lines on the way.
pub(super) fn chain_prefix(file: &LockedFile, end: u64, at: Option<usize>) -> io::Result<Prefix> {
    chain_lines(file.reader_from(0)?.take(end), at)
}

/// [`chain_prefix`] over any reader of lines.
fn chain_lines(mut reader: impl BufRead, at: Option<usize>) -> io::Result<Prefix> {
    let mut prefix = Prefix {
        lines: 0,
        head: Digest::GENESIS,
        at: (at == Some(0)).then_some(Digest::GENESIS),
    };
    let mut line = Vec::new();
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            return Ok(prefix);
        }
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        if text.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        prefix.head = prefix.head.next(text);
        prefix.lines += 1;
        if at == Some(prefix.lines) {
            prefix.at = Some(prefix.head);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn chained(text: &str, at: Option<usize>) -> Prefix {
        chain_lines(text.as_bytes(), at).unwrap()
    }

    #[test]
    fn d110_the_prefix_chain_is_the_chain_of_its_lines_blank_ones_passed_over() {
        let lines = [r#"{"type":"state","data":{"a":1}}"#, r#"{"type":"state"}"#];
        let prefix = chained(&format!("{}\n\n  \n{}\n", lines[0], lines[1]), Some(1));
        assert_eq!(prefix.lines, 2);
        assert_eq!(prefix.head, Digest::of(lines.map(str::as_bytes)));
        assert_eq!(prefix.at, Some(Digest::GENESIS.next(lines[0].as_bytes())));
        assert_eq!(chained("", Some(0)).at, Some(Digest::GENESIS));
        assert_eq!(chained("{}\n", Some(2)).at, None);
    }
}
