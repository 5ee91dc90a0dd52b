//! Where a file context's caches are kept (D101: a read leaves no file
//! beside the user's). The head record (`record.rs`) and the snapshot
//! (`snapshot.rs`) are kept beside the log (`.NAME.head`,
//! `.NAME.snapshot`) by a handle that appends to it, and whenever the log
//! already has either there. A handle that only reads a log with neither
//! beside it keeps them in the user's cache directory instead, named by
//! the log's device, inode and birth time: reading a checkout, a download or someone
//! else's directory changes nothing in it. Reads look beside the log
//! first. Both places are checked alike (`trust`): a cache can only make
//! a read faster, never change what it reads.

use super::recovery::{dir_of, sidecar, temp_prefix};
use super::trust::{self, Found, Log, me};
use agent_data::Warning;
use std::ffi::OsString;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

/// Names the directory kept for caches of contexts this user reads
/// (`$XDG_CACHE_HOME/agentctx`, else `~/.cache/agentctx`, by default;
/// [`FileStore::cache_dir`](crate::FileStore::cache_dir)).
///
/// ```
/// // A test or a sandbox keeps what its reads cache to itself:
/// let mut command = std::process::Command::new("agentctx");
/// command.env(agent_store::CACHE_DIR_VARIABLE, "/tmp/agentctx-cache");
/// assert_eq!(agent_store::CACHE_DIR_VARIABLE, "AGENTCTX_CACHE_DIR");
/// ```
pub const CACHE_DIR_VARIABLE: &str = "AGENTCTX_CACHE_DIR";

/// One place a log's caches may be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Place {
    /// Beside the log (its real path, symlinks resolved).
    Beside(PathBuf),
    /// In the user's cache directory, under the log's device and inode,
    /// and when the inode was made where that is known (`exact`).
    Cached {
        dir: PathBuf,
        stem: String,
        exact: bool,
    },
}

impl Place {
    /// The cache called `suffix` (`head`, `snapshot`) in this place.
    pub(crate) fn path(&self, suffix: &str) -> PathBuf {
        match self {
            Place::Beside(target) => sidecar(target, suffix),
            Place::Cached { dir, stem, .. } => dir.join(format!("{stem}.{suffix}")),
        }
    }

    /// True when what is kept here is of this very file, so a head record
    /// the log contradicts is evidence of a change: beside the log, or
    /// cached under its inode's birth time. Without that, a cached record
    /// may be of an earlier file whose inode was reused, and is only a
    /// cache.
    pub(crate) fn names_this_file(&self) -> bool {
        match self {
            Place::Beside(_) => true,
            Place::Cached { exact, .. } => *exact,
        }
    }

    /// The directory a new cache file is made in.
    pub(crate) fn dir(&self) -> &Path {
        match self {
            Place::Beside(target) => dir_of(target),
            Place::Cached { dir, .. } => dir,
        }
    }

    /// The name a new cache file of `kind` starts with.
    pub(crate) fn temp_prefix(&self, kind: &str) -> OsString {
        match self {
            Place::Beside(target) => temp_prefix(target, kind),
            Place::Cached { stem, .. } => OsString::from(format!(".{stem}.{kind}")),
        }
    }
}

/// The places to look for `target`'s caches, in order: beside it, then
/// the user's cache directory when there is one this user owns and only
/// this user may write.
pub(crate) fn to_read(target: &Path, log: &Log) -> Vec<Place> {
    let mut places = vec![Place::Beside(target.to_path_buf())];
    if let Some(dir) = user_cache_dir().filter(|dir| is_private(dir)) {
        places.push(cached(dir, log));
    }
    places
}

/// The cache called `suffix` in the first of `places` that has one, open
/// to be read, with its place, when it may be believed; one that may not
/// be believed is passed over (with its warning) for the next place.
pub(crate) fn open_first<'p>(
    places: &'p [Place],
    suffix: &str,
    log: &Log,
    warnings: &mut Vec<Warning>,
) -> Option<(std::fs::File, &'p Place)> {
    for place in places {
        match trust::open(&place.path(suffix), log).ok()? {
            Found::Missing => continue,
            Found::Ignored(warning) => warnings.push(warning),
            Found::Trusted(file) => return Some((file, place)),
        }
    }
    None
}

/// Where a handle writes `target`'s caches: beside it when the handle
/// `wrote` to the log or the log's caches are already there; otherwise in
/// the user's cache directory (made, private, when missing); `None` when
/// there is no such directory (nothing is cached).
pub(crate) fn to_write(target: &Path, log: &Log, wrote: bool) -> Option<Place> {
    let beside = Place::Beside(target.to_path_buf());
    let kept_beside = ["head", "snapshot"]
        .iter()
        .any(|suffix| std::fs::symlink_metadata(beside.path(suffix)).is_ok());
    if wrote || kept_beside {
        return Some(beside);
    }
    let dir = user_cache_dir()?;
    // Private from the start: the caches hold the log's data.
    let made = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir);
    (made.is_ok() && is_private(&dir)).then(|| cached(dir, log))
}

fn cached(dir: PathBuf, log: &Log) -> Place {
    let born = log
        .born
        .and_then(|born| born.duration_since(std::time::UNIX_EPOCH).ok());
    let stem = match born {
        Some(born) => format!(
            "{}-{}-{}.{:09}",
            log.dev,
            log.ino,
            born.as_secs(),
            born.subsec_nanos()
        ),
        None => format!("{}-{}", log.dev, log.ino),
    };
    Place::Cached {
        dir,
        stem,
        exact: born.is_some(),
    }
}

/// `AGENTCTX_CACHE_DIR`, else `$XDG_CACHE_HOME/agentctx`, else
/// `$HOME/.cache/agentctx`; a relative path is not used (the XDG rule).
pub(crate) fn user_cache_dir() -> Option<PathBuf> {
    let absolute = |name: &str| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .filter(|path| path.is_absolute())
    };
    absolute(CACHE_DIR_VARIABLE)
        .or_else(|| absolute("XDG_CACHE_HOME").map(|dir| dir.join("agentctx")))
        .or_else(|| absolute("HOME").map(|home| home.join(".cache").join("agentctx")))
}

/// A directory (not a link to one) this user owns and nobody else may
/// write: what is cached in it was written by this user.
fn is_private(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir)
        .is_ok_and(|meta| meta.is_dir() && meta.uid() == me() && meta.mode() & 0o022 == 0)
}
