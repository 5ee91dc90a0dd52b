//! Hostile files around a context, through the real binary: a planted
//! record of a batch in flight (by us, or by another user in a shared
//! sticky directory), a snapshot left readable after `chmod 600`, a BOM,
//! a last line without its newline, a FIFO or a device as CONTEXT, a
//! file-size limit (`ulimit -f`), and a killed writer's temporary file.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use crate::support::agentctx;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const NOBODY: u32 = 65534;

const HEAD: &str = "{\"type\":\"state\",\"data\":{\"log\":[]}}\n";
const PUSH1: &str = "{\"type\":\"state\",\"data\":{\"log\":1},\"_outputPath\":\"†state.log\",\"_outputMethod\":\"push\"}\n";
const PUSH2: &str = "{\"type\":\"state\",\"data\":{\"log\":2},\"_outputPath\":\"†state.log\",\"_outputMethod\":\"push\"}\n";

fn dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "agentctx-hostile-files-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn is_root() -> bool {
    std::fs::metadata("/proc/self").unwrap().uid() == 0
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

fn pending(path: &Path) -> PathBuf {
    path.with_file_name(format!(
        ".{}.pending",
        path.file_name().unwrap().to_str().unwrap()
    ))
}

fn view_log(path: &Path) -> crate::support::Run {
    agentctx(&["view", s(path), "state"])
}

/// Runs `agentctx ARGS`, failing the test if it has not ended after ten
/// seconds (it is killed then): a hang must fail, not stall the suite.
fn bounded(args: &[&str]) -> crate::support::Run {
    let mut child = crate::support::spawn(args);
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(10) {
            child.kill().unwrap();
            let _ = child.wait();
            panic!("agentctx {args:?} hung");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap().into()
}

#[test]
fn view_with_a_planted_record_leaves_the_context_whole() {
    let path = dir("planted").join("c.jsonl");
    let text = format!("{HEAD}{PUSH1}{PUSH2}");
    std::fs::write(&path, &text).unwrap();
    std::fs::write(pending(&path), "0 999999999 1\n").unwrap();
    let run = view_log(&path);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout.trim(), r#"{"log":[1,2]}"#);
    assert!(
        run.stderr.contains("warning:") && run.stderr.contains(".c.jsonl.pending"),
        "{}",
        run.stderr
    );
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        text,
        "view cut the context"
    );
}

#[test]
fn a_record_planted_by_another_user_cuts_nothing() {
    if !is_root() {
        println!("skipped: planting a file as another user needs root");
        return;
    }
    let dir = dir("nobody");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let path = dir.join("c.jsonl");
    let text = format!("{HEAD}{PUSH1}{PUSH2}");
    std::fs::write(&path, &text).unwrap();
    let meta = std::fs::metadata(&path).unwrap();
    // Bound to the file and claiming the two pushes are a batch cut short.
    let record = format!(
        "agentctx-pending 1 dev={} ino={} before={} end=999999 fnv1a=1",
        meta.dev(),
        meta.ino(),
        HEAD.len()
    );
    let status = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "printf '%s\\n' '{record}' > '{}'",
            pending(&path).display()
        ))
        .uid(NOBODY)
        .gid(NOBODY)
        .status()
        .unwrap();
    assert!(status.success());
    let run = view_log(&path);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout.trim(), r#"{"log":[1,2]}"#);
    assert!(run.stderr.contains("owned by uid 65534"), "{}", run.stderr);
    let run = agentctx(&[
        "append",
        s(&path),
        r#"[{"type":"note","data":1},{"type":"note","data":2}]"#,
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        std::fs::read_to_string(&path).unwrap().starts_with(&text),
        "an append cut the context"
    );
}

