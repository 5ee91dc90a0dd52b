//! First sight of a copied or restored JSONL file (D110: first sight by
//! the chain): its record no
//! longer matches it, yet it opens through its snapshot when its lines
//! before the snapshot, hashed as stored, chain to the snapshot's digest —
//! and any change to those lines is still found: the file is read whole,
//! and what it holds is what every read says.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use agent_core::json;
use agent_data::{Context, Message};
use agent_store::{FileStore, SnapshotWhen, Store};
use std::path::{Path, PathBuf};

/// A file of `n` messages, each writing `k<i % 50>`, written through the
/// store with its snapshot taken 20 messages before the end: the log, its
/// snapshot and its record beside it.
fn written(dir: &Path, n: usize) -> PathBuf {
    let path = dir.join("c.jsonl");
    std::fs::write(&path, "").unwrap();
    let mut store = FileStore::open(&path).unwrap();
    let mut context = store.load().unwrap().context;
    let message = |i: usize| {
        Message::from_value(json!({"type": "state", "data": {format!("k{}", i % 50): i}})).unwrap()
    };
    let head: Vec<Message> = (0..n - 20).flat_map(message).collect();
    store.commit(&mut context, &head).unwrap();
    store.snapshot(&context, SnapshotWhen::Now).unwrap();
    let tail: Vec<Message> = (n - 20..n).flat_map(message).collect();
    store.commit(&mut context, &tail).unwrap();
    path
}

/// Copies the log and whatever is kept beside it (`cp -a` of the
/// directory: new inodes, new times) into `to`; returns the copy's path.
fn copied(from: &Path, to: &Path, sidecars: &[&str]) -> PathBuf {
    for name in ["c.jsonl"].iter().chain(sidecars) {
        std::fs::copy(from.join(name), to.join(name)).unwrap();
    }
    to.join("c.jsonl")
}

fn whole(path: &Path) -> Context {
    let text = std::fs::read(path).unwrap();
    Context::load(&text, agent_data::Format::Jsonl)
        .unwrap()
        .context
}

fn state(context: &Context) -> agent_core::json::Value {
    context
        .read(&"†state".parse().unwrap(), None)
        .cloned()
        .unwrap()
}

#[test]
fn d110_a_copy_opens_through_its_snapshot_when_its_lines_chain_to_the_snapshots_digest() {
    let a = tempfile::tempdir().unwrap();
    written(a.path(), 600);
    for sidecars in [
        &[".c.jsonl.snapshot", ".c.jsonl.head"][..],
        &[".c.jsonl.snapshot"],
    ] {
        let b = tempfile::tempdir().unwrap();
        let copy = copied(a.path(), b.path(), sidecars);
        let loaded = FileStore::open(&copy).unwrap().load_tail().unwrap();
        assert!(
            !loaded.context.is_complete(),
            "{sidecars:?}: opened through the snapshot"
        );
        assert_eq!(loaded.warnings, []);
        let full = whole(&copy);
        assert_eq!(loaded.context.head(), full.head());
        assert_eq!(state(&loaded.context), state(&full));
        // The copy is recorded as it is now: the next open is warm.
        let record = std::fs::read_to_string(b.path().join(".c.jsonl.head")).unwrap();
        let ino = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&copy).unwrap());
        assert!(record.contains(&format!(" ino={ino} ")), "{record}");
        assert!(
            record.contains(&format!(" digest={} ", full.head())),
            "{record}"
        );
    }
}

#[test]
fn d110_a_tampered_prefix_is_found_at_first_sight_and_the_file_read_whole() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    written(a.path(), 600);
    let copy = copied(a.path(), b.path(), &[".c.jsonl.snapshot", ".c.jsonl.head"]);
    // Message 10 edited, its length kept, far before the snapshot's end:
    // the anchor's window of the bytes before it cannot see the change.
    let text = std::fs::read_to_string(&copy).unwrap();
    let tampered = text.replacen(r#"{"k10":10}"#, r#"{"k10":99}"#, 1);
    assert_ne!(tampered, text);
    std::fs::write(&copy, &tampered).unwrap();
    let loaded = FileStore::open(&copy).unwrap().load_tail().unwrap();
    assert!(loaded.context.is_complete(), "read whole");
    let full = whole(&copy);
    assert_eq!(loaded.context.head(), full.head());
    assert_eq!(state(&loaded.context), state(&full));
    assert_eq!(state(&full)["k10"], json!(560), "a later write still wins");
    let said: Vec<String> = loaded.warnings.iter().map(ToString::to_string).collect();
    assert!(
        said.iter().any(|w| w.contains(".c.jsonl.snapshot")
            && w.contains("it summarises 580 messages ending at digest")
            && w.contains("the log changed before that since it was taken")),
        "{said:?}"
    );
    assert!(
        said.iter().any(|w| w.contains(".c.jsonl.head")
            && w.contains("it changed since agentctx last wrote it")),
        "{said:?}"
    );
}

