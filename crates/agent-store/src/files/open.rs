//! Opening a context file safely: its format decided through a
//! descriptor that cannot hang, and the bytes it may not start with.

use super::trust;
use agent_data::Format;
use std::io::{self, Read};
use std::path::Path;

/// A UTF-8 byte order mark: refused at the start of a context file
/// ([`Error::ByteOrderMark`]) — JSON does not allow one, and reading past it
/// or cutting it away would each change what the file says.
pub(super) const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The format of the regular file at `path` ([`Format::detect`]), read
/// through a descriptor that cannot hang on a FIFO swapped in since the
/// path was checked: at most its first 4 KiB, or all of it while blank.
pub(super) fn detect(path: &Path) -> io::Result<Format> {
    let decided = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e == "json" || e == "jsonl");
    if decided {
        return Ok(Format::detect(Some(path), b""));
    }
    let mut file = trust::open_regular(path, std::fs::OpenOptions::new().read(true))?;
    let mut head = Vec::new();
    Read::by_ref(&mut file).take(4096).read_to_end(&mut head)?;
    if head.iter().all(u8::is_ascii_whitespace) {
        // All blank so far: the whole file decides.
        file.read_to_end(&mut head)?;
    }
    Ok(Format::detect(Some(path), &head))
}
