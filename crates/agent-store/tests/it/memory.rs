//! The store in memory behaves as a file store without the file: a missing
//! context until the first append, compare-and-append between handles,
//! commits that catch up and validate again, keys that land once, refused
//! appends that change nothing, and a log that loads back as written.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use agent_core::json;
use agent_data::{Append, AppendError, AppendKey, Context, Message};
use agent_store::{Error, KeyedOutcome, MemoryStore, Store, Stored};

fn push(n: i64) -> Vec<Message> {
    Message::from_value(json!({"type": "state", "data": {"log": n},
        "_outputPath": "†state.log", "_outputMethod": "push"}))
    .unwrap()
}

fn log(store: &MemoryStore) -> agent_core::json::Value {
    let context = store.handle().load().unwrap().context;
    context
        .read(&"†state.log".parse().unwrap(), None)
        .cloned()
        .unwrap_or_default()
}

#[test]
fn a_context_never_written_is_missing_and_the_first_append_creates_it() {
    let mut store = MemoryStore::new("scratch");
    let error = store.load().unwrap_err();
    assert!(error.is_missing(), "{error}");
    assert_eq!(error.to_string(), "scratch: no such context");
    let mut stored = Stored::open_or_create(store.handle()).unwrap();
    stored.append_all(&push(1)).unwrap();
    assert_eq!(store.load().unwrap().context.len(), 1);
}

#[test]
fn r34b_an_append_at_a_stale_length_conflicts_and_changes_nothing() {
    let store = MemoryStore::new("c");
    let (mut a, mut b) = (store.handle(), store.handle());
    let (mut mine, mut theirs) = (Context::new(), Context::new());
    a.commit(&mut mine, &push(1)).unwrap();
    // `b` validated against the empty context: appending at length 0 now
    // is a conflict.
    let two = push(2);
    let prepared = theirs.prepare(&two).unwrap();
    let error = b.append_at(&prepared).unwrap_err();
    assert!(
        matches!(
            error,
            Error::Conflict {
                expected: 0,
                current: 1,
                ..
            }
        ),
        "{error}"
    );
    assert_eq!(log(&store), json!([1]));
    drop(prepared);
    // A commit catches up and lands after the first.
    b.commit(&mut theirs, &two).unwrap();
    assert_eq!(theirs.len(), 2);
    assert_eq!(log(&store), json!([1, 2]));
}

#[test]
fn r34b_writers_on_many_threads_lose_nothing() {
    let store = MemoryStore::new("c");
    std::thread::scope(|scope| {
        for t in 0..4 {
            let mut handle = store.handle();
            scope.spawn(move || {
                let mut context = Context::new();
                for i in 0..25 {
                    handle.commit(&mut context, &push(t * 100 + i)).unwrap();
                }
            });
        }
    });
    let json::Value::Array(items) = log(&store) else {
        panic!("no log")
    };
    let mut items: Vec<i64> = items.iter().map(|v| v.as_i64().unwrap()).collect();
    assert_eq!(items.len(), 100);
    // Each writer's own appends stay in its order.
    for t in 0..4 {
        let mine: Vec<i64> = items.iter().copied().filter(|n| n / 100 == t).collect();
        assert_eq!(mine, (0..25).map(|i| t * 100 + i).collect::<Vec<_>>());
    }
    items.sort_unstable();
    items.dedup();
    assert_eq!(items.len(), 100);
}

#[test]
fn r34b_a_refused_append_changes_nothing() {
    let store = MemoryStore::new("c");
    let mut stored = Stored::create(store.handle());
    let schema = Message::from_value(json!({"type": "data", "kind": "n", "data": {"a": 1},
        "schema": {"properties": {"a": {"type": "number"}}}}))
    .unwrap();
    stored.append_all(&schema).unwrap();
    let bad =
        Message::from_value(json!({"type": "data", "kind": "n", "data": {"a": "x"}})).unwrap();
    let error = stored.append_all(&bad).unwrap_err();
    assert!(error.is_refused(), "{error}");
    assert!(error.to_string().contains("schema violated"), "{error}");
    assert_eq!(store.handle().load().unwrap().context.len(), 1);
}