#[test]
fn d110_a_snapshot_of_another_log_is_replaced_so_it_is_warned_about_once() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    // Few messages, so a whole read of it writes no snapshot of its own
    // (none is due), and long ones, so the line changed lies before the
    // bytes the snapshot's anchor checks.
    let path = a.path().join("c.jsonl");
    std::fs::write(&path, "").unwrap();
    let mut store = FileStore::open(&path).unwrap();
    let mut context = store.load().unwrap().context;
    let long = |i: usize| {
        let value = json!({"type": "state", "data": {format!("k{i}"): "x".repeat(400)}});
        Message::from_value(value).unwrap()
    };
    let first: Vec<Message> = (0..20).flat_map(long).collect();
    store.commit(&mut context, &first).unwrap();
    store.snapshot(&context, SnapshotWhen::Now).unwrap();
    let rest: Vec<Message> = (20..40).flat_map(long).collect();
    store.commit(&mut context, &rest).unwrap();
    let copy = copied(a.path(), b.path(), &[".c.jsonl.snapshot"]);
    let text = std::fs::read_to_string(&copy).unwrap();
    let changed = text.replacen(r#"{"k1":"xx"#, r#"{"k1":"yx"#, 1);
    assert_ne!(changed, text);
    std::fs::write(&copy, changed).unwrap();
    let named = |warnings: &[agent_data::Warning]| {
        warnings
            .iter()
            .any(|w| w.to_string().contains(".c.jsonl.snapshot"))
    };
    let first = FileStore::open(&copy).unwrap().load_tail().unwrap();
    assert!(first.context.is_complete());
    assert!(named(&first.warnings), "{:?}", first.warnings);
    let again = FileStore::open(&copy).unwrap().load_tail().unwrap();
    assert!(!named(&again.warnings), "{:?}", again.warnings);
    assert!(
        !again.context.is_complete(),
        "through the snapshot put in its place"
    );
    assert_eq!(again.context.head(), whole(&copy).head());
}

#[test]
fn d110_a_copy_with_a_torn_last_line_is_not_recorded() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    written(a.path(), 600);
    let copy = copied(a.path(), b.path(), &[".c.jsonl.snapshot", ".c.jsonl.head"]);
    let record = std::fs::read_to_string(b.path().join(".c.jsonl.head")).unwrap();
    let mut text = std::fs::read_to_string(&copy).unwrap();
    text.push_str(r#"{"type":"state","data":{"#);
    std::fs::write(&copy, &text).unwrap();
    let loaded = FileStore::open(&copy).unwrap().load_tail().unwrap();
    assert_eq!(loaded.context.len(), 600);
    assert!(
        loaded
            .warnings
            .iter()
            .any(|w| matches!(w, agent_data::Warning::TornLastLine { .. })),
        "{:?}",
        loaded.warnings
    );
    assert_eq!(
        std::fs::read_to_string(b.path().join(".c.jsonl.head")).unwrap(),
        record,
        "a torn tail is no writer's state: the record is left as it was"
    );
}

#[test]
fn d110_a_copy_matching_its_snapshot_whose_record_says_more_is_warned_about() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let path = written(a.path(), 600);
    // Restored from a backup taken before the last five lines: the record
    // beside it is the newer file's.
    let text = std::fs::read_to_string(&path).unwrap();
    let cut: String = text.lines().take(595).map(|l| format!("{l}\n")).collect();
    copied(a.path(), b.path(), &[".c.jsonl.snapshot", ".c.jsonl.head"]);
    let copy = b.path().join("c.jsonl");
    std::fs::write(&copy, &cut).unwrap();
    let loaded = FileStore::open(&copy).unwrap().load_tail().unwrap();
    assert!(!loaded.context.is_complete(), "the snapshot still holds");
    assert_eq!(loaded.context.len(), 595);
    assert_eq!(loaded.context.head(), whole(&copy).head());
    let said: Vec<String> = loaded.warnings.iter().map(ToString::to_string).collect();
    assert!(
        said.iter()
            .any(|w| w.contains("it says the log held 600 messages")),
        "{said:?}"
    );
}

