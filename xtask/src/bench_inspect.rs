//! `cargo xtask bench inspect`: `agentctx inspect` (the release binary)
//! on a generated context of 100,000 messages over 1,000 instances, in a
//! real headless Chromium, by the browser tests' own `scale.test.mjs`:
//! how long until the page is usable after opening, until a point typed
//! in is shown, and until an append by another process is shown (each
//! against 1 s), and the server's memory beyond what it holds for a
//! one-message context, against the log's bytes.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

pub(crate) fn run(target: &Path) -> Result<Vec<Value>, String> {
    let release = crate::release_dir()?;
    let dir = crate::browser::ready()?;
    let report = target.join("bench-inspect.json");
    let _ = std::fs::remove_file(&report);
    crate::browser::run_timed(
        Command::new("node")
            .args(["--test", "--test-timeout=300000", "scale.test.mjs"])
            .current_dir(&dir)
            .env("AGENTCTX_BIN", release.join("agentctx"))
            .env("AGENTCTX_SCALE_REPORT", &report),
        "the inspector at scale",
    )?;
    let text = std::fs::read_to_string(&report).map_err(|e| {
        format!(
            "scale.test.mjs wrote no report at {}: {e}",
            report.display()
        )
    })?;
    let rows: Value = serde_json::from_str(&text)
        .map_err(|e| format!("{}: not a JSON array of rows: {e}", report.display()))?;
    Ok(rows.as_array().cloned().unwrap_or_default())
}
