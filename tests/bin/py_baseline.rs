//! The Rust side of the Python package's bench rows (`cargo xtask bench
//! python`): the same work as the Python calls, through the facade, on
//! command from the Python bench (`xtask/python/bench.py`), which runs the
//! two in turns, round after round. One command a line on stdin, one
//! answer a line on stdout (the nanoseconds it took, or `error: …`):
//!
//! - `apply PATH N`: N durable `StoredContext::apply` of a one-key `set`
//!   (`{"_tool":"t","_outputPath":"†state.n"}`, the result the round's
//!   count) onto the file context at PATH, opened once (created if
//!   missing) — what `ctx.apply(call, result)` does from Python;
//! - `open PATH N`: N times `StoredContext::open_existing(PATH)` and the
//!   view of `state` copied out (as Python receives it) — what
//!   `agentctx.open(PATH).view("state")` does.
#![forbid(unsafe_code)]

use agent_core::json;
use agentctx::StoredContext;
use agentctx::output::Outcome;
use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::time::Instant;

fn main() -> std::process::ExitCode {
    let mut open: HashMap<String, StoredContext> = HashMap::new();
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let answer = match command(&mut open, &line) {
            Ok(ns) => ns.to_string(),
            Err(message) => format!("error: {message}"),
        };
        if writeln!(stdout, "{answer}")
            .and_then(|()| stdout.flush())
            .is_err()
        {
            break;
        }
    }
    std::process::ExitCode::SUCCESS
}

fn command(open: &mut HashMap<String, StoredContext>, line: &str) -> Result<u128, String> {
    let words: Vec<&str> = line.split(' ').collect();
    let (Some(&what), Some(&path), Some(count)) = (words.first(), words.get(1), words.get(2))
    else {
        return Err(format!("usage: apply|open PATH N, not {line:?}"));
    };
    let count: usize = count.parse().map_err(|_| format!("bad count {count:?}"))?;
    match what {
        "apply" => {
            if !open.contains_key(path) {
                let ctx = StoredContext::open(path).map_err(|e| e.to_string())?;
                open.insert(path.to_owned(), ctx);
            }
            let ctx = open.get_mut(path).ok_or("the context is not open")?;
            let call = json!({"_tool": "t", "_outputPath": "†state.n"});
            let started = Instant::now();
            for i in 0..count {
                ctx.apply(call.clone(), Outcome::Success(json!(i)))
                    .map_err(|e| e.to_string())?;
            }
            Ok(started.elapsed().as_nanos())
        }
        "open" => {
            let state = "state".parse().map_err(|e| format!("{e}"))?;
            let started = Instant::now();
            for _ in 0..count {
                let ctx = StoredContext::open_existing(path).map_err(|e| e.to_string())?;
                let view = ctx.context().view(&state, None).cloned();
                std::hint::black_box(view.ok_or("no state view")?);
            }
            Ok(started.elapsed().as_nanos())
        }
        other => Err(format!("unknown command {other:?}")),
    }
}
