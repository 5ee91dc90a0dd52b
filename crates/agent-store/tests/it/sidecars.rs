//! Files beside a context file never overrule it: a record of a batch in
//! flight (`.NAME.pending`) or a snapshot (`.NAME.snapshot`) counts only
//! when it is a regular file, owned by the log's owner or by us, writable
//! by nobody who may not write the log, and (a record) bound to this very
//! file. Reading never truncates; sidecars get the log's mode and group.
//! Real files, and real processes of another user where root allows.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use agent_store::SnapshotWhen;

use agent_core::json;
use agent_data::{Context, Message, Warning};
use agent_store::{FileStore, Store};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The uid and gid of `nobody`, for files of another user.
const NOBODY: u32 = 65534;

fn dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("agentctx-sidecars-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn is_root() -> bool {
    std::fs::metadata("/proc/self").unwrap().uid() == 0
}

fn push(n: i64) -> Message {
    Message::from_value(
        json!({"type": "state", "data": {"log": n}, "_outputPath": "†state.log", "_outputMethod": "push"}),
    )
    .unwrap()
    .remove(0)
}

const HEAD: &str = "{\"type\":\"state\",\"data\":{\"log\":[]}}\n";

fn log_of(context: &Context) -> agent_core::json::Value {
    context
        .read(&"†state.log".parse().unwrap(), None)
        .cloned()
        .unwrap_or_default()
}

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn pending(path: &Path) -> PathBuf {
    let name = path.file_name().unwrap().to_str().unwrap();
    path.with_file_name(format!(".{name}.pending"))
}

fn snapshot(path: &Path) -> PathBuf {
    let name = path.file_name().unwrap().to_str().unwrap();
    path.with_file_name(format!(".{name}.snapshot"))
}

/// A record of `batch` at `before`, bound to the file `dev`/`ino`.
fn record_text(dev: u64, ino: u64, before: u64, batch: &[u8]) -> String {
    format!(
        "agentctx-pending 1 dev={dev} ino={ino} before={before} end={} fnv1a={}\n",
        before + batch.len() as u64,
        fnv(batch)
    )
}

/// The lines of a two-push batch as the store writes them.
fn batch_lines(path: &Path) -> String {
    let context = FileStore::open(path).unwrap().load().unwrap().context;
    let batch = [push(1), push(2)];
    let prepared = context.prepare(&batch).unwrap();
    prepared.lines().map(|l| format!("{l}\n")).collect()
}

/// A writer that died in the middle of a two-line batch: its bound record
/// and the batch's first line and a half appended. Returns the length
/// before the batch.
fn die_mid_batch(path: &Path) -> u64 {
    let whole = batch_lines(path);
    let meta = std::fs::metadata(path).unwrap();
    let before = meta.len();
    std::fs::write(
        pending(path),
        record_text(meta.dev(), meta.ino(), before, whole.as_bytes()),
    )
    .unwrap();
    let first = whole.find('\n').unwrap() + 1;
    let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    std::io::Write::write_all(&mut file, &whole.as_bytes()[..first + 10]).unwrap();
    before
}

fn ignored(warnings: &[Warning], path: &Path) -> bool {
    warnings.iter().any(|w| {
        matches!(w, Warning::IgnoredSidecar { path: p, .. } if p == &path.display().to_string())
    })
}

#[test]
fn a_planted_record_never_truncates_a_read() {
    let path = dir("planted").join("c.jsonl");
    let text = format!(
        "{HEAD}{}",
        batch_lines(&dir("planted-src").join("x.jsonl").tap(HEAD))
    );
    std::fs::write(&path, &text).unwrap();
    // The record of the report: start 0, an end far away, any checksum.
    std::fs::write(pending(&path), "0 999999999 1\n").unwrap();
    let mut store = FileStore::open(&path).unwrap();
    let loaded = store.load().unwrap();
    assert_eq!(log_of(&loaded.context), json!([1, 2]));
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        text,
        "a read cut the file"
    );
    assert!(
        ignored(&loaded.warnings, &pending(&path)),
        "{:?}",
        loaded.warnings
    );
    // A writer ignores it too (it names no file), and removes it: it is ours.
    let mut context = loaded.context;
    store.commit(&mut context, &[push(3)]).unwrap();
    assert_eq!(
        log_of(&FileStore::open(&path).unwrap().load().unwrap().context),
        json!([1, 2, 3])
    );
    assert!(!pending(&path).exists());
}

