//! R34, R34b through the real binary on real files: many `agentctx` processes
//! appending to one context at once, schema limits raced for, torn tails,
//! the advisory lock, a full disk, file modes, symlinks, read-only files,
//! planted temporary names, and `agentctx append` / `agentctx copy` (spec §10).
//!
//! The full-disk tests mount a tmpfs and so need root; run as another user
//! they fail and say so (`sudo -E cargo test -p agent-cli --test concurrency`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use crate::support::{PUSH, Run, Stderr, agentctx, assigners_never_share_an_instance, spawn};

use agent_core::json::Value;
use std::fs::{self, File};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const DATE: &str = "2026-01-01T00:00:00Z";
const ENOSPC: i32 = 28;

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// A fresh directory for one test, removed when dropped.
struct Dir(PathBuf);

impl Dir {
    fn new(test: &str) -> Dir {
        let dir = std::env::temp_dir().join(format!(
            "agentctx-concurrency-{}-{test}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        Dir(dir)
    }

    fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    fn write(&self, name: &str, content: &str) -> PathBuf {
        let path = self.join(name);
        fs::write(&path, content).unwrap();
        path
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Names in `dir`, sorted: spots leftover temporary files.
/// The files in `dir` but head records and checkpoints (`.NAME.head`,
/// `.NAME.chain`, R34e): writers leave them beside a JSONL log, as they do
/// a snapshot; what these tests look for is anything else left behind.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|name| {
            !(name.starts_with('.') && (name.ends_with(".head") || name.ends_with(".chain")))
        })
        .collect();
    names.sort();
    names
}

fn is_root() -> bool {
    fs::metadata("/proc/self").unwrap().uid() == 0
}

/// `agentctx view FILE KIND` as JSON; fails unless it exits 0 with no warning.
fn view(path: &Path, kind: &str) -> Value {
    let run = agentctx(&["view", s(path), kind]);
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (0, ""),
        "view {kind}: {run:?}"
    );
    agent_core::json::from_str(&run.stdout).unwrap()
}

/// The `items` list of the `state` view.
fn items(path: &Path) -> Vec<Value> {
    match &view(path, "state")["items"] {
        Value::Array(items) => items.to_vec(),
        other => panic!("state.items is not a list: {other}"),
    }
}

/// `agentctx check FILE` prints `ok` and nothing on stderr.
fn assert_check_ok(path: &Path) {
    let run = agentctx(&["check", s(path)]);
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (0, "ok\n", ""),
        "check {}",
        path.display()
    );
}

/// A successful `apply --write` of a single push printed exactly its message.
fn assert_pushed(run: &Run, value: &Value) {
    assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{run:?}");
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{run:?}");
    let message: Value = agent_core::json::from_str(lines[0]).unwrap();
    assert_eq!(message["data"]["items"], *value, "{run:?}");
    assert_eq!(message["_outputPath"], "†state.items");
    assert_eq!(message["_outputMethod"], "push");
}

// ---------------------------------------------------------------- 1. writers

