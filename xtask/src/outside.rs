//! The crates outside the workspace: each its own workspace, built apart
//! from ours so that its dependencies' features are not unified with the
//! workspace's (D66: serde_json defaults).
//!
//! - `downstream`: a user's crate depending on `agentctx`, whose own
//!   serde_json code (untagged enums, flatten, the recursion limit, `json!`)
//!   behaves as serde_json's defaults say next to agentctx;
//! - `one-layer`: a user's crate depending on agent-data alone (no schemas)
//!   with its `proptest` feature, property-testing merge semantics with the
//!   exported strategies and reference model (D67: proptest feature), and
//!   checking that what a schema would check is refused without the
//!   validator (D61: features cut);
//! - `crates/agent-json/oracle`: agent-json against serde_json with the
//!   exact and ordered features it replaced (D58: own JSON value), which only this build
//!   turns on.

use crate::cargo;
use std::process::Command;

/// The crates, by directory from the workspace root, run in this order.
const CRATES: [&str; 3] = [
    "tests/outside/downstream",
    "tests/outside/one-layer",
    "crates/agent-json/oracle",
];

/// Tests each crate with its own lockfile, in our target directory.
pub(crate) fn check() -> Result<(), String> {
    let root = crate::workspace_root()?;
    // The workspace's own target directory: a unit built with the same
    // features is reused, one with others is built beside it (features are
    // still resolved per crate: D91: CI in 12 minutes).
    let target = crate::bench::target_dir()?;
    let target = target.to_str().ok_or("the target directory is not UTF-8")?;
    same_serde_json_features(&root.join("tests/outside/downstream/Cargo.toml"))?;
    for dir in CRATES {
        let manifest = root.join(dir).join("Cargo.toml");
        let manifest = manifest.to_str().ok_or("the manifest path is not UTF-8")?;
        cargo(
            &[
                "test",
                "--locked",
                "--manifest-path",
                manifest,
                "--target-dir",
                target,
            ],
            &[],
        )?;
    }
    Ok(())
}

/// serde_json features that change what a user's own serde_json code does
/// (D66: serde_json defaults): none may be turned on by agentctx.
const CHANGING: [&str; 3] = ["preserve_order", "arbitrary_precision", "unbounded_depth"];

/// The downstream crate's tests build the facade with schemas alone; this
/// checks that a build with every feature (`full`) turns on exactly the
/// serde_json features the tested one does, and none of [`CHANGING`], so
/// the tests speak for every build.
fn same_serde_json_features(manifest: &std::path::Path) -> Result<(), String> {
    let tested = serde_json_features(manifest, &[])?;
    let full = serde_json_features(manifest, &["--features", "full"])?;
    if tested != full {
        return Err(format!(
            "downstream: agentctx with every feature turns on serde_json features {full:?}, \
             the tested build {tested:?}: the tests no longer speak for every build"
        ));
    }
    let changing: Vec<&String> = full
        .iter()
        .filter(|f| CHANGING.contains(&f.as_str()))
        .collect();
    if !changing.is_empty() {
        return Err(format!(
            "downstream: agentctx turns on serde_json's {changing:?}, which change a user's own \
             serde_json code (D66: serde_json defaults)"
        ));
    }
    eprintln!(
        "xtask: downstream: serde_json features {full:?} with and without every agentctx feature"
    );
    Ok(())
}

/// The serde_json features `cargo tree -e features` shows for `manifest`.
fn serde_json_features(
    manifest: &std::path::Path,
    extra: &[&str],
) -> Result<std::collections::BTreeSet<String>, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args([
            "tree",
            "-q",
            "--locked",
            "-e",
            "features",
            "-i",
            "serde_json",
        ])
        .args(["--prefix", "none", "--manifest-path"])
        .arg(manifest)
        .args(extra)
        .output()
        .map_err(|e| format!("cannot run cargo tree: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "cargo tree of {} failed: {}",
            manifest.display(),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(features_named(&String::from_utf8_lossy(&output.stdout)))
}

/// `X` of every `serde_json feature "X"` line of `cargo tree` output.
fn features_named(tree: &str) -> std::collections::BTreeSet<String> {
    tree.lines()
        .filter_map(|line| line.trim().strip_prefix("serde_json feature \""))
        .filter_map(|rest| rest.split('"').next())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::features_named;

    #[test]
    fn d66_serde_json_features_are_read_from_cargo_tree() {
        let tree = "serde_json v1.0.154\nserde_json feature \"default\"\nagentctx v0.1.0\nserde_json feature \"raw_value\"\nserde_json feature \"default\" (*)\n";
        let found: Vec<String> = features_named(tree).into_iter().collect();
        assert_eq!(found, ["default", "raw_value"]);
    }
}
