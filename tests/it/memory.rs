//! Peak memory of loading, against the file (a context must fit in memory
//! about as well as its file does): a large JSON array
//! context and a context of many instances. Each load runs in a process of
//! its own (`load-memory`, which reports its peak resident set), so what
//! the test harness allocated does not count.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use agent_core::json::Value;
use std::io::Write;
use std::path::Path;

/// What a process that loads nothing already holds resident (the binary,
/// the C and Rust runtimes, the 64 KiB read buffer), with room to spare:
/// the tests measure a few MB of it in a debug build.
const CONSTANT: f64 = 8.0 * 1024.0 * 1024.0;

/// Loads `path` in a fresh `load-memory` process: (file bytes, peak bytes).
fn peak(path: &Path) -> (f64, f64) {
    let report = load_memory(path, &[]);
    let number = |field: &str| report[field].as_f64().unwrap();
    (number("file_bytes"), number("peak_rss_bytes"))
}

/// What `load-memory` reports for `path` with `args`.
fn load_memory(path: &Path, args: &[&str]) -> Value {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_load-memory"))
        .arg(path)
        .args(args)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    serde_json::from_slice(&output.stdout).unwrap()
}

/// A JSON array of `messages` output messages into one `state`, about 150
/// bytes each (the shape of the W1 workload).
fn json_array(path: &Path, messages: usize) {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    writeln!(out, "[").unwrap();
    for i in 0..messages {
        let (path, method, value) = match i % 10 {
            0..7 => (
                format!("p{}", i * 7 % 1000),
                "set",
                format!(r#"{{"v":{i},"s":"some text value"}}"#),
            ),
            7 | 8 => (format!("l{}", i % 10), "push", i.to_string()),
            _ => (
                format!("p{}", i * 7 % 1000),
                "merge",
                format!(r#"{{"m":{i}}}"#),
            ),
        };
        let comma = if i == 0 { "" } else { "," };
        writeln!(
            out,
            r#"{comma}{{"type":"data","kind":"state","data":{{"{path}":{value}}},"_outputPath":"†state.{path}","_outputMethod":"{method}","_date":"2026-01-01T00:00:00Z"}}"#
        )
        .unwrap();
    }
    writeln!(out, "]").unwrap();
}

/// JSONL: a global `item` and `instances` instances of one small write each
/// (the W6 workload).
fn many_instances(path: &Path, instances: usize) {
    std::fs::write(path, agentctx_tests::workloads::w6_jsonl(instances)).unwrap();
}

#[test]
fn r1_a_json_array_context_loads_in_at_most_three_times_its_size() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("array.json");
    json_array(&path, 150_000);
    let (file, peak) = peak(&path);
    assert!(file > 20e6, "{file}");
    // The file is read whole (1×), the log holds its messages as text
    // (about 1.1×), the views are small.
    assert!(
        peak <= 3.0 * file + CONSTANT,
        "peak {peak} for {file} bytes: {:.2}×",
        peak / file
    );
}

#[test]
fn r1_a_context_of_many_instances_loads_in_at_most_three_times_its_size() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("instances.jsonl");
    many_instances(&path, 200_000);
    let (file, peak) = peak(&path);
    assert!(file > 10e6, "{file}");
    // Each instance costs its line in the log (1×) and its 12 bytes of
    // index, a 56-byte layer map entry (its key sharing the kind's text),
    // the id's text once for the key and the instance list, and no view
    // until one is read (D40: short layers refolded); see docs/performance.md.
    assert!(
        peak <= 3.0 * file + CONSTANT,
        "peak {peak} for {file} bytes: {:.2}×",
        peak / file
    );
}

#[test]
fn r34c_a_snapshot_of_many_instances_is_written_without_a_copy_of_the_context() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("instances.jsonl");
    many_instances(&path, 200_000);
    let report = load_memory(&path, &["--snapshot"]);
    let number = |field: &str| report[field].as_f64().unwrap();
    let (file, peak, snapshot) = (
        number("file_bytes"),
        number("peak_rss_bytes"),
        number("snapshot_bytes"),
    );
    // The loaded context and the snapshot's text (half as much again for
    // the copy a growing buffer makes), no more: the snapshot is serialised
    // from the context as it is, not from copies of its views and messages
    // (26× the file when it was).
    assert!(
        peak <= 3.0 * file + 1.5 * snapshot + CONSTANT,
        "peak {peak} for {file} bytes and a {snapshot}-byte snapshot: {:.2}×",
        peak / file
    );
}
