//! `cargo xtask public-api [--check]`: the public API of every library
//! crate, one item a line, checked in under `docs/public-api/` (decision
//! D60). Without `--check` it rewrites the snapshots; with it (what CI
//! runs) it fails with a diff when the API changed and the snapshot did
//! not, so every change of the public API is a reviewed change of a file.
//!
//! The same rustdoc run is CI's documentation check: every crate's docs,
//! the binaries' too, built with warnings as errors (a broken intra-doc
//! link fails it), so the docs are not built a second time as HTML.
//!
//! The items come from rustdoc's JSON output, rendered by the `public-api`
//! crate. That output is unstable: `RUSTC_BOOTSTRAP=1` asks the one stable
//! toolchain for it, and the `public-api` version in `xtask/Cargo.toml`
//! must read the format that toolchain writes ([`FORMAT`]).

use std::path::{Path, PathBuf};

/// The library crates whose API is kept (agent-cli is a binary).
const CRATES: [&str; 12] = [
    "agent-json",
    "agent-core",
    "agent-data",
    "agent-store",
    "agent-vars",
    "agent-render",
    "agent-output",
    "agent-instancing",
    "agent-plan",
    "agent-worker",
    "agent-loop",
    "agentctx",
];

/// The rustdoc JSON format the pinned `public-api` reads; a toolchain that
/// writes another needs the `public-api` release that reads it.
const FORMAT: u64 = 57;

/// Where the snapshots live, from the workspace root.
const SNAPSHOTS: &str = "docs/public-api";

/// Writes the snapshots, or (`check`) compares them with the API as built.
pub(crate) fn run(check: bool) -> Result<(), String> {
    let started = std::time::Instant::now();
    let target = target()?;
    let root = workspace_root()?;
    let mut changed = Vec::new();
    build_json(&target, &["--lib"], &CRATES)?;
    for krate in CRATES {
        let api = render(krate, &target)?;
        let path = root.join(SNAPSHOTS).join(format!("{krate}.txt"));
        let kept = std::fs::read_to_string(&path).unwrap_or_default();
        if kept == api {
            continue;
        }
        if check {
            changed.push(format!("{krate}:\n{}", diff(&kept, &api)));
        } else {
            std::fs::create_dir_all(root.join(SNAPSHOTS)).map_err(|e| e.to_string())?;
            std::fs::write(&path, &api).map_err(|e| format!("{}: {e}", path.display()))?;
            eprintln!("xtask: wrote {}", path.display());
        }
    }
    // The binaries' docs, checked the same way (their JSON is not kept:
    // `agentctx`, the binary, would be written over the facade's).
    build_json(&target, &["--bins"], &["agent-cli", "xtask"])?;
    eprintln!(
        "xtask: public API of {} crates, and every crate's docs, in {:.0} s",
        CRATES.len(),
        started.elapsed().as_secs_f64()
    );
    if changed.is_empty() {
        return Ok(());
    }
    Err(format!(
        "the public API changed; if that is meant, run `cargo xtask public-api` and commit {SNAPSHOTS}/ \
         (a removed or changed line breaks callers: that needs a new major version)\n{}",
        changed.join("\n")
    ))
}

/// The target directory of this pass (and of CI's clippy, which fills it
/// with what the docs need of the dependencies).
pub(crate) fn target() -> Result<PathBuf, String> {
    Ok(crate::bench::target_dir()?.join("public-api"))
}

/// What every cargo run in [`target`] runs with: that directory, and the
/// flag rustdoc's JSON output needs (the same for clippy, or the
/// dependencies' build scripts would run again for the docs).
pub(crate) fn env(target: &Path) -> [(&'static str, String); 2] {
    [
        ("CARGO_TARGET_DIR", target.to_string_lossy().into_owned()),
        ("RUSTC_BOOTSTRAP", "1".to_owned()),
    ]
}

/// Builds rustdoc's JSON of the `targets` of `crates`, in one cargo run
/// (one feature resolution, crates documented in parallel), with
/// rustdoc's warnings as errors.
///
/// In a target directory of its own: `RUSTC_BOOTSTRAP` is an input of
/// build scripts (proc-macro2's, serde's), so sharing the main one would
/// rebuild them, and everything above them, on every switch.
fn build_json(target: &Path, targets: &[&str], crates: &[&str]) -> Result<(), String> {
    let mut args = vec!["doc", "-q", "--no-deps", "--all-features"];
    args.extend(targets);
    for krate in crates {
        args.extend(["-p", krate]);
    }
    let [(dir, at), (bootstrap, on)] = env(target);
    crate::cargo(
        &args,
        &[
            (dir, &at),
            (bootstrap, &on),
            (
                "RUSTDOCFLAGS",
                "-Z unstable-options --output-format json -D warnings",
            ),
        ],
    )
}

/// One crate's public API, one item a line, sorted, from its rustdoc JSON.
fn render(krate: &str, target: &Path) -> Result<String, String> {
    let json = target
        .join("doc")
        .join(format!("{}.json", krate.replace('-', "_")));
    let text = std::fs::read(&json).map_err(|e| format!("{}: {e}", json.display()))?;
    let format = serde_json::from_slice::<serde_json::Value>(&text)
        .map_err(|e| format!("{}: {e}", json.display()))?["format_version"]
        .as_u64();
    if format != Some(FORMAT) {
        return Err(format!(
            "{} is rustdoc JSON format {format:?}; the public-api crate xtask uses reads format \
             {FORMAT}: move it to the release that reads the toolchain's format",
            json.display()
        ));
    }
    let api = public_api::Builder::from_rustdoc_json(&json)
        .omit_blanket_impls(true)
        .omit_auto_trait_impls(true)
        .omit_auto_derived_impls(true)
        .build()
        .map_err(|e| format!("{}: {e}", json.display()))?;
    let mut out = String::new();
    for item in api.items() {
        out.push_str(&item.to_string());
        out.push('\n');
    }
    Ok(out)
}

/// The lines only in `old` (`-`) and only in `new` (`+`); both are sorted
/// lists of items, so that is the whole change.
fn diff(old: &str, new: &str) -> String {
    let old: std::collections::BTreeSet<&str> = old.lines().collect();
    let new: std::collections::BTreeSet<&str> = new.lines().collect();
    let removed = old.difference(&new).map(|l| format!("- {l}"));
    let added = new.difference(&old).map(|l| format!("+ {l}"));
    removed.chain(added).collect::<Vec<_>>().join("\n")
}

/// The workspace's root directory (this file is in `xtask/src/`).
fn workspace_root() -> Result<PathBuf, String> {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .ok_or_else(|| "xtask has no parent directory".into())
}

#[cfg(test)]
mod tests {
    use super::diff;

    #[test]
    fn d60_a_changed_api_shows_what_went_and_what_came() {
        assert_eq!(
            diff("pub fn a()\npub fn b()\n", "pub fn b()\npub fn c()\n"),
            "- pub fn a()\n+ pub fn c()"
        );
        assert_eq!(diff("pub fn a()\n", "pub fn a()\n"), "");
    }
}
