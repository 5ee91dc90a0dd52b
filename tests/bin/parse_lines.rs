//! `parse-lines FILE`: reads FILE and parses every line into a
//! `serde_json::Value`, dropping each; prints the line count. The
//! baseline of `cargo xtask bench wide`: the least any reader of a JSONL
//! log does, in a process of its own as `agentctx` runs in one.
#![forbid(unsafe_code)]

use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: parse-lines FILE");
        return ExitCode::from(2);
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("parse-lines: {path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut lines = 0usize;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        match serde_json::from_str::<serde_json::Value>(line) {
            Ok(value) => drop(std::hint::black_box(value)),
            Err(e) => {
                eprintln!("parse-lines: line {}: {e}", lines + 1);
                return ExitCode::FAILURE;
            }
        }
        lines += 1;
    }
    println!("{lines}");
    ExitCode::SUCCESS
}