/// 8 processes at once, each pushing 100 values one after another.
fn eight_writers(test: &str, name: &str, initial: &str) {
    const WRITERS: i64 = 8;
    const PUSHES: i64 = 100;
    let dir = Dir::new(test);
    let path = dir.write(name, initial);
    let started = Instant::now();
    let runs: Vec<Vec<(i64, Run)>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let path = &path;
                scope.spawn(move || {
                    (0..PUSHES)
                        .map(|i| {
                            let value = w * 1000 + i;
                            let run = agentctx(&[
                                "apply",
                                s(path),
                                PUSH,
                                "--result",
                                &value.to_string(),
                                "--write",
                            ]);
                            (value, run)
                        })
                        .collect()
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    eprintln!("{test}: 800 applies in {:?}", started.elapsed());
    for (value, run) in runs.iter().flatten() {
        assert_pushed(run, &Value::from(*value));
    }
    let items: Vec<i64> = items(&path).iter().map(|v| v.as_i64().unwrap()).collect();
    let mut sorted = items.clone();
    sorted.sort_unstable();
    let mut want: Vec<i64> = runs.iter().flatten().map(|(v, _)| *v).collect();
    want.sort_unstable();
    assert_eq!(want.len(), 800);
    assert_eq!(
        sorted, want,
        "the view must hold every acknowledged value exactly once"
    );
    // One process's acknowledged appends are never reordered (R34b).
    for w in 0..WRITERS {
        let mine: Vec<i64> = items.iter().copied().filter(|v| v / 1000 == w).collect();
        let want: Vec<i64> = (0..PUSHES).map(|i| w * 1000 + i).collect();
        assert_eq!(mine, want, "writer {w}'s pushes are out of order");
    }
    assert_check_ok(&path);
    let mut expected = vec![name.to_owned()];
    if name.ends_with(".jsonl") {
        // Writers crossing the threshold left a snapshot (D37: snapshots), and the
        // view read through it is the full fold's: a copy has none.
        let snapshot = format!(".{name}.snapshot");
        assert!(dir.0.join(&snapshot).is_file(), "no snapshot was written");
        let copy = dir.0.join("copy").join(name);
        fs::create_dir(copy.parent().unwrap()).unwrap();
        fs::copy(&path, &copy).unwrap();
        assert_eq!(view(&copy, "state"), view(&path, "state"));
        fs::remove_dir_all(copy.parent().unwrap()).unwrap();
        expected.insert(0, snapshot);
    }
    assert_eq!(names(&dir.0), expected, "a temporary file was left behind");
}

#[test]
fn r34b_eight_writers_lose_nothing_jsonl() {
    eight_writers(
        "r34b_eight_writers_lose_nothing_jsonl",
        "c.jsonl",
        "{\"type\":\"state\",\"data\":{\"items\":[]}}\n",
    );
}

#[test]
fn r34b_eight_writers_lose_nothing_json() {
    eight_writers(
        "r34b_eight_writers_lose_nothing_json",
        "c.json",
        "[{\"type\":\"state\",\"data\":{\"items\":[]}}]",
    );
}

// ------------------------------------------------------------ 2. maxItems race

/// 2N processes push at once onto a list whose schema allows N items: each
/// push is validated against the list as it is when it lands (R25, R34b).
fn max_items_race(test: &str, name: &str, initial: &str) {
    const N: usize = 10;
    let dir = Dir::new(test);
    let path = dir.write(name, initial);
    let children: Vec<(Value, Child)> = (0..2 * N)
        .map(|i| {
            let value = Value::from(format!("v{i}"));
            let child = spawn(&[
                "apply",
                s(&path),
                PUSH,
                "--result",
                &value.to_string(),
                "--write",
            ]);
            (value, child)
        })
        .collect();
    let runs: Vec<(Value, Run)> = children
        .into_iter()
        .map(|(v, c)| (v, c.wait_with_output().unwrap().into()))
        .collect();
    let (accepted, refused): (Vec<_>, Vec<_>) = runs.iter().partition(|(_, run)| run.code == 0);
    assert_eq!(accepted.len(), N, "{runs:#?}");
    assert_eq!(refused.len(), N, "{runs:#?}");
    for (value, run) in &accepted {
        assert_pushed(run, value);
    }
    let items = items(&path);
    let mut landed: Vec<String> = items.iter().map(ToString::to_string).collect();
    let mut acknowledged: Vec<String> = accepted.iter().map(|(v, _)| v.to_string()).collect();
    landed.sort();
    acknowledged.sort();
    assert_eq!(
        landed, acknowledged,
        "the view must hold exactly the acknowledged values"
    );
    // A push is refused only once the list is full, so each refusal saw the
    // final list: message N+1 of the context, N items plus its own.
    for (value, run) in &refused {
        let mut over = items.clone();
        over.push(value.clone());
        assert_eq!(run.code, 1);
        assert_eq!(run.stdout, "");
        assert_eq!(
            run.stderr,
            format!(
                "error: message {} (¶state) refused: schema violated: at /items: {} has more than {N} items (rule `maxItems` at /properties/items/maxItems)\n",
                N + 1,
                Value::Array(over.into())
            )
        );
    }
    assert_check_ok(&path);
    assert_eq!(names(&dir.0), [name], "a temporary file was left behind");
}

#[test]
fn r34b_max_items_race_admits_exactly_n_jsonl() {
    max_items_race(
        "r34b_max_items_race_admits_exactly_n_jsonl",
        "c.jsonl",
        "{\"type\":\"state\",\"data\":{\"items\":[]},\"schema\":{\"properties\":{\"items\":{\"maxItems\":10}}}}\n",
    );
}

#[test]
fn r34b_max_items_race_admits_exactly_n_json() {
    max_items_race(
        "r34b_max_items_race_admits_exactly_n_json",
        "c.json",
        "[{\"type\":\"state\",\"data\":{\"items\":[]},\"schema\":{\"properties\":{\"items\":{\"maxItems\":10}}}}]",
    );
}

// ----------------------------------------------------- 3. torn tail and lock

#[test]
fn r34_torn_tail_is_repaired_under_concurrent_writers() {
    let dir = Dir::new("r34_torn_tail_is_repaired_under_concurrent_writers");
    let first = "{\"type\":\"state\",\"data\":{\"items\":[]}}\n";
    let path = dir.write("c.jsonl", &format!("{first}{{\"type\":\"state\",\"da"));
    let warning = format!(
        "warning: {}: line 2 (byte {}) is an incomplete last line, probably a torn append; ignored\n",
        path.display(),
        first.len()
    );
    let notes: Vec<String> = (0..2)
        .map(|i| format!("{{\"type\":\"text\",\"text\":\"note {i}\"}}"))
        .collect();
    let mut children: Vec<(Option<i64>, Child)> = Vec::new();
    for i in 0..6 {
        let result = i.to_string();
        let args = ["apply", s(&path), PUSH, "--result", &result, "--write"];
        children.push((Some(i), spawn(&args)));
        if let Some(note) = notes.get(i as usize) {
            children.push((None, spawn(&["append", s(&path), note])));
        }
    }
    let mut warned = 0;
    for (value, child) in children {
        let run: Run = child.wait_with_output().unwrap().into();
        // An append says what it appended; apart from that line, a process
        // that loaded before the repair warns; none may fail.
        let stderr: String = run
            .stderr
            .lines()
            .filter(|line| !line.starts_with("appended 1 message(s); "))
            .map(|line| format!("{line}\n"))
            .collect();
        assert!(stderr.is_empty() || stderr == warning, "{value:?}: {run:?}");
        warned += usize::from(!stderr.is_empty());
        match value {
            Some(v) => assert_pushed(
                &Run {
                    stderr: String::new(),
                    ..run
                },
                &Value::from(v),
            ),
            None => assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{run:?}"),
        }
    }
    assert!(
        warned > 0,
        "the first writer loaded the torn tail and warns"
    );
    let text = fs::read_to_string(&path).unwrap();
    assert!(text.starts_with(first) && text.ends_with('\n'), "{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1 + 6 + 2, "{text}");
    for line in &lines {
        let parsed: Result<Value, _> = agent_core::json::from_str(line);
        assert!(parsed.is_ok(), "torn bytes left in the file: {line:?}");
    }
    for note in &notes {
        assert_eq!(lines.iter().filter(|l| *l == note).count(), 1, "{text}");
    }
    let mut values: Vec<i64> = items(&path).iter().map(|v| v.as_i64().unwrap()).collect();
    values.sort_unstable();
    assert_eq!(values, [0, 1, 2, 3, 4, 5]);
    assert_check_ok(&path);
}

/// A writer waits for the file's lock, then lands.
fn waits_for_the_lock(test: &str, name: &str, initial: &str) {
    let dir = Dir::new(test);
    let path = dir.write(name, initial);
    let holder = File::open(&path).unwrap();
    holder.lock().unwrap();
    let started = Instant::now();
    let mut child = spawn(&["apply", s(&path), PUSH, "--result", "7", "--write"]);
    for _ in 0..6 {
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            child.try_wait().unwrap().is_none(),
            "apply --write finished while another process held the lock"
        );
    }
    // Read without a lock: a locked read would wait for the holder too.
    assert_eq!(fs::read_to_string(&path).unwrap(), initial);
    drop(holder);
    let run: Run = child.wait_with_output().unwrap().into();
    eprintln!(
        "{test}: the writer landed {:?} after it started",
        started.elapsed()
    );
    assert_pushed(&run, &Value::from(7));
    assert_eq!(items(&path), [Value::from(7)]);
    assert_check_ok(&path);
}

#[test]
fn r34b_writer_blocks_on_the_lock_jsonl() {
    waits_for_the_lock(
        "r34b_writer_blocks_on_the_lock_jsonl",
        "c.jsonl",
        "{\"type\":\"state\",\"data\":{\"items\":[]}}\n",
    );
}

#[test]
fn r34b_writer_blocks_on_the_lock_json() {
    waits_for_the_lock(
        "r34b_writer_blocks_on_the_lock_json",
        "c.json",
        "[{\"type\":\"state\",\"data\":{\"items\":[]}}]",
    );
}

// --------------------------------------------------------------- 4. disk full

/// A tmpfs mounted on a fresh directory; unmounted and removed when dropped.
struct TinyFs(PathBuf);

impl TinyFs {
    fn mount(test: &str) -> TinyFs {
        assert!(
            is_root(),
            "{test} needs root to mount a tmpfs (`mount -t tmpfs -o size=64k tmpfs DIR`) \
             and fill it: run it as root, e.g. \
             `sudo -E env PATH=$PATH cargo test -p agent-cli --test concurrency`"
        );
        let dir = std::env::temp_dir().join(format!(
            "agentctx-concurrency-{}-{test}",
            std::process::id()
        ));
        let _ = Command::new("umount")
            .arg(&dir)
            .stderr(Stdio::null())
            .status();
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let tiny = TinyFs(dir);
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
            .arg(&tiny.0)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "mount -t tmpfs failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        tiny
    }

    fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TinyFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
        let _ = fs::remove_dir(&self.0);
    }
}

/// Writes `chunk`s to `file` until the disk is full; returns the bytes written.
fn write_until_full(file: &mut File, chunk: usize) -> u64 {
    let buf = vec![b'x'; chunk];
    let mut written = 0u64;
    loop {
        match file.write(&buf) {
            Ok(0) => panic!("write returned 0"),
            Ok(n) => written += n as u64,
            Err(e) if e.raw_os_error() == Some(ENOSPC) => return written,
            Err(e) => panic!("unexpected error filling the disk: {e}"),
        }
    }
}

/// Fills the filesystem of `dir` with the file `filler`; returns its length.
fn fill(dir: &TinyFs) -> u64 {
    let mut filler = File::create(dir.join("filler")).unwrap();
    write_until_full(&mut filler, 16 * 1024)
}

/// How many bytes a new file could take now (tmpfs: whole free pages).
fn free_bytes(dir: &TinyFs) -> u64 {
    let scratch = dir.join("scratch");
    let free = write_until_full(&mut File::create(&scratch).unwrap(), 16 * 1024);
    fs::remove_file(&scratch).unwrap();
    free
}

/// How many bytes an append to `path` could take now: what its last page
/// still holds plus the free pages. Measured by appending, then truncated
/// back; the file is checked to be as it was.
fn append_room(path: &Path) -> u64 {
    let before = fs::read(path).unwrap();
    let mut file = fs::OpenOptions::new().append(true).open(path).unwrap();
    let room = write_until_full(&mut file, 1024);
    file.set_len(before.len() as u64).unwrap();
    drop(file);
    assert_eq!(fs::read(path).unwrap(), before);
    room
}

/// The lines `apply` would append, from a dry run (no `--write`).
fn dry_run(path: &Path, call: &str, result: &str) -> Vec<String> {
    let run = agentctx(&["apply", s(path), call, "--result", result, "--date", DATE]);
    assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{run:?}");
    run.stdout.lines().map(|l| format!("{l}\n")).collect()
}

fn enospc_error(action: &str, path: &Path) -> String {
    format!(
        "error: cannot {action} {}: No space left on device (os error 28)\n",
        path.display()
    )
}

/// A result with two destinations on a full disk: refused whole, with the
/// file byte for byte as it was, while the disk gets a page more room at a
/// time until the append fits — through every point where the space can
/// run out (a writer may need room for more than the lines), including one
/// where the first line would fit after the file's last byte but both do not.
#[test]
fn r34b_full_disk_two_destinations_leave_jsonl_as_it_was() {
    let test = "r34b_full_disk_two_destinations_leave_jsonl_as_it_was";
    let tiny = TinyFs::mount(test);
    let path = tiny.join("c.jsonl");
    let original = "{\"type\":\"state\",\"data\":{\"n\":0}}\n";
    fs::write(&path, original).unwrap();
    let filled = fill(&tiny);
    assert_eq!(free_bytes(&tiny), 0, "the disk is not full");
    // All that is left is the rest of c.jsonl's last page.
    let full = append_room(&path);
    assert!(full > 2000, "only {full} bytes fit after c.jsonl");
    let call = r#"{"_tool":"t","_outputPath":"†ledger.debit && †ledger.credit"}"#;
    let result = Value::from("x".repeat(usize::try_from(full).unwrap() * 3 / 4)).to_string();
    let lines = dry_run(&path, call, &result);
    assert_eq!(lines.len(), 2);
    let (first, both) = (
        lines[0].len() as u64,
        (lines[0].len() + lines[1].len()) as u64,
    );
    assert!(first < full && full < both, "{first} < {full} < {both}");
    let write = [
        "apply",
        s(&path),
        call,
        "--result",
        &result,
        "--date",
        DATE,
        "--write",
    ];
    let filler = fs::OpenOptions::new()
        .write(true)
        .open(tiny.join("filler"))
        .unwrap();
    let mut refused = Vec::new();
    for pages in 0..16u64 {
        filler.set_len(filled - pages * 4096).unwrap();
        let room = append_room(&path);
        let run = agentctx(&write);
        if run.code == 0 {
            break;
        }
        assert_eq!(run.code, 1, "{run:?}");
        assert_eq!(run.stdout, "");
        assert_eq!(run.stderr, enospc_error("append to", &path));
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            original,
            "refused with {room} bytes of room"
        );
        refused.push(room);
    }
    assert!(
        refused.iter().any(|&room| first <= room && room < both),
        "no refusal where the first line fitted: rooms {refused:?}, lines {first} + {}",
        both - first
    );
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        format!("{original}{}{}", lines[0], lines[1]),
        "with room, the append lands whole"
    );
    assert_check_ok(&path);
}

