//! [`FileStore`]: a context in one file, read and appended under the
//! file's lock ([`LockedFile`]), with its snapshot anchored by
//! [`FileAnchor`].

use crate::SnapshotWhen;

use super::json::{json_body, splice};
use super::lock::LockedFile;
use super::open::detect;
use super::recovery;
use super::trust;
use crate::snapshot::Since;
use crate::{Error, Result, Store};
use agent_data::{Context, Digest, Format, Loaded, Position, Prepared, Warning};
use std::io;
use std::path::{Path, PathBuf};

/// A context stored in a file ([`Format::Jsonl`] or [`Format::Json`]).
///
/// ```
/// use agent_data::{Context, Message};
/// use agent_store::{FileStore, Store};
/// use agent_core::json;
///
/// let dir = tempfile::tempdir()?;
/// let mut store = FileStore::open(dir.path().join("run.jsonl"))?;
/// let mut context = Context::new();
/// let push = Message::from_value(json!({"type": "state", "data": {"log": 1},
///     "_outputPath": "†state.log", "_outputMethod": "push"}))?;
/// store.commit(&mut context, &push)?; // creates the file
///
/// // Another handle (another process) appends; commit catches up first.
/// let mut other = FileStore::open(dir.path().join("run.jsonl"))?;
/// let mut theirs = other.load()?.context;
/// other.commit(&mut theirs, &push)?;
/// store.commit(&mut context, &push)?;
/// assert_eq!(context.read(&"†state.log".parse()?, None), Some(&json!([1, 1, 1])));
/// assert_eq!(store.load()?.context.len(), 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct FileStore {
    pub(super) path: PathBuf,
    pub(super) name: String,
    pub(super) format: Format,
    pub(super) seen: Seen,
    pub(super) lock: Option<LockedFile>,
    /// The held lock has been held since `seen` was checked against the
    /// file: nothing can have changed it.
    pub(super) verified: bool,
    /// The held lock has been held since [`FileStore::guard`] passed and
    /// nothing failed under it: the file's start and its batches in flight
    /// are as the guard left them (every writer takes the lock first).
    pub(super) guarded: bool,
    /// The tail read or appended since the newest snapshot.
    pub(super) since: Since,
    /// Warnings not yet handed out (sidecars ignored), see
    /// [`FileStore::take_warnings`].
    pub(super) warnings: Vec<Warning>,
    /// Every warning this handle gave, so each is given once.
    pub(super) warned: Vec<Warning>,
    /// Dead writers' temporary files were swept (once per handle: it reads
    /// the directory).
    pub(super) swept: bool,
    /// The head record, open for writing in place, with its path.
    pub(super) record: Option<(PathBuf, std::fs::File)>,
    /// This handle appended to the log: its caches are kept beside it
    /// (D101: reads leave no files beside the user's).
    pub(super) wrote: bool,
    /// The record disagrees with the log before its end: kept as found,
    /// for `verify`, and never written over by this handle.
    pub(super) record_disagrees: bool,
    /// A snapshot of this very file that a first sight could not confirm
    /// (D110: first sight by the chain): its path, and the messages and
    /// digest it summarises, judged after the whole read.
    pub(super) distrusted: Option<(PathBuf, (usize, Digest))>,
}

/// How far this handle has read the file, and how to tell it is still the
/// file it read.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Seen {
    /// Messages read (the context's length).
    pub(super) messages: usize,
    /// Top-level items read: JSON elements or JSONL message lines.
    pub(super) items: usize,
    /// Where what was read ends.
    pub(super) end: Position,
    /// The last JSONL line read lacks its newline.
    pub(super) unterminated: bool,
    /// (device, inode) of the file read; `None` before the first read.
    pub(super) file: Option<(u64, u64)>,
    /// JSONL: the bytes just before `end`.
    pub(super) tail: Option<recovery::Tail>,
    /// JSON: checksum of the whole file read.
    pub(super) whole: u64,
    /// The chain's digest after the messages read (R34e).
    pub(super) head: Digest,
    /// JSON: length and checksum of the file read up to (not including)
    /// its closing `]` and the blanks before it — what every append keeps.
    pub(super) prefix: (usize, u64),
}