/// Writes `text` to the path and returns it, for one-line setups.
trait Tap {
    fn tap(self, text: &str) -> Self;
}

impl Tap for PathBuf {
    fn tap(self, text: &str) -> Self {
        std::fs::write(&self, text).unwrap();
        self
    }
}

#[test]
fn a_reader_reads_up_to_a_batch_in_flight_and_the_writer_undoes_it() {
    let path = dir("in-flight").join("c.jsonl");
    std::fs::write(&path, HEAD).unwrap();
    let before = die_mid_batch(&path);
    let torn = std::fs::read(&path).unwrap();
    for _ in 0..2 {
        let loaded = FileStore::open(&path).unwrap().load().unwrap();
        assert_eq!(
            log_of(&loaded.context),
            json!([]),
            "a reader saw part of the batch"
        );
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        let tail = FileStore::open(&path).unwrap().load_tail().unwrap();
        assert_eq!(log_of(&tail.context), json!([]));
    }
    assert_eq!(
        std::fs::read(&path).unwrap(),
        torn,
        "a reader changed the file"
    );
    let mut context = Context::new();
    FileStore::open(&path)
        .unwrap()
        .commit(&mut context, &[push(3)])
        .unwrap();
    assert_eq!(log_of(&context), json!([3]));
    assert_eq!(
        &std::fs::read(&path).unwrap()[..before as usize],
        HEAD.as_bytes()
    );
    assert!(!pending(&path).exists());
}

#[test]
fn a_reader_going_through_the_snapshot_sees_no_part_of_a_batch_in_flight() {
    let path = dir("through-snapshot").join("c.jsonl");
    let mut store = FileStore::open(&path).unwrap();
    let mut context = Context::new();
    store
        .commit(
            &mut context,
            &[
                Message::from_value(json!({"type":"state","data":{"log":[]}}))
                    .unwrap()
                    .remove(0),
            ],
        )
        .unwrap();
    for n in 0..70 {
        store.commit(&mut context, &[push(n)]).unwrap();
    }
    // Two complete lines of a batch, then a snapshot taken over them by a
    // handle that did not know they were in flight, then the record.
    let whole = batch_lines(&path);
    let meta = std::fs::metadata(&path).unwrap();
    let before = meta.len();
    let first = whole.find('\n').unwrap() + 1;
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    std::io::Write::write_all(&mut file, &whole.as_bytes()[..first]).unwrap();
    let mut reader = FileStore::open(&path).unwrap();
    let all = reader.load().unwrap().context;
    assert_eq!(all.len(), 72);
    assert!(reader.snapshot(&all, SnapshotWhen::Now).unwrap());
    std::fs::write(
        pending(&path),
        record_text(meta.dev(), meta.ino(), before, whole.as_bytes()),
    )
    .unwrap();
    let tail = FileStore::open(&path).unwrap().load_tail().unwrap();
    assert_eq!(
        tail.context.len(),
        71,
        "the snapshot showed part of a batch in flight"
    );
    let view = log_of(&tail.context);
    assert_eq!(view.as_array().unwrap().len(), 70);
}

#[test]
fn a_record_of_another_file_is_stale_and_ignored() {
    let dir = dir("stale");
    let path = dir.join("c.jsonl");
    std::fs::write(&path, HEAD).unwrap();
    die_mid_batch(&path);
    // The file is restored from a backup: same name, another inode, and
    // longer than where the old batch began.
    let backup = dir.join("backup");
    std::fs::write(&backup, format!("{HEAD}{}", batch_lines(&path.clone()))).unwrap();
    let restored = std::fs::read(&backup).unwrap();
    std::fs::rename(&backup, &path).unwrap();
    let mut writer = FileStore::open(&path).unwrap();
    let loaded = writer.load().unwrap();
    assert_eq!(log_of(&loaded.context), json!([1, 2]));
    assert!(
        ignored(&loaded.warnings, &pending(&path)),
        "{:?}",
        loaded.warnings
    );
    let mut context = loaded.context;
    writer.commit(&mut context, &[push(3)]).unwrap();
    assert!(
        std::fs::read(&path).unwrap().starts_with(&restored),
        "the restored file was cut"
    );
    assert_eq!(log_of(&context), json!([1, 2, 3]));
}

