//! `peak-rss COMMAND ARGS…`: runs one command with its output thrown
//! away and prints `{"wall_ns","max_rss_bytes","success"}` — its wall time
//! from start to exit, and its peak resident set (`ru_maxrss` of
//! `getrusage(RUSAGE_CHILDREN)`: the largest of this process's waited-for
//! children, and it has only this one). `cargo xtask bench wide` measures
//! every command through it, so nothing else the bench ran counts.
//!
//! The kernel counts into a child's peak the memory of the process it was
//! started from (it replaces that address space when it execs), so this
//! wrapper is kept small: what it adds is its own few MB at most, which
//! `peak-rss true` shows.
#![forbid(unsafe_code)]

use nix::sys::resource::{UsageWho, getrusage};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((program, rest)) = args.split_first() else {
        eprintln!("usage: peak-rss COMMAND ARGS…");
        return ExitCode::from(2);
    };
    let started = Instant::now();
    let status = Command::new(program)
        .args(rest)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status();
    let wall_ns = started.elapsed().as_nanos();
    let status = match status {
        Ok(status) => status,
        Err(e) => {
            eprintln!("peak-rss: cannot run {program}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let max_rss_kib = match getrusage(UsageWho::RUSAGE_CHILDREN) {
        Ok(usage) => usage.max_rss(),
        Err(e) => {
            eprintln!("peak-rss: getrusage: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "{}",
        agent_core::json!({
            "wall_ns": wall_ns,
            // Linux reports ru_maxrss in KiB.
            "max_rss_bytes": max_rss_kib.max(0) * 1024,
            "success": status.success(),
        })
    );
    ExitCode::SUCCESS
}
