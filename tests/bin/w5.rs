//! W5 outside criterion, for `cargo xtask bench cli` and the
//! LangGraph comparison (`xtask/langgraph/compare.py`):
//!
//! - `w5 files DIR N…` writes `DIR/w5-N.jsonl` for each N (the W5 context
//!   of N messages, its snapshot taken [`W5_TAIL`] messages before the end)
//!   and prints `{"files":[{"messages","path","bytes","snapshot_bytes"}]}`.
//! - `w5 open FILE` times one cold open in this fresh process —
//!   `FileStore::open(FILE)?.load_tail()` and a read of `†state.x` — and
//!   prints `{"ns","x","complete"}` (`complete`: false when it opened from
//!   the snapshot).
#![forbid(unsafe_code)]

use agent_core::json;
use agent_store::{FileStore, Store};
use agentctx_tests::workloads::{self, W5_TAIL};
use std::time::Instant;

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("w5: {message}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("files") if args.len() >= 3 => {
            let dir = std::path::Path::new(&args[1]);
            std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
            let mut files = Vec::new();
            for n in &args[2..] {
                let messages: usize = n.parse().map_err(|_| format!("bad size {n:?}"))?;
                let path = dir.join(format!("w5-{messages}.jsonl"));
                let snapshot_bytes = workloads::w5_file(&path, messages)?;
                let bytes = std::fs::metadata(&path).map_err(|e| e.to_string())?.len();
                files.push(json!({"messages": messages, "path": path, "bytes": bytes,
                    "snapshot_bytes": snapshot_bytes, "tail": W5_TAIL}));
            }
            println!("{}", json!({ "files": files }));
            Ok(())
        }
        Some("open") if args.len() == 2 => {
            let x: agent_core::Reference = "†state.x".parse().map_err(|e| format!("{e}"))?;
            let started = Instant::now();
            let context = FileStore::open(&args[1])
                .and_then(|mut store| store.load_tail())
                .map_err(|e| e.to_string())?
                .context;
            let value = context.read(&x, None).cloned();
            let ns = started.elapsed().as_nanos();
            println!(
                "{}",
                json!({"ns": ns, "x": value, "complete": context.is_complete()})
            );
            Ok(())
        }
        _ => Err("usage: w5 files DIR N… | w5 open FILE".into()),
    }
}
