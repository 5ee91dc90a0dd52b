//! Durable, concurrency-safe operations on one context file: exclusive or shared
//! locking, appends that are either wholly there or not at all, and atomic
//! whole-file rewrites.
//!
//! Locks are `flock(2)` advisory locks (std's `File::lock`). They belong to the open
//! file description, so two handles in one process exclude each other exactly as two
//! processes do, and closing the handle (dropping the [`LockedFile`]) releases the lock.
//! Because a lock sits on an inode while rewrites replace the inode a path names,
//! every open re-checks after locking that its inode is still the one the path names.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

/// How many times an open starts over because the file was replaced while it waited
/// for the lock. Each retry means another writer finished a rewrite, so reaching this
/// means something rewrites the file in a tight loop.
const MAX_TRIES: usize = 100_000;

/// Buffer size for streaming reads: large files are read in few system calls.
const READ_BUF: usize = 64 * 1024;

/// An open context file holding an advisory lock on the inode its path names:
/// exclusive from [`LockedFile::open`], shared from [`LockedFile::open_shared`].
/// Dropping it releases the lock.
#[derive(Debug)]
pub(crate) struct LockedFile {
    /// The locked handle: read + `O_APPEND` when exclusive, read-only when shared.
    file: File,
    /// The real file, symlinks resolved, so a rewrite replaces the file and not a link.
    target: PathBuf,
    /// Whether the lock is exclusive; only then may the file be changed.
    exclusive: bool,
    /// How much of the file a reader may see: set when a batch in flight
    /// starts there ([`LockedFile::cap`]); every length and read stops at it.
    cap: Option<u64>,
}

impl LockedFile {
    /// Opens `path` for reading and appending (following symlinks) and takes an
    /// exclusive lock, blocking until it is free. With `create`, a missing file is
    /// created (mode 0o666 minus the umask; an existing file is never truncated).
    ///
    /// If the file was replaced by a rewrite while we waited, the lock is on an inode
    /// nobody will use again, so the open starts over (at most [`MAX_TRIES`] times).
    /// A file the user cannot write fails with the OS error (`PermissionDenied`):
    /// there is deliberately no read-only fallback, since the caller means to write.
    pub(crate) fn open(path: &Path, create: bool) -> io::Result<LockedFile> {
        let mut options = OpenOptions::new();
        // O_APPEND: every write lands at the end even if some process ignores the lock.
        options.read(true).append(true).create(create);
        Self::open_locked(path, &options, true)
    }

    /// Opens `path` read-only under a shared lock, for a reader that wants a snapshot
    /// no writer changes while it reads. Same inode re-check as [`LockedFile::open`].
    pub(crate) fn open_shared(path: &Path) -> io::Result<LockedFile> {
        let mut options = OpenOptions::new();
        options.read(true);
        Self::open_locked(path, &options, false)
    }

