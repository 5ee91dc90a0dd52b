//! `cargo xtask package`: every crate packages as a self-contained crate,
//! and every dependency builds on the declared `rust-version` (D62: packaging).
//!
//! - each crate's manifest has a readme, keywords and categories and no
//!   placeholder URL, each library has docs.rs metadata, and its directory
//!   holds README.md and both license files (the same text as the top's);
//! - `cargo package --list` of each crate names those files and every file
//!   its sources `include_str!`/`include_bytes!`, each inside the crate
//!   (the list is what a `.crate` would hold; a full `cargo package` cannot
//!   resolve the unpublished path dependencies while `publish = false`);
//! - the demo the CLI embeds and the README's copy in `examples/` agree;
//! - MSRV: no package in `cargo metadata`'s graph declares a
//!   `rust-version` newer than the workspace's. Clippy's `incompatible_msrv`
//!   lint (on by default; clippy reads `rust-version`) covers the standard
//!   library items our code uses. Neither compiles with that toolchain:
//!   language features and compiler behaviour newer than it go unchecked.

use std::path::Path;
use std::process::Command;

/// The demo: embedded by agent-cli, copied at the top for the README.
const DEMO: [(&str, &str); 2] = [
    (
        "crates/agent-cli/demo/moderation/context.jsonl",
        "examples/moderation/context.jsonl",
    ),
    (
        "crates/agent-cli/demo/moderation/plan.json",
        "examples/moderation/plan.json",
    ),
];

/// Files every package holds.
const REQUIRED: [&str; 3] = ["README.md", "LICENSE-MIT", "LICENSE-APACHE"];

/// Runs every check; all problems at once.
pub(crate) fn check() -> Result<(), String> {
    let root = crate::workspace_root()?;
    let read = |path: &Path| {
        std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
    };
    let mut problems = Vec::new();
    let dirs = std::fs::read_dir(root.join("crates")).map_err(|e| format!("crates/: {e}"))?;
    let mut dirs: Vec<_> = dirs.flatten().map(|d| d.path()).collect();
    dirs.sort();
    for dir in dirs.iter().filter(|d| d.join("Cargo.toml").is_file()) {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let manifest = read(&dir.join("Cargo.toml"))?;
        problems.extend(manifest_problems(
            &name,
            &manifest,
            dir.join("src/lib.rs").is_file(),
        ));
        for file in REQUIRED {
            let path = dir.join(file);
            if !path.is_file() {
                problems.push(format!("crates/{name}: no {file}"));
            } else if file.starts_with("LICENSE") && read(&path)? != read(&root.join(file))? {
                problems.push(format!("crates/{name}/{file} differs from the top's"));
            }
        }
        let listed = list(&name)?;
        for file in REQUIRED {
            if !listed.iter().any(|l| l == file) {
                problems.push(format!("crates/{name}: {file} is not packaged"));
            }
        }
        problems.extend(includes_outside(&root, dir, &name, &listed)?);
    }
    for (inner, copy) in DEMO {
        if read(&root.join(inner))? != read(&root.join(copy))? {
            problems.push(format!("{copy} differs from {inner}, which the CLI embeds"));
        }
    }
    problems.extend(msrv()?);
    if problems.is_empty() {
        eprintln!("xtask: package: every crate packages on its own; MSRV of dependencies holds");
        Ok(())
    } else {
        Err(format!("package:\n  {}", problems.join("\n  ")))
    }
}

/// What crate `name`'s manifest lacks.
fn manifest_problems(name: &str, manifest: &str, library: bool) -> Vec<String> {
    let mut problems = Vec::new();
    for key in ["readme = ", "keywords = ", "categories = "] {
        if !manifest.lines().any(|l| l.starts_with(key)) {
            problems.push(format!(
                "crates/{name}/Cargo.toml has no {}",
                key.trim_end_matches(" = ")
            ));
        }
    }
    if manifest.contains(".invalid") {
        problems.push(format!("crates/{name}/Cargo.toml names a placeholder URL"));
    }
    if library && !manifest.contains("[package.metadata.docs.rs]") {
        problems.push(format!("crates/{name}/Cargo.toml has no docs.rs metadata"));
    }
    problems
}

