//! Where a snapshot of a JSONL file was taken, and how to tell the file
//! is still the one it summarises.

use super::lock::LockedFile;
use agent_core::{json, json::Value};
use agent_data::Position;
use std::io;

/// Where in a JSONL file a snapshot was taken, and how to tell it is
/// still the file it summarises: the log only grows, so the snapshot holds
/// while the file is at least that long, a line ends there, and the bytes
/// before it are unchanged — checked on the [`WINDOW`] bytes before it
/// (decision D37: reading the whole prefix would make opening O(history)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FileAnchor {
    pub(super) items: usize,
    pub(super) end: Position,
    pub(super) window: u64,
}

/// How many bytes before a snapshot's end its checksum covers.
const WINDOW: u64 = 4096;

impl FileAnchor {
    pub(super) fn value(&self) -> Value {
        json!({
            "items": self.items,
            "line": self.end.line,
            "offset": self.end.offset,
            "window": format!("{:016x}", self.window),
        })
    }

    pub(super) fn read(value: &Value) -> Option<FileAnchor> {
        let number = |key| {
            value
                .get(key)?
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
        };
        let window = value.get("window")?.as_str()?;
        Some(FileAnchor {
            items: number("items")?,
            end: Position {
                line: number("line")?,
                offset: number("offset")?,
            },
            window: u64::from_str_radix(window, 16).ok()?,
        })
    }

    /// True when `file`, `len` bytes long, is the file this anchor was
    /// taken in (or that file with lines appended).
    pub(super) fn matches(&self, file: &LockedFile, len: u64) -> io::Result<bool> {
        let offset = self.end.offset as u64;
        if len < offset {
            return Ok(false);
        }
        let start = offset.saturating_sub(WINDOW);
        let bytes = file.read_range(start, offset)?;
        let at_line_end = offset == 0 || bytes.last() == Some(&b'\n');
        Ok(at_line_end && crate::snapshot::word_checksum(&bytes) == self.window)
    }
}

/// The checksum of the [`WINDOW`] bytes before `end` in `file`.
pub(super) fn window(file: &std::fs::File, end: u64) -> io::Result<u64> {
    use std::os::unix::fs::FileExt;
    let start = end.saturating_sub(WINDOW);
    let mut bytes = vec![0; usize::try_from(end - start).unwrap_or(0)];
    file.read_exact_at(&mut bytes, start)?;
    Ok(crate::snapshot::word_checksum(&bytes))
}
