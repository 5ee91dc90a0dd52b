//! `cargo xtask bench workers`: whether more workers finish a plan sooner.
//! A pool of `agentctx worker` processes (the release binary) running one plan in PostgreSQL, against
//! one worker on the same plan, measured in the same run.
//!
//! The plan is a batch of 60 instances with two dependent calls each: the
//! first (`slow`) sleeps 50 ms, the second (`fast`) does not; both echo the
//! resolved call as their result (`sh -c 'sleep 0.05; cat'`, `cat`). Each
//! run gets a context of its own (in a schema of this run's own, dropped
//! at its end) and starts N workers with `--until-idle`; its time is from
//! starting the first to the exit of the last. Pool sizes alternate run by
//! run; each row has the medians, and the database round trips per call
//! (every worker's `roundTrips`, summed, over the plan's calls). Knobs:
//! `WORKERS_ROUNDS` (5), `WORKERS_INSTANCES` (60).
//!
//! With `WORKERS_BASELINE_BIN` (another build of `agentctx`, say the one
//! before a change), every pool also runs with that binary, interleaved
//! with ours run by run, and a row `WORKERS-N-vs-baseline-bin` gives the
//! per-run ratios (ours over theirs), whose median and spread `cargo xtask
//! bench` reports: a change is within noise when the spread holds 1.

use crate::bench_cli::{Scratch, knob};
use serde_json::{Value, json};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

const POOLS: [usize; 4] = [1, 2, 4, 8];

pub(crate) fn run(target: &Path) -> Result<Vec<Value>, String> {
    let bin = crate::release_dir()?.join("agentctx");
    let rounds = knob("WORKERS_ROUNDS", 5);
    let instances = knob("WORKERS_INSTANCES", 60);
    let scratch = Scratch::create()?;
    let dir = target.join("bench-workers");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let (inputs, plan) = (dir.join("inputs.jsonl"), dir.join("plan.jsonl"));
    write_batch(&inputs, &plan, instances)?;
    let other = std::env::var_os("WORKERS_BASELINE_BIN").map(std::path::PathBuf::from);
    let mut against: Vec<Vec<f64>> = vec![Vec::new(); POOLS.len()];
    let mut times: Vec<Vec<u128>> = vec![Vec::new(); POOLS.len()];
    let mut trips: Vec<Vec<f64>> = vec![Vec::new(); POOLS.len()];
    let mut fresh = 0;
    for round in 0..=rounds {
        eprintln!("xtask: workers round {round}/{rounds}");
        // Round 0 warms up (the binary, the server, the plan's tools) with
        // the largest pool, the quickest run; later rounds run every pool,
        // turning the order around every time.
        let order: Vec<usize> = if round == 0 {
            vec![POOLS.len() - 1]
        } else if round % 2 == 0 {
            (0..POOLS.len()).collect()
        } else {
            (0..POOLS.len()).rev().collect()
        };
        for at in order {
            fresh += 1;
            let url = scratch.context(&format!("workers_{fresh}"));
            let (ns, round_trips) = one_run(&bin, &url, &inputs, &plan, POOLS[at])?;
            if round > 0 {
                times[at].push(ns);
                trips[at].push(round_trips as f64 / (2 * instances) as f64);
            }
            if let Some(other) = &other {
                fresh += 1;
                let url = scratch.context(&format!("workers_{fresh}"));
                let (theirs, _) = one_run(other, &url, &inputs, &plan, POOLS[at])?;
                if round > 0 {
                    against[at].push(ns as f64 / theirs as f64);
                }
            }
        }
    }
    let base = median(times[0].clone());
    let mut rows = Vec::new();
    for (at, &pool) in POOLS.iter().enumerate() {
        let ours = median(times[at].clone());
        // Each round's pool against that round's one worker.
        let ratios: Vec<f64> = times[at]
            .iter()
            .zip(&times[0])
            .map(|(&n, &one)| n as f64 / one as f64)
            .collect();
        let mut per_call = trips[at].clone();
        per_call.sort_by(f64::total_cmp);
        rows.push(json!({
            "workload": format!("WORKERS-{pool}-vs-1"),
            "ours_ns": ours,
            "baseline": format!(
                "one `agentctx worker --until-idle` on the same {instances}-instance plan \
                 (first call of each instance sleeps 50 ms)"
            ),
            "baseline_ns": base,
            "ratio": ours / base,
            "ratios": ratios,
            "rounds": rounds,
            "round_trips_per_call": per_call.get(per_call.len() / 2).copied().unwrap_or_default(),
        }));
    }
    for (at, &pool) in POOLS.iter().enumerate() {
        let ratios = std::mem::take(&mut against[at]);
        if ratios.is_empty() {
            continue;
        }
        // `cargo xtask bench` takes the median and the spread.
        rows.push(json!({
            "workload": format!("WORKERS-{pool}-vs-baseline-bin"),
            "baseline": format!("{pool} workers of WORKERS_BASELINE_BIN, run by run between ours"),
            "ratios": ratios,
            "rounds": rounds,
        }));
    }
    Ok(rows)
}

