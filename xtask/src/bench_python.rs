//! `cargo xtask bench python`: the Python package's rows, measured by
//! `xtask/python/bench.py` in a venv of their own with the package built
//! in release: `ctx.apply` and `open` + `view` from Python against the
//! Rust facade (`py-baseline`), and `AgentctxSaver` against LangGraph's
//! `SqliteSaver` and `PostgresSaver` on the same graph.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// What the bench needs beside the package, pinned as the tests pin
/// LangGraph.
const TOOLS: [&str; 5] = [
    "maturin>=1.16,<1.17",
    "langgraph==1.2.22",
    "langgraph-checkpoint-sqlite==3.1.2",
    "langgraph-checkpoint-postgres>=3,<4",
    "psycopg[binary]>=3.2,<4",
];

pub(crate) fn run(target: &Path, database: &str) -> Result<Vec<Value>, String> {
    let release = crate::release_dir()?;
    eprintln!("xtask: the Python package, release build, into a bench venv");
    let bin = crate::python::install(&target.join("python-bench-venv"), &TOOLS, "release")?;
    let root = crate::workspace_root()?;
    let scratch = target.join("bench-python");
    let _ = std::fs::remove_dir_all(&scratch);
    let started = std::time::Instant::now();
    let out = Command::new(bin.join("python"))
        .arg(root.join("xtask").join("python").join("bench.py"))
        .arg(release.join("py-baseline"))
        .arg(release.join("w5"))
        .arg(database)
        .arg(&scratch)
        .current_dir(target)
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run bench.py: {e}"))?;
    eprintln!(
        "xtask: bench.py took {:.0} s",
        started.elapsed().as_secs_f64()
    );
    if !out.status.success() {
        return Err(format!("bench.py failed ({})", out.status));
    }
    let rows: Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("bench.py printed no JSON array: {e}"))?;
    Ok(rows.as_array().cloned().unwrap_or_default())
}
