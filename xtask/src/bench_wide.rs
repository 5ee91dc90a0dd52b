//! `cargo xtask bench wide`: wide and deep contexts through whole
//! `agentctx` processes (the release binary as it is built now), each
//! command in a process of its own, its peak resident set and wall time
//! measured by `peak-rss` (`tests/bin/peak_rss.rs`: `getrusage` of its one
//! child), so nothing else the bench ran counts.
//!
//! Shapes, generated into a temporary directory under `target/` (removed
//! at the end):
//!
//! - `instances`: 200,000 lines `{"type":"state","v":i,"_instance":"i<i>"}`,
//!   `agentctx instances FILE`;
//! - `array`: one message holding a 1,000,000-integer array, `view FILE
//!   state`;
//! - `object`: one message holding a 1,000,000-key object, `view`;
//! - `deep`: 10,000 messages, each writing its own key with a value nested
//!   100 levels, `view`;
//! - `deep-arrays`: the same with arrays (`[[…[i]…]]`), `view`;
//! - `long`: 100,000 messages over 1,000 keys, `view`.
//!
//! Each shape is opened first with nothing beside it or cached (deleted
//! before every such run), then a second time through what that open
//! left: its snapshot, where it wrote one (row `-snapshot`), else only its
//! head record (row `-again`: a snapshot is written only where it pays,
//! D106: snapshots that pay). The baseline is
//! `parse-lines FILE` (`tests/bin/parse_lines.rs`: every line parsed into
//! a `serde_json::Value`, in a process of its own), run in turns with both
//! opens, the order turning every round; each open's row has the per-round
//! ratios of its time to the baseline's, and its peak resident set (the
//! largest over the rounds) against the target of 3 × the log's bytes +
//! 40 MB. Knob: `WIDE_ROUNDS` (5).

use crate::bench_cli::knob;
use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The resident memory a command may use beyond 3 × its log: the binary,
/// its runtime and buffers (a process that reads nothing holds a few MB).
const RSS_ALLOWANCE: f64 = 40e6;

/// One shape: its name, how to write it, and the command that opens it
/// (the file's path goes after the first argument).
struct Shape {
    name: &'static str,
    write: fn(&mut dyn Write) -> std::io::Result<()>,
    command: &'static [&'static str],
}

const SHAPES: [Shape; 6] = [
    Shape {
        name: "instances",
        write: instances,
        command: &["instances"],
    },
    Shape {
        name: "array",
        write: array,
        command: &["view", "state"],
    },
    Shape {
        name: "object",
        write: object,
        command: &["view", "state"],
    },
    Shape {
        name: "deep",
        write: deep,
        command: &["view", "state"],
    },
    Shape {
        name: "deep-arrays",
        write: deep_arrays,
        command: &["view", "state"],
    },
    Shape {
        name: "long",
        write: long,
        command: &["view", "state"],
    },
];

