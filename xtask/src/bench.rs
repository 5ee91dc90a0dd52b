//! `cargo xtask bench`: run the benchmark suite and summarise it as ratios
//! against baselines measured in the same run (issue 7).

use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

/// (workload, our criterion id, baseline name, baseline criterion id)
const PAIRS: [(&str, &str, &str, &str); 6] = [
    (
        "W1-read-vs-pointer",
        "W1-read-ours",
        "serde_json::Value::pointer on the materialised view",
        "W1-read-pointer",
    ),
    (
        "W1-read-vs-naive",
        "W1-read-ours",
        "naive newest-to-oldest resolver of R14",
        "W1-read-naive",
    ),
    (
        "W2-append-vs-inplace",
        "W2-append-ours",
        "agent_core::write on one Value in place",
        "W2-append-inplace",
    ),
    (
        "W3-render-vs-serde",
        "W3-render-ours",
        "serde_json::to_string_pretty of cloned views",
        "W3-render-serde",
    ),
    (
        "W3-render-vs-serde-in-context",
        "W3-render-ours",
        "serde_json::to_string_pretty of the context's own views",
        "W3-render-serde_in_context",
    ),
    (
        "W4-load-vs-serde",
        "W4-load-ours",
        "serde_json::from_str of each line",
        "W4-load-serde",
    ),
];

/// Appends each writer process makes in the concurrent-writers run.
const APPENDS_PER_WRITER: usize = 200;

pub(crate) fn run() -> Result<(), String> {
    crate::cargo(&["bench", "-p", "agentctx-tests", "--bench", "suite"], &[])?;
    let target = target_dir()?;
    let mut summary = Vec::new();
    for (workload, ours, baseline, base_id) in PAIRS {
        let ours_ns = median(&target, ours)?;
        let baseline_ns = median(&target, base_id)?;
        summary.push(json!({
            "workload": workload,
            "ours_ns": ours_ns,
            "baseline": baseline,
            "baseline_ns": baseline_ns,
            "ratio": ours_ns / baseline_ns,
        }));
    }
    summary.push(crate::probe("w1-memory", &[])?);
    // Interleaved in one process: fsync latency drifts too much between
    // criterion's separate measurement windows for a fair ratio.
    summary.push(crate::probe("s1-append", &[])?);
    for writers in [1, 2, 4, 8] {
        summary.push(concurrent_writers(&target, writers)?);
    }
    let path = target.join("bench-summary.json");
    let text = serde_json::to_string_pretty(&summary).map_err(|e| e.to_string())?;
    std::fs::write(&path, text + "\n")
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    print_table(&summary);
    eprintln!("xtask: wrote {}", path.display());
    Ok(())
}

/// Starts `writers` processes at once, each committing
/// [`APPENDS_PER_WRITER`] durable pushes to one JSONL file, and reports
/// appends per second over the whole run (wall clock); checks that every
/// append is in the file.
fn concurrent_writers(target: &Path, writers: usize) -> Result<Value, String> {
    crate::cargo(
        &[
            "build",
            "--release",
            "-p",
            "agentctx-tests",
            "--bin",
            "store-writers",
        ],
        &[],
    )?;
    let bin = target.join("release").join("store-writers");
    let dir = target.join("bench-writers");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let file = dir.join(format!("writers-{writers}.jsonl"));
    std::fs::write(&file, "{\"type\":\"state\",\"data\":{\"log\":[]}}\n")
        .map_err(|e| e.to_string())?;
    let started = std::time::Instant::now();
    let children: Vec<std::process::Child> = (0..writers)
        .map(|w| {
            Command::new(&bin)
                .arg(&file)
                .arg(APPENDS_PER_WRITER.to_string())
                .arg(w.to_string())
                .stdout(std::process::Stdio::null())
                .spawn()
                .map_err(|e| format!("cannot start {}: {e}", bin.display()))
        })
        .collect::<Result<_, _>>()?;
    for mut child in children {
        let status = child.wait().map_err(|e| e.to_string())?;
        if !status.success() {
            return Err(format!("a store-writers process failed ({status})"));
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let text = std::fs::read_to_string(&file).map_err(|e| e.to_string())?;
    let appends = writers * APPENDS_PER_WRITER;
    if text.lines().count() != appends + 1 {
        return Err(format!(
            "{writers} writers: expected {} lines in {}, found {}",
            appends + 1,
            file.display(),
            text.lines().count()
        ));
    }
    Ok(json!({
        "workload": format!("S1-writers-{writers}"),
        "writers": writers,
        "appends": appends,
        "seconds": seconds,
        "appends_per_second": appends as f64 / seconds,
    }))
}

fn target_dir() -> Result<std::path::PathBuf, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .output()
        .map_err(|e| format!("cannot run cargo metadata: {e}"))?;
    let meta: Value = serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
    meta["target_directory"]
        .as_str()
        .map(Into::into)
        .ok_or_else(|| "cargo metadata has no target_directory".into())
}

/// The median (ns) criterion estimated for benchmark `id`.
fn median(target: &Path, id: &str) -> Result<f64, String> {
    let path = target
        .join("criterion")
        .join(id)
        .join("new")
        .join("estimates.json");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let estimates: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    estimates["median"]["point_estimate"]
        .as_f64()
        .ok_or_else(|| format!("{} has no median", path.display()))
}

fn print_table(summary: &[Value]) {
    println!(
        "{:<32} {:>14} {:>14} {:>8}  baseline",
        "workload", "ours", "baseline", "ratio"
    );
    for row in summary {
        if let Some(rate) = row["appends_per_second"].as_f64() {
            println!(
                "{:<32} {:>14} {:>14} {:>8}  durable appends/s, {} writer process(es) on one JSONL file",
                row["workload"].as_str().unwrap_or_default(),
                format!("{rate:.0}/s"),
                format!("{:.2} s", row["seconds"].as_f64().unwrap_or_default()),
                "",
                row["writers"]
            );
            continue;
        }
        match row["ours_ns"].as_f64() {
            Some(ours) => println!(
                "{:<32} {:>14} {:>14} {:>8.3}  {}",
                row["workload"].as_str().unwrap_or_default(),
                human(ours),
                human(row["baseline_ns"].as_f64().unwrap_or_default()),
                row["ratio"].as_f64().unwrap_or_default(),
                row["baseline"].as_str().unwrap_or_default()
            ),
            None => println!(
                "{:<32} {:>14} {:>14} {:>8.2}  resident memory of the loaded context / JSONL size (peak {})",
                row["workload"].as_str().unwrap_or_default(),
                bytes(row["context_rss_bytes"].as_f64().unwrap_or_default()),
                bytes(row["jsonl_bytes"].as_f64().unwrap_or_default()),
                row["ratio"].as_f64().unwrap_or_default(),
                bytes(row["peak_rss_bytes"].as_f64().unwrap_or_default()),
            ),
        }
    }
}

fn human(ns: f64) -> String {
    match ns {
        n if n >= 1e9 => format!("{:.2} s", n / 1e9),
        n if n >= 1e6 => format!("{:.2} ms", n / 1e6),
        n if n >= 1e3 => format!("{:.2} µs", n / 1e3),
        n => format!("{n:.0} ns"),
    }
}

fn bytes(b: f64) -> String {
    format!("{:.1} MB", b / 1e6)
}
