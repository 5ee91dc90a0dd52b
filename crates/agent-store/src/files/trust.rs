//! Whether a file kept beside a context file — the record of a batch in
//! flight, a snapshot — may be believed, and opening files so that a FIFO
//! or a device named like one can never hang or feed us.
//!
//! The log is the only truth: a sidecar can only ever make a reader see
//! less of it (a record of a batch in flight) or see it faster (a
//! snapshot). So one counts only when whoever could have written it could
//! have written the log itself: it is a regular file (never followed
//! through a symlink), owned by the log's owner or by this user, and
//! writable by nobody the log is not writable by. Anything else is ignored
//! with a warning naming it.

use agent_data::Warning;
use rustix::fs::OFlags;
use std::fs::{File, Metadata, OpenOptions, Permissions};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// The permission bits a sidecar may have: read and write, never
/// execute, set-id or sticky.
const RW: u32 = 0o666;

/// What a sidecar is checked against: the context file's owner, group and
/// mode, and which file it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Log {
    /// The log's owner.
    pub(crate) uid: u32,
    /// The log's group.
    pub(crate) gid: u32,
    /// The log's permission bits.
    pub(crate) mode: u32,
    /// The log's device.
    pub(crate) dev: u64,
    /// The log's inode number.
    pub(crate) ino: u64,
    /// When the log's inode was made, where the file system says: with
    /// the device and inode, it names this file and no later one that
    /// reuses the inode.
    pub(crate) born: Option<std::time::SystemTime>,
}

impl Log {
    /// The log an `fstat` of its open handle describes.
    pub(crate) fn of(meta: &Metadata) -> Log {
        Log {
            uid: meta.uid(),
            gid: meta.gid(),
            mode: meta.mode() & 0o7777,
            dev: meta.dev(),
            ino: meta.ino(),
            born: meta.created().ok(),
        }
    }

    /// The mode a sidecar of this log is created with: the log's read and
    /// write bits, never more (a sidecar holds the log's data or says how
    /// much of it to read, so whoever may not read or write the log may
    /// not read or write it either).
    pub(crate) fn sidecar_mode(&self) -> u32 {
        self.mode & RW
    }

    /// Gives a sidecar just created (ours) the log's group and a mode no
    /// wider than the log's. The group is best effort: only a member of
    /// the log's group (or root) may give a file to it.
    pub(crate) fn dress(&self, file: &File) -> io::Result<()> {
        if file.metadata()?.gid() != self.gid {
            let _ = std::os::unix::fs::fchown(file, None, Some(self.gid));
        }
        // After the chown, which may clear set-id bits; fchmod ignores the umask.
        file.set_permissions(Permissions::from_mode(self.sidecar_mode()))
    }
}

/// What looking for a sidecar found.
#[derive(Debug)]
pub(crate) enum Found {
    /// Nothing by that name.
    Missing,
    /// A sidecar that may be believed, open for reading.
    Trusted(File),
    /// Something that may not be believed; the warning names it and says
    /// why. Never removed or changed: it may not be ours.
    Ignored(Warning),
}

/// The effective user id of this process.
pub(crate) fn me() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// A warning that `path` was ignored, and why.
pub(crate) fn ignored(path: &Path, reason: impl Into<String>) -> Warning {
    Warning::IgnoredSidecar {
        path: path.display().to_string(),
        reason: reason.into(),
    }
}

/// What kind of file `meta` describes, for messages.
pub(crate) fn kind(meta: &Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_file() {
        "a regular file"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "not a regular file"
    }
}

/// Opens `path` with `options` plus `O_NONBLOCK`, so that a FIFO opens at
/// once instead of waiting for a writer, and refuses anything that is not
/// a regular file (checked with `fstat` on what was opened, so nothing can
/// be swapped in between). `O_NONBLOCK` is cleared again: it means nothing
/// for a regular file's data, but it must not reach code that expects a
/// blocking descriptor.
pub(crate) fn open_regular(path: &Path, options: &mut OpenOptions) -> io::Result<File> {
    let file = options
        .custom_flags(OFlags::NONBLOCK.bits() as i32)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} is {}, not a regular file; refused before reading",
                path.display(),
                kind(&meta)
            ),
        ));
    }
    let flags = rustix::fs::fcntl_getfl(&file)?;
    rustix::fs::fcntl_setfl(&file, flags - OFlags::NONBLOCK)?;
    Ok(file)
}

/// Opens the sidecar `path` with `options` to write it in place, when it
/// is this user's own: never through a symlink, never waiting on a FIFO,
/// a regular file with one link (a hard link planted at the name, to
/// another file of this user's, is never written through), owned by this
/// user: with the file, its `fstat`, for the caller's own checks. `None`
/// for anything else; an error when it cannot be opened at all.
pub(crate) fn open_own(
    path: &Path,
    options: &mut OpenOptions,
) -> io::Result<Option<(File, Metadata)>> {
    let file = options
        .custom_flags((OFlags::NOFOLLOW | OFlags::NONBLOCK).bits() as i32)
        .open(path)?;
    let meta = file.metadata()?;
    let own = meta.is_file() && meta.nlink() == 1 && meta.uid() == me();
    Ok(own.then_some((file, meta)))
}

/// Looks for the sidecar `path` of `log` and decides whether it may be
/// believed. A sidecar of ours whose mode is wider than the log's is
/// tightened to the log's; one of another user's is ignored instead.
pub(crate) fn open(path: &Path, log: &Log) -> io::Result<Found> {
    let opened = OpenOptions::new()
        .read(true)
        .custom_flags((OFlags::NOFOLLOW | OFlags::NONBLOCK).bits() as i32)
        .open(path);
    let file = match opened {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Found::Missing),
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) => {
            return Ok(Found::Ignored(ignored(path, "a symbolic link")));
        }
        Err(e) => {
            return Ok(Found::Ignored(ignored(
                path,
                format!("cannot open it: {e}"),
            )));
        }
    };
    let meta = file.metadata()?;
    Ok(match judge(&file, &meta, log) {
        Ok(()) => Found::Trusted(file),
        Err(reason) => Found::Ignored(ignored(path, reason)),
    })
}

/// Why the sidecar open as `file` may not be believed, if it may not.
fn judge(file: &File, meta: &Metadata, log: &Log) -> Result<(), String> {
    if !meta.is_file() {
        return Err(format!("{}, not a regular file", kind(meta)));
    }
    let me = me();
    let owner = meta.uid();
    if owner != log.uid && owner != me {
        return Err(format!(
            "owned by uid {owner}, neither the context file's owner (uid {}) nor this user (uid {me})",
            log.uid
        ));
    }
    let mode = meta.mode() & 0o7777;
    let allowed = log.mode & RW;
    let foreign_write = mode & 0o022 & !allowed != 0
        // Writable by a group that may not write the log.
        || (mode & 0o020 != 0 && meta.gid() != log.gid);
    if mode & !allowed != 0 {
        if owner != me {
            return Err(format!(
                "its mode {mode:04o} is wider than the context file's {:04o}, and it is not ours to tighten",
                log.mode
            ));
        }
        file.set_permissions(Permissions::from_mode(mode & allowed))
            .map_err(|e| format!("its mode {mode:04o} is wider than the context file's and cannot be tightened: {e}"))?;
    }
    if foreign_write {
        return Err(format!(
            "writable by others (mode {mode:04o}) who may not write the context file (mode {:04o})",
            log.mode
        ));
    }
    Ok(())
}
