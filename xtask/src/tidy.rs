//! The tidy check (rust-analyzer's `tidy.rs`): conventions that keep the
//! docs and the tests from drifting apart.
//!
//! - every rule of `docs/spec.md` (`**R<N> —`) has a test whose name cites
//!   it (`r<n>_…` or `…_r<n>_…`), except the rules still [`PENDING`], which
//!   must have none (so the list shrinks as they land);
//! - every test `docs/spec-map.md` names exists, and every `r<n>_*` pattern
//!   there matches one;
//! - every rule of `docs/spec.md` has a row in `docs/spec-map.md`, the rows
//!   in the spec's order, and every code reference there is an anchor
//!   (`path/from/root.rs#Name`) whose file exists and holds the name
//!   ([`anchors`]);
//! - nothing in the repository points outside it (the contract is
//!   `docs/spec.md`, not a file beside the repository);
//! - every crate inherits the workspace lints, which deny undocumented
//!   public items and unsafe code;
//! - every ```rust block of the README is the text of an example that
//!   compiles (`crates/*/examples/*.rs`), so it cannot drift;
//! - no source file of `crates/*/src/` or `xtask/src/` is longer than 700
//!   lines, no comment cites an issue number, and tests share code through
//!   the test-support crate, each crate's integration tests one binary
//!   (`tests/it/`) ([`code`]);
//! - `docs/decisions.md` opens with an index of its decisions, and
//!   `docs/architecture.md` names every directory of `crates/` ([`docs`]).

mod anchors;
mod code;
mod docs;

use std::path::Path;

/// Rules whose layer is not built yet (none now; a new rule whose code is
/// still to come is listed here until its first test lands).
const PENDING: [&str; 0] = [];

/// Text that points outside the repository.
const OUTSIDE: [&str; 3] = ["../shared", "SPEC.md", "shared beside"];

/// Runs every check from the workspace root; all problems at once.
pub(crate) fn check() -> Result<(), String> {
    let root = crate::workspace_root()?;
    let read = |path: &str| {
        std::fs::read_to_string(root.join(path)).map_err(|e| format!("cannot read {path}: {e}"))
    };
    let spec = read("docs/spec.md")?;
    let map = read("docs/spec-map.md")?;
    let mut sources = Vec::new();
    for dir in ["crates", "tests", "xtask", "examples"] {
        collect(&root, dir, &mut sources)?;
    }
    let mut tests = test_names(&sources);
    // Tests in Python too: the package's, and the MCP tests' (driven by
    // the official SDK).
    let mut python = Vec::new();
    for dir in ["tests", "python"] {
        collect_ext(&root, &root.join(dir), "py", &mut python)?;
    }
    tests.extend(python_test_names(&python));
    let mut problems = Vec::new();
    problems.extend(uncited_rules(&rules(&spec), &tests, &PENDING));
    problems.extend(missing_map_rows(&rules(&spec), &map));
    problems.extend(missing_mapped_tests(&map, &tests));
    problems.extend(anchors::anchor_problems(&map, &root));
    problems.extend(anchors::rows_out_of_order(&rules(&spec), &map));
    let mut texts: Vec<(String, String)> = sources.clone();
    for doc in ["README.md", "Cargo.toml"] {
        texts.push((doc.into(), read(doc)?));
    }
    let mut docs = Vec::new();
    collect_ext(&root, &root.join("docs"), "md", &mut docs)?;
    texts.extend(docs);
    problems.extend(pointers_outside(&texts));
    problems.extend(crates_without_workspace_lints(&root)?);
    problems.extend(code::long_files(&sources));
    problems.extend(docs::decisions_index(&read("docs/decisions.md")?));
    problems.extend(docs::crates_not_in_architecture(
        &crate_dirs(&root)?,
        &read("docs/architecture.md")?,
    ));
    // Fuzz targets are outside the workspace but are code all the same.
    let mut fuzz = Vec::new();
    collect(&root, "fuzz", &mut fuzz)?;
    problems.extend(code::issue_comments(&sources));
    problems.extend(code::issue_comments(&fuzz));
    problems.extend(code::bare_decisions(&sources));
    problems.extend(code::test_layout(&sources));
    let examples: Vec<String> = sources
        .iter()
        .filter(|(path, _)| path.contains("/examples/"))
        .map(|(_, text)| text.clone())
        .collect();
    problems.extend(readme_blocks_not_in_examples(
        &read("README.md")?,
        &examples,
    ));
    if problems.is_empty() {
        eprintln!(
            "xtask: tidy ok ({} rules, {} tests)",
            rules(&spec).len(),
            tests.len()
        );
        Ok(())
    } else {
        Err(format!("tidy:\n  {}", problems.join("\n  ")))
    }
}

/// The rule labels of a spec, in order: `R1`, …, `R34b`, ….
fn rules(spec: &str) -> Vec<String> {
    let mut found = Vec::new();
    for part in spec.split("**R").skip(1) {
        let label: String = part
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        let rest = &part[label.len()..];
        if !label.is_empty()
            && label.starts_with(|c: char| c.is_ascii_digit())
            && rest.starts_with(" —")
            && !found.contains(&format!("R{label}"))
        {
            found.push(format!("R{label}"));
        }
    }
    found
}