/// The files `cargo package --list` would put in crate `name`.
fn list(name: &str) -> Result<Vec<String>, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let args = [
        "package",
        "-p",
        name,
        "--no-verify",
        "--list",
        "--allow-dirty",
    ];
    let out = Command::new(cargo)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run cargo package: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "`cargo {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect())
}

/// Every `include_str!`/`include_bytes!` of `dir/src` whose file is outside
/// the crate or not in its package.
fn includes_outside(
    root: &Path,
    dir: &Path,
    name: &str,
    listed: &[String],
) -> Result<Vec<String>, String> {
    let mut sources = Vec::new();
    crate::tidy::collect(root, &format!("crates/{name}/src"), &mut sources)?;
    let mut problems = Vec::new();
    for (path, text) in &sources {
        for included in included_paths(text) {
            let file = root.join(path).parent().map(|p| p.join(included));
            let inside = file
                .as_ref()
                .and_then(|f| f.canonicalize().ok())
                .and_then(|f| {
                    let dir = dir.canonicalize().ok()?;
                    f.strip_prefix(dir)
                        .ok()
                        .map(|r| r.to_string_lossy().into_owned())
                });
            match inside {
                Some(relative) if listed.contains(&relative) => {}
                Some(relative) => problems.push(format!("{path}: {relative} is not packaged")),
                None => problems.push(format!(
                    "{path}: includes {included}, outside crates/{name}"
                )),
            }
        }
    }
    Ok(problems)
}

/// The literal paths of `include_str!("…")` and `include_bytes!("…")`.
fn included_paths(text: &str) -> Vec<&str> {
    ["include_str!(\"", "include_bytes!(\""]
        .iter()
        .flat_map(|open| text.match_indices(open).map(move |(at, _)| at + open.len()))
        .filter_map(|start| text[start..].split('"').next())
        .collect()
}

/// Packages in the resolved graph whose `rust-version` is newer than the
/// workspace's (read from the workspace's own crates).
fn msrv() -> Result<Vec<String>, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--locked"])
        .output()
        .map_err(|e| format!("cannot run cargo metadata: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let metadata: serde_json::Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("bad cargo metadata: {e}"))?;
    let packages = metadata["packages"].as_array().cloned().unwrap_or_default();
    let version = |p: &serde_json::Value| p["rust_version"].as_str().map(parse_version);
    let ours = packages
        .iter()
        .find(|p| p["name"] == "agent-core")
        .and_then(version)
        .ok_or("agent-core declares no rust-version")?;
    Ok(packages
        .iter()
        .filter(|p| version(p).is_some_and(|v| v > ours))
        .map(|p| {
            format!(
                "{} {} needs Rust {}, newer than our rust-version",
                p["name"].as_str().unwrap_or("?"),
                p["version"].as_str().unwrap_or("?"),
                p["rust_version"].as_str().unwrap_or("?")
            )
        })
        .collect())
}

/// `1.89` or `1.89.0` as comparable numbers (major, minor, patch).
fn parse_version(text: &str) -> [u64; 3] {
    let mut parts = text.split('.').map(|n| n.parse().unwrap_or(0));
    [0; 3].map(|_| parts.next().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn d62_included_paths_are_found_in_source() {
        let text = r#"const A: &str = include_str!("../demo/a.json"); include_bytes!("b.bin")"#;
        assert_eq!(included_paths(text), vec!["../demo/a.json", "b.bin"]);
    }

    #[test]
    fn d62_versions_compare_by_number() {
        assert!(parse_version("1.90") > parse_version("1.89"));
        assert_eq!(parse_version("1.89.0"), parse_version("1.89"));
        assert!(parse_version("1.89.1") > parse_version("1.89"));
        assert!(parse_version("1.100") > parse_version("1.89.1"));
    }
}
