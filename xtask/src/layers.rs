//! The layering rule. The layers form a tree over agent-data, not a line:
//! agent-store, agent-vars and agent-render each build on agent-data alone
//! and never see each other. The layers that write (agent-output and all
//! above it) write through agent-data's append seam and never see
//! agent-store, which only the worker and the two tops build on. Each crate
//! names the crates it builds on directly ([`LAYERS`]); it may depend on
//! those and, transitively, on everything they may depend on — nothing else
//! in the workspace.

use serde_json::Value;
use std::process::Command;

/// Each layer and the layers it builds on directly, bottom first
/// (drawn in docs/architecture.md).
pub(crate) const LAYERS: [(&str, &[&str]); 14] = [
    ("agent-json", &[]),
    ("agent-core", &["agent-json"]),
    ("agent-data", &["agent-core"]),
    ("agent-store", &["agent-data"]),
    ("agent-vars", &["agent-data"]),
    ("agent-render", &["agent-data"]),
    ("agent-output", &["agent-vars"]),
    ("agent-instancing", &["agent-output"]),
    ("agent-plan", &["agent-output"]),
    // Many workers on one stored plan: the only layer that needs both a
    // plan and a store (and a database client).
    ("agent-worker", &["agent-plan", "agent-store"]),
    ("agent-loop", &["agent-plan", "agent-render"]),
    // The facade for library users and the binary: two tops, side by side.
    (
        "agentctx",
        &["agent-loop", "agent-instancing", "agent-worker"],
    ),
    (
        "agent-cli",
        &["agent-loop", "agent-instancing", "agent-worker"],
    ),
    // The Python package's native module: a binding over the facade.
    ("agentctx-py", &["agentctx"]),
];

/// Reads `cargo metadata` and fails on any dependency edge [`LAYERS`] does
/// not allow, or from a layer to a workspace crate that is not a layer.
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
    let mut violations = violations(&packages, &workspace);
    violations.extend(database_clients()?);
    if violations.is_empty() {
        eprintln!("xtask: layering ok ({} workspace crates)", workspace.len());
        Ok(())
    } else {
        Err(format!("layering violated:\n  {}", violations.join("\n  ")))
    }
}

/// The layers `name` may depend on: those it builds on, and theirs.
fn allowed(name: &str) -> Vec<&'static str> {
    let mut allowed: Vec<&'static str> = Vec::new();
    let mut todo: Vec<&str> = vec![name];
    while let Some(layer) = todo.pop() {
        let below = LAYERS
            .iter()
            .find(|(l, _)| *l == layer)
            .map_or(&[][..], |(_, below)| *below);
        for b in below {
            if !allowed.contains(b) {
                allowed.push(b);
                todo.push(b);
            }
        }
    }
    allowed
}

/// Layers that must build without a database client, whatever features
/// their dependents turn on below them: the plan runs in process, the
/// worker is the layer that talks to PostgreSQL.
const WITHOUT_DATABASE: [&str; 2] = ["agent-plan", "agent-loop"];

/// The database client crates [`WITHOUT_DATABASE`] must not pull in.
const DATABASE_CLIENTS: [&str; 3] = ["postgres", "tokio-postgres", "postgres-protocol"];

