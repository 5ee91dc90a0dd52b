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

/// The crates, by directory from the workspace root, run in this order.
const CRATES: [&str; 3] = [
    "tests/outside/downstream",
    "tests/outside/one-layer",
    "crates/agent-json/oracle",
];

/// Tests each crate with its own lockfile, in a target directory of their
/// own under ours.
pub(crate) fn check() -> Result<(), String> {
    let root = crate::workspace_root()?;
    let target = root.join("target").join("outside");
    let target = target.to_str().ok_or("the target directory is not UTF-8")?;
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
