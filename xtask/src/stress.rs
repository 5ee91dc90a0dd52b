//! `cargo xtask stress`: the slow reliability checks kept out of CI.
//!
//! 1. SIGKILL `agentctx apply --write` 2,000 times per file format
//!    (release build) — every acknowledged append survives (R34).
//! 2. Generate a 1 GB JSONL context and load it with the streaming loader:
//!    peak resident memory must stay within 2× the file size.

use std::io::Write;

pub(crate) fn run() -> Result<(), String> {
    crate::cargo(
        &[
            "test",
            "--release",
            "-p",
            "agent-cli",
            "--test",
            "durability",
            "--",
            "--nocapture",
        ],
        &[("AGENTCTX_KILLS", "2000")],
    )?;
    let dir = std::env::temp_dir().join("agentctx-stress");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let path = dir.join("one-gigabyte.jsonl");
    generate(&path, 1 << 30).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let report = crate::probe("load-memory", &[path.as_os_str()]);
    let _ = std::fs::remove_file(&path);
    let report = report?;
    println!("1 GB load: {report}");
    let ratio = report["ratio"]
        .as_f64()
        .ok_or("no ratio in the load-memory report")?;
    if ratio > 2.0 {
        return Err(format!(
            "peak memory is {ratio:.2}× the file size (bound: 2×)"
        ));
    }
    eprintln!("xtask: stress passed");
    Ok(())
}

/// About `bytes` of JSONL: output messages with 64 KiB strings, 70% `set`
/// over 1,000 paths, 20% `push` onto 10 lists, 10% plain merges.
fn generate(path: &std::path::Path, bytes: u64) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    let payload = "x".repeat(64 << 10);
    let (mut written, mut i) = (0u64, 0u64);
    while written < bytes {
        let slot = i.wrapping_mul(2_654_435_761) % 1000;
        let line = match i % 10 {
            0..=6 => format!(
                "{{\"type\":\"data\",\"kind\":\"state\",\"data\":{{\"p{slot}\":{{\"n\":{i},\"s\":\"{payload}\"}}}},\"_outputPath\":\"†state.p{slot}\"}}\n"
            ),
            7 | 8 => format!(
                "{{\"type\":\"data\",\"kind\":\"state\",\"data\":{{\"l{}\":{i}}},\"_outputPath\":\"†state.l{}\",\"_outputMethod\":\"push\"}}\n",
                slot % 10,
                slot % 10
            ),
            _ => format!(
                "{{\"type\":\"state\",\"data\":{{\"note\":\"{}\"}}}}\n",
                &payload[..1024]
            ),
        };
        out.write_all(line.as_bytes())?;
        written += line.len() as u64;
        i += 1;
    }
    out.flush()
}