#[test]
fn a_record_writable_by_others_is_ignored_and_ours_is_tightened() {
    let path = dir("wide").join("c.jsonl");
    std::fs::write(&path, HEAD).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    die_mid_batch(&path);
    let torn = std::fs::read(&path).unwrap();
    std::fs::set_permissions(pending(&path), std::fs::Permissions::from_mode(0o666)).unwrap();
    let loaded = FileStore::open(&path).unwrap().load().unwrap();
    assert!(
        ignored(&loaded.warnings, &pending(&path)),
        "{:?}",
        loaded.warnings
    );
    // Ignored: the reader sees every complete line there is.
    assert_eq!(log_of(&loaded.context), json!([1]));
    assert_eq!(std::fs::read(&path).unwrap(), torn);
    let mode = std::fs::metadata(pending(&path)).unwrap().mode() & 0o7777;
    assert_eq!(
        mode, 0o644,
        "our record was not tightened to the log's mode"
    );
}

#[test]
fn a_group_shared_log_keeps_its_records() {
    let path = dir("group").join("c.jsonl");
    std::fs::write(&path, HEAD).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o660)).unwrap();
    die_mid_batch(&path);
    // Group-writable like its log, and of the log's group: believed.
    std::fs::set_permissions(pending(&path), std::fs::Permissions::from_mode(0o660)).unwrap();
    let loaded = FileStore::open(&path).unwrap().load().unwrap();
    assert_eq!(log_of(&loaded.context), json!([]));
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let mut store = FileStore::open(&path).unwrap();
    let mut context = store.load().unwrap().context;
    store.commit(&mut context, &[push(3)]).unwrap();
    // The cut batch was removed: the head, then the new line.
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with(HEAD), "{text}");
    assert_eq!(text.lines().count(), 2, "{text}");
    assert_eq!(log_of(&context), json!([3]));
    assert!(!pending(&path).exists());
}

#[test]
fn a_record_planted_by_another_user_is_ignored() {
    if !is_root() {
        println!("skipped: planting a file as another user needs root");
        return;
    }
    // A shared sticky directory, like /tmp.
    let dir = dir("other-user");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let path = dir.join("c.jsonl");
    std::fs::write(
        &path,
        format!("{HEAD}{}", batch_lines(&dir.join("x.jsonl").tap(HEAD))),
    )
    .unwrap();
    let meta = std::fs::metadata(&path).unwrap();
    let text = std::fs::read(&path).unwrap();
    // Bound to the file, with a sane extent: only its owner is wrong.
    let record = record_text(meta.dev(), meta.ino(), HEAD.len() as u64, b"x");
    let status = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "umask 022; printf '%s' '{record}' > '{}'",
            pending(&path).display()
        ))
        .uid(NOBODY)
        .gid(NOBODY)
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(std::fs::metadata(pending(&path)).unwrap().uid(), NOBODY);
    let mut store = FileStore::open(&path).unwrap();
    let loaded = store.load().unwrap();
    assert_eq!(log_of(&loaded.context), json!([1, 2]));
    assert!(
        ignored(&loaded.warnings, &pending(&path)),
        "{:?}",
        loaded.warnings
    );
    // A writer neither cuts nor is blocked by it.
    let mut context = loaded.context;
    store.commit(&mut context, &[push(3), push(4)]).unwrap();
    assert!(std::fs::read(&path).unwrap().starts_with(&text));
    assert_eq!(log_of(&context), json!([1, 2, 3, 4]));
    assert_eq!(
        log_of(&FileStore::open(&path).unwrap().load().unwrap().context),
        json!([1, 2, 3, 4])
    );
}