#[test]
fn r34b_full_disk_less_than_a_line_leaves_jsonl_as_it_was() {
    let test = "r34b_full_disk_less_than_a_line_leaves_jsonl_as_it_was";
    let tiny = TinyFs::mount(test);
    let path = tiny.join("c.jsonl");
    let original = "{\"type\":\"state\",\"data\":{\"n\":0}}\n{\"type\":\"text\",\"text\":\"hi\"}\n";
    fs::write(&path, original).unwrap();
    fill(&tiny);
    assert_eq!(free_bytes(&tiny), 0, "the disk is not full");
    let room = append_room(&path);
    assert!(
        room > 0,
        "nothing fits after c.jsonl: the partial write is not tested"
    );
    let call = r#"{"_tool":"t","_outputPath":"†state.note"}"#;
    let result = Value::from("y".repeat(usize::try_from(room).unwrap() + 1)).to_string();
    let lines = dry_run(&path, call, &result);
    assert_eq!(lines.len(), 1);
    assert!(room < lines[0].len() as u64);
    let write = [
        "apply",
        s(&path),
        call,
        "--result",
        &result,
        "--date",
        DATE,
        "--write",
    ];
    let run = agentctx(&write);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.stdout, "");
    assert_eq!(run.stderr, enospc_error("append to", &path));
    assert_eq!(fs::read_to_string(&path).unwrap(), original);
    assert_check_ok(&path);
    fs::remove_file(tiny.join("filler")).unwrap();
    let run = agentctx(&write);
    assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{run:?}");
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        format!("{original}{}", lines[0])
    );
}

