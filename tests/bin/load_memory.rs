//! Loads the context file named on the command line and prints one JSON
//! object: file size, message count, and peak resident memory (`VmHWM` from
//! `/proc/self/status`). Used by `cargo xtask stress` for R34's resource bound.
//! With `--snapshot` after the file it also writes the context's snapshot
//! into memory, as a store does after a long load, and reports its size.
#![forbid(unsafe_code)]

use std::process::ExitCode;

fn peak_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace()
        .nth(1)?
        .parse::<u64>()
        .ok()
        .map(|kib| kib * 1024)
}

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: load-memory FILE");
        return ExitCode::from(2);
    };
    let path = std::path::Path::new(&path);
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    match agent_data::Context::load_file(path) {
        Ok(loaded) => {
            let snapshot = match std::env::args().nth(2).as_deref() {
                Some("--snapshot") => match loaded.context.snapshot(&agent_core::json::Value::Null)
                {
                    Ok(bytes) => Some(bytes.len()),
                    Err(e) => {
                        eprintln!("error: {e}");
                        return ExitCode::from(1);
                    }
                },
                _ => None,
            };
            let peak = peak_bytes().unwrap_or(0);
            println!(
                "{}",
                agent_core::json!({"file_bytes": size, "messages": loaded.context.len(), "peak_rss_bytes": peak,
                                   "ratio": peak as f64 / size.max(1) as f64, "snapshot_bytes": snapshot})
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}