/// Fails when `cargo tree -e normal` of a layer in [`WITHOUT_DATABASE`]
/// (its own features only) shows a database client.
fn database_clients() -> Result<Vec<String>, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut found = Vec::new();
    for layer in WITHOUT_DATABASE {
        let output = Command::new(&cargo)
            .args(["tree", "-p", layer, "-e", "normal", "--prefix", "none"])
            .args(["--format", "{p}"])
            .output()
            .map_err(|e| format!("cannot run cargo tree: {e}"))?;
        if !output.status.success() {
            return Err(format!(
                "cargo tree -p {layer} failed: {}",
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        found.extend(clients_in(layer, &String::from_utf8_lossy(&output.stdout)));
    }
    Ok(found)
}

/// The database clients named in `tree` (one package per line).
fn clients_in(layer: &str, tree: &str) -> Vec<String> {
    let mut found: Vec<String> = tree
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|package| DATABASE_CLIENTS.contains(package))
        .map(|package| format!("{layer} depends on the database client {package}"))
        .collect();
    found.sort();
    found.dedup();
    found
}

fn is_layer(name: &str) -> bool {
    LAYERS.iter().any(|(layer, _)| *layer == name)
}

fn violations(packages: &[Value], workspace: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for package in packages {
        let name = package["name"].as_str().unwrap_or_default();
        if !is_layer(name) {
            continue;
        }
        let allowed = allowed(name);
        let deps = package["dependencies"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for dep in deps {
            let dep_name = dep["name"].as_str().unwrap_or_default();
            // Tests may build their fixtures with any layer: dev-dependencies
            // are not part of the library graph downstream users get.
            let dev = dep["kind"].as_str() == Some("dev");
            if dev || !workspace.contains(&dep_name) || allowed.contains(&dep_name) {
                continue;
            }
            found.push(if is_layer(dep_name) {
                format!(
                    "{name} depends on {dep_name}, which it does not build on (it may use {})",
                    if allowed.is_empty() {
                        "nothing".to_owned()
                    } else {
                        allowed.join(", ")
                    }
                )
            } else {
                format!("{name} depends on {dep_name}, which is not a layer")
            });
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn upward_and_sideways_edges_are_reported() {
        let packages = vec![
            json!({"name": "agent-core", "dependencies": [{"name": "agent-data"}, {"name": "serde"}]}),
            json!({"name": "agent-data", "dependencies": [{"name": "agent-core"}]}),
            json!({"name": "agent-render", "dependencies": [{"name": "agent-vars"}, {"name": "agent-core"}]}),
            json!({"name": "agent-output", "dependencies": [{"name": "agent-core"}, {"name": "agent-vars"}]}),
            json!({"name": "agent-vars", "dependencies": [{"name": "agent-output", "kind": "dev"}]}),
        ];
        let workspace = [
            "agent-core",
            "agent-data",
            "agent-render",
            "agent-vars",
            "agent-output",
        ];
        assert_eq!(
            violations(&packages, &workspace),
            [
                "agent-core depends on agent-data, which it does not build on (it may use agent-json)",
                "agent-render depends on agent-vars, which it does not build on (it may use agent-data, agent-core, agent-json)",
            ],
            "agent-output may use agent-core through agent-data; a dev-dependency may point anywhere"
        );
    }

    #[test]
    fn a_database_client_in_a_layer_without_database_is_reported() {
        let tree = "agent-plan v0.1.0 (/w/crates/agent-plan)\nrayon v1.10.0\npostgres v0.19.9\npostgres v0.19.9\npostgres-types v0.2.8\n";
        assert_eq!(
            clients_in("agent-plan", tree),
            ["agent-plan depends on the database client postgres"]
        );
        assert!(clients_in("agent-plan", "agent-plan v0.1.0\nrayon v1.10.0\n").is_empty());
    }

    #[test]
    fn the_layers_that_write_never_see_the_store() {
        for layer in [
            "agent-output",
            "agent-instancing",
            "agent-plan",
            "agent-loop",
        ] {
            let allowed = allowed(layer);
            assert!(allowed.contains(&"agent-data"), "{layer}: {allowed:?}");
            assert!(!allowed.contains(&"agent-store"), "{layer}: {allowed:?}");
        }
        assert!(allowed("agent-worker").contains(&"agent-store"));
    }

    #[test]
    fn every_layer_builds_only_on_layers_listed_before_it() {
        for (i, (layer, below)) in LAYERS.iter().enumerate() {
            for b in *below {
                let at = LAYERS.iter().position(|(l, _)| l == b);
                assert!(at.is_some_and(|at| at < i), "{layer} builds on {b}");
            }
        }
    }
}
