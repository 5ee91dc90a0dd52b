//! S1, interleaved: one durable JSONL append through the store
//! (lock, tail check, validate, `O_APPEND` write, fsync) against a raw
//! `write` + `fdatasync` of the same line on an open file, alternating one
//! of each, so drifting fsync latency (large on these machines) hits both
//! alike. Prints `{"workload","ours_ns","baseline_ns","ratio",…}` with the
//! medians of `S1_ROUNDS` (default 2,000) rounds.
#![forbid(unsafe_code)]

use agent_data::Message;
use agent_store::{FileStore, Store};
use std::io::Write;
use std::time::Instant;

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("s1-append: {message}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn median(mut samples: Vec<u128>) -> f64 {
    samples.sort_unstable();
    samples.get(samples.len() / 2).copied().unwrap_or_default() as f64
}

fn run() -> Result<(), String> {
    let rounds: usize = std::env::var("S1_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2000);
    let dir = tempfile::tempdir_in(".").map_err(|e| e.to_string())?;
    let path = dir.path().join("s1.jsonl");
    std::fs::write(&path, "{\"type\":\"state\",\"data\":{\"n\":0}}\n")
        .map_err(|e| e.to_string())?;
    let set = Message::from_value(serde_json::json!({"type": "state",
        "data": {"n": 1}, "_outputPath": "†state.n"}))
    .map_err(|e| e.to_string())?;
    let mut store = FileStore::open(&path).map_err(|e| e.to_string())?;
    let mut context = store.load().map_err(|e| e.to_string())?.context;
    store
        .commit(&mut context, &set)
        .map_err(|e| e.to_string())?;
    let line = format!("{}\n", context.message_json(1).unwrap_or_default());
    let mut raw = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.path().join("raw.jsonl"))
        .map_err(|e| e.to_string())?;
    let (mut ours, mut baseline) = (Vec::with_capacity(rounds), Vec::with_capacity(rounds));
    for _ in 0..rounds {
        let started = Instant::now();
        store
            .commit(&mut context, &set)
            .map_err(|e| e.to_string())?;
        ours.push(started.elapsed().as_nanos());
        let started = Instant::now();
        raw.write_all(line.as_bytes()).map_err(|e| e.to_string())?;
        raw.sync_data().map_err(|e| e.to_string())?;
        baseline.push(started.elapsed().as_nanos());
    }
    let (ours_ns, baseline_ns) = (median(ours), median(baseline));
    println!(
        "{}",
        serde_json::json!({
            "workload": "S1-file-append-vs-raw",
            "ours_ns": ours_ns,
            "baseline": "write + fdatasync of the same line on an open file, interleaved",
            "baseline_ns": baseline_ns,
            "ratio": ours_ns / baseline_ns,
            "rounds": rounds,
        })
    );
    Ok(())
}