#[test]
fn r34b_the_same_key_twice_appends_once_in_memory() {
    let store = MemoryStore::new("c");
    let key = AppendKey::new("job-1").unwrap();
    let (mut a, mut b) = (store.handle(), store.handle());
    let mut mine = Context::new();
    assert_eq!(
        a.commit_once(&mut mine, &push(1), &key).unwrap(),
        KeyedOutcome::Appended(0..1)
    );
    // Another handle retrying: nothing appended, the first range reported,
    // and its context caught up to include it.
    let mut theirs = Context::new();
    assert_eq!(
        b.commit_once(&mut theirs, &push(1), &key).unwrap(),
        KeyedOutcome::Already(0..1)
    );
    assert_eq!(theirs.len(), 1);
    let other = AppendKey::new("job-2").unwrap();
    assert_eq!(
        b.commit_once(&mut theirs, &push(2), &other).unwrap(),
        KeyedOutcome::Appended(1..2)
    );
    assert_eq!(log(&store), json!([1, 2]));
    // An empty batch says the store keeps keys, and records none.
    let third = AppendKey::new("job-3").unwrap();
    assert_eq!(
        b.commit_once(&mut theirs, &[], &third).unwrap(),
        KeyedOutcome::Appended(2..2)
    );
    assert_eq!(
        b.commit_once(&mut theirs, &push(3), &third).unwrap(),
        KeyedOutcome::Appended(2..3)
    );
}

#[test]
fn r34b_racing_writers_with_one_key_append_once() {
    let store = MemoryStore::new("c");
    let key = AppendKey::new("race").unwrap();
    let landed: Vec<KeyedOutcome> = std::thread::scope(|scope| {
        let runs: Vec<_> = (0..4)
            .map(|_| {
                let mut handle = store.handle();
                let key = key.clone();
                scope.spawn(move || {
                    let mut context = Context::new();
                    handle.commit_once(&mut context, &push(7), &key).unwrap()
                })
            })
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    assert_eq!(landed.iter().filter(|o| !o.is_already()).count(), 1);
    assert!(landed.iter().all(|o| o.range() == (0..1)));
    assert_eq!(log(&store), json!([7]));
}

#[test]
fn keys_cross_the_seam_through_a_stored_context_in_memory() {
    let store = MemoryStore::new("c");
    let mut stored = Stored::create(store.handle());
    let key = AppendKey::new("k").unwrap();
    assert_eq!(
        stored.append_once(&push(1), &key).unwrap(),
        KeyedOutcome::Appended(0..1)
    );
    assert!(stored.append_once(&push(1), &key).unwrap().is_already());
    // A context held in memory alone keeps no keys: the seam says so.
    let mut bare = Context::new();
    let error = Append::append_once(&mut bare, &push(1), &key).unwrap_err();
    assert!(
        matches!(error, AppendError::KeysUnsupported { .. }),
        "{error}"
    );
    assert!(bare.is_empty());
}

#[test]
fn r3_the_log_in_memory_loads_back_as_written() {
    let store = MemoryStore::new("c");
    let mut handle = store.handle();
    let mut context = Context::new();
    let messages: Vec<Message> = [
        r#"{"type": "text", "text": "hi"}"#,
        r#"{"type": "state", "data": {"price": 1.10, "big": 123456789012345678901234567890}}"#,
        r#"{"type": "data", "kind": "item", "data": {"n": 1}, "_instance": "i1"}"#,
    ]
    .into_iter()
    .flat_map(|text| Message::from_value(json::from_str(text).unwrap()).unwrap())
    .collect();
    handle.commit(&mut context, &messages).unwrap();
    let loaded = store.handle().load().unwrap().context;
    assert_eq!(loaded.to_jsonl(), context.to_jsonl());
    assert_eq!(loaded.head(), context.head());
    assert_eq!(
        loaded.read(&"†state.price".parse().unwrap(), None),
        Some(&json::from_str("1.10").unwrap())
    );
}

#[test]
fn a_handle_with_a_context_it_did_not_read_is_refused() {
    let store = MemoryStore::new("c");
    let mut a = store.handle();
    a.commit(&mut Context::new(), &push(1)).unwrap();
    let mut b = store.handle();
    let mut other = Context::from_messages(push(9)).unwrap();
    let error = b.catch_up(&mut other).unwrap_err();
    assert_eq!(
        error.to_string(),
        "c: the context has 1 messages, but 0 were read from this store"
    );
}
