//! R34b: appends by many writers at once are atomic, isolated and never
//! lost — every interleaving equals some serial order consistent with real
//! time. Each writer has its own `FileStore` handle (as separate processes
//! do); the file lock is per open file, so threads contend exactly as
//! processes would.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use crate::support::{assert_linearizable, log_of, plans, push, race};
use agent_data::Format;
use agent_store::{Error, FileStore, Store};
use proptest::prelude::*;
use std::path::{Path, PathBuf};

fn temp_file(name: &str, extension: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("agentctx-store-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("c.{extension}"));
    let _ = std::fs::remove_file(&path);
    path
}

fn stored_log(path: &Path) -> Vec<String> {
    let context = FileStore::open(path).unwrap().load().unwrap().context;
    assert!(context.check(agent_data::CheckMode::Normal).is_empty());
    log_of(&context)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn r34b_concurrent_jsonl_appends_equal_a_serial_order(plan in plans()) {
        let path = temp_file("lin-jsonl", "jsonl");
        let acked = race(&|| FileStore::open(&path).unwrap(), &plan);
        assert_linearizable(&stored_log(&path), &acked);
    }

    #[test]
    fn r34b_concurrent_json_array_appends_equal_a_serial_order(plan in plans()) {
        let path = temp_file("lin-json", "json");
        let acked = race(&|| FileStore::open(&path).unwrap(), &plan);
        assert_linearizable(&stored_log(&path), &acked);
    }
}

#[test]
fn r34b_append_at_a_stale_length_is_a_conflict_and_changes_nothing() {
    let path = temp_file("conflict", "jsonl");
    std::fs::write(&path, "{\"type\":\"state\",\"data\":{\"log\":[]}}\n").unwrap();
    let mut first = FileStore::open(&path).unwrap();
    let mut second = FileStore::open(&path).unwrap();
    let mut mine = first.load().unwrap().context;
    let theirs = second.load().unwrap().context;
    let batch = [push(1, 0, 0)];
    let stale = theirs.prepare(&batch).unwrap();
    first.commit(&mut mine, &[push(0, 0, 0)]).unwrap();
    let before = std::fs::read(&path).unwrap();
    let error = second.append_at(&stale).unwrap_err();
    assert!(
        matches!(
            error,
            Error::Conflict {
                expected: 1,
                current: 2,
                ..
            }
        ),
        "{error}"
    );
    assert_eq!(
        error.to_string(),
        format!(
            "{}: another writer appended first (expected 1 messages, found 2)",
            path.display()
        )
    );
    assert_eq!(std::fs::read(&path).unwrap(), before);
    // commit catches up and lands after the other writer's append.
    let mut theirs = theirs;
    second.commit(&mut theirs, &batch).unwrap();
    assert_eq!(stored_log(&path), ["0.0.0", "1.0.0"]);
    assert_eq!(FileStore::open(&path).unwrap().format(), Format::Jsonl);
}

#[test]
fn r34b_commit_validates_against_the_context_as_it_is_when_the_append_lands() {
    let path = temp_file("validate", "jsonl");
    std::fs::write(
        &path,
        "{\"type\":\"state\",\"data\":{\"log\":[]},\"schema\":{\"properties\":{\"log\":{\"maxItems\":1}}}}\n",
    )
    .unwrap();
    let mut first = FileStore::open(&path).unwrap();
    let mut second = FileStore::open(&path).unwrap();
    let mut mine = first.load().unwrap().context;
    let mut theirs = second.load().unwrap().context;
    first.commit(&mut mine, &[push(0, 0, 0)]).unwrap();
    // Against `theirs` as loaded the push fits; against the file it does not.
    assert!(theirs.prepare(&[push(1, 0, 0)]).is_ok());
    let error = second.commit(&mut theirs, &[push(1, 0, 0)]).unwrap_err();
    assert!(matches!(error, Error::Refused(_)), "{error}");
    assert!(error.to_string().contains("schema violated"), "{error}");
    assert_eq!(stored_log(&path), ["0.0.0"]);
}