/// True when test `name` cites `rule` (`R34b` → `r34b_…`, `…_r34b_…`).
fn cites(name: &str, rule: &str) -> bool {
    let tag = format!("{}_", rule.to_lowercase());
    name.starts_with(&tag) || name.contains(&format!("_{tag}"))
}

fn uncited_rules(rules: &[String], tests: &[String], pending: &[&str]) -> Vec<String> {
    let mut problems = Vec::new();
    for rule in rules {
        let cited = tests.iter().any(|t| cites(t, rule));
        let pending = pending.contains(&rule.as_str());
        match (cited, pending) {
            (false, false) => problems.push(format!(
                "{rule} has no test whose name cites it (name one `{}_…`)",
                rule.to_lowercase()
            )),
            (true, true) => problems.push(format!(
                "{rule} has tests now: take it off PENDING in xtask/src/tidy.rs"
            )),
            _ => {}
        }
    }
    problems
}

fn missing_map_rows(rules: &[String], map: &str) -> Vec<String> {
    rules
        .iter()
        .filter(|rule| {
            !map.lines().any(|l| {
                l.starts_with(&format!("| {rule} ")) || l.starts_with(&format!("| {rule},"))
            })
        })
        .filter(|rule| !PENDING.contains(&rule.as_str()))
        .map(|rule| format!("docs/spec-map.md has no row for {rule}"))
        .collect()
}

/// The test names (and `prefix_*` patterns) in the tests column of the
/// spec map's table rows.
fn mapped_tests(map: &str) -> Vec<String> {
    let mut found = Vec::new();
    for line in map.lines().filter(|l| l.starts_with("| R")) {
        let Some(column) = line.trim_end_matches('|').rsplit('|').next() else {
            continue;
        };
        for (i, token) in column.split('`').enumerate() {
            let is_name = token
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '*');
            if i % 2 == 1 && token.contains('_') && is_name {
                found.push(token.to_owned());
            }
        }
    }
    found
}

fn missing_mapped_tests(map: &str, tests: &[String]) -> Vec<String> {
    mapped_tests(map)
        .into_iter()
        .filter(|name| !tests.iter().any(|t| matches(name, t)))
        .map(|name| format!("docs/spec-map.md names test `{name}`, which does not exist"))
        .collect()
}

/// True when test `name` matches `pattern`, where `*` stands for any text.
fn matches(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.ends_with(last)
}

/// The test functions of Python test files (`def test_…`), without the
/// `test_` pytest wants, so they cite rules as Rust tests do.
fn python_test_names(sources: &[(String, String)]) -> Vec<String> {
    let mut names = Vec::new();
    for (_, text) in sources {
        names_after(text, "def test_", &mut names);
    }
    names
}

/// The identifier after each `marker` in `code`.
fn names_after(code: &str, marker: &str, names: &mut Vec<String>) {
    for part in code.split(marker).skip(1) {
        let name: String = part
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() {
            names.push(name);
        }
    }
}

/// Function names in test code: everything in files under a `tests`
/// directory, and everything after `#[cfg(test)]` in other files.
fn test_names(sources: &[(String, String)]) -> Vec<String> {
    let mut names = Vec::new();
    for (path, text) in sources {
        let in_tests_dir = path.split('/').any(|part| part == "tests");
        let code = if in_tests_dir {
            text.as_str()
        } else {
            match text.find("#[cfg(test)]") {
                Some(at) => &text[at..],
                None => continue,
            }
        };
        names_after(code, "fn ", &mut names);
    }
    names.sort();
    names.dedup();
    names
}

fn pointers_outside(texts: &[(String, String)]) -> Vec<String> {
    let mut problems = Vec::new();
    for (path, text) in texts {
        // This file names what it looks for.
        if path.starts_with("xtask/src/tidy") {
            continue;
        }
        for (n, line) in text.lines().enumerate() {
            if let Some(found) = OUTSIDE.iter().find(|o| line.contains(*o)) {
                problems.push(format!(
                    "{path}:{}: points outside the repository ({found}); the contract is docs/spec.md",
                    n + 1
                ));
            }
        }
    }
    problems
}

/// The README's ```rust blocks that no example file contains verbatim.
fn readme_blocks_not_in_examples(readme: &str, examples: &[String]) -> Vec<String> {
    readme
        .split("```rust\n")
        .skip(1)
        .filter_map(|part| part.split("```").next())
        .filter(|block| !examples.iter().any(|e| e.contains(block)))
        .map(|block| {
            let first = block.lines().next().unwrap_or_default();
            format!(
                "README.md: the rust block starting `{first}` is not the text of any crates/*/examples/*.rs"
            )
        })
        .collect()
}