#[test]
fn records_that_are_not_regular_files_neither_hang_nor_block_batches() {
    let dir = dir("odd-records");
    let path = dir.join("c.jsonl");
    let real = dir.join("real-record");
    type Setup<'a> = Box<dyn Fn() + 'a>;
    let setups: Vec<(&str, Setup)> = vec![
        (
            "directory",
            Box::new(|| std::fs::create_dir(pending(&path)).unwrap()),
        ),
        ("fifo", Box::new(|| mkfifo(&pending(&path)))),
        (
            "non-UTF-8 file",
            Box::new(|| std::fs::write(pending(&path), b"\xff\xfe\x00 1 2\n").unwrap()),
        ),
        (
            "symlink to a bound record",
            Box::new(|| {
                let meta = std::fs::metadata(&path).unwrap();
                std::fs::write(&real, record_text(meta.dev(), meta.ino(), 0, b"x")).unwrap();
                std::os::unix::fs::symlink(&real, pending(&path)).unwrap();
            }),
        ),
    ];
    for (what, setup) in setups {
        std::fs::write(&path, HEAD).unwrap();
        setup();
        let done = watchdog(what);
        let mut store = FileStore::open(&path).unwrap();
        let loaded = store.load().unwrap();
        assert_eq!(log_of(&loaded.context), json!([]), "{what}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            HEAD,
            "{what}: a read changed the file"
        );
        let mut context = loaded.context;
        store
            .commit(&mut context, &[push(1), push(2)])
            .unwrap_or_else(|e| panic!("{what} blocked a batch: {e}"));
        assert_eq!(
            log_of(&FileStore::open(&path).unwrap().load().unwrap().context),
            json!([1, 2]),
            "{what}"
        );
        done.send(()).unwrap();
        let _ = std::fs::remove_dir(pending(&path));
        let _ = std::fs::remove_file(pending(&path));
    }
    assert!(real.exists(), "a symlink's target was removed");
}

/// Aborts the test process if `what` is not done within ten seconds: a
/// hang must fail, not stall the suite.
fn watchdog(what: &'static str) -> std::sync::mpsc::Sender<()> {
    let (done, wait) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        if wait
            .recv_timeout(std::time::Duration::from_secs(10))
            .is_err()
        {
            eprintln!("{what}: hung for 10 s");
            std::process::exit(99);
        }
    });
    done
}

fn mkfifo(path: &Path) {
    assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
}

#[test]
fn non_files_as_the_context_are_refused_at_once() {
    let dir = dir("non-files");
    let fifo = dir.join("fifo.jsonl");
    mkfifo(&fifo);
    let fifo_plain = dir.join("fifo");
    mkfifo(&fifo_plain);
    let link = dir.join("link.jsonl");
    std::os::unix::fs::symlink(&fifo, &link).unwrap();
    let done = watchdog("opening a FIFO");
    for path in [
        fifo.as_path(),
        fifo_plain.as_path(),
        link.as_path(),
        Path::new("/dev/zero"),
        Path::new("/dev/null"),
        dir.as_path(),
    ] {
        let error = FileStore::open(path).unwrap_err();
        assert!(
            matches!(error, agent_store::Error::NotAFile { .. }),
            "{}: {error}",
            path.display()
        );
        assert!(error.to_string().contains("not a regular file"), "{error}");
    }
    done.send(()).unwrap();
}

#[test]
fn a_byte_order_mark_is_refused_and_never_wiped() {
    let path = dir("bom").join("c.jsonl");
    let text = format!("\u{feff}{}", HEAD.trim_end());
    std::fs::write(&path, &text).unwrap();
    let error = FileStore::open(&path).unwrap().load().unwrap_err();
    assert!(
        matches!(error, agent_store::Error::ByteOrderMark { .. }),
        "{error}"
    );
    assert!(
        error.to_string().contains(&path.display().to_string()),
        "{error}"
    );
    let mut context = Context::new();
    let error = FileStore::open(&path)
        .unwrap()
        .commit(&mut context, &[push(1)])
        .unwrap_err();
    assert!(
        matches!(error, agent_store::Error::ByteOrderMark { .. }),
        "{error}"
    );
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        text,
        "the file was changed"
    );
}

#[test]
fn a_last_line_without_its_newline_is_kept_by_an_append() {
    let path = dir("no-newline").join("c.jsonl");
    std::fs::write(&path, HEAD.trim_end()).unwrap();
    let mut store = FileStore::open(&path).unwrap();
    let mut context = store.load().unwrap().context;
    store.commit(&mut context, &[push(1)]).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with(HEAD), "{text}");
    assert_eq!(
        log_of(&FileStore::open(&path).unwrap().load().unwrap().context),
        json!([1])
    );
}

/// A store that wrote a snapshot of `n` pushes beside `path`.
fn snapshotted(path: &Path) {
    let mut store = FileStore::open(path).unwrap();
    let mut context = Context::new();
    for n in 0..3 {
        store.commit(&mut context, &[push(n)]).unwrap();
    }
    assert!(store.snapshot(&context, SnapshotWhen::Now).unwrap());
}

