//! A file context's snapshot, kept beside it (`.c.jsonl.snapshot`) or in
//! the user's cache directory (`place`): read
//! only when [`trust`](super::trust) believes it, written through a fresh file renamed
//! into place. The sealed format is the stores' shared one
//! (`crate::snapshot`).

use super::place::Place;
use super::trust::Log;
use crate::snapshot::{Checksum, Summing, seal_line};
use agent_data::Warning;
use std::io::{self, Read, Write};
use std::os::unix::fs::FileExt;

/// Reads the snapshot in the first of `places` that has one (the log
/// `log` describes); `None` when there is none, it may not be believed (a
/// warning says why: see [`trust`](super::trust)), or it cannot be read — it is only a
/// cache.
pub(crate) fn read_from(
    places: &[Place],
    log: &Log,
    warnings: &mut Vec<Warning>,
) -> Option<Vec<u8>> {
    let mut file = open_from(places, log, warnings)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

/// The snapshot in the first of `places` that has one, opened to be
/// read, as [`read_from`] decides whether to believe it; one that may not
/// be believed is passed over (with its warning) for the next place.
pub(crate) fn open_from(
    places: &[Place],
    log: &Log,
    warnings: &mut Vec<Warning>,
) -> Option<std::fs::File> {
    super::place::open_first(places, "snapshot", log, warnings).map(|(file, _)| file)
}

/// Replaces the snapshot in `place` with the body `write` writes,
/// sealed as it is written (it is never held whole): a fresh file
/// (`O_EXCL`, random name) renamed into place, so a reader sees the old
/// snapshot or the new one, and a planted symlink is replaced, never
/// written through. It gets the log's group and read and write bits (never
/// set-id bits): it holds the same data, so whoever may read the context
/// may read its snapshot (and nobody else). No fsync: a snapshot lost in a
/// crash is rebuilt. Returns the sealed snapshot's size.
pub(crate) fn write_to(
    place: &Place,
    log: &Log,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<u64> {
    let mut file = tempfile::Builder::new()
        .prefix(&place.temp_prefix("snapshot."))
        .suffix(".tmp")
        .tempfile_in(place.dir())?;
    log.dress(file.as_file())?;
    let placeholder = seal_line(0);
    file.as_file_mut().write_all(placeholder.as_bytes())?;
    let mut body = Summing {
        inner: file.as_file_mut(),
        sum: Checksum::default(),
    };
    write(&mut body)?;
    let sum = body.sum;
    let size = placeholder.len() as u64 + sum.len;
    file.as_file()
        .write_all_at(seal_line(sum.finish()).as_bytes(), 0)?;
    file.persist(place.path("snapshot")).map_err(|e| e.error)?;
    Ok(size)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::super::recovery::sidecar;
    use super::*;
    use crate::snapshot::unseal;

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
            write_to(&Place::Beside(target.clone()), &log, |out| {
                out.write_all(b"body")
            })
            .unwrap();
            let sealed = std::fs::read(sidecar(&target, "snapshot")).unwrap();
            assert_eq!(unseal(&sealed), Some(&b"body"[..]));
            let written = std::fs::metadata(sidecar(&target, "snapshot")).unwrap();
            assert_eq!(written.permissions().mode() & 0o777, mode);
        }
    }
}