pub(crate) fn instances(out: &mut dyn Write) -> std::io::Result<()> {
    for i in 0..200_000 {
        writeln!(out, r#"{{"type":"state","v":{i},"_instance":"i{i}"}}"#)?;
    }
    Ok(())
}

pub(crate) fn array(out: &mut dyn Write) -> std::io::Result<()> {
    write!(out, r#"{{"type":"state","v":["#)?;
    for i in 0..1_000_000 {
        write!(out, "{}{i}", if i == 0 { "" } else { "," })?;
    }
    writeln!(out, "]}}")
}

pub(crate) fn object(out: &mut dyn Write) -> std::io::Result<()> {
    write!(out, r#"{{"type":"state","v":{{"#)?;
    for i in 0..1_000_000 {
        write!(out, r#"{}"k{i}":{i}"#, if i == 0 { "" } else { "," })?;
    }
    writeln!(out, "}}}}")
}

fn deep(out: &mut dyn Write) -> std::io::Result<()> {
    const LEVELS: usize = 100;
    let (open, close) = (r#"{"a":"#.repeat(LEVELS - 1), "}".repeat(LEVELS));
    for i in 0..10_000 {
        writeln!(out, r#"{{"type":"state","d{i}":{open}{{"a":{i}{close}}}"#)?;
    }
    Ok(())
}

fn deep_arrays(out: &mut dyn Write) -> std::io::Result<()> {
    const LEVELS: usize = 100;
    let (open, close) = ("[".repeat(LEVELS), "]".repeat(LEVELS));
    for i in 0..10_000 {
        writeln!(out, r#"{{"type":"state","d{i}":{open}{i}{close}}}"#)?;
    }
    Ok(())
}

pub(crate) fn long(out: &mut dyn Write) -> std::io::Result<()> {
    for i in 0..100_000 {
        writeln!(out, r#"{{"type":"state","k{}":{i}}}"#, i % 1000)?;
    }
    Ok(())
}

pub(crate) fn run(target: &Path) -> Result<Vec<Value>, String> {
    let release = crate::release_dir()?;
    let rounds = knob("WIDE_ROUNDS", 5);
    let dir = tempfile::Builder::new()
        .prefix("bench-wide")
        .tempdir_in(target)
        .map_err(|e| format!("cannot make a directory under {}: {e}", target.display()))?;
    let tools = Tools {
        agentctx: release.join("agentctx"),
        peak: release.join("peak-rss"),
        parse: release.join("parse-lines"),
        // What a reading command caches (D101: reads leave nothing
        // beside) goes here, cleared before every first open.
        cache: dir.path().join("cache"),
    };
    // What the wrapper itself puts into a child's peak (see peak_rss.rs).
    let floor = tools.measure(&[OsArg::from("true")])?.rss;
    eprintln!(
        "xtask: wide: the measuring wrapper adds at most {:.1} MB",
        floor / 1e6
    );
    let mut rows = Vec::new();
    for shape in &SHAPES {
        let file = dir.path().join(format!("{}.jsonl", shape.name));
        let mut out = std::io::BufWriter::new(
            std::fs::File::create(&file).map_err(|e| format!("{}: {e}", file.display()))?,
        );
        (shape.write)(&mut out)
            .and_then(|()| out.flush())
            .map_err(|e| format!("{}: {e}", file.display()))?;
        drop(out);
        eprintln!("xtask: wide {} ({rounds} rounds)", shape.name);
        rows.extend(measure_shape(&tools, shape, &file, rounds, floor)?);
        remove_beside(&file, &tools.cache)?;
        std::fs::remove_file(&file).map_err(|e| e.to_string())?;
    }
    Ok(rows)
}

type OsArg = std::ffi::OsString;

struct Tools {
    agentctx: PathBuf,
    peak: PathBuf,
    parse: PathBuf,
    /// `AGENTCTX_CACHE_DIR` of the commands measured.
    cache: PathBuf,
}

/// One process's wall time (ns) and peak resident set (bytes).
#[derive(Clone, Copy)]
struct Run {
    ns: f64,
    rss: f64,
}

impl Tools {
    /// Runs `command` under `peak-rss`; it must succeed.
    fn measure(&self, command: &[OsArg]) -> Result<Run, String> {
        let out = Command::new(&self.peak)
            .args(command)
            .env("AGENTCTX_CACHE_DIR", &self.cache)
            .output()
            .map_err(|e| format!("cannot run {}: {e}", self.peak.display()))?;
        let report: Value = serde_json::from_slice(&out.stdout).map_err(|e| {
            format!(
                "peak-rss printed no report ({e}): {}",
                String::from_utf8_lossy(&out.stderr)
            )
        })?;
        if report["success"] != json!(true) {
            return Err(format!(
                "{} failed under peak-rss: {}",
                command
                    .iter()
                    .map(|a| a.to_string_lossy())
                    .collect::<Vec<_>>()
                    .join(" "),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(Run {
            ns: report["wall_ns"].as_f64().unwrap_or_default(),
            rss: report["max_rss_bytes"].as_f64().unwrap_or_default(),
        })
    }

    fn open(&self, shape: &Shape, file: &Path) -> Vec<OsArg> {
        let mut args = vec![self.agentctx.clone().into(), shape.command[0].into()];
        args.push(file.into());
        args.extend(shape.command[1..].iter().map(OsArg::from));
        args
    }
}

/// Removes the files a store keeps beside `file` (`.NAME.*`) and what a
/// reading command cached for it in `cache`.
fn remove_beside(file: &Path, cache: &Path) -> Result<(), String> {
    if cache.exists() {
        std::fs::remove_dir_all(cache).map_err(|e| format!("{}: {e}", cache.display()))?;
    }
    let name = file.file_name().unwrap_or_default().to_string_lossy();
    let prefix = format!(".{name}.");
    let dir = file.parent().unwrap_or(Path::new("."));
    for entry in std::fs::read_dir(dir).map_err(|e| e.to_string())? {
        let entry = entry.map_err(|e| e.to_string())?;
        if entry.file_name().to_string_lossy().starts_with(&prefix) {
            std::fs::remove_file(entry.path()).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// The snapshot an open of `file` left: beside it, or in the cache
/// directory a reading command keeps it in.
fn snapshot_of(file: &Path, cache: &Path) -> PathBuf {
    let name = file.file_name().unwrap_or_default().to_string_lossy();
    let beside = file.with_file_name(format!(".{name}.snapshot"));
    let cached = std::fs::read_dir(cache)
        .into_iter()
        .flatten()
        .flatten()
        .find(|entry| entry.file_name().to_string_lossy().ends_with(".snapshot"));
    match cached {
        Some(entry) if !beside.exists() => entry.path(),
        _ => beside,
    }
}

/// The rows of one shape: its first open and its second.
fn measure_shape(
    tools: &Tools,
    shape: &Shape,
    file: &Path,
    rounds: usize,
    floor: f64,
) -> Result<Vec<Value>, String> {
    let open = tools.open(shape, file);
    let parse = [tools.parse.clone().into(), file.into()];
    let first = || -> Result<Run, String> {
        // A first open finds nothing beside the log or cached (no snapshot, no head
        // record), whatever ran before it.
        remove_beside(file, &tools.cache)?;
        tools.measure(&open)
    };
    // Warm-up (the page cache, and whether a first open leaves a snapshot).
    tools.measure(&parse)?;
    first()?;
    let snapshot = snapshot_of(file, &tools.cache);
    let wrote_snapshot = snapshot.exists();
    let snapshot_bytes = std::fs::metadata(&snapshot).map_or(0, |m| m.len());
    let mut runs: [Vec<Run>; 3] = Default::default();
    for round in 0..rounds {
        // Each kind of run takes each place in the order in turn; the
        // second open follows a first open, of this round or the last.
        for at in 0..3 {
            match (round + at) % 3 {
                0 => runs[0].push(tools.measure(&parse)?),
                1 => runs[1].push(first()?),
                _ => runs[2].push(tools.measure(&open)?),
            }
        }
    }
    let log_bytes = std::fs::metadata(file).map_or(0, |m| m.len()) as f64;
    let [parse_runs, first_runs, second_runs] = runs;
    let mut rows = vec![row(
        shape,
        "first",
        "no snapshot beside it",
        &first_runs,
        &parse_runs,
        log_bytes,
        floor,
    )];
    let (which, how) = if wrote_snapshot {
        ("snapshot", "through the snapshot the first open wrote")
    } else {
        (
            "again",
            "after a first open, which wrote no snapshot (one would not pay)",
        )
    };
    let mut second = row(
        shape,
        which,
        how,
        &second_runs,
        &parse_runs,
        log_bytes,
        floor,
    );
    for row in [&mut rows[0], &mut second] {
        row["snapshot_bytes"] = json!(snapshot_bytes);
        row["snapshot_ratio"] = json!(snapshot_bytes as f64 / log_bytes);
    }
    rows.push(second);
    Ok(rows)
}

fn row(
    shape: &Shape,
    which: &str,
    how: &str,
    ours: &[Run],
    parse: &[Run],
    log_bytes: f64,
    floor: f64,
) -> Value {
    let peak = ours.iter().map(|r| r.rss).fold(0.0, f64::max);
    let limit = 3.0 * log_bytes + RSS_ALLOWANCE;
    let ratios: Vec<f64> = ours.iter().zip(parse).map(|(o, p)| o.ns / p.ns).collect();
    let times = |runs: &[Run]| median(runs.iter().map(|r| r.ns).collect());
    json!({
        "workload": format!("WIDE-{}-{which}", shape.name),
        "command": format!("agentctx {} FILE {}", shape.command[0], shape.command[1..].join(" "))
            .trim_end()
            .to_owned(),
        "open": how,
        "log_bytes": log_bytes,
        "peak_rss_bytes": peak,
        "rss_ratio": peak / log_bytes,
        "rss_limit_bytes": limit,
        "rss_met": peak <= limit,
        "wrapper_floor_bytes": floor,
        "ours_ns": times(ours),
        "baseline": "parse-lines FILE: every line into a serde_json::Value, in its own process",
        "baseline_ns": times(parse),
        "baseline_rss_bytes": parse.iter().map(|r| r.rss).fold(0.0, f64::max),
        "ratio": median(ratios.clone()),
        "ratios": ratios,
        "rounds": ours.len(),
    })
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples.get(samples.len() / 2).copied().unwrap_or_default()
}

/// The wide rows' own lines for the table: memory against its target.
pub(crate) fn print(row: &Value) {
    let number = |key: &str| row[key].as_f64().unwrap_or_default();
    let snapshot = row["snapshot_ratio"]
        .as_f64()
        .map(|r| {
            format!(
                "; snapshot {:.1} KB = {r:.3}× the log",
                number("snapshot_bytes") / 1e3
            )
        })
        .unwrap_or_default();
    println!(
        "{:<32} {:>14} {:>14} {:>8.2}  {:<15} peak RSS / log bytes, `{}` ({}){snapshot}  [target ≤ 3 × log + 40 MB = {:.1} MB: {}]",
        format!("{} rss", row["workload"].as_str().unwrap_or_default()),
        format!("{:.1} MB", number("peak_rss_bytes") / 1e6),
        format!("{:.1} MB", number("log_bytes") / 1e6),
        number("rss_ratio"),
        "",
        row["command"].as_str().unwrap_or_default(),
        row["open"].as_str().unwrap_or_default(),
        number("rss_limit_bytes") / 1e6,
        if row["rss_met"] == json!(true) {
            "met"
        } else {
            "MISSED"
        },
    );
}
