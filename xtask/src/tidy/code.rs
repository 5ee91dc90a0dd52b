//! Conventions of the code itself: files short enough to read, and
//! comments that explain instead of pointing at a tracker.

/// The longest a source file may be; past it, split the file.
pub(super) const MAX_LINES: usize = 700;

/// Source files of `crates/*/src/` and `xtask/src/` longer than
/// [`MAX_LINES`]; files under a `tests` directory are exempt. Paths are
/// relative to the workspace root.
pub(super) fn long_files(sources: &[(String, String)]) -> Vec<String> {
    let mut problems = Vec::new();
    for (path, text) in sources {
        let parts: Vec<&str> = path.split('/').collect();
        let in_src = matches!(
            parts.as_slice(),
            ["crates", _, "src", ..] | ["xtask", "src", ..]
        );
        if !in_src || !path.ends_with(".rs") || parts.contains(&"tests") {
            continue;
        }
        let lines = text.lines().count();
        if lines > MAX_LINES {
            problems.push(format!(
                "{path} has {lines} lines, more than {MAX_LINES}: split it"
            ));
        }
    }
    problems
}

/// Test code shared by file inclusion (`#[path = …]`) or integration
/// tests outside their crate's one binary (`crates/*/tests/it/`): shared
/// test code lives in the test-support crate (`tests/support`), and each
/// crate's integration tests are modules of one binary, linked once.
pub(super) fn test_layout(sources: &[(String, String)]) -> Vec<String> {
    let mut problems = Vec::new();
    for (path, text) in sources {
        if let Some(line) = text
            .lines()
            .position(|l| l.trim_start().starts_with("#[path ="))
        {
            problems.push(format!(
                "{path}:{}: a file included by path; share it through the test-support crate",
                line + 1
            ));
        }
        let parts: Vec<&str> = path.split('/').collect();
        if let ["crates", _, "tests", file] = parts.as_slice()
            && file.ends_with(".rs")
        {
            problems.push(format!(
                "{path}: an integration test outside tests/it/; make it a module of the crate's one test binary"
            ));
        }
    }
    problems
}

/// Comments that cite a tracker number (the word `issue` and a number): a
/// reader of the code cannot follow them, so a comment says why instead.
/// Consecutive comment lines are read as one text, so a citation broken
/// across two lines is found too.
pub(super) fn issue_comments(sources: &[(String, String)]) -> Vec<String> {
    let mut problems = Vec::new();
    for (path, text) in sources {
        for block in comment_blocks(text) {
            for line in block.cited().into_iter().map(|at| block.line_of(at)) {
                problems.push(format!(
                    "{path}:{line}: a comment cites an issue number; say why, not which issue"
                ));
            }
        }
    }
    problems
}

/// Parenthesised decision citations without what they are: a bare number
/// tells a reader nothing until they open docs/decisions.md; `(D40: short
/// layers refolded)` tells them enough to read on.
pub(super) fn bare_decisions(sources: &[(String, String)]) -> Vec<String> {
    let mut problems = Vec::new();
    for (path, text) in sources {
        for block in comment_blocks(text) {
            for at in bare_citations(&block.text) {
                problems.push(format!(
                    "{path}:{}: a comment cites a decision by number alone; say what it is, \
                     as in `(D40: short layers refolded)`",
                    block.line_of(at)
                ));
            }
        }
    }
    problems
}

/// Offsets of `D<digits>` opening a parenthesised citation (after `(`,
/// `, ` or `; ` inside parentheses) and followed by no `:`.
fn bare_citations(text: &str) -> Vec<usize> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut depth = 0usize;
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'(' => depth += 1,
            b')' => depth = depth.saturating_sub(1),
            b'D' if depth > 0 => {
                let opens = i >= 1 && bytes[i - 1] == b'('
                    || i >= 2 && matches!(&bytes[i - 2..i], b", " | b"; ");
                let digits = bytes[i + 1..]
                    .iter()
                    .take_while(|c| c.is_ascii_digit())
                    .count();
                let after = bytes.get(i + 1 + digits);
                if opens
                    && digits > 0
                    && after != Some(&b':')
                    && after.is_none_or(|c| !c.is_ascii_alphanumeric())
                {
                    found.push(i);
                }
            }
            _ => {}
        }
    }
    found
}

/// Runs of comment lines: their text joined by spaces, and where each
/// line's text starts in it.
struct Block {
    text: String,
    /// (1-based line number, offset of its text in `text`).
    starts: Vec<(usize, usize)>,
}

impl Block {
    /// The offsets of the citations in the block.
    fn cited(&self) -> Vec<usize> {
        let mut found_at = Vec::new();
        let lower = self.text.to_ascii_lowercase();
        let bytes = lower.as_bytes();
        let mut from = 0;
        while let Some(found) = lower[from..].find("issue") {
            let at = from + found;
            from = at + "issue".len();
            if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
                continue;
            }
            let mut i = from;
            if bytes.get(i) == Some(&b's') {
                i += 1;
            }
            while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
                i += 1;
            }
            if bytes.get(i) == Some(&b'#') {
                i += 1;
            }
            if bytes.get(i).is_some_and(u8::is_ascii_digit) {
                found_at.push(at);
            }
        }
        found_at
    }

    fn line_of(&self, at: usize) -> usize {
        self.starts
            .iter()
            .take_while(|(_, start)| *start <= at)
            .last()
            .map_or(0, |(line, _)| *line)
    }
}