#[test]
fn r34b_full_disk_leaves_json_array_as_it_was_and_no_temp_file() {
    let test = "r34b_full_disk_leaves_json_array_as_it_was_and_no_temp_file";
    let tiny = TinyFs::mount(test);
    let path = tiny.join("c.json");
    // About 10 000 bytes: three pages; the rewrite needs three new ones.
    let original = format!(
        "[{{\"type\":\"state\",\"data\":{{\"n\":0}}}},{{\"type\":\"text\",\"text\":\"{}\"}}]",
        "z".repeat(10_000)
    );
    fs::write(&path, &original).unwrap();
    let filled = fill(&tiny);
    // Give two pages back: part of the new file fits, not all of it.
    let filler = fs::OpenOptions::new()
        .write(true)
        .open(tiny.join("filler"))
        .unwrap();
    filler.set_len(filled - 8192).unwrap();
    drop(filler);
    let free = free_bytes(&tiny);
    assert!(
        free > 0 && free < original.len() as u64,
        "{free} bytes free for a {}-byte file",
        original.len()
    );
    let write = [
        "apply",
        s(&path),
        r#"{"_tool":"t","_outputPath":"†state.n"}"#,
        "--result",
        "1",
        "--write",
    ];
    let run = agentctx(&write);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.stdout, "");
    assert_eq!(run.stderr, enospc_error("write", &path));
    assert_eq!(fs::read_to_string(&path).unwrap(), original);
    assert_eq!(
        names(&tiny.0),
        ["c.json", "filler"],
        "a temporary file was left behind"
    );
    assert_eq!(
        free_bytes(&tiny),
        free,
        "the temporary file's space was kept"
    );
    fs::remove_file(tiny.join("filler")).unwrap();
    let run = agentctx(&write);
    assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{run:?}");
    assert_eq!(view(&path, "state"), agent_core::json!({"n": 1}));
    assert_eq!(names(&tiny.0), ["c.json"]);
}