    /// Opens, locks, and re-checks that the path still names the locked inode.
    fn open_locked(path: &Path, options: &OpenOptions, exclusive: bool) -> io::Result<LockedFile> {
        for _ in 0..MAX_TRIES {
            // A FIFO or a device is refused here, before any read can hang.
            let file = super::trust::open_regular(path, &mut options.clone())?;
            if exclusive {
                file.lock()?;
            } else {
                file.lock_shared()?;
            }
            // Resolved only now, under the lock, so a retargeted symlink is caught too.
            let target = match fs::canonicalize(path) {
                Ok(target) => target,
                // Removed while we waited: the next open reports it (or recreates it).
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            let named = match fs::metadata(&target) {
                Ok(named) => named,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            let held = file.metadata()?;
            if held.dev() == named.dev() && held.ino() == named.ino() {
                return Ok(LockedFile {
                    file,
                    target,
                    exclusive,
                    cap: None,
                });
            }
            // Replaced by a rename while we waited; dropping `file` releases the stale lock.
        }
        Err(io::Error::other(format!(
            "{}: the file was replaced {MAX_TRIES} times while waiting for its lock",
            path.display()
        )))
    }

    /// The real file this handle has locked (symlinks resolved).
    pub(crate) fn target(&self) -> &Path {
        &self.target
    }

    /// True when the lock is exclusive (no append can be in flight).
    pub(crate) fn is_exclusive(&self) -> bool {
        self.exclusive
    }

    /// The locked inode as (device, inode number): changes when a rewrite
    /// replaces the file.
    pub(crate) fn identity(&self) -> io::Result<(u64, u64)> {
        let held = self.file.metadata()?;
        Ok((held.dev(), held.ino()))
    }

    /// Makes what was written to the file durable (`fdatasync`).
    pub(crate) fn sync(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    /// The locked inode's `fstat`.
    pub(crate) fn metadata(&self) -> io::Result<fs::Metadata> {
        self.file.metadata()
    }

    /// Lets a shared-lock reader see only the first `len` bytes: a batch a
    /// writer died in the middle of starts there, and no reader may see
    /// part of it (the next writer removes it).
    pub(crate) fn cap(&mut self, len: u64) {
        if !self.exclusive {
            self.cap = Some(len);
        }
    }

    /// Current length in bytes, from the handle (so it is the locked inode's
    /// length), no more than the [cap](LockedFile::cap).
    pub(crate) fn len(&self) -> io::Result<u64> {
        let len = self.file.metadata()?.len();
        Ok(self.cap.map_or(len, |cap| cap.min(len)))
    }

    /// Reads every byte from `offset` to the end: the tail other writers appended
    /// since this caller last looked.
    pub(crate) fn read_from(&mut self, offset: u64) -> io::Result<Vec<u8>> {
        let tail = self.len()?.saturating_sub(offset);
        let mut out = Vec::with_capacity(usize::try_from(tail).unwrap_or(0));
        AtReader {
            file: &self.file,
            pos: offset,
            end: self.cap,
        }
        .read_to_end(&mut out)?;
        Ok(out)
    }

    /// The bytes from `start` to `end` (fewer if the file is shorter).
    pub(crate) fn read_range(&self, start: u64, end: u64) -> io::Result<Vec<u8>> {
        // One `pread` of the exact size: `read_to_end` would probe in small reads.
        let end = end.min(self.len()?);
        let size = usize::try_from(end.saturating_sub(start)).unwrap_or(0);
        let mut out = vec![0; size];
        self.file.read_exact_at(&mut out, start)?;
        Ok(out)
    }

    /// (device, inode) and length in bytes, from one `fstat`.
    pub(crate) fn stat(&self) -> io::Result<((u64, u64), u64)> {
        let held = self.file.metadata()?;
        let len = self.cap.map_or(held.len(), |cap| cap.min(held.len()));
        Ok(((held.dev(), held.ino()), len))
    }

    /// A buffered reader from `offset` to the end, for loading big files without
    /// holding them whole. It borrows `self`, so it cannot outlive the lock.
    pub(crate) fn reader_from(&self, offset: u64) -> io::Result<impl BufRead + '_> {
        Ok(BufReader::with_capacity(
            READ_BUF,
            AtReader {
                file: &self.file,
                pos: offset,
                end: self.cap,
            },
        ))
    }

    /// Truncates to `len` and fsyncs: repairs a torn last line left by a writer that
    /// died mid-append. Needs the exclusive lock.
    pub(crate) fn truncate(&mut self, len: u64) -> io::Result<()> {
        self.check_exclusive()?;
        self.file.set_len(len)?;
        self.file.sync_all()
    }

    /// Appends `bytes` (all lines of one append, as one buffer) at the end with one
    /// `write_all`, then fsyncs, and returns the new length.
    ///
    /// If the write or the fsync fails (ENOSPC, EIO, a short write), the file is
    /// truncated back to its length before the append and fsynced, and the original
    /// error is returned, so a failed append leaves the file as it was. If that repair
    /// fails too, the error says both and keeps the original error's kind.
    pub(crate) fn append(&mut self, bytes: &[u8]) -> io::Result<u64> {
        self.check_exclusive()?;
        let before = self.len()?;
        match self
            .file
            .write_all(bytes)
            .and_then(|()| self.file.sync_data())
        {
            // Computed, not re-read: once the data is durable the append must be
            // reported as done, or a caller would retry and duplicate it.
            Ok(()) => Ok(before.saturating_add(bytes.len() as u64)),
            Err(err) => match self
                .file
                .set_len(before)
                .and_then(|()| self.file.sync_all())
            {
                Ok(()) => Err(err),
                Err(undo) => Err(io::Error::new(
                    err.kind(),
                    format!(
                        "{}: append failed ({err}) and truncating back to {before} bytes \
                         also failed ({undo}); the file may end in a partial line",
                        self.target.display()
                    ),
                )),
            },
        }
    }

    /// Replaces the whole file with `bytes` atomically (for JSON array files).
    ///
    /// The new contents go to a temporary file in the target's directory, created with
    /// `O_EXCL` under a random name (so a planted file or symlink is never written
    /// through), given the old file's permission bits (and owner, when we may), written,
    /// fsynced, locked, renamed over the target (the real file, never a symlink to it),
    /// and the directory is fsynced. On any error before the rename the temporary file
    /// is removed and the original is untouched. If only the final directory fsync
    /// fails, the new contents are in place (and `self` refers to them) but might not
    /// survive a crash. Needs write permission on the directory, unlike `append`.
    ///
    /// Afterwards `self` holds the lock on the *new* inode and reads and appends go to
    /// it; the old inode's lock is released. This is race-free: the new inode is locked
    /// before the rename makes it visible, so anyone opening the path from then on
    /// blocks behind us, and anyone who was waiting on (or later locks) the old inode
    /// fails the inode re-check in [`LockedFile::open`] and retries onto the new one.
    pub(crate) fn rewrite(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.check_exclusive()?;
        let (Some(dir), Some(_)) = (self.target.parent(), self.target.file_name()) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{}: not a file inside a directory", self.target.display()),
            ));
        };
        let prefix = super::recovery::temp_prefix(&self.target, "");
        let old = self.file.metadata()?;
        // `tmp` deletes its file when dropped, which covers every early return below.
        let mut tmp = tempfile::Builder::new()
            .prefix(&prefix)
            .suffix(".tmp")
            .append(true)
            .tempfile_in(dir)?;
        let new = tmp.as_file_mut();
        let mine = new.metadata()?;
        if (mine.uid(), mine.gid()) != (old.uid(), old.gid()) {
            // Best effort: only root may give a file away, and it matters exactly when
            // root rewrites another user's file; otherwise the file becomes ours.
            let _ = std::os::unix::fs::fchown(&*new, Some(old.uid()), Some(old.gid()));
        }
        // After the chown, which may clear set-id bits; fchmod ignores the umask.
        new.set_permissions(old.permissions())?;
        // Through the raw File so errors stay plain OS errors (ENOSPC stays code 28).
        new.write_all(bytes)?;
        new.sync_all()?;
        // Nobody else knows the random name, so this cannot block for long; it must be
        // held before the rename so no opener can slip in between rename and lock.
        new.try_lock().map_err(io::Error::from)?;
        let new = tmp.persist(&self.target).map_err(|e| e.error)?;
        // Dropping the old handle releases the old inode's lock.
        self.file = new;
        File::open(dir)?.sync_all()
    }

    /// Refuses changes through a shared-lock handle, which other readers share.
    fn check_exclusive(&self) -> io::Result<()> {
        if self.exclusive {
            Ok(())
        } else {
            Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{}: opened with a shared lock, so it cannot be changed",
                    self.target.display()
                ),
            ))
        }
    }
}

