//! `cargo xtask features`: the features cut what they promise (D61: features cut).
//!
//! - `cargo tree -p agentctx --no-default-features -e normal` holds no HTTP
//!   or database client and none of the heavy optional dependencies: a crate
//!   that wants the fold does not get an HTTP stack;
//! - the feature sets that matter compile: the facade with no default
//!   features (which builds every layer below the loop and the worker with
//!   none of theirs), and with only `postgres` and `async` (the worker
//!   without the loop). The default and all-features builds are the rest of
//!   CI's; agent-data without `schema` is tested by CI in
//!   `tests/outside/one-layer` (`tests/no_schema.rs`).

use crate::cargo;
use std::process::Command;

/// Crates `agentctx --no-default-features` must not pull in.
const CUT: [&str; 11] = [
    "reqwest",
    "hyper",
    "tokio",
    "tokio-postgres",
    "postgres",
    "rustls",
    "ring",
    "jsonschema",
    "tiktoken-rs",
    "rayon",
    "agent-loop",
];

/// Runs the tree check, then the feature-set builds.
pub(crate) fn check() -> Result<(), String> {
    tree()?;
    cargo(&["check", "-p", "agentctx", "--no-default-features"], &[])?;
    cargo(
        &[
            "check",
            "-p",
            "agentctx",
            "--no-default-features",
            "--features",
            "postgres,async",
        ],
        &[],
    )
}

/// Fails naming every crate of [`CUT`] in the facade's minimal tree.
fn tree() -> Result<(), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let args = [
        "tree",
        "-p",
        "agentctx",
        "--no-default-features",
        "-e",
        "normal",
        "--prefix",
        "none",
        "--format",
        "{p}",
    ];
    let out = Command::new(cargo)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run cargo tree: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "`cargo {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let tree = String::from_utf8_lossy(&out.stdout);
    let found = pulled(&tree);
    if found.is_empty() {
        eprintln!("xtask: agentctx --no-default-features pulls none of {CUT:?}");
        Ok(())
    } else {
        Err(format!(
            "agentctx --no-default-features pulls in {} (`cargo {}`)",
            found.join(", "),
            args.join(" ")
        ))
    }
}

/// The crates of [`CUT`] named in `tree` (one `name vX.Y.Z …` per line).
fn pulled(tree: &str) -> Vec<&'static str> {
    let names: Vec<&str> = tree
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .collect();
    CUT.iter()
        .copied()
        .filter(|cut| names.contains(cut))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn d61_a_cut_crate_in_the_tree_is_named_and_a_prefix_is_not() {
        let tree = "agentctx v0.1.0 (/w)\ntokio-postgres v0.7.1\nrayon-core v1.13.0\n";
        assert_eq!(pulled(tree), vec!["tokio-postgres"]);
    }
}
