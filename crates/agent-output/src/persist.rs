//! Durable appends to context files (R34).
//!
//! - JSONL: the new lines go out in one write, then `fsync`. A torn last
//!   line left by an earlier crash (R34) is truncated away first, and a
//!   complete last line without its newline gets one.
//! - JSON array: the whole context is written to a temporary file in the
//!   same directory, `fsync`ed, renamed over the original, and the directory
//!   is `fsync`ed so the rename itself is durable.
//!
//! Either way a reader sees the file before or after the append, never a
//! file that fails to load, and an append that returned `Ok` survives a
//! crash.

use agent_data::{Context, Format, Warning};
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::ops::Range;
use std::path::Path;

/// Appends the messages at `appended` (indexes in `context`, which is the
/// whole context after the append) to the file at `path` durably.
/// `warnings` are those from loading the file; a torn last line among them
/// is repaired.
pub fn save_appended(
    path: &Path,
    format: Format,
    context: &Context,
    appended: Range<usize>,
    warnings: &[Warning],
) -> io::Result<()> {
    match format {
        Format::Jsonl => {
            let torn = warnings.iter().find_map(|w| match w {
                Warning::TornLastLine { offset, .. } => Some(*offset as u64),
                _ => None,
            });
            // The context holds each message as its JSONL line already.
            let lines: Vec<&str> = appended.filter_map(|i| context.message_json(i)).collect();
            append_jsonl(path, &lines, torn)
        }
        Format::Json => write_json_atomically(path, context),
    }
}

/// Appends lines (compact JSON messages, without their newlines) to a JSONL
/// file in one write followed by `fsync`, first truncating the file to
/// `truncate_at` (a torn last line) if given.
pub fn append_jsonl(path: &Path, lines: &[&str], truncate_at: Option<u64>) -> io::Result<()> {
    if lines.is_empty() && truncate_at.is_none() {
        return Ok(());
    }
    let mut file = OpenOptions::new().read(true).write(true).open(path)?;
    if let Some(offset) = truncate_at {
        file.set_len(offset)?;
    }
    let len = file.seek(SeekFrom::End(0))?;
    let mut buffer = Vec::new();
    if len > 0 {
        let mut last = [0u8; 1];
        file.seek(SeekFrom::Start(len - 1))?;
        file.read_exact(&mut last)?;
        if last[0] != b'\n' {
            buffer.push(b'\n');
        }
        file.seek(SeekFrom::End(0))?;
    }
    for line in lines {
        buffer.extend_from_slice(line.as_bytes());
        buffer.push(b'\n');
    }
    file.write_all(&buffer)?;
    file.sync_all()
}

/// Rewrites a JSON array context file atomically: temporary file in the
/// same directory, `fsync`, rename, `fsync` of the directory.
pub fn write_json_atomically(path: &Path, context: &Context) -> io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut file = File::create(&temp)?;
        let mut text = serde_json::to_vec_pretty(&context.to_json())?;
        text.push(b'\n');
        file.write_all(&text)?;
        file.sync_all()?;
        std::fs::rename(&temp, path)?;
        File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}
