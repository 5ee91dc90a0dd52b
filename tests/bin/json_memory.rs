//! `json-memory SHAPE VALUE`: the memory one value type takes to hold a
//! wide context's messages, for D58's choice of value type.
//!
//! SHAPE is one of `cargo xtask bench wide`'s shapes (`array`: one message
//! with a 1,000,000-integer array; `object`: one with a 1,000,000-key
//! object; `deep`: 10,000 messages nested 100 deep; `instances`: 200,000
//! small messages). VALUE is `core` (`agent_core::json::Value`) or
//! `serde` (`serde_json::Value` with the features this build has: since
//! D66 its defaults, no longer the exact and ordered features D58's table
//! measured). Every line
//! of the shape's JSONL text is read and kept; the program prints one JSON
//! object: the text's bytes, the resident growth while reading
//! (`VmHWM` after minus `VmRSS` before, from `/proc/self/status`), and
//! their ratio.
#![forbid(unsafe_code)]

use std::fmt::Write;
use std::process::ExitCode;

fn status_bytes(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kib| kib.parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}

fn shape(name: &str) -> Option<String> {
    let mut out = String::new();
    match name {
        "array" => {
            out.push_str(r#"{"type":"state","v":["#);
            for i in 0..1_000_000 {
                let _ = write!(out, "{}{i}", if i == 0 { "" } else { "," });
            }
            out.push_str("]}\n");
        }
        "object" => {
            out.push_str(r#"{"type":"state","v":{"#);
            for i in 0..1_000_000 {
                let _ = write!(out, r#"{}"k{i}":{i}"#, if i == 0 { "" } else { "," });
            }
            out.push_str("}}\n");
        }
        "deep" => {
            let (open, close) = (r#"{"a":"#.repeat(99), "}".repeat(100));
            for i in 0..10_000 {
                let _ = writeln!(out, r#"{{"type":"state","d{i}":{open}{{"a":{i}{close}}}"#);
            }
        }
        "instances" => {
            for i in 0..200_000 {
                let _ = writeln!(out, r#"{{"type":"state","v":{i},"_instance":"i{i}"}}"#);
            }
        }
        _ => return None,
    }
    Some(out)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(text), Some(which)) = (args.first().and_then(|s| shape(s)), args.get(1)) else {
        eprintln!("usage: json-memory array|object|deep|instances core|serde");
        return ExitCode::from(2);
    };
    let before = status_bytes("VmRSS:");
    let kept = match which.as_str() {
        "core" => text
            .lines()
            .map(|line| {
                agent_core::json::from_str(line)
                    .map(drop_later)
                    .map_err(|e| e.to_string())
            })
            .collect::<Result<Vec<_>, _>>()
            .map(|v| v.len()),
        "serde" => text
            .lines()
            .map(|line| {
                serde_json::from_str::<serde_json::Value>(line)
                    .map(drop_later)
                    .map_err(|e| e.to_string())
            })
            .collect::<Result<Vec<_>, _>>()
            .map(|v| v.len()),
        _ => Err(format!("unknown value type {which:?}")),
    };
    let grown = status_bytes("VmHWM:").saturating_sub(before);
    match kept {
        Ok(messages) => {
            println!(
                "{}",
                serde_json::json!({"value": which, "messages": messages, "text_bytes": text.len(),
                                   "grown_bytes": grown, "ratio": grown as f64 / text.len() as f64})
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

/// Keeps every value alive until the process ends, so the peak holds them
/// all.
fn drop_later<T: 'static>(value: T) -> &'static T {
    Box::leak(Box::new(value))
}
