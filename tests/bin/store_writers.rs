//! One writer process of the concurrent-append benchmark:
//! `store-writers FILE COUNT WRITER` commits COUNT pushes of `WRITER.i` onto
//! `†state.log` in FILE, one durable append each, and prints
//! `{"appends": COUNT, "seconds": …}`. `cargo xtask bench` starts 1, 2, 4
//! and 8 of these at once on one file.
#![forbid(unsafe_code)]

use agent_data::Message;
use agent_store::{FileStore, Store};
use std::time::Instant;

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("store-writers: {message}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let [_, path, count, writer] = args.as_slice() else {
        return Err("usage: store-writers FILE COUNT WRITER".into());
    };
    let count: usize = count.parse().map_err(|e| format!("COUNT: {e}"))?;
    let mut store = FileStore::open(path).map_err(|e| e.to_string())?;
    let mut context = store.load().map_err(|e| e.to_string())?.context;
    let started = Instant::now();
    for i in 0..count {
        let push = Message::from_value(agent_core::json!({"type": "state",
            "data": {"log": format!("{writer}.{i}")},
            "_outputPath": "†state.log", "_outputMethod": "push"}))
        .map_err(|e| e.to_string())?;
        store
            .commit(&mut context, &push)
            .map_err(|e| e.to_string())?;
    }
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "{}",
        agent_core::json!({"appends": count, "seconds": seconds})
    );
    Ok(())
}
