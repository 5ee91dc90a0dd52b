//! Memory of the W1 context: prints one JSON object with the
//! JSONL size, the resident memory the loaded context adds, and the peak.
//! Reads `/proc/self/status` (Linux), so no `unsafe` is needed.
#![forbid(unsafe_code)]

use agentctx_tests::workloads;

/// A `/proc/self/status` field in bytes (`VmRSS`, `VmHWM`), if readable.
fn status_bytes(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn main() {
    let jsonl = workloads::w1_jsonl(100_000);
    let jsonl_bytes = jsonl.len() as u64;
    let before = status_bytes("VmRSS:").unwrap_or(0);
    let context = workloads::load(&jsonl);
    drop(jsonl);
    let after = status_bytes("VmRSS:").unwrap_or(0);
    let peak = status_bytes("VmHWM:").unwrap_or(0);
    let context_bytes = after.saturating_sub(before.saturating_sub(jsonl_bytes));
    println!(
        "{}",
        agent_core::json!({
            "workload": "W1-memory",
            "messages": context.len(),
            "jsonl_bytes": jsonl_bytes,
            "context_rss_bytes": context_bytes,
            "peak_rss_bytes": peak,
            "ratio": context_bytes as f64 / jsonl_bytes as f64,
        })
    );
}
