//! R34, R34b: kill `agentctx apply --write` with SIGKILL at random moments,
//! many times, on JSONL and JSON files — one writer at a time, and several
//! writers at once. After every kill the file must load, and every append
//! whose process exited 0 must be in it exactly once. A result with two
//! destinations killed in the middle of its write must land whole or not at
//! all.
//!
//! `AGENTCTX_KILLS` sets the number of kills per format and variant (default
//! 150; the stress run uses thousands).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use agent_core::Kind;
use agent_core::json::Value;
use agent_data::{Context, Loaded};
use agent_store::{FileStore, Store};
use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

/// xorshift64*: a fixed-seed generator, so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

fn kills() -> usize {
    std::env::var("AGENTCTX_KILLS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(150)
}

fn run(extension: &str, initial: &str, seed: u64) {
    let dir =
        std::env::temp_dir().join(format!("agentctx-kill-{}-{extension}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("ctx.{extension}"));
    std::fs::write(&path, initial).unwrap();
    let call = r#"{"_tool":"record","_outputPath":"†state.log","_outputMethod":"push"}"#;
    // Calibrate: kill moments are spread over 0–120% of an uninterrupted
    // run, so they fall in start-up, loading, validation, write and fsync.
    let started = std::time::Instant::now();
    let status = Command::new(env!("CARGO_BIN_EXE_agentctx"))
        .args([
            "apply",
            path.to_str().unwrap(),
            call,
            "--result=-1",
            "--write",
        ])
        .status()
        .unwrap();
    assert!(status.success());
    let mut span = (started.elapsed().as_micros() as u64 * 6 / 5).max(1);
    let mut rng = Rng(seed);
    let mut acknowledged = vec![-1i64];
    let (mut killed, mut completed) = (0, 0);
    for i in 0..kills() {
        // One run is a rough guide on a busy machine: when every kill so
        // far came first (or none did), the moments are spread wider (or
        // narrower), so both outcomes are hit.
        if i % 25 == 24 {
            if completed == 0 {
                span *= 2;
            } else if killed == 0 {
                span = (span / 2).max(1);
            }
        }
        let mut child = Command::new(env!("CARGO_BIN_EXE_agentctx"))
            .args([
                "apply",
                path.to_str().unwrap(),
                call,
                "--result",
                &i.to_string(),
                "--write",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_micros(rng.next() % span));
        let _ = child.kill(); // SIGKILL on Unix
        let status = child.wait().unwrap();
        if status.success() {
            acknowledged.push(i as i64);
            completed += 1;
        } else {
            killed += 1;
        }
        let loaded = Context::load_file(&path)
            .unwrap_or_else(|e| panic!("after kill {i} the file does not load: {e}"));
        let log = loaded
            .context
            .view(&Kind::new("state").unwrap(), None)
            .map(|v| v["log"].clone());
        let log: Vec<i64> = match log {
            Some(Value::Array(items)) => items.iter().map(|v| v.as_i64().unwrap()).collect(),
            _ => Vec::new(),
        };
        for a in &acknowledged {
            assert!(
                log.contains(a),
                "append {a} exited 0 but is missing after kill {i}"
            );
        }
    }
    eprintln!(
        "{extension}: {killed} killed, {completed} completed, all {} acknowledged appends present",
        acknowledged.len()
    );
    assert!(
        killed > 0 && completed > 0,
        "the harness must hit both outcomes ({killed} killed, {completed} completed)"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn r34_jsonl_survives_sigkill_at_random_moments() {
    run(
        "jsonl",
        "{\"type\":\"state\",\"data\":{\"log\":[]}}\n",
        0x9E37_79B9_7F4A_7C15,
    );
}

#[test]
fn r34_json_array_survives_sigkill_at_random_moments() {
    run(
        "json",
        "[{\"type\":\"state\",\"data\":{\"log\":[]}}]",
        0xD1B5_4A32_D192_ED03,
    );
}

// ------------------------------------------------- several writers at once

/// How many `apply --write` processes run at once.
const WRITERS: usize = 4;

const PUSH: &str = r#"{"_tool":"record","_outputPath":"†state.log","_outputMethod":"push"}"#;

fn spawn_push(path: &Path, value: i64) -> Child {
    Command::new(env!("CARGO_BIN_EXE_agentctx"))
        .args([
            "apply",
            path.to_str().unwrap(),
            PUSH,
            &format!("--result={value}"),
            "--write",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Loads `path` as a writer would: through the store, under its shared
/// lock, so a snapshot never catches another writer's append half done.
fn load_locked(path: &Path, moment: &str) -> Loaded {
    FileStore::open(path)
        .and_then(|mut store| store.load())
        .unwrap_or_else(|e| panic!("{moment}: the file does not load: {e}"))
}

/// `state.log` of `path`, as the count of each value.
fn log_counts(path: &Path, moment: &str) -> BTreeMap<i64, usize> {
    let loaded = load_locked(path, moment);
    let mut counts = BTreeMap::new();
    if let Some(Value::Array(items)) = loaded
        .context
        .view(&Kind::new("state").unwrap(), None)
        .map(|v| v["log"].clone())
    {
        for item in items {
            *counts.entry(item.as_i64().unwrap()).or_insert(0) += 1;
        }
    }
    counts
}

/// Every acknowledged value is in the log exactly once, and no value is in
/// it twice.
fn assert_log(path: &Path, acknowledged: &[i64], moment: &str) {
    let counts = log_counts(path, moment);
    for a in acknowledged {
        assert_eq!(
            counts.get(a),
            Some(&1),
            "{moment}: append {a} exited 0 but is in the log {} times",
            counts.get(a).copied().unwrap_or(0)
        );
    }
    for (value, count) in &counts {
        assert_eq!(*count, 1, "{moment}: {value} is in the log {count} times");
    }
}

/// What a finished writer's exit means: acknowledged, killed, or a failure
/// (which fails the test with its `error:` line).
fn settle(value: i64, status: ExitStatus, child: &mut Child, acknowledged: &mut Vec<i64>) -> bool {
    if status.success() {
        acknowledged.push(value);
        return false;
    }
    if status.signal() == Some(9) {
        return true;
    }
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = pipe.read_to_string(&mut stderr);
    }
    panic!("writer {value} failed without being killed ({status}): {stderr}");
}

fn run_concurrent(extension: &str, initial: &str, seed: u64) {
    let dir = std::env::temp_dir().join(format!(
        "agentctx-kill-{}-{extension}-{WRITERS}-writers",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("ctx.{extension}"));
    std::fs::write(&path, initial).unwrap();
    // Calibrate as `run` does, with one uninterrupted writer.
    let started = std::time::Instant::now();
    assert!(spawn_push(&path, -1).wait().unwrap().success());
    let span = (started.elapsed().as_micros() as u64 * 6 / 5).max(1);
    let mut rng = Rng(seed);
    let mut acknowledged = vec![-1i64];
    let mut slots: Vec<Option<(i64, Child)>> = (0..WRITERS).map(|_| None).collect();
    let (mut next, mut killed) = (0i64, 0usize);
    for k in 0..kills() {
        for slot in slots.iter_mut().filter(|s| s.is_none()) {
            *slot = Some((next, spawn_push(&path, next)));
            next += 1;
        }
        std::thread::sleep(Duration::from_micros(rng.next() % span));
        let victim = (rng.next() % WRITERS as u64) as usize;
        if let Some((value, mut child)) = slots[victim].take() {
            let _ = child.kill(); // SIGKILL on Unix
            let status = child.wait().unwrap();
            killed += usize::from(settle(value, status, &mut child, &mut acknowledged));
        }
        for slot in &mut slots {
            if let Some((value, child)) = slot
                && let Some(status) = child.try_wait().unwrap()
            {
                let value = *value;
                settle(value, status, child, &mut acknowledged);
                *slot = None;
            }
        }
        assert_log(&path, &acknowledged, &format!("after kill {k}"));
    }
    for (value, mut child) in slots.into_iter().flatten() {
        let status = child.wait().unwrap();
        settle(value, status, &mut child, &mut acknowledged);
    }
    // One more uninterrupted writer repairs any torn tail a kill left.
    assert!(spawn_push(&path, next).wait().unwrap().success());
    acknowledged.push(next);
    assert_log(&path, &acknowledged, "at the end");
    let loaded = load_locked(&path, "at the end");
    assert!(
        loaded.warnings.is_empty(),
        "warnings after a clean append: {:?}",
        loaded.warnings
    );
    let completed = acknowledged.len() - 2;
    eprintln!(
        "{extension}, {WRITERS} writers: {killed} killed, {completed} completed, \
         all {} acknowledged appends present once",
        acknowledged.len()
    );
    assert!(
        killed > 0 && completed > 0,
        "the harness must hit both outcomes ({killed} killed, {completed} completed)"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn r34b_jsonl_concurrent_writers_survive_sigkill() {
    run_concurrent(
        "jsonl",
        "{\"type\":\"state\",\"data\":{\"log\":[]}}\n",
        0x2545_F491_4F6C_DD1D,
    );
}

#[test]
fn r34b_json_array_concurrent_writers_survive_sigkill() {
    run_concurrent(
        "json",
        "[{\"type\":\"state\",\"data\":{\"log\":[]}}]",
        0x94D0_49BB_1331_11EB,
    );
}

// ------------------------------------ a crash in the middle of one write

/// The ids pushed onto `ledger.debit` and `ledger.credit`.
fn ledger(path: &Path, moment: &str) -> (Vec<i64>, Vec<i64>) {
    let loaded = load_locked(path, moment);
    let view = loaded
        .context
        .view(&Kind::new("ledger").unwrap(), None)
        .cloned()
        .unwrap();
    let ids = |side: &str| -> Vec<i64> {
        view[side]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["id"].as_i64().unwrap())
            .collect()
    };
    (ids("debit"), ids("credit"))
}

/// FNV-1a, 64-bit: the checksum of a batch in its record.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// R34b: a result with two destinations is one append of two lines, and a
/// crash can cut that one `write(2)` anywhere (Linux stops a write between
/// pages when the writer is killed). `prlimit --fsize` stops the write at
/// an exact byte: `agentctx` catches SIGXFSZ, so the write fails with EFBIG
/// and is undone — the file must be exactly as before. A writer killed
/// there would leave its record and the cut batch: that state is laid down
/// as the binary writes it, and for cuts inside the first line, at its end
/// (with and without its newline), inside the second, and just before the
/// last newline, the file must read as the append whole or not at all —
/// right after the crash, and the same after the next writer repairs the
/// tail.
#[test]
fn r34b_crash_mid_write_never_lands_half_a_result() {
    let dir = std::env::temp_dir().join(format!("agentctx-kill-{}-half", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ctx.jsonl");
    let initial = "{\"type\":\"data\",\"kind\":\"ledger\",\"data\":{\"debit\":[],\"credit\":[]}}\n";
    let call =
        r#"{"_tool":"t","_outputPath":"†ledger.debit && †ledger.credit","_outputMethod":"push"}"#;
    let args = |write: bool| {
        let mut args = vec![
            "apply",
            path.to_str().unwrap(),
            call,
            "--result",
            r#"{"id":7}"#,
            "--date",
            "2026-01-01T00:00:00Z",
        ];
        if write {
            args.push("--write");
        }
        args
    };
    std::fs::write(&path, initial).unwrap();
    let dry = Command::new(env!("CARGO_BIN_EXE_agentctx"))
        .args(args(false))
        .output()
        .unwrap();
    assert!(dry.status.success(), "{dry:?}");
    let batch = dry.stdout.clone();
    let lines: Vec<usize> = String::from_utf8(dry.stdout)
        .unwrap()
        .lines()
        .map(|l| l.len() + 1)
        .collect();
    let [first, second] = lines[..] else {
        panic!("two destinations, two lines: {lines:?}")
    };
    let base = initial.len();
    let cuts = [
        ("inside the first line", first / 2),
        ("the first line without its newline", first - 1),
        ("the first line", first),
        ("inside the second line", first + second / 2),
        ("the second line without its newline", first + second - 1),
    ];
    for (what, cut) in cuts {
        std::fs::write(&path, initial).unwrap();
        // Rewritten by hand: the head record of the last round says the
        // log held more, and would be kept as evidence (and warned about)
        // as a record the log contradicts. A fresh start, as for a user.
        let _ = std::fs::remove_file(dir.join(".ctx.jsonl.head"));
        let moment = format!("cut after {what} ({cut} of {} bytes)", first + second);
        let limited = Command::new("prlimit")
            .arg(format!("--fsize={}", base + cut))
            .arg("--")
            .arg(env!("CARGO_BIN_EXE_agentctx"))
            .args(args(true))
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("cannot run prlimit (util-linux): {e}"));
        assert_eq!(limited.status.code(), Some(1), "{moment}: {limited:?}");
        assert!(
            String::from_utf8_lossy(&limited.stderr).contains("ulimit -f"),
            "{moment}: {limited:?}"
        );
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            initial,
            "{moment}: an over-limit write was not undone"
        );
        // What a writer killed at that byte leaves: its record, then the cut.
        let meta = std::fs::metadata(&path).unwrap();
        std::fs::write(
            dir.join(".ctx.jsonl.pending"),
            format!(
                "agentctx-pending 1 dev={} ino={} before={base} end={} fnv1a={}\n",
                std::os::unix::fs::MetadataExt::dev(&meta),
                std::os::unix::fs::MetadataExt::ino(&meta),
                base + batch.len(),
                fnv1a(&batch)
            ),
        )
        .unwrap();
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        std::io::Write::write_all(&mut file, &batch[..cut]).unwrap();
        drop(file);
        let seen = ledger(&path, &format!("{moment}, read right after"));
        assert!(
            seen == (vec![], vec![]) || seen == (vec![7], vec![7]),
            "{moment}: half a result is in the file: {seen:?}"
        );
        // The next writer repairs the tail under the lock.
        let repair = Command::new(env!("CARGO_BIN_EXE_agentctx"))
            .args([
                "apply",
                path.to_str().unwrap(),
                PUSH,
                "--result=1",
                "--write",
            ])
            .output()
            .unwrap();
        assert!(repair.status.success(), "{moment}: {repair:?}");
        assert_eq!(
            ledger(&path, &format!("{moment}, then repaired")),
            seen,
            "{moment}: the repair changed what readers saw"
        );
        let check = Command::new(env!("CARGO_BIN_EXE_agentctx"))
            .args(["check", path.to_str().unwrap()])
            .output()
            .unwrap();
        assert_eq!(
            (
                check.status.code(),
                check.stdout.as_slice(),
                check.stderr.as_slice()
            ),
            (Some(0), &b"ok\n"[..], &b""[..]),
            "{moment}: {check:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// R34: a JSON array file is rewritten through a temporary file; a write
/// of it stopped at an exact byte (`prlimit --fsize`, as above) fails with
/// EFBIG, leaves the file exactly as it was and no temporary file, and the
/// next writer appends to it.
#[test]
fn r34_crash_mid_rewrite_leaves_the_json_array_as_it_was() {
    let dir = std::env::temp_dir().join(format!("agentctx-kill-{}-rewrite", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ctx.json");
    let initial = "[{\"type\":\"state\",\"data\":{\"log\":[]}}]";
    std::fs::write(&path, initial).unwrap();
    for cut in [1, initial.len() / 2, initial.len() + 10] {
        let limited = Command::new("prlimit")
            .arg(format!("--fsize={cut}"))
            .arg("--")
            .arg(env!("CARGO_BIN_EXE_agentctx"))
            .args([
                "apply",
                path.to_str().unwrap(),
                PUSH,
                "--result=5",
                "--write",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap_or_else(|e| panic!("cannot run prlimit (util-linux): {e}"));
        assert_eq!(limited.code(), Some(1), "cut at {cut}");
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["ctx.json"], "cut at {cut}: a temporary file stayed");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            initial,
            "cut at {cut}"
        );
        assert_log(&path, &[], &format!("cut at {cut}"));
    }
    assert!(spawn_push(&path, 6).wait().unwrap().success());
    assert_log(&path, &[6], "after the next writer");
    let _ = std::fs::remove_dir_all(&dir);
}
