//! `agentctx log` (D102: a paged log; no tip toward `loop`): the log a page
//! at a time, filtered by kind and instance, as lines or as JSON.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use crate::support::agentctx;
use agent_core::json::{self, Value};

/// A context of 60 messages: 30 `state` writes to instances ① and ②
/// alternately, then 30 global `note` writes.
fn sixty(dir: &tempfile::TempDir) -> String {
    let path = dir.path().join("c.jsonl");
    let mut lines = String::new();
    for i in 0..30 {
        let instance = if i % 2 == 0 { "①" } else { "②" };
        lines.push_str(&format!(
            "{{\"type\":\"data\",\"kind\":\"state\",\"data\":{{\"n\":{i}}},\"_instance\":\"{instance}\"}}\n"
        ));
    }
    for i in 30..60 {
        lines.push_str(&format!(
            "{{\"type\":\"data\",\"kind\":\"note\",\"data\":{{\"n\":{i}}}}}\n"
        ));
    }
    std::fs::write(&path, lines).unwrap();
    path.to_str().unwrap().to_owned()
}

#[test]
fn d102_log_prints_a_page_of_lines_and_says_on_stderr_where_the_next_starts() {
    let dir = tempfile::tempdir().unwrap();
    let c = sixty(&dir);
    let first = agentctx(&["log", &c]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    let lines: Vec<&str> = first.stdout.lines().collect();
    assert_eq!(lines.len(), 50);
    assert!(
        lines[0].starts_with("#0  {\"type\":\"data\",\"kind\":\"state\""),
        "{}",
        lines[0]
    );
    assert!(lines[49].starts_with("#49  "), "{}", lines[49]);
    assert_eq!(
        first.stderr.trim(),
        "50 shown; the next page: --from 50 (the log holds 60)"
    );
    let last = agentctx(&["log", &c, "--from", "50"]);
    assert_eq!(last.stdout.lines().count(), 10);
    assert!(last.stdout.starts_with("#50  "), "{}", last.stdout);
    assert_eq!(last.stderr, "");
}

#[test]
fn d102_log_filters_by_kind_and_instance_and_pages_as_json() {
    let dir = tempfile::tempdir().unwrap();
    let c = sixty(&dir);
    let page = agentctx(&[
        "log",
        &c,
        "--kind",
        "state",
        "--instance",
        "②",
        "--limit",
        "5",
        "--json",
    ]);
    assert_eq!(page.code, 0, "{}", page.stderr);
    let page: Value = json::from_str(&page.stdout).unwrap();
    let indexes: Vec<u64> = page["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["index"].as_u64().unwrap())
        .collect();
    assert_eq!(indexes, [1, 3, 5, 7, 9]);
    assert_eq!(page["messages"][0]["message"]["_instance"], "②");
    assert_eq!(page["next"], 11);
    assert_eq!(page["total"], 60);
    let none = agentctx(&["log", &c, "--kind", "stat"]);
    assert_eq!(none.code, 0);
    assert_eq!(none.stdout, "");
    assert_eq!(
        none.stderr.trim(),
        r#"no message of kind "stat" from 0 on (the log holds 60)"#
    );
}

#[test]
fn d102_log_refuses_a_limit_outside_1_to_500() {
    let dir = tempfile::tempdir().unwrap();
    let c = sixty(&dir);
    for limit in ["0", "501"] {
        let refused = agentctx(&["log", &c, "--limit", limit]);
        assert_eq!(refused.code, 2, "{limit}");
        assert!(refused.stderr.contains("--limit"), "{}", refused.stderr);
    }
}

#[test]
fn d102_a_mistyped_command_is_never_pointed_at_loop() {
    for typed in ["lop", "loopp", "lo"] {
        let refused = agentctx(&[typed, "c.jsonl"]);
        assert_eq!(refused.code, 2, "{typed}");
        assert!(
            !refused.stderr.contains("'loop'"),
            "{typed}: {}",
            refused.stderr
        );
        assert!(
            refused
                .stderr
                .contains(&format!("unrecognized subcommand \"{typed}\"")),
            "{typed}: {}",
            refused.stderr
        );
    }
    // Other tips stay, alone or beside the one dropped.
    for typed in ["logg", "loh"] {
        let log = agentctx(&[typed, "c.jsonl"]);
        assert_eq!(log.code, 2);
        assert!(
            log.stderr.contains("similar subcommand exists: 'log'"),
            "{typed}: {}",
            log.stderr
        );
        assert!(!log.stderr.contains("'loop'"), "{typed}: {}", log.stderr);
    }
}