// ------------------------------------------------- 5–8. files as they are

#[test]
fn r34_write_keeps_the_file_mode() {
    let dir = Dir::new("r34_write_keeps_the_file_mode");
    let cases = [
        (
            "c.json",
            "[{\"type\":\"state\",\"data\":{\"items\":[]}}]",
            0o600,
        ),
        (
            "d.json",
            "[{\"type\":\"state\",\"data\":{\"items\":[]}}]",
            0o640,
        ),
        (
            "c.jsonl",
            "{\"type\":\"state\",\"data\":{\"items\":[]}}\n",
            0o640,
        ),
    ];
    for (name, initial, mode) in cases {
        let path = dir.write(name, initial);
        fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
        let run = agentctx(&["apply", s(&path), PUSH, "--result", "1", "--write"]);
        assert_pushed(&run, &Value::from(1));
        assert_eq!(items(&path), [Value::from(1)], "{name}");
        let got = fs::metadata(&path).unwrap().permissions().mode() & 0o7777;
        assert_eq!(got, mode, "{name}: mode {got:o}, was {mode:o}");
        if name.ends_with(".jsonl") {
            let record = path.with_file_name(format!(".{name}.head"));
            let bits = fs::metadata(&record).unwrap().permissions().mode() & 0o7777;
            assert_eq!(
                bits,
                mode & 0o666,
                "{name}: its head record is no wider than it"
            );
        }
    }
    assert_eq!(names(&dir.0), ["c.json", "c.jsonl", "d.json"]);
}

fn through_a_symlink(test: &str, real: &str, link: &str, initial: &str) {
    let dir = Dir::new(test);
    let real_path = dir.write(real, initial);
    let link_path = dir.join(link);
    symlink(real, &link_path).unwrap();
    for v in [1, 2] {
        let run = agentctx(&[
            "apply",
            s(&link_path),
            PUSH,
            "--result",
            &v.to_string(),
            "--write",
        ]);
        assert_pushed(&run, &Value::from(v));
    }
    let meta = fs::symlink_metadata(&link_path).unwrap();
    assert!(
        meta.file_type().is_symlink(),
        "{link} is no longer a symlink"
    );
    assert_eq!(fs::read_link(&link_path).unwrap(), Path::new(real));
    assert_eq!(items(&real_path), [Value::from(1), Value::from(2)]);
    assert_check_ok(&real_path);
    let mut want = [real, link];
    want.sort_unstable();
    assert_eq!(names(&dir.0), want);
}