impl FileStore {
    /// The directory where a handle that only reads a file keeps its head
    /// record and snapshot, when the file has neither beside it: reading
    /// leaves no file beside the user's (D101: reads leave nothing beside). It is
    /// [`CACHE_DIR_VARIABLE`](crate::CACHE_DIR_VARIABLE) when set to an
    /// absolute path, else `$XDG_CACHE_HOME/agentctx`, else
    /// `$HOME/.cache/agentctx`; `None` when none of them is set (nothing is
    /// cached for such files then). Files in it are named by the log's
    /// device, inode and the inode's birth time; removing them only makes
    /// the next read slower.
    ///
    /// ```
    /// if let Some(dir) = agent_store::FileStore::cache_dir() {
    ///     assert!(dir.is_absolute());
    /// }
    /// ```
    pub fn cache_dir() -> Option<PathBuf> {
        super::place::user_cache_dir()
    }

    /// A store for the file at `path`; nothing is read yet. The format is
    /// `.json` → array, `.jsonl` → JSONL, else the first non-blank byte
    /// decides (`[`: array), and a missing file of another extension is
    /// JSONL (spec §10).
    ///
    /// Anything but a regular file (a FIFO, a device such as `/dev/zero`, a
    /// socket, a directory) is refused at once with [`Error::NotAFile`],
    /// before a byte is read: checked on the path, and again with `fstat`
    /// on every descriptor opened (with `O_NONBLOCK`, so opening a FIFO
    /// cannot wait for a writer).
    ///
    /// # Errors
    /// [`Error::NotAFile`] when `path` names something other than a regular file; [`Error::Io`]
    /// when its metadata, or (for an extension that does not decide the format) its first
    /// bytes, cannot be read. A missing file is not an error.
    pub fn open(path: impl AsRef<Path>) -> Result<FileStore> {
        let path = path.as_ref().to_path_buf();
        let name = path.display().to_string();
        let io = |source| Error::Io {
            action: "read",
            name: name.clone(),
            source,
        };
        let format = match std::fs::metadata(&path) {
            Ok(meta) if !meta.is_file() => {
                return Err(Error::NotAFile {
                    name,
                    kind: trust::kind(&meta),
                });
            }
            Ok(_) => detect(&path).map_err(io)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Format::detect(Some(&path), b""),
            Err(source) => return Err(io(source)),
        };
        Ok(FileStore::with(path, name, format))
    }

    fn with(path: PathBuf, name: String, format: Format) -> FileStore {
        FileStore {
            path,
            name,
            format,
            seen: Seen::default(),
            lock: None,
            verified: false,
            guarded: false,
            since: Since::default(),
            warnings: Vec::new(),
            warned: Vec::new(),
            swept: false,
            record: None,
            wrote: false,
            record_disagrees: false,
            distrusted: None,
        }
    }

    /// What this handle warned about that no [`Store::load`] has returned
    /// yet: files beside the context (a record of a batch in flight, a
    /// snapshot) it ignored while catching up or appending. Each warning
    /// is given once per handle.
    pub fn take_warnings(&mut self) -> Vec<Warning> {
        std::mem::take(&mut self.warnings)
    }

    /// Keeps `warnings` to hand out, each once.
    pub(super) fn note(&mut self, warnings: Vec<Warning>) {
        for warning in warnings {
            if !self.warned.contains(&warning) {
                self.warned.push(warning.clone());
                self.warnings.push(warning);
            }
        }
    }

    /// `loaded` with the warnings not yet handed out before its own.
    pub(super) fn with_warnings(&mut self, mut loaded: Loaded) -> Loaded {
        let mut warnings = self.take_warnings();
        warnings.append(&mut loaded.warnings);
        loaded.warnings = warnings;
        loaded
    }

