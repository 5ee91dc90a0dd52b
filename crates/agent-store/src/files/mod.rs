//! Context files: JSONL or a JSON array, shared by any number of writers
//! (R34, R34b).
//!
//! Every append holds an exclusive advisory lock (`flock`) from reading the
//! file's tail to the fsync. JSONL gets the new lines in one `O_APPEND`
//! write, then fsync; a write that fails is truncated away. A JSON array is
//! rewritten through a fresh temporary file and a rename, with the new
//! messages spliced in before the closing `]` so every byte before them is
//! kept. Readers take a shared lock, so they never see an append half done.
//!
//! - [`lock`]: one file under a lock — shared or exclusive locks, `O_APPEND`
//!   appends, atomic rewrites ([`LockedFile`]);
//! - [`store`]: [`FileStore`], the [`Store`](crate::Store) over it: loading,
//!   catching up, compare-and-append, snapshots;
//! - [`anchor`]: where a JSONL file's snapshot was taken, and the check that
//!   the file is still the one it summarises;
//! - [`cache`]: opening through the snapshot when the head record says the
//!   file is as a writer left it; writing both;
//! - [`first_sight`]: a copied or restored file opened through its
//!   snapshot when its lines, hashed as stored, chain to the snapshot's
//!   digest (D110: first sight by the chain);
//! - [`hashed`]: `verify --chain`, the lines hashed as stored when the
//!   head record confirms them (D111: verify at hashing speed);
//! - [`keys`]: append keys, `.NAME.keys`, so a retry lands once (D47: append keys);
//! - [`checkpoints`]: the chain's digest every 256 messages, for `verify`;
//! - [`record`]: the head record, `.NAME.head` (R34e);
//! - [`place`]: where the head record and the snapshot are kept: beside
//!   the log, or in the user's cache directory for a handle that only
//!   reads (D101: reads leave no files beside the user's);
//! - [`json`]: splicing appends into a JSON array's text;
//! - [`open`]: deciding a file's format without hanging on a FIFO, and the
//!   byte order mark a context file may not start with;
//! - [`snapshot`]: the snapshot kept beside a file, read when believed and
//!   replaced through a rename;
//! - [`recovery`]: a batch a crash cut short undone, torn tails, sidecar
//!   names and the checksum (FNV-1a) of what a handle read;
//! - [`whole`]: reading a file whole, and `verify`, which folds it once
//!   and looks at the fold where the snapshot was taken on the way;
//! - [`trust`]: which files beside a log may be believed (D44: files beside
//!   never overrule).

mod anchor;
mod cache;
mod checkpoints;
mod first_sight;
mod guard;
mod hashed;
mod json;
mod keys;
mod lock;
mod open;
mod place;
mod record;
pub(crate) mod recovery;
mod snapshot;
mod store;
pub(crate) mod trust;
mod whole;

pub use checkpoints::EVERY as CHECKPOINT_EVERY;
pub(crate) use lock::LockedFile;
pub use place::CACHE_DIR_VARIABLE;
pub use store::FileStore;