#[test]
fn r34_write_through_a_symlink_keeps_the_link_json() {
    through_a_symlink(
        "r34_write_through_a_symlink_keeps_the_link_json",
        "real.json",
        "link.json",
        "[{\"type\":\"state\",\"data\":{\"items\":[]}}]",
    );
}

#[test]
fn r34_write_through_a_symlink_keeps_the_link_jsonl() {
    through_a_symlink(
        "r34_write_through_a_symlink_keeps_the_link_jsonl",
        "real.jsonl",
        "link.jsonl",
        "{\"type\":\"state\",\"data\":{\"items\":[]}}\n",
    );
}

#[test]
fn r34_read_only_file_is_refused_and_unchanged() {
    let dir = Dir::new("r34_read_only_file_is_refused_and_unchanged");
    fs::set_permissions(&dir.0, fs::Permissions::from_mode(0o755)).unwrap();
    let binary = env!("CARGO_BIN_EXE_agentctx");
    for (name, initial) in [
        ("c.json", "[{\"type\":\"state\",\"data\":{\"items\":[]}}]"),
        ("c.jsonl", "{\"type\":\"state\",\"data\":{\"items\":[]}}\n"),
    ] {
        let path = dir.write(name, initial);
        fs::set_permissions(&path, fs::Permissions::from_mode(0o444)).unwrap();
        let args = ["apply", s(&path), PUSH, "--result", "1", "--write"];
        // Root may write any file, so as root run as nobody.
        let mut command = if is_root() {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
                .arg(binary);
            c
        } else {
            Command::new(binary)
        };
        let run: Run = command
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("cannot run (setpriv needed as root): {e}"))
            .into();
        assert_eq!(run.code, 1, "{run:?}");
        assert_eq!(run.stdout, "");
        assert_eq!(
            run.stderr,
            format!(
                "error: cannot open for writing {}: Permission denied (os error 13)\n",
                path.display()
            )
        );
        assert_eq!(fs::read_to_string(&path).unwrap(), initial);
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o7777,
            0o444
        );
    }
    assert_eq!(names(&dir.0), ["c.json", "c.jsonl"]);
}

/// Nothing a writer creates beside the context — a temporary file, a lock
/// file, a journal — may be opened through a name someone planted there: a
/// symlink at any such name must not be followed. Single and multi-message
/// appends, to a JSON array and to JSONL.
#[test]
fn r34_planted_temp_names_are_never_written_through() {
    let dir = Dir::new("r34_planted_temp_names_are_never_written_through");
    let victim = dir.write("victim", "keep");
    let mut planted = Vec::new();
    for name in ["c.json", "c.jsonl"] {
        let initial = if name.ends_with(".json") {
            "[{\"type\":\"state\",\"data\":{\"items\":[]}}]"
        } else {
            "{\"type\":\"state\",\"data\":{\"items\":[]}}\n"
        };
        dir.write(name, initial);
        for tail in [
            "tmp".to_owned(),
            "0.tmp".into(),
            "000000.tmp".into(),
            "aaaaaa.tmp".into(),
            "XXXXXX.tmp".into(),
            format!("{}.tmp", std::process::id() + 1),
            "new".into(),
            "swp".into(),
            "lock".into(),
            "pending".into(),
            "journal".into(),
            "wal".into(),
            "bak".into(),
        ] {
            planted.push(format!(".{name}.{tail}"));
            planted.push(format!("{name}.{tail}"));
        }
        planted.push(format!("{name}~"));
    }
    for name in &planted {
        symlink(&victim, dir.join(name)).unwrap();
    }
    let two = r#"{"_tool":"t","_outputPath":"†state.a && †state.b"}"#;
    for name in ["c.json", "c.jsonl"] {
        let path = dir.join(name);
        for v in 0..3 {
            let mut run = agentctx(&[
                "apply",
                s(&path),
                PUSH,
                "--result",
                &v.to_string(),
                "--write",
            ]);
            if name == "c.jsonl" && v == 0 {
                // A symlink named like the record of a batch in flight is
                // not one: it is ignored, and that is said.
                assert!(
                    run.stderr.ends_with(".c.jsonl.pending: a symbolic link\n"),
                    "{run:?}"
                );
                run.stderr.clear();
            }
            assert_pushed(&run, &Value::from(v));
            let mut run = agentctx(&["apply", s(&path), two, "--result", "9", "--write"]);
            if name == "c.jsonl" && v == 0 {
                // Still there until this batch's own record replaces it.
                assert!(
                    run.stderr.ends_with(".c.jsonl.pending: a symbolic link\n"),
                    "{run:?}"
                );
                run.stderr.clear();
            }
            assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{name}: {run:?}");
            let run = agentctx(&[
                "append",
                s(&path),
                r#"[{"type":"text","text":"a"},{"type":"text","text":"b"}]"#,
            ]);
            assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{name}");
            assert!(
                run.stderr.starts_with("appended 2 message(s); "),
                "{name}: {run:?}"
            );
        }
        assert_eq!(
            view(&path, "state"),
            agent_core::json!({"items": [0, 1, 2], "a": 9, "b": 9}),
            "{name}"
        );
    }
    assert_eq!(
        fs::read_to_string(&victim).unwrap(),
        "keep",
        "a writer wrote through a planted symlink"
    );
    // `.NAME.pending` is the store's own record of a JSONL batch in flight:
    // a symlink planted there is replaced (by rename), then removed — never
    // written through. Every other planted name is left alone.
    let own = |name: &str| name == ".c.jsonl.pending";
    for name in planted.iter().filter(|n| !own(n)) {
        assert_eq!(fs::read_link(dir.join(name)).unwrap(), victim, "{name}");
    }
    let kept = planted.iter().filter(|n| !own(n)).count();
    assert_eq!(
        names(&dir.0).len(),
        kept + 3,
        "a temporary file was left behind: {:?}",
        names(&dir.0)
    );
}

