//! S1, interleaved: one durable JSONL append through the store
//! (lock, tail check, validate, `O_APPEND` write, fsync) against a raw
//! `write` + `fdatasync` of the same line on an open file, alternating one
//! of each, so drifting fsync latency (large on these machines) hits both
//! alike. Prints `{"workload","ours_ns","baseline_ns","ratio","ratios",…}`:
//! `S1_ROUNDS` (default 2,000) pairs, which go first in turns, grouped
//! into rounds of [`PAIRS_PER_ROUND`], one ratio each (the median of the
//! round's commits over the median of its raw appends).
#![forbid(unsafe_code)]

use agent_data::Message;
use agent_store::{FileStore, Store};
use agentctx_tests::interleave::{rounds_of_pairs, row};
use std::io::Write;
use std::time::Instant;

/// Pairs per round: 50 pairs take a few tens of ms, so a round's commits
/// and raw appends see the same disk; 2,000 pairs give 40 rounds.
const PAIRS_PER_ROUND: usize = 50;

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("s1-append: {message}");
            std::process::ExitCode::FAILURE
        }
    }
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
    let set = Message::from_value(agent_core::json!({"type": "state",
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
    for round in 0..rounds {
        // Which goes first alternates, so neither always follows the other.
        for ours_first in [round % 2 == 0, round % 2 != 0] {
            let started = Instant::now();
            if ours_first {
                store
                    .commit(&mut context, &set)
                    .map_err(|e| e.to_string())?;
                ours.push(started.elapsed().as_nanos());
            } else {
                raw.write_all(line.as_bytes()).map_err(|e| e.to_string())?;
                raw.sync_data().map_err(|e| e.to_string())?;
                baseline.push(started.elapsed().as_nanos());
            }
        }
    }
    let (a, b) = rounds_of_pairs(&ours, &baseline, PAIRS_PER_ROUND);
    let mut summary = row(
        "S1-file-append-vs-raw",
        "write + fdatasync of the same line on an open file, interleaved",
        &a,
        &b,
    );
    summary["pairs"] = agent_core::json!(rounds);
    println!("{summary}");
    Ok(())
}
