//! Checkpoints of a JSONL file's chain, `.NAME.chain`: the digest after
//! every [`EVERY`]th message, one line each (`MESSAGES DIGEST`), appended
//! by writers as their appends cross a multiple (R34e). Unsynced, like
//! the head record: only `verify` reads them, to place a change between
//! two checkpoints instead of anywhere before the record's end.

use super::lock::LockedFile;
use super::recovery::sidecar;
use super::trust::{self, Found, Log};
use agent_data::{Digest, Warning};
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

/// Messages between checkpoints.
pub const EVERY: usize = 256;

/// The checkpoints `lines` (appended after `base` messages whose chain
/// ends at `head`) crosses: `(messages, digest)` at each multiple of
/// [`EVERY`], and the digest after the last line.
pub(crate) fn crossed<'a>(
    base: usize,
    head: Digest,
    lines: impl Iterator<Item = &'a str>,
) -> (Vec<(usize, Digest)>, Digest) {
    let mut at = base;
    let mut digest = head;
    let mut crossed = Vec::new();
    for line in lines {
        digest = digest.next(line.as_bytes());
        at += 1;
        if at.is_multiple_of(EVERY) {
            crossed.push((at, digest));
        }
    }
    (crossed, digest)
}

/// Appends `points` to the checkpoints beside the log `file` — only to a
/// file of ours (a regular file, never through a symlink, no wider than
/// the log); anything else is left alone: checkpoints are a cache.
pub(crate) fn append(file: &LockedFile, points: &[(usize, Digest)]) {
    if points.is_empty() {
        return;
    }
    let Ok(meta) = file.metadata() else {
        return;
    };
    let log = Log::of(&meta);
    let own = trust::open_own(
        &sidecar(file.target(), "chain"),
        std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .mode(log.sidecar_mode()),
    );
    let Ok(Some((mut out, meta))) = own else {
        return;
    };
    if meta.mode() & 0o7777 & !log.sidecar_mode() != 0 {
        return;
    }
    let text: String = points.iter().map(|(m, d)| format!("{m} {d}\n")).collect();
    let _ = out.write_all(text.as_bytes());
}

/// The checkpoints beside `target`, ascending, when they may be believed.
pub(crate) fn read(target: &Path, log: &Log, warnings: &mut Vec<Warning>) -> Vec<(usize, Digest)> {
    let path = sidecar(target, "chain");
    let Ok(found) = trust::open(&path, log) else {
        return Vec::new();
    };
    let mut file = match found {
        Found::Missing => return Vec::new(),
        Found::Ignored(warning) => {
            warnings.push(warning);
            return Vec::new();
        }
        Found::Trusted(file) => file,
    };
    let mut text = String::new();
    if file.read_to_string(&mut text).is_err() {
        return Vec::new();
    }
    let mut points: Vec<(usize, Digest)> = text
        .lines()
        .filter_map(|line| {
            let (m, d) = line.split_once(' ')?;
            Some((m.parse().ok()?, d.parse().ok()?))
        })
        .collect();
    points.sort_by_key(|(m, _)| *m);
    points.dedup_by_key(|(m, _)| *m);
    points
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn r34e_checkpoints_fall_on_every_multiple_a_batch_crosses() {
        let lines: Vec<String> = (0..600).map(|i| format!("{{\"n\":{i}}}")).collect();
        let (points, head) = crossed(100, Digest::GENESIS, lines.iter().map(String::as_str));
        assert_eq!(
            points.iter().map(|(m, _)| *m).collect::<Vec<_>>(),
            [256, 512]
        );
        let direct = Digest::of(lines.iter().map(|l| l.as_bytes()));
        assert_eq!(head, direct);
        let at_256 = Digest::of(lines[..156].iter().map(|l| l.as_bytes()));
        assert_eq!(points[0].1, at_256);
    }
}