// ------------------------------------------------------- 9. append and copy

/// Source messages in normalised form (R1), so `copy` must keep them as
/// they are: key order, every field, and numbers of any size (R3).
const MESSAGES: [&str; 7] = [
    r#"{"type":"text","text":"hello","role":"assistant"}"#,
    r#"{"type":"data","kind":"state","data":{"z":1,"a":123456789012345678901234567890,"m":{"y":1.50,"b":-0.0,"e":-1e-7}},"schema":{"type":"object"},"description":"d"}"#,
    r#"{"type":"data","kind":"ledger","data":{"debit":[1,2]},"_outputPath":"†ledger.debit","_outputMethod":"set","_call":{"_tool":"t","z":1,"a":2},"_date":"2026-01-01T00:00:00Z","_extra":{"k":"v"}}"#,
    r#"{"type":"plan","steps":[{"b":1,"a":2}],"n":123456789012345678901234567890}"#,
    concat!(
        r#"{"type":"text","role":"user","text":"hi "#,
        "\u{2028}",
        r#" \"quoted\""}"#
    ),
    r#"{"type":"data","kind":"input","data":{"q":"?"},"_instance":"①"}"#,
    r#"{"type":"data","kind":"state","data":{"a":-123456789012345678901234567890},"_outputPath":"†state.a","_outputMethod":"set"}"#,
];

fn jsonl(messages: &[&str]) -> String {
    messages.iter().map(|m| format!("{m}\n")).collect()
}

/// The elements of a JSON array file, each as compact JSON (key order and
/// number text kept: serde_json here preserves order and precision).
fn elements(path: &Path) -> Vec<String> {
    let value: Value = agent_core::json::from_str(&fs::read_to_string(path).unwrap()).unwrap();
    match value {
        Value::Array(items) => items.iter().map(ToString::to_string).collect(),
        other => panic!("{} is not an array: {other}", path.display()),
    }
}

#[test]
fn r34b_append_objects_arrays_and_files() {
    let dir = Dir::new("r34b_append_objects_arrays_and_files");
    let jsonl_in = dir.write("in.jsonl", &jsonl(&MESSAGES[3..5]));
    let json_in = dir.write("in.json", &format!("[{}]", MESSAGES[5..7].join(",\n  ")));
    for target in ["c.jsonl", "c.json"] {
        let path = dir.join(target);
        let steps = [
            MESSAGES[0].to_owned(),
            format!("[{},{}]", MESSAGES[1], MESSAGES[2]),
            format!("@{}", s(&jsonl_in)),
            format!("@{}", s(&json_in)),
        ];
        for (i, step) in steps.iter().enumerate() {
            // `_extra` is the application's own key (D63: typos refused): kept as given (R3).
            let run = agentctx(&["--allow-key", "_extra", "append", s(&path), step]);
            assert_eq!(
                (run.code, run.stdout.as_str()),
                (0, ""),
                "{target} step {i}"
            );
            // stdout stays empty; stderr says what landed (D65: machine-readable output).
            assert!(
                run.stderr.starts_with("appended ") && run.stderr.contains(" now has "),
                "{target} step {i}: {run:?}"
            );
        }
        if target.ends_with(".jsonl") {
            assert_eq!(fs::read_to_string(&path).unwrap(), jsonl(&MESSAGES));
        } else {
            assert_eq!(elements(&path), MESSAGES);
        }
        assert_check_ok(&path);
    }
    // Non-normalised forms are stored normalised (R1).
    let path = dir.join("n.jsonl");
    let run = agentctx(&[
        "append",
        s(&path),
        r#"[{"role":"user","content":"x"},{"type":"state","b":1,"a":2}]"#,
    ]);
    assert_eq!(
        (run.code, run.stderr_without_count().as_str()),
        (0, ""),
        "{run:?}"
    );
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        "{\"type\":\"text\",\"role\":\"user\",\"text\":\"x\"}\n{\"type\":\"data\",\"kind\":\"state\",\"data\":{\"b\":1,\"a\":2}}\n"
    );
}