#[test]
fn d110_a_log_not_spelled_as_agentctx_writes_it_is_read_whole_without_a_warning() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let path = a.path().join("c.jsonl");
    // Another program's spelling: spaces after the colons.
    let lines: String = (0..400)
        .map(|i| format!("{{\"type\": \"state\", \"data\": {{\"n\": {i}}}}}\n"))
        .collect();
    std::fs::write(&path, lines).unwrap();
    let mut store = FileStore::open(&path).unwrap();
    let mut context = store.load().unwrap().context;
    let more = Message::from_value(json!({"type": "state", "data": {"n": 400}})).unwrap();
    store.commit(&mut context, &more).unwrap();
    store.snapshot(&context, SnapshotWhen::Now).unwrap();
    let copy = copied(a.path(), b.path(), &[".c.jsonl.snapshot", ".c.jsonl.head"]);
    let loaded = FileStore::open(&copy).unwrap().load_tail().unwrap();
    assert!(loaded.context.is_complete(), "its lines hash otherwise");
    assert_eq!(loaded.warnings, []);
    assert_eq!(loaded.context.head(), context.head());
}

mod property {
    use super::*;
    use proptest::prelude::*;

    /// A change to the copy's lines, by line index.
    #[derive(Debug, Clone)]
    enum Change {
        None,
        /// The line's value changed, its length kept.
        Edit(usize),
        Delete(usize),
        Insert(usize),
        Swap(usize, usize),
    }

    fn change(n: usize) -> impl Strategy<Value = Change> {
        prop_oneof![
            Just(Change::None),
            (0..n).prop_map(Change::Edit),
            (0..n).prop_map(Change::Delete),
            (0..n).prop_map(Change::Insert),
            (0..n, 0..n)
                .prop_filter("two lines", |(a, b)| a % 50 != b % 50)
                .prop_map(|(a, b)| Change::Swap(a.min(b), a.max(b))),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// Whatever was done to a copy, its first open reads what a whole
        /// read of it says; it went through the snapshot only when no line
        /// before the snapshot changed.
        #[test]
        fn d110_a_first_sight_reads_what_a_whole_read_reads(
            (n, change) in (60usize..400).prop_flat_map(|n| (Just(n), change(n)))
        ) {
            let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
            written(a.path(), n);
            let copy = copied(a.path(), b.path(), &[".c.jsonl.snapshot", ".c.jsonl.head"]);
            let text = std::fs::read_to_string(&copy).unwrap();
            let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
            let first = match change {
                Change::None => usize::MAX,
                Change::Edit(p) => {
                    let key = format!("\"k{}\":", p % 50);
                    let (at, _) = lines[p].match_indices(&key).next().unwrap();
                    let digit = at + key.len();
                    let old = lines[p].as_bytes()[digit];
                    let new = if old == b'9' { '8' } else { '9' };
                    lines[p].replace_range(digit..=digit, &new.to_string());
                    p
                }
                Change::Delete(p) => { lines.remove(p); p }
                Change::Insert(p) => {
                    lines.insert(p, json!({"type": "state", "data": {"k0": -1}}).to_string());
                    p
                }
                Change::Swap(x, y) => { lines.swap(x, y); x }
            };
            std::fs::write(&copy, lines.join("\n") + "\n").unwrap();
            let loaded = FileStore::open(&copy).unwrap().load_tail().unwrap();
            let full = whole(&copy);
            prop_assert_eq!(loaded.context.head(), full.head());
            prop_assert_eq!(state(&loaded.context), state(&full));
            prop_assert_eq!(loaded.context.len(), full.len());
            if first < n - 20 {
                prop_assert!(loaded.context.is_complete(), "{:?} went through the snapshot", change);
            }
            if matches!(change, Change::None) {
                prop_assert!(!loaded.context.is_complete());
            }
        }
    }
}