    /// The file's format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The file's path, as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub(super) fn io(&self, action: &'static str) -> impl Fn(io::Error) -> Error + '_ {
        move |source| {
            let name = self.name.clone();
            // SIGXFSZ is caught or ignored (the CLI does), so going over
            // `ulimit -f` fails the write with EFBIG.
            if source.raw_os_error() == Some(rustix::io::Errno::FBIG.raw_os_error()) {
                Error::SizeLimit {
                    action,
                    name,
                    source,
                }
            } else {
                Error::Io {
                    action,
                    name,
                    source,
                }
            }
        }
    }

    /// Reads what was appended after `self.seen` from `file` onto `context`;
    /// fails if the file is no longer the one read (truncated or replaced).
    fn read_tail(&mut self, file: &mut LockedFile, context: &mut Context) -> Result<()> {
        let (identity, len) = file.stat().map_err(self.io("read"))?;
        match self.format {
            Format::Jsonl => drop(self.read_jsonl_tail(file, context, identity, len)?),
            Format::Json => self.read_json(file, context)?,
        }
        self.seen.messages = context.len();
        self.seen.file = Some(identity);
        if file.is_exclusive() {
            // Checked under the held lock: until it is released, nothing
            // but this handle changes the file.
            self.verified = true;
        }
        Ok(())
    }

    /// Reads the JSONL appended after `self.seen`; returns what reading
    /// warned about (a torn last line, R34).
    pub(super) fn read_jsonl_tail(
        &mut self,
        file: &mut LockedFile,
        context: &mut Context,
        identity: (u64, u64),
        len: u64,
    ) -> Result<Vec<Warning>> {
        let seen = self.seen;
        if seen.file.is_some_and(|f| f != identity) {
            return Err(self.replaced("replaced"));
        }
        if len < seen.end.offset as u64 {
            return Err(self.replaced("truncated"));
        }
        if let Some(tail) = seen.tail {
            let now =
                recovery::fingerprint(file, seen.end.offset as u64).map_err(self.io("read"))?;
            if now != tail {
                return Err(self.replaced("rewritten"));
            }
        }
        let mut warnings = Vec::new();
        if len > seen.end.offset as u64 {
            let tail = file
                .read_from(seen.end.offset as u64)
                .map_err(self.io("read"))?;
            let read = context
                .extend_jsonl(&tail, seen.end)
                .map_err(|source| self.load_error(source))?;
            if !read.warnings.is_empty() && file.is_exclusive() {
                // A torn last line (R34): under the exclusive lock no
                // append is in flight, so it is a crashed writer's.
                file.truncate(read.end.offset as u64)
                    .map_err(self.io("repair"))?;
            }
            if read.end != seen.end {
                self.seen.unterminated = read.unterminated;
            }
            self.seen.end = read.end;
            self.seen.items += read.items;
            self.since.add(
                context.len() - seen.messages,
                (read.end.offset - seen.end.offset) as u64,
            );
            warnings = read.warnings;
        }
        self.seen.head = context.head();
        self.remember_tail(file)?;
        Ok(warnings)
    }

    /// Remembers the bytes before the end read, to notice a rewrite later.
    pub(super) fn remember_tail(&mut self, file: &LockedFile) -> Result<()> {
        let end = self.seen.end.offset as u64;
        self.seen.tail = Some(recovery::fingerprint(file, end).map_err(self.io("read"))?);
        Ok(())
    }

    fn read_json(&mut self, file: &mut LockedFile, context: &mut Context) -> Result<()> {
        let seen = self.seen;
        let bytes = file.read_from(0).map_err(self.io("read"))?;
        let whole = recovery::fnv1a(&bytes);
        if seen.file.is_some() && whole == seen.whole && bytes.len() == seen.end.offset {
            return Ok(());
        }
        // Appends keep every byte before the closing `]`: anything else is
        // another file.
        let (prefix_len, prefix_sum) = seen.prefix;
        let kept = bytes
            .get(..prefix_len)
            .is_some_and(|prefix| recovery::fnv1a(prefix) == prefix_sum);
        if seen.file.is_some() && !kept {
            return Err(self.replaced("replaced"));
        }
        let count = if bytes.trim_ascii().is_empty() {
            0
        } else {
            context
                .extend_json(&bytes, seen.items)
                .map_err(|source| self.load_error(source))?
        };
        if count < seen.items {
            return Err(self.replaced("truncated"));
        }
        self.seen.items = count;
        self.remember_json(&bytes);
        Ok(())
    }

    /// Remembers a JSON file's checksums after reading or writing `bytes`.
    pub(super) fn remember_json(&mut self, bytes: &[u8]) {
        self.seen.end.offset = bytes.len();
        self.seen.whole = recovery::fnv1a(bytes);
        let body = json_body(bytes);
        self.seen.prefix = (body.len(), recovery::fnv1a(body));
    }

    pub(super) fn replaced(&self, what: &'static str) -> Error {
        Error::Replaced {
            name: self.name.clone(),
            what,
        }
    }

    pub(super) fn load_error(&self, source: agent_data::Error) -> Error {
        Error::Load {
            name: self.name.clone(),
            source: Box::new(source),
        }
    }

    /// Appends under the held lock `file`.
    fn append_locked(&mut self, file: &mut LockedFile, prepared: &Prepared<'_>) -> Result<()> {
        let (identity, len) = file.stat().map_err(self.io("read"))?;
        let mut changed =
            self.seen.file.is_some_and(|f| f != identity) || len != self.seen.end.offset as u64;
        // Content checks are needed only when the lock was not held since
        // the catch-up checked the file (an `append_at` on its own).
        let check = !changed && !self.verified;
        if let (true, Format::Jsonl, Some(tail)) = (check, self.format, self.seen.tail) {
            let now = recovery::fingerprint(file, len).map_err(self.io("read"))?;
            changed = now != tail;
        }
        let old = match self.format {
            Format::Json => file.read_from(0).map_err(self.io("read"))?,
            Format::Jsonl => Vec::new(),
        };
        if check && self.format == Format::Json && self.seen.file.is_some() {
            changed = recovery::fnv1a(&old) != self.seen.whole;
        }
        if prepared.base() != self.seen.messages || changed {
            return Err(Error::Conflict {
                name: self.name.clone(),
                expected: prepared.base(),
                current: self.current(file)?,
            });
        }
        let lines = prepared.len();
        match self.format {
            Format::Jsonl => {
                let mut bytes = Vec::new();
                if self.seen.unterminated {
                    bytes.push(b'\n');
                }
                for line in prepared.lines() {
                    bytes.extend_from_slice(line.as_bytes());
                    bytes.push(b'\n');
                }
                // One write of several lines is not atomic against a crash:
                // record the batch so the next writer can undo it.
                let mut warnings = Vec::new();
                let recorded = lines > 1
                    && recovery::record(file, len, &bytes, &mut warnings)
                        .map_err(self.io("append to"))?;
                self.note(warnings);
                let appended = file.append(&bytes);
                if recorded {
                    // Landed whole: a record left behind is harmless. Failed
                    // (and truncated back): it must not come back.
                    let _ = recovery::clear(file.target(), appended.is_err());
                }
                let end = appended.map_err(self.io("append to"))?;
                self.since.add(prepared.len(), bytes.len() as u64);
                self.seen.end = Position {
                    line: self.seen.end.line + lines,
                    offset: usize::try_from(end).unwrap_or(usize::MAX),
                };
                self.seen.unterminated = false;
                self.seen.tail = Some(
                    recovery::fingerprint_after(self.seen.tail, &bytes, end, file)
                        .map_err(self.io("read"))?,
                );
                let (points, head) =
                    super::checkpoints::crossed(prepared.base(), self.seen.head, prepared.lines());
                self.seen.head = head;
                super::checkpoints::append(file, &points);
                self.seen.messages = prepared.base() + lines;
                self.wrote = true;
                self.write_record(file);
            }
            Format::Json => {
                let new = splice(&old, prepared.lines()).ok_or_else(|| Error::Malformed {
                    name: self.name.clone(),
                    reason: "a JSON context file must end with the `]` of its array".into(),
                })?;
                recovery::sweep_temps(file.target());
                file.rewrite(&new).map_err(self.io("write"))?;
                self.remember_json(&new);
                self.seen.file = Some(file.identity().map_err(self.io("read"))?);
            }
        }
        self.seen.items += lines;
        self.seen.messages = prepared.base() + lines;
        Ok(())
    }

    /// The number of messages the file holds now, for a conflict report.
    fn current(&self, file: &mut LockedFile) -> Result<usize> {
        let mut fresh = FileStore::with(self.path.clone(), self.name.clone(), self.format);
        let mut context = Context::new();
        let len = file.len().map_err(self.io("read"))?;
        match self.format {
            Format::Jsonl => drop(fresh.read_jsonl_tail(file, &mut context, (0, 0), len)?),
            Format::Json => fresh.read_json(file, &mut context)?,
        }
        Ok(context.len())
    }
}