fn crates_without_workspace_lints(root: &Path) -> Result<Vec<String>, String> {
    let mut problems = Vec::new();
    let crates = std::fs::read_dir(root.join("crates")).map_err(|e| format!("crates/: {e}"))?;
    for entry in crates.flatten() {
        let manifest = entry.path().join("Cargo.toml");
        let Ok(text) = std::fs::read_to_string(&manifest) else {
            continue;
        };
        if !text.contains("[lints]\nworkspace = true") {
            problems.push(format!(
                "{} does not inherit the workspace lints (missing_docs, unsafe_code, unwrap_used, …)",
                manifest.strip_prefix(root).unwrap_or(&manifest).display()
            ));
        }
    }
    Ok(problems)
}

/// The names of the directories under `crates/`, as they are now (a crate
/// added or moved is seen at once).
fn crate_dirs(root: &Path) -> Result<Vec<String>, String> {
    let entries = std::fs::read_dir(root.join("crates")).map_err(|e| format!("crates/: {e}"))?;
    let mut names: Vec<String> = entries
        .flatten()
        .filter(|entry| entry.path().is_dir())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    Ok(names)
}

/// Every `.rs` file under `root`'s `dir` (skipping `target`), as (path
/// relative to `root`, text).
pub(crate) fn collect(
    root: &Path,
    dir: &str,
    out: &mut Vec<(String, String)>,
) -> Result<(), String> {
    collect_ext(root, &root.join(dir), "rs", out)
}

fn collect_ext(
    root: &Path,
    dir: &Path,
    ext: &str,
    out: &mut Vec<(String, String)>,
) -> Result<(), String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n == "target") {
                continue;
            }
            collect_ext(root, &path, ext, out)?;
        } else if path.extension().is_some_and(|e| e == ext) {
            let text = std::fs::read_to_string(&path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let shown = path.strip_prefix(root).unwrap_or(&path);
            out.push((shown.display().to_string(), text));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_are_read_from_their_labels() {
        let spec = "**R1 — Wire forms.** text **R34b — Commits.** and **R2 — x** but not **Rules** or R3 —";
        assert_eq!(rules(spec), ["R1", "R34b", "R2"]);
    }

    #[test]
    fn a_rule_is_cited_by_a_test_name_prefix_or_infix() {
        assert!(cites("r34b_appends_land_whole", "R34b"));
        assert!(cites("property_r4_r5_isolation", "R5"));
        assert!(!cites("r34_torn_tail", "R3"));
        assert!(!cites("r34_torn_tail", "R34b"));
    }

    #[test]
    fn uncited_and_stale_pending_rules_are_problems() {
        let tests = vec!["r1_loads".to_owned(), "r35_tools".to_owned()];
        let rules = vec!["R1".to_owned(), "R2".to_owned(), "R35".to_owned()];
        assert_eq!(
            uncited_rules(&rules, &tests, &["R35"]),
            [
                "R2 has no test whose name cites it (name one `r2_…`)",
                "R35 has tests now: take it off PENDING in xtask/src/tidy.rs"
            ]
        );
    }

    #[test]
    fn patterns_match_any_text_at_their_stars() {
        assert!(matches("r1_*", "r1_loads"));
        assert!(matches("r34_*_sigkill", "r34_file_sigkill"));
        assert!(!matches("r34_*_sigkill", "r34_sigkill_file"));
        assert!(matches(
            "parallel_*_equals_sequential",
            "parallel_apply_equals_sequential"
        ));
        assert!(matches("exact", "exact"));
        assert!(!matches("exact", "exactly"));
    }

    #[test]
    fn mapped_tests_must_exist() {
        let map = "| rule | code | tests |\n| R1 x | `check_fn` | `r1_loads`, `r1_*`, CLI `r1_gone`, `agent-data/tests/load.rs` |\n";
        let tests = vec!["r1_loads".to_owned()];
        assert_eq!(
            missing_mapped_tests(map, &tests),
            ["docs/spec-map.md names test `r1_gone`, which does not exist"]
        );
        assert!(
            missing_mapped_tests(map, &["r1_gone".to_owned(), "r1_loads".to_owned()]).is_empty()
        );
    }

    #[test]
    fn readme_rust_blocks_must_be_examples() {
        let readme =
            "text\n```rust\nfn main() {}\n```\nmore\n```rust\nlet x = 1;\n```\n```sh\nls\n```\n";
        let examples = vec!["//! doc\nfn main() {}\n".to_owned()];
        assert_eq!(
            readme_blocks_not_in_examples(readme, &examples),
            [
                "README.md: the rust block starting `let x = 1;` is not the text of any crates/*/examples/*.rs"
            ]
        );
    }

    #[test]
    fn test_names_come_from_test_code_only() {
        let sources = vec![
            (
                "crates/a/src/lib.rs".to_owned(),
                "fn r1_not_a_test() {}\n#[cfg(test)]\nmod t { fn r1_unit() {} }".to_owned(),
            ),
            (
                "crates/a/tests/t.rs".to_owned(),
                "fn r2_integration() {}".to_owned(),
            ),
        ];
        assert_eq!(test_names(&sources), ["r1_unit", "r2_integration"]);
    }
}