/// The comments of `text`, whole-line comments grouped into blocks; a
/// comment after code is a block of its own. A `//` after an odd number of
/// quotes is inside a string and not a comment.
fn comment_blocks(text: &str) -> Vec<Block> {
    let mut blocks: Vec<Block> = Vec::new();
    let mut open = false;
    for (n, line) in text.lines().enumerate() {
        let Some((comment, whole_line)) = comment_of(line) else {
            open = false;
            continue;
        };
        let comment = comment.trim_start_matches(['/', '!']).trim();
        match blocks.last_mut() {
            Some(block) if open && whole_line => {
                block.text.push(' ');
                block.starts.push((n + 1, block.text.len()));
                block.text.push_str(comment);
            }
            _ => blocks.push(Block {
                text: comment.to_owned(),
                starts: vec![(n + 1, 0)],
            }),
        }
        open = whole_line;
    }
    blocks
}

/// The comment on `line` and whether the line is only a comment.
fn comment_of(line: &str) -> Option<(&str, bool)> {
    let mut from = 0;
    while let Some(found) = line[from..].find("//") {
        let at = from + found;
        let quotes = line[..at].matches('"').count() - line[..at].matches("\\\"").count();
        if quotes.is_multiple_of(2) {
            return Some((&line[at..], line[..at].trim().is_empty()));
        }
        from = at + 2;
    }
    None
}

#[cfg(test)]
mod decision_tests {
    use super::bare_citations;

    #[test]
    fn a_decision_cited_by_number_alone_is_found() {
        assert_eq!(bare_citations("kept (D40) here").len(), 1);
        assert_eq!(bare_citations("kept (D38, D40: short) here").len(), 1);
        assert!(bare_citations("kept (D40: short layers refolded) here").is_empty());
        assert!(bare_citations("as D40 says, (R25) and (Dx)").is_empty());
        assert!(bare_citations("(D38: small; D40: refolded)").is_empty());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(path: &str, text: &str) -> Vec<(String, String)> {
        vec![(path.to_owned(), text.to_owned())]
    }

    #[test]
    fn tests_outside_the_one_binary_or_included_by_path_are_named() {
        let mut sources = source("crates/a/tests/loose.rs", "#[test]\nfn t() {}\n");
        sources.extend(source(
            "crates/a/tests/it/main.rs",
            "mod x;\n#[path = \"../../b/y.rs\"]\nmod y;\n",
        ));
        sources.extend(source("crates/a/tests/it/x.rs", "#[test]\nfn t() {}\n"));
        assert_eq!(
            test_layout(&sources),
            [
                "crates/a/tests/loose.rs: an integration test outside tests/it/; make it a module of the crate's one test binary",
                "crates/a/tests/it/main.rs:2: a file included by path; share it through the test-support crate",
            ]
        );
    }

    #[test]
    fn a_long_source_file_is_named_with_its_count() {
        let long = "fn f() {}\n".repeat(MAX_LINES + 1);
        let short = "fn f() {}\n".repeat(MAX_LINES);
        assert_eq!(
            long_files(&source("crates/a/src/big.rs", &long)),
            ["crates/a/src/big.rs has 701 lines, more than 700: split it"]
        );
        assert_eq!(long_files(&source("xtask/src/big.rs", &long)).len(), 1);
        assert!(long_files(&source("crates/a/src/ok.rs", &short)).is_empty());
        // Tests, and files outside `src`, are exempt.
        assert!(long_files(&source("crates/a/tests/big.rs", &long)).is_empty());
        assert!(long_files(&source("crates/a/src/tests/big.rs", &long)).is_empty());
        assert!(long_files(&source("tests/big.rs", &long)).is_empty());
    }

    #[test]
    fn a_comment_citing_an_issue_number_is_named() {
        let text =
            "fn a() {}\n// Kept short (issue 17).\n/// see issues #4\nlet x = 1; // issue12\n";
        assert_eq!(
            issue_comments(&source("crates/a/src/lib.rs", text)),
            [
                "crates/a/src/lib.rs:2: a comment cites an issue number; say why, not which issue",
                "crates/a/src/lib.rs:3: a comment cites an issue number; say why, not which issue",
                "crates/a/src/lib.rs:4: a comment cites an issue number; say why, not which issue",
            ]
        );
    }

    #[test]
    fn a_citation_broken_across_comment_lines_is_found_on_its_line() {
        let text = "//! One.\n//! Two (issue\n//! 17).\nfn a() {}\n";
        assert_eq!(
            issue_comments(&source("x.rs", text)),
            ["x.rs:2: a comment cites an issue number; say why, not which issue"]
        );
    }

    #[test]
    fn strings_and_other_words_are_not_citations() {
        let text =
            "let s = \"// issue 17\";\n// The issue is size, not 17 issues.\n// reissue 3 times\n";
        assert!(issue_comments(&source("x.rs", text)).is_empty());
    }
}