impl Store for FileStore {
    fn name(&self) -> &str {
        &self.name
    }

    fn load(&mut self) -> Result<Loaded> {
        self.load_looking(None)
    }

    fn load_tail(&mut self) -> Result<Loaded> {
        if self.format != Format::Jsonl {
            // A JSON array is rewritten whole by every append anyway.
            return self.load();
        }
        let loaded = match self.with_lock(false, |store, file| store.resume(file))? {
            Some(loaded) => self.with_warnings(loaded),
            None => self.load()?,
        };
        self.snapshot(&loaded.context, SnapshotWhen::Due)?;
        Ok(loaded)
    }

    fn snapshot(&mut self, context: &Context, when: SnapshotWhen) -> Result<bool> {
        let since = self.since;
        since.write_if_due(when, context, || self.write_snapshot(context))
    }

    /// [`Store::verify`], and the snapshot beside the file checked
    /// against the log.
    fn verify(&mut self) -> Result<crate::Verified> {
        self.verify_file()
    }

    /// [`Store::verify_chain`]: a JSONL file's lines hashed as stored,
    /// when its head record confirms them.
    fn verify_chain(&mut self) -> Result<crate::Verified> {
        self.verify_hashed()
    }

    /// Keys kept beside a JSONL file, checked under its lock (`keys.rs`);
    /// a JSON array file keeps none.
    fn commit_once(
        &mut self,
        context: &mut Context,
        messages: &[agent_data::Message],
        key: &crate::AppendKey,
    ) -> Result<crate::KeyedOutcome> {
        self.commit_keyed(context, messages, key)
    }