/// Reads a file from its own position with `pread`, so reading never moves the
/// handle's file offset and needs no duplicated descriptor.
struct AtReader<'a> {
    /// The file to read.
    file: &'a File,
    /// The offset of the next byte to read.
    pos: u64,
    /// Where reading stops short of the end of the file, if it does.
    end: Option<u64>,
}

impl Read for AtReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let room = self
            .end
            .map_or(buf.len() as u64, |end| end.saturating_sub(self.pos));
        let take = usize::try_from(room).unwrap_or(usize::MAX).min(buf.len());
        let n = self.file.read_at(&mut buf[..take], self.pos)?;
        self.pos = self.pos.saturating_add(n as u64);
        Ok(n)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::os::unix::fs::{PermissionsExt, symlink};
    use std::process::Command;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, mpsc};
    use std::thread;
    use std::time::Duration;

    /// Names in `dir`, sorted, to spot leftover temporary files.
    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn concurrent_appends_keep_every_line_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ctx.jsonl");
        let workers: Vec<_> = (0..8)
            .map(|t| {
                let path = path.clone();
                thread::spawn(move || {
                    for i in 0..200 {
                        let mut f = LockedFile::open(&path, true).unwrap();
                        let line = format!("t{t}-{i}\n");
                        let before = f.len().unwrap();
                        let after = f.append(line.as_bytes()).unwrap();
                        assert_eq!(after, before + line.len() as u64);
                        // Under an exclusive lock nobody else can write in between.
                        assert_eq!(f.read_from(before).unwrap(), line.as_bytes());
                        assert_eq!(f.len().unwrap(), after);
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        let text = fs::read_to_string(&path).unwrap();
        assert!(text.ends_with('\n'));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1600);
        let set: HashSet<&str> = lines.iter().copied().collect();
        assert_eq!(set.len(), 1600, "a line appears twice");
        for t in 0..8 {
            let mine: Vec<&str> = lines
                .iter()
                .copied()
                .filter(|l| l.starts_with(&format!("t{t}-")))
                .collect();
            let want: Vec<String> = (0..200).map(|i| format!("t{t}-{i}")).collect();
            assert_eq!(
                mine, want,
                "thread {t}'s lines are missing, torn or out of order"
            );
        }
    }

    #[test]
    fn reads_truncate_and_create() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ctx.jsonl");
        assert_eq!(
            LockedFile::open(&path, false).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        let mut f = LockedFile::open(&path, true).unwrap();
        assert_eq!(f.target(), fs::canonicalize(&path).unwrap());
        assert_eq!(f.append(b"a\nb\npart").unwrap(), 8);
        assert_eq!(f.read_from(2).unwrap(), b"b\npart");
        assert_eq!(f.read_from(99).unwrap(), b"");
        let lines: Vec<String> = f
            .reader_from(2)
            .unwrap()
            .lines()
            .map(Result::unwrap)
            .collect();
        assert_eq!(lines, ["b", "part"]);
        f.truncate(4).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"a\nb\n");
        // Appends still go to the end after reads and a truncation moved nothing.
        assert_eq!(f.append(b"c\n").unwrap(), 6);
        assert_eq!(fs::read(&path).unwrap(), b"a\nb\nc\n");
        drop(f);
        // Reopening with `create` must not truncate.
        LockedFile::open(&path, true).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"a\nb\nc\n");
    }

    #[test]
    fn shared_lock_blocks_writers_and_cannot_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ctx.jsonl");
        fs::write(&path, "x\n").unwrap();
        let mut reader = LockedFile::open_shared(&path).unwrap();
        // Readers share.
        let other = LockedFile::open_shared(&path).unwrap();
        assert!(reader.append(b"y\n").is_err());
        assert!(reader.truncate(0).is_err());
        assert!(reader.rewrite(b"[]").is_err());
        let done = Arc::new(AtomicBool::new(false));
        let writer = {
            let (path, done) = (path.clone(), Arc::clone(&done));
            thread::spawn(move || {
                let mut w = LockedFile::open(&path, false).unwrap();
                done.store(true, Ordering::SeqCst);
                w.append(b"y\n").unwrap();
            })
        };
        thread::sleep(Duration::from_millis(200));
        assert!(
            !done.load(Ordering::SeqCst),
            "writer got in while readers held shared locks"
        );
        assert_eq!(reader.read_from(0).unwrap(), b"x\n");
        drop(other);
        drop(reader);
        writer.join().unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"x\ny\n");
    }

    #[test]
    fn blocked_open_follows_a_rewrite_to_the_new_inode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ctx.json");
        fs::write(&path, "[1]").unwrap();
        let mut a = LockedFile::open(&path, false).unwrap();
        let (started, waiting) = mpsc::channel();
        let done = Arc::new(AtomicBool::new(false));
        let b = {
            let (path, done) = (path.clone(), Arc::clone(&done));
            thread::spawn(move || {
                started.send(()).unwrap();
                let mut b = LockedFile::open(&path, false).unwrap();
                done.store(true, Ordering::SeqCst);
                let seen = b.read_from(0).unwrap();
                b.append(b"+b").unwrap();
                seen
            })
        };
        waiting.recv().unwrap();
        thread::sleep(Duration::from_millis(300));
        assert!(
            !done.load(Ordering::SeqCst),
            "B got the lock while A held it"
        );
        a.rewrite(b"[1,2]").unwrap();
        // A still holds the (new) file and appends to it before B can.
        a.append(b"+a").unwrap();
        drop(a);
        assert_eq!(b.join().unwrap(), b"[1,2]+a");
        assert_eq!(fs::read(&path).unwrap(), b"[1,2]+a+b");
    }

    #[test]
    fn rewrite_keeps_the_new_inode_locked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ctx.json");
        fs::write(&path, "[1]").unwrap();
        let mut f = LockedFile::open(&path, false).unwrap();
        f.rewrite(b"[2]").unwrap();
        let probe = File::open(&path).unwrap();
        assert!(
            matches!(probe.try_lock(), Err(fs::TryLockError::WouldBlock)),
            "the new file was visible unlocked after the rewrite"
        );
        assert_eq!(f.read_from(0).unwrap(), b"[2]");
        assert_eq!(f.len().unwrap(), 3);
        assert_eq!(names(dir.path()), ["ctx.json"]);
        drop(f);
        probe.try_lock().unwrap();
    }

    #[test]
    fn rewrite_keeps_permission_bits() {
        let dir = tempfile::tempdir().unwrap();
        // 0o600 is also tempfile's default, so 0o640 and 0o604 prove the bits are copied.
        for mode in [0o600, 0o640, 0o604] {
            let path = dir.path().join(format!("m{mode:o}.json"));
            fs::write(&path, "[]").unwrap();
            fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
            LockedFile::open(&path, false)
                .unwrap()
                .rewrite(b"[1]")
                .unwrap();
            assert_eq!(
                fs::metadata(&path).unwrap().permissions().mode() & 0o777,
                mode
            );
            assert_eq!(fs::read(&path).unwrap(), b"[1]");
        }
    }

    #[test]
    fn rewrite_through_a_symlink_replaces_the_real_file() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.json");
        let link = dir.path().join("link");
        fs::write(&real, "[1]").unwrap();
        symlink("real.json", &link).unwrap();
        let mut f = LockedFile::open(&link, false).unwrap();
        assert_eq!(f.target(), fs::canonicalize(&real).unwrap());
        f.rewrite(b"[1,2]").unwrap();
        drop(f);
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(fs::read_link(&link).unwrap(), Path::new("real.json"));
        assert_eq!(fs::read(&real).unwrap(), b"[1,2]");
        assert_eq!(names(dir.path()), ["link", "real.json"]);
    }

    #[test]
    fn rewrite_never_writes_through_planted_temp_names() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.json");
        let victim = dir.path().join("victim");
        fs::write(&real, "[1]").unwrap();
        fs::write(&victim, "keep").unwrap();
        let pid = std::process::id();
        let planted = [
            format!(".real.json.{pid}.tmp"),
            ".real.json.tmp".into(),
            "real.json.tmp".into(),
        ];
        for name in &planted {
            symlink(&victim, dir.path().join(name)).unwrap();
        }
        LockedFile::open(&real, false)
            .unwrap()
            .rewrite(b"[2]")
            .unwrap();
        assert_eq!(fs::read(&victim).unwrap(), b"keep");
        assert_eq!(fs::read(&real).unwrap(), b"[2]");
        for name in &planted {
            assert_eq!(fs::read_link(dir.path().join(name)).unwrap(), victim);
        }
        assert_eq!(
            names(dir.path()).len(),
            planted.len() + 2,
            "a temporary file was left behind"
        );
    }

    /// A tiny tmpfs, unmounted and removed when dropped.
    struct TinyFs(PathBuf);

    impl TinyFs {
        fn mount() -> TinyFs {
            let uid = fs::metadata("/proc/self").unwrap().uid();
            assert_eq!(
                uid, 0,
                "this test needs root to mount a tmpfs (CI runs it as root)"
            );
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos();
            let dir = std::env::temp_dir()
                .join(format!("agent-store-enospc-{}-{nanos}", std::process::id()));
            fs::create_dir(&dir).unwrap();
            let fs = TinyFs(dir);
            let out = Command::new("mount")
                .args(["-t", "tmpfs", "-o", "size=16k", "tmpfs"])
                .arg(&fs.0)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "mount -t tmpfs failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            fs
        }
    }

    impl Drop for TinyFs {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
            let _ = fs::remove_dir(&self.0);
        }
    }

    fn is_enospc(e: &io::Error) -> bool {
        e.raw_os_error() == Some(28) || e.kind() == io::ErrorKind::StorageFull
    }

    #[test]
    fn full_disk_leaves_the_file_as_it_was() {
        let tiny = TinyFs::mount();
        let path = tiny.0.join("ctx.jsonl");
        let original: Vec<u8> = b"{\"m\":1}\n"
            .iter()
            .copied()
            .cycle()
            .take(10_000)
            .collect();
        fs::write(&path, &original).unwrap();
        let mut f = LockedFile::open(&path, false).unwrap();
        // 10000 + 16384 bytes can never fit in 16 KiB, but part of the buffer does.
        let err = f.append(&vec![b'x'; 16 * 1024]).unwrap_err();
        assert!(is_enospc(&err), "expected ENOSPC, got {err:?}");
        assert_eq!(
            err.raw_os_error(),
            Some(28),
            "the original OS error must be returned"
        );
        assert_eq!(fs::read(&path).unwrap(), original);
        assert_eq!(f.len().unwrap(), 10_000);
        // The torn part's space was given back, so a small append fits again.
        assert_eq!(f.append(b"ok\n").unwrap(), 10_003);
        let before = fs::read(&path).unwrap();
        let err = f.rewrite(&vec![b'y'; 16 * 1024]).unwrap_err();
        assert!(is_enospc(&err), "expected ENOSPC, got {err:?}");
        assert_eq!(fs::read(&path).unwrap(), before);
        assert_eq!(f.read_from(0).unwrap(), before);
        assert_eq!(
            names(&tiny.0),
            ["ctx.jsonl"],
            "a temporary file was left behind"
        );
        drop(f);
    }
}