/// The batch: one `input` per instance, and the plan message.
fn write_batch(inputs: &Path, plan: &Path, instances: usize) -> Result<(), String> {
    let mut lines = String::new();
    let mut calls = Vec::new();
    for i in 0..instances {
        let instance = format!("i{i:03}");
        lines.push_str(
            &json!({"type": "input", "data": {"id": i}, "_instance": instance}).to_string(),
        );
        lines.push('\n');
        calls.push(
            json!({"_tool": "slow", "_instance": instance, "id": "†input.id",
                          "_outputPath": "†state.first"}),
        );
        calls.push(
            json!({"_tool": "fast", "_instance": instance, "first": "†state.first",
                          "_outputPath": "†state.second"}),
        );
    }
    std::fs::write(inputs, lines).map_err(|e| e.to_string())?;
    std::fs::write(
        plan,
        json!({"type": "plan", "calls": calls}).to_string() + "\n",
    )
    .map_err(|e| e.to_string())
}

/// One pool of `workers` over a fresh context: (wall ns, round trips).
fn one_run(
    bin: &Path,
    url: &str,
    inputs: &Path,
    plan: &Path,
    workers: usize,
) -> Result<(u128, u64), String> {
    for messages in [inputs, plan] {
        let at = format!("@{}", messages.display());
        let out = Command::new(bin)
            .args(["append", url, &at])
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(format!(
                "agentctx append failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    let started = Instant::now();
    let children: Vec<_> = (0..workers)
        .map(|w| {
            Command::new(bin)
                .args([
                    "worker",
                    url,
                    "--activity",
                    "slow=sleep 0.05; cat",
                    "--activity",
                    "fast=cat",
                    "--until-idle",
                    "--name",
                    &format!("w{w}"),
                ])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| format!("cannot start a worker: {e}"))
        })
        .collect::<Result<_, _>>()?;
    let mut round_trips = 0;
    let mut written = 0;
    for child in children {
        let out = child.wait_with_output().map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(format!(
                "a worker failed ({}): {}{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let report: Value = serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
        round_trips += report["did"]["roundTrips"].as_u64().unwrap_or_default();
        written += report["did"]["written"].as_u64().unwrap_or_default();
    }
    let elapsed = started.elapsed().as_nanos();
    let expected = plan_calls(plan)?;
    if written != expected {
        return Err(format!(
            "{workers} workers wrote {written} results, not {expected}"
        ));
    }
    Ok((elapsed, round_trips))
}

fn plan_calls(plan: &Path) -> Result<u64, String> {
    let text = std::fs::read_to_string(plan).map_err(|e| e.to_string())?;
    let plan: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    Ok(plan["calls"].as_array().map_or(0, |c| c.len() as u64))
}

fn median(mut samples: Vec<u128>) -> f64 {
    samples.sort_unstable();
    samples.get(samples.len() / 2).copied().unwrap_or_default() as f64
}
