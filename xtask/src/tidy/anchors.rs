//! Anchors of `docs/spec-map.md`: every code reference in the map is a
//! path from the repository root that must exist, optionally with a name
//! that must occur in that file, so a renamed or moved item fails tidy
//! instead of leaving the map pointing at nothing.
//!
//! The format, in backticks:
//!
//! - `crates/agent-data/src/context.rs` — the file (or `dir/`) exists;
//! - `crates/agent-data/src/context.rs#Context` — and `Context` occurs in
//!   it as an identifier;
//! - `crates/agent-data/src/read.rs#Context::view` — both `Context` and
//!   `view` occur in it;
//! - `crates/agent-data/tests/load.rs#r1_x` — in a file under a `tests`
//!   directory, the name is a function defined there (`fn r1_x`).
//!
//! A backticked token with a `/` or a `#` anywhere in a row is an anchor
//! (`Cargo.toml#arbitrary_precision` names a file at the root), and in the
//! code column every backticked token must be one.

use std::path::Path;

/// One table row of the map: its first cell (to name it) and its cells.
struct Row<'a> {
    label: &'a str,
    cells: Vec<&'a str>,
}

/// The table rows of `map` after each header row, cells split on `|`
/// outside backticks.
fn rows(map: &str) -> Vec<Row<'_>> {
    let mut rows = Vec::new();
    let mut header = true;
    for line in map.lines() {
        let Some(inner) = line.trim().strip_prefix('|') else {
            header = true;
            continue;
        };
        if inner.starts_with("---") {
            header = false;
            continue;
        }
        if header {
            continue;
        }
        let cells = split_cells(inner.strip_suffix('|').unwrap_or(inner));
        let label = cells.first().map_or("", |c| c.trim());
        rows.push(Row { label, cells });
    }
    rows
}

