//! The layering rule: a crate depends only on crates earlier in `LAYERS`.

use serde_json::Value;
use std::process::Command;

/// The layer order, bottom first (README, docs/architecture.md).
pub(crate) const LAYERS: [&str; 9] = [
    "agent-core",
    "agent-data",
    "agent-store",
    "agent-vars",
    "agent-output",
    "agent-instancing",
    "agent-render",
    "agent-plan",
    "agent-cli",
];

/// Reads `cargo metadata` and fails on any dependency edge that points up
/// (or sideways) in `LAYERS`, or from a layer to a non-layer workspace crate.
pub(crate) fn check() -> Result<(), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .output()
        .map_err(|e| format!("cannot run cargo metadata: {e}"))?;
    if !output.status.success() {
        return Err("cargo metadata failed".into());
    }
    let metadata: Value =
        serde_json::from_slice(&output.stdout).map_err(|e| format!("bad cargo metadata: {e}"))?;
    let packages = metadata["packages"].as_array().cloned().unwrap_or_default();
    let workspace: Vec<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    let violations = violations(&packages, &workspace);
    if violations.is_empty() {
        eprintln!("xtask: layering ok ({} workspace crates)", workspace.len());
        Ok(())
    } else {
        Err(format!("layering violated:\n  {}", violations.join("\n  ")))
    }
}

fn rank(name: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| *layer == name)
}

fn violations(packages: &[Value], workspace: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for package in packages {
        let name = package["name"].as_str().unwrap_or_default();
        let Some(own) = rank(name) else { continue };
        let deps = package["dependencies"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for dep in deps {
            let dep_name = dep["name"].as_str().unwrap_or_default();
            if !workspace.contains(&dep_name) {
                continue;
            }
            match rank(dep_name) {
                Some(r) if r < own => {}
                Some(_) => found.push(format!(
                    "{name} (layer {own}) depends on {dep_name}, which is not below it"
                )),
                None => found.push(format!(
                    "{name} depends on {dep_name}, which is not a layer"
                )),
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn upward_edges_are_reported() {
        let packages = vec![
            json!({"name": "agent-core", "dependencies": [{"name": "agent-data"}, {"name": "serde"}]}),
            json!({"name": "agent-data", "dependencies": [{"name": "agent-core"}]}),
        ];
        let found = violations(&packages, &["agent-core", "agent-data"]);
        assert_eq!(found.len(), 1);
        assert!(found[0].starts_with("agent-core (layer 0) depends on agent-data"));
    }
}
