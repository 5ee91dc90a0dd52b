//! Append keys on a JSONL file (R34b, D47: append keys): the same key appends once,
//! also from writers racing in parallel; an entry whose bytes never landed
//! (its writer died between the entry and the append) frees its key.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use agent_core::json;
use agent_data::{Context, Message};
use agent_store::{AppendKey, FileStore, KeyedOutcome, Store};
use std::path::Path;

fn push(n: i64) -> Vec<Message> {
    Message::from_value(json!({"type": "state", "data": {"log": n},
        "_outputPath": "†state.log", "_outputMethod": "push"}))
    .unwrap()
}

fn log(path: &Path) -> agent_core::json::Value {
    let context = FileStore::open(path).unwrap().load().unwrap().context;
    context
        .read(&"†state.log".parse().unwrap(), None)
        .cloned()
        .unwrap_or_default()
}

#[test]
fn r34b_the_same_key_twice_appends_once_on_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    let key = AppendKey::new("job-1").unwrap();
    let mut store = FileStore::open(&path).unwrap();
    let mut context = Context::new();
    let first = store.commit_once(&mut context, &push(1), &key).unwrap();
    assert_eq!(first, KeyedOutcome::Appended(0..1));
    // Another handle, as a retrying process would have.
    let mut again = FileStore::open(&path).unwrap();
    let mut theirs = again.load().unwrap().context;
    assert_eq!(
        again.commit_once(&mut theirs, &push(1), &key).unwrap(),
        KeyedOutcome::Already(0..1)
    );
    let other = AppendKey::new("job-2").unwrap();
    assert_eq!(
        again.commit_once(&mut theirs, &push(2), &other).unwrap(),
        KeyedOutcome::Appended(1..2)
    );
    assert_eq!(log(&path), json!([1, 2]));
}

#[test]
fn r34b_a_key_whose_append_never_landed_is_free_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    std::fs::write(&path, "{\"type\":\"state\",\"data\":{\"log\":[]}}\n").unwrap();
    let len = std::fs::metadata(&path).unwrap().len();
    // What a writer killed after its entry and before its append leaves:
    // an entry naming bytes past the end of the file.
    std::fs::write(
        dir.path().join(".c.jsonl.keys"),
        format!("job-1 {len} {} 00000000deadbeef 1 1 {}\n", len + 80, now()),
    )
    .unwrap();
    let mut store = FileStore::open(&path).unwrap();
    let mut context = store.load().unwrap().context;
    let key = AppendKey::new("job-1").unwrap();
    assert_eq!(
        store.commit_once(&mut context, &push(1), &key).unwrap(),
        KeyedOutcome::Appended(1..2)
    );
    assert_eq!(
        store.commit_once(&mut context, &push(1), &key).unwrap(),
        KeyedOutcome::Already(1..2)
    );
    assert_eq!(log(&path), json!([1]));
}

#[test]
fn r34b_a_keys_file_wider_than_its_log_is_refused_saying_how_to_fix_it() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    let key = AppendKey::new("job-1").unwrap();
    let mut store = FileStore::open(&path).unwrap();
    let mut context = Context::new();
    store.commit_once(&mut context, &push(1), &key).unwrap();
    let keys = dir.path().join(".c.jsonl.keys");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::set_permissions(&keys, std::fs::Permissions::from_mode(0o644)).unwrap();
    let before = std::fs::read(&path).unwrap();
    let other = AppendKey::new("job-2").unwrap();
    let error = store
        .commit_once(&mut context, &push(2), &other)
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        format!(
            "{}: cannot keep append keys: {} has mode 0644, wider than the context file's 0600; \
             if nobody else could have written it, `chmod 600 {}` (else remove it: keys then \
             start afresh)",
            path.display(),
            keys.display(),
            keys.display()
        )
    );
    assert_eq!(std::fs::read(&path).unwrap(), before, "nothing appended");
    assert_eq!(
        std::fs::metadata(&keys).unwrap().permissions().mode() & 0o777,
        0o644,
        "not quietly tightened"
    );
    // Fixed as the message says, the keys hold again.
    std::fs::set_permissions(&keys, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(
        store.commit_once(&mut context, &push(1), &key).unwrap(),
        KeyedOutcome::Already(0..1)
    );
    assert_eq!(
        store.commit_once(&mut context, &push(2), &other).unwrap(),
        KeyedOutcome::Appended(1..2)
    );
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[test]
fn r34b_writers_racing_with_one_key_append_once_on_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    std::fs::write(&path, "").unwrap();
    let key = AppendKey::new("race").unwrap();
    let onces: Vec<KeyedOutcome> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                scope.spawn(|| {
                    let mut store = FileStore::open(&path).unwrap();
                    let mut context = store.load().unwrap().context;
                    store.commit_once(&mut context, &push(7), &key).unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(
        onces.iter().filter(|o| !o.is_already()).count(),
        1,
        "{onces:?}"
    );
    assert!(onces.iter().all(|o| o.range() == (0..1)), "{onces:?}");
    assert_eq!(log(&path), json!([7]));
}