#[test]
fn a_snapshot_follows_its_logs_mode_and_group() {
    let dir = dir("snapshot-mode");
    let path = dir.join("c.jsonl");
    std::fs::write(&path, HEAD).unwrap();
    if is_root() {
        std::os::unix::fs::chown(&path, None, Some(NOBODY)).unwrap();
    }
    // After the chown, which clears set-id bits.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o4755)).unwrap();
    snapshotted(&path);
    let snap = std::fs::metadata(snapshot(&path)).unwrap();
    assert_eq!(
        snap.mode() & 0o7777,
        0o644,
        "set-id or execute bits were copied"
    );
    if is_root() {
        assert_eq!(
            snap.gid(),
            NOBODY,
            "the snapshot did not get the log's group"
        );
    }
    // The log is made private: the snapshot becomes private at the next open.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let loaded = FileStore::open(&path).unwrap().load_tail().unwrap();
    assert_eq!(log_of(&loaded.context), json!([0, 1, 2]));
    let mode = std::fs::metadata(snapshot(&path)).unwrap().mode() & 0o7777;
    assert_eq!(mode, 0o600, "the snapshot stayed readable by others");
}

#[test]
fn another_users_snapshot_wider_than_the_log_is_ignored() {
    if !is_root() {
        println!("skipped: a file of another user needs root");
        return;
    }
    let dir = dir("snapshot-other");
    let path = dir.join("c.jsonl");
    std::fs::write(&path, HEAD).unwrap();
    snapshotted(&path);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::chown(snapshot(&path), Some(NOBODY), Some(NOBODY)).unwrap();
    std::fs::set_permissions(snapshot(&path), std::fs::Permissions::from_mode(0o644)).unwrap();
    let loaded = FileStore::open(&path).unwrap().load_tail().unwrap();
    assert_eq!(log_of(&loaded.context), json!([0, 1, 2]));
    assert!(
        ignored(&loaded.warnings, &snapshot(&path)),
        "{:?}",
        loaded.warnings
    );
}

#[test]
fn a_killed_writers_temporary_files_are_swept_and_nothing_else() {
    let dir = dir("sweep-killed");
    let path = dir.join("c.jsonl");
    std::fs::write(&path, HEAD).unwrap();
    // A writer killed (SIGKILL) right after creating its record's temporary file.
    let dead = dir.join(".c.jsonl.pending.Ab12Cd.tmp");
    let status = Command::new("sh")
        .arg("-c")
        .arg(format!("echo half > '{}'; kill -9 $$", dead.display()))
        .status()
        .unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9)
    );
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(600);
    let age = |p: &Path| {
        std::fs::File::options()
            .write(true)
            .open(p)
            .unwrap()
            .set_modified(old)
            .unwrap();
    };
    age(&dead);
    let legacy = dir.join(".snapshot.Zz99Yy.tmp").tap("old");
    age(&legacy);
    let fresh = dir
        .join(".c.jsonl.snapshot.Qq11Ww.tmp")
        .tap("being written");
    let unlike = dir.join(".c.jsonl.pending.keep.tmp").tap("not our pattern");
    age(&unlike);
    let victim = dir.join("victim").tap("keep");
    let link = dir.join(".c.jsonl.pending.Lk00Lk.tmp");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let mut kept = vec![fresh.clone(), unlike.clone(), victim.clone()];
    if is_root() {
        let theirs = dir
            .join(".c.jsonl.pending.Th33Rs.tmp")
            .tap("another user's");
        age(&theirs);
        std::os::unix::fs::chown(&theirs, Some(NOBODY), Some(NOBODY)).unwrap();
        kept.push(theirs);
    }
    let mut context = Context::new();
    FileStore::open(&path)
        .unwrap()
        .commit(&mut context, &[push(1)])
        .unwrap();
    assert!(
        !dead.exists(),
        "the killed writer's temporary file was not swept"
    );
    assert!(
        !legacy.exists(),
        "an old-style temporary file was not swept"
    );
    for path in &kept {
        assert!(path.exists(), "{} was removed", path.display());
    }
    assert!(
        std::fs::symlink_metadata(&link).is_ok(),
        "a symlink was removed"
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
}
