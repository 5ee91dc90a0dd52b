//! `chain-check`: the chain check `verify` makes over a large JSONL log
//! (the digest of every message, each following the one before, R34e)
//! against `sha256sum` of the same file, run by run in turns, in one
//! process; prints one JSON object. The fold `verify` also makes is not
//! in it (W4 and W6 measure loading). Prints the per-round ratios too.
//! Knobs: `CHAIN_BYTES` (1 GiB), `CHAIN_ROUNDS` (5; fewer leave no spread
//! to judge). The log is written once under `target/`.

use agent_core::json;
use agent_data::Digest;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

fn knob(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A log of about `bytes` bytes of typical messages (a state write with a
/// short text and a number each, about 120 bytes a line).
fn write_log(path: &Path, bytes: u64) -> std::io::Result<()> {
    if std::fs::metadata(path).is_ok_and(|m| m.len() >= bytes) {
        return Ok(());
    }
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut written = 0u64;
    let mut i = 0u64;
    while written < bytes {
        let line = json!({"type": "state", "data": {"step": i, "note": format!("observation number {i} of the run")}}).to_string();
        out.write_all(line.as_bytes())?;
        out.write_all(b"\n")?;
        written += line.len() as u64 + 1;
        i += 1;
    }
    out.flush()
}

/// The chain over the file's lines, read as `verify` reads them.
fn chain(path: &Path) -> std::io::Result<(Digest, u64)> {
    let mut reader = BufReader::with_capacity(1 << 20, std::fs::File::open(path)?);
    let mut line = Vec::new();
    let mut digest = Digest::GENESIS;
    let mut messages = 0;
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            return Ok((digest, messages));
        }
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        digest = digest.next(text);
        messages += 1;
    }
}

fn main() -> Result<(), String> {
    let bytes = knob("CHAIN_BYTES", 1 << 30);
    let rounds = knob("CHAIN_ROUNDS", 5).max(1);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/chain-check");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let path = dir.join("log.jsonl");
    write_log(&path, bytes).map_err(|e| e.to_string())?;
    let size = std::fs::metadata(&path).map_err(|e| e.to_string())?.len();
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    let mut messages = 0;
    // Round 0 warms the page cache for both.
    for round in 0..=rounds {
        let start = Instant::now();
        let out = Command::new("sha256sum")
            .arg(&path)
            .output()
            .map_err(|e| format!("cannot run sha256sum: {e}"))?;
        if !out.status.success() {
            return Err("sha256sum failed".into());
        }
        let baseline = start.elapsed().as_nanos();
        let start = Instant::now();
        let (_, n) = chain(&path).map_err(|e| e.to_string())?;
        let chained = start.elapsed().as_nanos();
        messages = n;
        if round > 0 {
            theirs.push(baseline);
            ours.push(chained);
        }
    }
    let ratios: Vec<f64> = ours
        .iter()
        .zip(&theirs)
        .map(|(&o, &t)| o as f64 / t as f64)
        .collect();
    ours.sort_unstable();
    theirs.sort_unstable();
    let (o, t) = (ours[ours.len() / 2] as f64, theirs[theirs.len() / 2] as f64);
    println!(
        "{}",
        json!({
            "workload": "C2-verify-chain-vs-sha256sum",
            "ours_ns": o,
            "baseline": format!("sha256sum of the same {size}-byte, {messages}-message JSONL file, in turns"),
            "baseline_ns": t,
            "ratio": o / t,
            "ratios": ratios,
            "rounds": rounds,
        })
    );
    Ok(())
}