    fn catch_up(&mut self, context: &mut Context) -> Result<()> {
        if context.len() != self.seen.messages {
            return Err(Error::Malformed {
                name: self.name.clone(),
                reason: format!(
                    "the context has {} messages, but {} were read from this store",
                    context.len(),
                    self.seen.messages
                ),
            });
        }
        // Read from the start: the whole log is known, so a record it
        // contradicts is found before this handle writes one over it.
        let whole = self.seen.file.is_none() && self.format == Format::Jsonl;
        let read = |store: &mut Self, file: &mut LockedFile| {
            store.read_tail(file, context)?;
            if whole && context.is_complete() {
                store.judge_record(file, context);
            }
            Ok(())
        };
        match self.with_lock(false, read) {
            // Nothing to catch up with yet: the first append creates it.
            Err(Error::Io { source, .. })
                if source.kind() == io::ErrorKind::NotFound && self.seen.file.is_none() =>
            {
                Ok(())
            }
            other => other,
        }
    }

    fn append_at(&mut self, prepared: &Prepared<'_>) -> Result<()> {
        self.with_lock(true, |store, file| {
            let result = store.append_locked(file, prepared);
            // A file this append created (it was missing) must not outlive
            // a failed append: nothing is written, not even an empty file.
            if result.is_err() && store.seen.file.is_none() && file.len().is_ok_and(|l| l == 0) {
                let _ = std::fs::remove_file(file.target());
            }
            result
        })
    }

    fn lock(&mut self) -> Result<()> {
        if self.lock.is_none() {
            match LockedFile::open(&self.path, false) {
                Ok(file) => {
                    self.lock = Some(file);
                    self.guarded = false;
                }
                // Missing: the append creates it, under a lock of its own.
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(source) => {
                    return Err(Error::Io {
                        action: "open for writing",
                        name: self.name.clone(),
                        source,
                    });
                }
            }
        }
        Ok(())
    }

    fn unlock(&mut self) {
        self.lock = None;
        self.verified = false;
        self.guarded = false;
    }
}