fn split_cells(line: &str) -> Vec<&str> {
    let mut cells = Vec::new();
    let mut in_code = false;
    let mut start = 0;
    for (at, c) in line.char_indices() {
        match c {
            '`' => in_code = !in_code,
            '|' if !in_code => {
                cells.push(&line[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    cells.push(&line[start..]);
    cells
}

/// The backticked tokens of a cell.
fn ticked(cell: &str) -> impl Iterator<Item = &str> {
    cell.split('`').skip(1).step_by(2)
}

/// Every problem with the anchors of `map`, reading files under `root`:
/// a missing file, a name that does not occur in it, a test that is not
/// defined there, or a code-column reference that is not an anchor.
pub(super) fn anchor_problems(map: &str, root: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    for row in rows(map) {
        for (column, cell) in row.cells.iter().enumerate().skip(1) {
            for token in ticked(cell) {
                let (path, name) = match token.split_once('#') {
                    Some((path, name)) => (path, Some(name)),
                    None => (token, None),
                };
                if !(path.contains('/') || name.is_some()) || token.contains(' ') {
                    if column == 1 {
                        problems.push(format!(
                            "docs/spec-map.md row `{}`: `{token}` is not an anchor (`path/from/root.rs#Name`)",
                            row.label
                        ));
                    }
                    continue;
                }
                if let Some(problem) = check_anchor(root, path, name) {
                    problems.push(format!(
                        "docs/spec-map.md row `{}`: `{token}`: {problem}",
                        row.label
                    ));
                }
            }
        }
    }
    problems
}

/// What is wrong with the anchor `path#name`, if anything.
fn check_anchor(root: &Path, path: &str, name: Option<&str>) -> Option<String> {
    let full = root.join(path);
    if path.ends_with('/') {
        return match (full.is_dir(), name) {
            (false, _) => Some("no such directory".into()),
            (true, Some(_)) => Some("a directory anchor names nothing in it".into()),
            (true, None) => None,
        };
    }
    let Ok(text) = std::fs::read_to_string(&full) else {
        return Some("no such file".into());
    };
    let name = name?;
    if path.split('/').any(|part| part == "tests") {
        return (!defines_fn(&text, name)).then(|| format!("no function `{name}` in {path}"));
    }
    let idents = identifiers(&text);
    name.split("::")
        .find(|part| part.is_empty() || !idents.contains(part))
        .map(|part| format!("`{part}` does not occur in {path}"))
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

fn identifiers(text: &str) -> std::collections::HashSet<&str> {
    text.split(|c: char| !is_ident(c))
        .filter(|word| !word.is_empty())
        .collect()
}

/// True when `text` has `fn name` followed by something other than more
/// of an identifier.
fn defines_fn(text: &str, name: &str) -> bool {
    let needle = format!("fn {name}");
    text.match_indices(&needle)
        .any(|(at, _)| !text[at + needle.len()..].starts_with(is_ident))
}

/// Rows of the map whose first rule comes before the previous row's in
/// `rules` (the spec's order): the map lists rules in the spec's order.
pub(super) fn rows_out_of_order(rules: &[String], map: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let mut last: Option<(usize, &str)> = None;
    for row in rows(map) {
        let label: String = row
            .label
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        let Some(at) = rules.iter().position(|r| *r == label) else {
            continue;
        };
        if let Some((before, previous)) = last
            && at < before
        {
            problems.push(format!(
                "docs/spec-map.md row `{}` comes after row `{previous}`; rows follow the spec's order",
                row.label
            ));
        }
        last = Some((at, row.label));
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory of its own under the system's temporary directory,
    /// removed when dropped.
    struct Scratch(std::path::PathBuf);

    impl Scratch {
        fn new(name: &str) -> Scratch {
            let dir = std::env::temp_dir().join(format!("tidy-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(dir.join("crates/a/src")).unwrap();
            std::fs::create_dir_all(dir.join("crates/a/tests")).unwrap();
            std::fs::write(dir.join("top.toml"), "[features]\nfeature_x = []\n").unwrap();
            std::fs::write(
                dir.join("crates/a/src/fold.rs"),
                "impl Layer {\n    pub fn apply(&mut self) {}\n}\n",
            )
            .unwrap();
            std::fs::write(
                dir.join("crates/a/tests/t.rs"),
                "#[test]\nfn r1_loads() {}\n// r1_mentioned only\n",
            )
            .unwrap();
            Scratch(dir)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn map(code: &str, tests: &str) -> String {
        format!("| rule | code | tests |\n|---|---|---|\n| R1 fold | {code} | {tests} |\n")
    }

    #[test]
    fn good_anchors_pass() {
        let dir = Scratch::new("good");
        let map = map(
            "`crates/a/src/fold.rs#Layer::apply`, `crates/a/src/fold.rs`, `crates/a/src/`, `top.toml#feature_x` (D3)",
            "`r1_*`, `crates/a/tests/t.rs#r1_loads`",
        );
        assert_eq!(anchor_problems(&map, &dir.0), Vec::<String>::new());
    }

    #[test]
    fn an_anchor_to_a_missing_file_fails_naming_row_and_anchor() {
        let dir = Scratch::new("file");
        let map = map("`crates/a/src/gone.rs#Layer`", "`crates/a/tests/gone.rs`");
        assert_eq!(
            anchor_problems(&map, &dir.0),
            [
                "docs/spec-map.md row `R1 fold`: `crates/a/src/gone.rs#Layer`: no such file",
                "docs/spec-map.md row `R1 fold`: `crates/a/tests/gone.rs`: no such file",
            ]
        );
    }

    #[test]
    fn an_anchor_naming_what_is_not_there_fails() {
        let dir = Scratch::new("name");
        let map = map(
            "`crates/a/src/fold.rs#Layer::fold`, `crates/a/src/fold.rs#Lay`",
            "`crates/a/tests/t.rs#r1_mentioned`, `crates/a/tests/t.rs#r1_load`",
        );
        assert_eq!(
            anchor_problems(&map, &dir.0),
            [
                "docs/spec-map.md row `R1 fold`: `crates/a/src/fold.rs#Layer::fold`: `fold` does not occur in crates/a/src/fold.rs",
                "docs/spec-map.md row `R1 fold`: `crates/a/src/fold.rs#Lay`: `Lay` does not occur in crates/a/src/fold.rs",
                "docs/spec-map.md row `R1 fold`: `crates/a/tests/t.rs#r1_mentioned`: no function `r1_mentioned` in crates/a/tests/t.rs",
                "docs/spec-map.md row `R1 fold`: `crates/a/tests/t.rs#r1_load`: no function `r1_load` in crates/a/tests/t.rs",
            ]
        );
    }

    #[test]
    fn a_bare_name_in_the_code_column_is_not_an_anchor() {
        let dir = Scratch::new("bare");
        let map = map("`Layer::apply`, `a/src/fold.rs`", "`r1_loads`");
        assert_eq!(
            anchor_problems(&map, &dir.0),
            [
                "docs/spec-map.md row `R1 fold`: `Layer::apply` is not an anchor (`path/from/root.rs#Name`)",
                "docs/spec-map.md row `R1 fold`: `a/src/fold.rs`: no such file",
            ]
        );
    }

    #[test]
    fn rows_follow_the_spec_order() {
        let rules: Vec<String> = ["R1", "R34", "R34b", "R35"].map(String::from).to_vec();
        let good = "| rule | code | tests |\n|---|---|---|\n| R1 a | | |\n| R34 b | | |\n| R34b c | | |\n| §10 d | | |\n| R35 e | | |\n";
        assert!(rows_out_of_order(&rules, good).is_empty());
        let bad = "| rule | code | tests |\n|---|---|---|\n| R34b c | | |\n| R34 b | | |\n";
        assert_eq!(
            rows_out_of_order(&rules, bad),
            ["docs/spec-map.md row `R34 b` comes after row `R34b c`; rows follow the spec's order"]
        );
    }
}
