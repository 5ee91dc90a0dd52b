//! R34: kill `agentctx apply --write` with SIGKILL at random moments, many
//! times, on JSONL and JSON files. After every kill the file must load, and
//! every append whose process exited 0 must be in it.
//!
//! `AGENTCTX_KILLS` sets the number of kills per format (default 150; the
//! stress run uses thousands).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use agent_core::Kind;
use agent_data::Context;
use serde_json::Value;
use std::process::{Command, Stdio};
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
    let span = (started.elapsed().as_micros() as u64 * 6 / 5).max(1);
    let mut rng = Rng(seed);
    let mut acknowledged = vec![-1i64];
    let (mut killed, mut completed) = (0, 0);
    for i in 0..kills() {
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