#[test]
fn a_snapshot_becomes_private_with_its_log() {
    let path = dir("chmod").join("c.jsonl");
    std::fs::write(&path, HEAD).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let notes: Vec<String> = (0..70)
        .map(|n| format!(r#"{{"type":"note","data":{n}}}"#))
        .collect();
    let run = agentctx(&["append", s(&path), &format!("[{}]", notes.join(","))]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let snapshot = path.with_file_name(".c.jsonl.snapshot");
    assert_eq!(std::fs::metadata(&snapshot).unwrap().mode() & 0o7777, 0o644);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let run = view_log(&path);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        std::fs::metadata(&snapshot).unwrap().mode() & 0o7777,
        0o600,
        "the snapshot stayed readable by others"
    );
}

#[test]
fn a_bom_file_is_refused_and_kept() {
    let path = dir("bom").join("c.jsonl");
    let text = format!("\u{feff}{}", HEAD.trim_end());
    std::fs::write(&path, &text).unwrap();
    let run = agentctx(&["append", s(&path), r#"{"type":"note","data":1}"#]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("byte order mark") && run.stderr.contains(s(&path)),
        "{}",
        run.stderr
    );
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        text,
        "the file was changed"
    );
}

#[test]
fn a_last_line_without_newline_is_kept_by_append() {
    let path = dir("no-newline").join("c.jsonl");
    std::fs::write(&path, HEAD.trim_end()).unwrap();
    let run = agentctx(&["append", s(&path), r#"{"type":"note","data":1}"#]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with(HEAD), "{text}");
    assert_eq!(text.lines().count(), 2);
}

#[test]
fn a_fifo_as_context_is_refused_without_hanging() {
    let dir = dir("fifo");
    for name in ["c.jsonl", "c.json", "c"] {
        let fifo = dir.join(name);
        assert!(
            Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        for args in [
            vec!["view", s(&fifo), "state"],
            vec!["append", s(&fifo), r#"{"type":"note","data":1}"#],
        ] {
            let run = bounded(&args);
            assert_eq!(run.code, 1, "{args:?}: {}", run.stderr);
            assert!(
                run.stderr.contains("is a FIFO, not a regular file"),
                "{}",
                run.stderr
            );
        }
    }
}

#[test]
fn dev_zero_is_refused_and_stdin_still_works() {
    for args in [
        vec!["view", "/dev/zero", "state"],
        vec!["check", "/dev/zero"],
    ] {
        let run = bounded(&args);
        assert_eq!(run.code, 1, "{}", run.stderr);
        assert!(
            run.stderr.contains("is a character device"),
            "{}",
            run.stderr
        );
    }
    let mut child = crate::support::command(&["view", "-", "state"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(
        child.stdin.as_mut().unwrap(),
        format!("{HEAD}{PUSH1}").as_bytes(),
    )
    .unwrap();
    drop(child.stdin.take());
    let run: crate::support::Run = child.wait_with_output().unwrap().into();
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout.trim(), r#"{"log":[1]}"#);
}

#[test]
fn a_file_size_limit_fails_the_append_and_leaves_the_file_whole() {
    let dir = dir("ulimit");
    let pad = "x".repeat(1500);
    for (name, messages) in [
        ("one.jsonl", format!(r#"{{"type":"note","data":"{pad}"}}"#)),
        (
            "batch.jsonl",
            format!(r#"[{{"type":"note","data":"{pad}"}},{{"type":"note","data":2}}]"#),
        ),
    ] {
        let path = dir.join(name);
        let text = format!("{HEAD}{}", PUSH1.repeat(9));
        assert!(text.len() > 800 && text.len() < 1000);
        std::fs::write(&path, &text).unwrap();
        // `ulimit -f 2`: 1024 bytes in dash (2048 in bash): either way the
        // write starts below the limit and crosses it, so part of it lands.
        let out = Command::new("sh")
            .arg("-c")
            .arg("ulimit -f 2; exec \"$0\" append \"$1\" \"$2\"")
            .arg(env!("CARGO_BIN_EXE_agentctx"))
            .arg(&path)
            .arg(&messages)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{name}: {:?} {stderr}",
            out.status
        );
        assert!(stderr.contains("ulimit -f"), "{name}: {stderr}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            text,
            "{name}: a torn write stayed"
        );
        assert!(!pending(&path).exists(), "{name}: the record stayed");
    }
}

#[test]
fn a_killed_writers_rewrite_temp_is_swept() {
    let dir = dir("sweep");
    let path = dir.join("c.json");
    std::fs::write(&path, "[{\"type\":\"state\",\"data\":{\"log\":[]}}]").unwrap();
    let temp = dir.join(".c.json.Ab12Cd.tmp");
    let status = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "printf '[half a rewrite' > '{}'; kill -9 $$",
            temp.display()
        ))
        .status()
        .unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9)
    );
    let victim = dir.join("victim");
    std::fs::write(&victim, "keep").unwrap();
    let link = dir.join(".c.json.Lk00Lk.tmp");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let run = agentctx(&["append", s(&path), r#"{"type":"note","data":1}"#]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!temp.exists(), "the killed writer's temporary file stayed");
    assert!(
        std::fs::symlink_metadata(&link).is_ok(),
        "a symlink was removed"
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
}