#[test]
fn r34b_append_refuses_invalid_messages_whole() {
    let dir = Dir::new("r34b_append_refuses_invalid_messages_whole");
    let initial = "{\"type\":\"state\",\"data\":{\"n\":1}}\n";
    let path = dir.write("c.jsonl", initial);
    let cases = [
        (
            r#"[{"type":"text","text":"ok"},{"type":"text"}]"#.to_owned(),
            "error: MESSAGES: message 1: a text message needs a string `text`\n".to_owned(),
        ),
        (
            r#"[{"type":"text","text":"ok"},{"type":"state","data":{"n":2},"_outputPath":"†state.n","_outputMethod":"push"}]"#.to_owned(),
            "error: message 2 (¶state) refused: type error at .n: cannot push onto a number\n".to_owned(),
        ),
        (
            "{not json".to_owned(),
            "error: MESSAGES is not valid JSON: key must be a string at line 1 column 2\n".to_owned(),
        ),
        (
            "@/nonexistent/agentctx-messages.jsonl".to_owned(),
            "error: cannot read MESSAGES from /nonexistent/agentctx-messages.jsonl: No such file or directory (os error 2)\n".to_owned(),
        ),
    ];
    for (messages, error) in &cases {
        let run = agentctx(&["append", s(&path), messages]);
        assert_eq!(
            (run.code, run.stdout.as_str(), run.stderr.as_str()),
            (1, "", error.as_str()),
            "{messages}"
        );
        assert_eq!(fs::read_to_string(&path).unwrap(), initial, "{messages}");
    }
    // A refused append to a missing file does not create it.
    let missing = dir.join("missing.jsonl");
    let run = agentctx(&["append", s(&missing), &cases[0].0]);
    assert_eq!((run.code, run.stderr.as_str()), (1, cases[0].1.as_str()));
    assert!(!missing.exists());
    assert_eq!(names(&dir.0), ["c.jsonl"]);
}

#[test]
fn r3_copy_jsonl_to_json_to_jsonl_keeps_every_message() {
    let dir = Dir::new("r3_copy_jsonl_to_json_to_jsonl_keeps_every_message");
    let source = dir.write("source.jsonl", &jsonl(&MESSAGES));
    let json = dir.join("copy.json");
    let back = dir.join("back.jsonl");
    let empty = dir.write("empty.json", "");
    for (from, to) in [(&source, &json), (&json, &back), (&source, &empty)] {
        let run = agentctx(&["copy", s(from), s(to)]);
        assert_eq!(
            (run.code, run.stdout.as_str(), run.stderr.as_str()),
            (0, "", ""),
            "copy {} {}",
            from.display(),
            to.display()
        );
    }
    assert_eq!(elements(&json), MESSAGES);
    assert_eq!(elements(&empty), MESSAGES);
    assert_eq!(
        fs::read_to_string(&back).unwrap(),
        fs::read_to_string(&source).unwrap()
    );
    assert_eq!(
        view(&back, "state")["a"].to_string(),
        "-123456789012345678901234567890"
    );
    assert_check_ok(&back);
}

#[test]
fn r34b_copy_refuses_a_non_empty_target() {
    let dir = Dir::new("r34b_copy_refuses_a_non_empty_target");
    let source = dir.write("source.jsonl", &jsonl(&MESSAGES));
    for (name, content) in [
        (
            "t.jsonl",
            "{\"type\":\"text\",\"text\":\"a\"}\n{\"type\":\"text\",\"text\":\"b\"}\n",
        ),
        (
            "t.json",
            "[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\"}]",
        ),
    ] {
        let target = dir.write(name, content);
        let run = agentctx(&["copy", s(&source), s(&target)]);
        assert_eq!(run.code, 1, "{run:?}");
        assert_eq!(run.stdout, "");
        assert_eq!(
            run.stderr,
            format!(
                "error: {} is not empty (2 messages): copy only into a missing or empty context\n",
                target.display()
            )
        );
        assert_eq!(fs::read_to_string(&target).unwrap(), content);
    }
    let missing = dir.join("missing.jsonl");
    let run = agentctx(&["copy", s(&missing), s(&dir.join("out.json"))]);
    assert_eq!(
        (run.code, run.stderr),
        (
            1,
            format!(
                "error: cannot read {}: No such file or directory (os error 2)\n",
                missing.display()
            )
        )
    );
    assert_eq!(names(&dir.0), ["source.jsonl", "t.json", "t.jsonl"]);
}

#[test]
fn r6_concurrent_assign_write_gives_every_input_its_own_instance() {
    let dir = Dir::new("assign");
    let path = dir.join("assign.jsonl");
    assigners_never_share_an_instance(s(&path));
    assert_eq!(
        fs::read_to_string(&path).unwrap().lines().count(),
        30,
        "one line per input, nothing lost"
    );
}
