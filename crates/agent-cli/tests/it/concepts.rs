//! docs/concepts.md runs as written: every `sh` block, in order, in one
//! scratch directory, with `agentctx` being this build; the plain block
//! after a command block is its exact output (stdout and stderr together).
//!
//! The PostgreSQL example uses the test server (`AGENTCTX_TEST_DATABASE_URL`,
//! else postgres://root@127.0.0.1:5432/test; `cargo xtask ci` provides one)
//! and a context name unique to the run.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

use std::path::Path;
use std::process::Command;

const PAGE: &str = include_str!("../../../../docs/concepts.md");
const DOC_DATABASE: &str = "postgres://root@127.0.0.1:5432/test";

/// The page's fenced blocks: (language, body).
fn blocks(page: &str) -> Vec<(&str, String)> {
    let mut out = Vec::new();
    let mut lines = page.lines();
    while let Some(line) = lines.next() {
        let Some(lang) = line.strip_prefix("```") else {
            continue;
        };
        let mut body = String::new();
        for line in lines.by_ref() {
            if line == "```" {
                break;
            }
            body.push_str(line);
            body.push('\n');
        }
        out.push((lang, body));
    }
    out
}

#[test]
fn concepts_page_commands_print_what_the_page_says() {
    let database =
        std::env::var("AGENTCTX_TEST_DATABASE_URL").unwrap_or_else(|_| DOC_DATABASE.to_owned());
    let bin = Path::new(env!("CARGO_BIN_EXE_agentctx")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let dir = tempfile::tempdir().unwrap();
    let context = format!("concepts-{}-{}", std::process::id(), nanos());
    let blocks = blocks(PAGE);
    let mut checked = 0;
    let mut failures = Vec::new();
    let mut i = 0;
    while i < blocks.len() {
        let (lang, body) = &blocks[i];
        i += 1;
        // The page's own setup (`mkdir … && cd …`) is replaced by the tempdir.
        if *lang != "sh" || body.starts_with("mkdir -p /tmp/agentctx-tour") {
            continue;
        }
        let script = body
            .replace(DOC_DATABASE, &database)
            .replace("context=tour", &format!("context={context}"));
        let out = Command::new("bash")
            .args(["-c", &format!("exec 2>&1\n{script}")])
            .current_dir(dir.path())
            .env("PATH", &path)
            .output()
            .unwrap();
        let printed = String::from_utf8_lossy(&out.stdout).into_owned();
        if let Some((lang, expected)) = blocks.get(i)
            && lang.is_empty()
        {
            i += 1;
            checked += 1;
            if &printed != expected {
                failures.push(format!(
                    "$ {body}--- the page says\n{expected}--- it printed\n{printed}"
                ));
            }
        }
    }
    assert!(
        checked >= 20,
        "only {checked} command blocks with output found"
    );
    assert!(
        failures.is_empty(),
        "docs/concepts.md is out of date ({} of {checked} blocks):\n\n{}\n(PostgreSQL examples need a server: \
         `cargo xtask ci` provides one, or set AGENTCTX_TEST_DATABASE_URL)",
        failures.len(),
        failures.join("\n")
    );
}

fn nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}
