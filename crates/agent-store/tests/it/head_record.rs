//! The head record beside a JSONL file (R34e): an open goes through the
//! snapshot only while the file is exactly as an agentctx writer (or a
//! whole read) left it; an edit in place, a copy over it or a restore is
//! read whole, so every command says what the file holds.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use agent_store::SnapshotWhen;

use agent_core::json;
use agent_data::{Context, Message};
use agent_store::{FileStore, Finding, Store};
use std::path::Path;

/// A file of `n` messages written through the store, which leaves a
/// snapshot and a head record beside it.
fn written(path: &Path, n: usize) {
    std::fs::write(path, "").unwrap();
    let mut store = FileStore::open(path).unwrap();
    let mut context = store.load().unwrap().context;
    let batch: Vec<Message> = (0..n)
        .flat_map(|i| Message::from_value(json!({"type": "state", "data": {"n": i}})).unwrap())
        .collect();
    store.commit(&mut context, &batch).unwrap();
    store.snapshot(&context, SnapshotWhen::Now).unwrap();
    assert!(
        path.with_file_name(".c.jsonl.snapshot").exists(),
        "a snapshot was written"
    );
    assert!(
        path.with_file_name(".c.jsonl.head").exists(),
        "a record was written"
    );
}

fn n_of(context: &Context) -> agent_core::json::Value {
    context
        .read(&"†state.n".parse().unwrap(), None)
        .cloned()
        .unwrap()
}

#[test]
fn r34e_an_open_goes_through_the_snapshot_while_the_file_is_as_a_writer_left_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    written(&path, 200);
    let opened = FileStore::open(&path).unwrap().load_tail().unwrap().context;
    assert!(!opened.is_complete(), "opened through the snapshot");
    assert_eq!(n_of(&opened), json!(199));
    let full = FileStore::open(&path).unwrap().load().unwrap().context;
    assert_eq!(opened.head(), full.head());
}

#[test]
fn r34e_a_file_edited_in_place_under_its_snapshot_is_read_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    written(&path, 200);
    // The last message edited, its length kept: the snapshot's anchor (the
    // file's length and last bytes before the snapshot's end) cannot see
    // an edit before it, so edit one the snapshot summarises.
    let text = std::fs::read_to_string(&path).unwrap();
    let edited = text.replacen(r#"{"n":150}"#, r#"{"n":151}"#, 1);
    std::fs::write(&path, &edited).unwrap();
    let opened = FileStore::open(&path).unwrap().load_tail().unwrap().context;
    assert!(opened.is_complete(), "read whole, not through the snapshot");
    let full = Context::load(edited.as_bytes(), agent_data::Format::Jsonl)
        .unwrap()
        .context;
    assert_eq!(opened.head(), full.head());
    assert_eq!(n_of(&opened), n_of(&full));
    // The record says otherwise before its end: kept for `verify`, warned
    // about, never written over — every open checks the file again (whole,
    // or through the snapshot the whole read left, when the lines before
    // it chain to its digest: D110) and warns.
    let mut store = FileStore::open(&path).unwrap();
    let loaded = store.load_tail().unwrap();
    assert_eq!(loaded.context.head(), full.head());
    assert_eq!(n_of(&loaded.context), n_of(&full));
    assert!(
        loaded.warnings.iter().any(|w| w
            .to_string()
            .contains("it changed since agentctx last wrote it")),
        "{:?}",
        loaded.warnings
    );
    let findings = FileStore::open(&path).unwrap().verify().unwrap().findings;
    assert!(
        findings
            .iter()
            .any(|f| matches!(f, Finding::RecordChain { messages: 200, .. })),
        "{findings:?}"
    );
    // Once the change is understood and the record removed, a whole read
    // records the file again and opens go through a snapshot again.
    std::fs::remove_file(dir.path().join(".c.jsonl.head")).unwrap();
    let mut store = FileStore::open(&path).unwrap();
    let context = store.load().unwrap().context;
    store.snapshot(&context, SnapshotWhen::Now).unwrap();
    let again = FileStore::open(&path).unwrap().load_tail().unwrap().context;
    assert!(!again.is_complete());
    assert_eq!(again.head(), full.head());
    assert!(FileStore::open(&path).unwrap().verify().unwrap().is_clean());
}

#[test]
fn r34e_a_file_copied_over_or_restored_is_read_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    let other_dir = tempfile::tempdir().unwrap();
    let other = other_dir.path().join("c.jsonl");
    written(&path, 200);
    // Another log of the same size, copied over it (`cp` keeps the inode).
    let text = std::fs::read_to_string(&path).unwrap();
    let forged = text.replace(r#"{"n":7}"#, r#"{"n":8}"#);
    std::fs::write(&other, &forged).unwrap();
    std::fs::copy(&other, &path).unwrap();
    let opened = FileStore::open(&path).unwrap().load_tail().unwrap().context;
    assert!(opened.is_complete());
    let full = Context::load(forged.as_bytes(), agent_data::Format::Jsonl)
        .unwrap()
        .context;
    assert_eq!(opened.head(), full.head());
    // Restored from a backup (`mv`: another inode), the original content.
    let backup = other_dir.path().join("backup.jsonl");
    std::fs::write(&backup, &text).unwrap();
    std::fs::rename(&backup, &path).unwrap();
    let restored = FileStore::open(&path).unwrap().load_tail().unwrap().context;
    assert!(restored.is_complete());
    assert_eq!(
        restored.head(),
        Context::load(text.as_bytes(), agent_data::Format::Jsonl)
            .unwrap()
            .context
            .head()
    );
}

#[test]
fn r34e_verify_finds_a_log_changed_since_agentctx_last_left_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    written(&path, 10);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replacen(r#"{"n":3}"#, r#"{"n":4}"#, 1)).unwrap();
    let findings = FileStore::open(&path).unwrap().verify().unwrap().findings;
    assert!(
        findings.iter().any(|f| matches!(
            f,
            Finding::RecordChain {
                messages: 10,
                log: Some(_),
                ..
            }
        )),
        "{findings:?}"
    );
    // Cut: the record counts more messages than the log has.
    let lines: Vec<&str> = text.lines().take(4).collect();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let findings = FileStore::open(&path).unwrap().verify().unwrap().findings;
    assert!(
        findings.iter().any(|f| matches!(
            f,
            Finding::RecordChain {
                messages: 10,
                log: None,
                ..
            }
        )),
        "{findings:?}"
    );
}

#[test]
fn r34e_a_symlink_planted_as_the_record_is_never_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "keep me").unwrap();
    std::os::unix::fs::symlink(&victim, dir.path().join(".c.jsonl.head")).unwrap();
    written(&path, 3);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
    let record = std::fs::symlink_metadata(dir.path().join(".c.jsonl.head")).unwrap();
    assert!(record.is_file(), "replaced by a record of ours");
    // Written again in place, it still opens through nothing but itself.
    let mut store = FileStore::open(&path).unwrap();
    let mut context = store.load().unwrap().context;
    let more = Message::from_value(json!({"type": "state", "data": {"n": 3}})).unwrap();
    store.commit(&mut context, &more).unwrap();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
    let text = std::fs::read_to_string(dir.path().join(".c.jsonl.head")).unwrap();
    assert!(text.contains(" messages=4 "), "{text}");
    assert!(
        text.contains(&format!(" digest={}", context.head())),
        "{text}"
    );
}

/// How a line of the file is changed behind agentctx's back.
#[derive(Debug, Clone)]
enum Change {
    Edit(usize),
    Delete(usize),
    Insert(usize),
    Swap(usize, usize),
}

mod property {
    use super::*;
    use proptest::prelude::*;

    fn change(n: usize) -> impl Strategy<Value = Change> {
        prop_oneof![
            (0..n).prop_map(Change::Edit),
            (0..n).prop_map(Change::Delete),
            (0..n).prop_map(Change::Insert),
            (0..n, 0..n)
                .prop_filter("two lines", |(a, b)| a != b)
                .prop_map(|(a, b)| Change::Swap(a.min(b), a.max(b))),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        /// Any edit, deletion, insertion or reordering of a file's lines is
        /// found, and placed between the two checkpoints around the first
        /// changed line — or, past the last checkpoint, before the record's
        /// end.
        #[test]
        fn r34e_verify_finds_any_change_of_a_file_between_its_checkpoints(
            (n, change) in (2usize..700).prop_flat_map(|n| (Just(n), change(n)))
        ) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("c.jsonl");
            std::fs::write(&path, "").unwrap();
            let mut store = FileStore::open(&path).unwrap();
            let mut context = store.load().unwrap().context;
            // In batches of 100, so appends cross checkpoints mid-batch.
            for start in (0..n).step_by(100) {
                let batch: Vec<Message> = (start..n.min(start + 100))
                    .flat_map(|i| Message::from_value(json!({"type": "state", "data": {"n": i}})).unwrap())
                    .collect();
                store.commit(&mut context, &batch).unwrap();
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
            let first = match change {
                Change::Edit(p) => { lines[p] = json!({"type": "state", "data": {"n": -1}}).to_string(); p }
                Change::Delete(p) => { lines.remove(p); p }
                Change::Insert(p) => { lines.insert(p, json!({"type": "state", "data": {"n": -2}}).to_string()); p }
                Change::Swap(a, b) => { lines.swap(a, b); a }
            };
            std::fs::write(&path, lines.join("\n") + "\n").unwrap();
            let findings = FileStore::open(&path).unwrap().verify().unwrap().findings;
            prop_assert!(!findings.is_empty(), "{:?} not found", change);
            let every = agent_store::CHECKPOINT_EVERY;
            let last_checkpoint = n / every * every;
            if first < last_checkpoint {
                let placed = findings.iter().any(|f| matches!(f,
                    Finding::Checkpoint { after, before, .. } if *after <= first && first < *before));
                prop_assert!(placed, "{:?}: {:?}", change, findings);
            } else {
                prop_assert!(
                    findings.iter().any(|f| matches!(f, Finding::RecordChain { messages, .. } if *messages == n)),
                    "{:?}: {:?}", change, findings
                );
            }
        }
    }
}

#[test]
fn r34e_a_hard_link_planted_as_a_record_keys_or_checkpoints_is_never_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "keep me").unwrap();
    for sidecar in [".c.jsonl.head", ".c.jsonl.keys", ".c.jsonl.chain"] {
        std::fs::hard_link(&victim, dir.path().join(sidecar)).unwrap();
    }
    std::fs::write(&path, "").unwrap();
    let mut store = FileStore::open(&path).unwrap();
    let mut context = store.load().unwrap().context;
    let batch: Vec<Message> = (0..300)
        .flat_map(|i| Message::from_value(json!({"type": "state", "data": {"n": i}})).unwrap())
        .collect();
    store.commit(&mut context, &batch).unwrap();
    let key = agent_store::AppendKey::new("k").unwrap();
    let keyed = store.commit_once(&mut context, &batch[..1], &key);
    assert!(keyed.is_err(), "keys cannot be kept through a planted link");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
}

#[test]
fn r34e_a_writer_catching_up_from_nothing_keeps_a_record_the_log_contradicts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    written(&path, 10);
    let record = std::fs::read_to_string(dir.path().join(".c.jsonl.head")).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replacen(r#"{"n":3}"#, r#"{"n":4}"#, 1)).unwrap();
    // A writer that never loads: it catches up from an empty context.
    let mut store = FileStore::open(&path).unwrap();
    let mut context = Context::new();
    let more = Message::from_value(json!({"type": "state", "data": {"n": 10}})).unwrap();
    store.commit(&mut context, &more).unwrap();
    assert!(
        store.take_warnings().iter().any(|w| w
            .to_string()
            .contains("it changed since agentctx last wrote it")),
        "warned"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join(".c.jsonl.head")).unwrap(),
        record,
        "the evidence is kept"
    );
    let findings = FileStore::open(&path).unwrap().verify().unwrap().findings;
    assert!(
        findings.iter().any(|f| matches!(
            f,
            Finding::RecordChain {
                messages: 10,
                log: Some(_),
                ..
            }
        )),
        "{findings:?}"
    );
}

/// The caches a read of the file at `path` kept in the user's cache
/// directory (named by its device, inode and birth time), removed: the
/// directory is shared, and earlier files with the same inode (other
/// tests' temporary files) leave caches under the same device and inode.
fn cached_by_reads(path: &Path) -> Vec<String> {
    use std::os::unix::fs::MetadataExt;
    let Some(dir) = FileStore::cache_dir() else {
        return Vec::new();
    };
    let meta = std::fs::metadata(path).unwrap();
    let born = meta
        .created()
        .ok()
        .and_then(|born| born.duration_since(std::time::UNIX_EPOCH).ok());
    let stem = match born {
        Some(born) => format!(
            "{}-{}-{}.{:09}.",
            meta.dev(),
            meta.ino(),
            born.as_secs(),
            born.subsec_nanos()
        ),
        None => format!("{}-{}.", meta.dev(), meta.ino()),
    };
    let mut found: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(&stem))
        .collect();
    found.sort();
    for name in &found {
        std::fs::remove_file(dir.join(name)).unwrap();
    }
    found
        .iter()
        .map(|name| name.rsplit('.').next().unwrap_or_default().to_owned())
        .collect()
}

use test_support::files::listing;

#[test]
fn d101_reading_a_file_with_nothing_beside_it_writes_nothing_beside_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    let lines: String = (0..300)
        .map(|i| format!("{{\"type\":\"state\",\"data\":{{\"n\":{i}}}}}\n"))
        .collect();
    std::fs::write(&path, lines).unwrap();
    let first = FileStore::open(&path).unwrap().load_tail().unwrap().context;
    assert!(first.is_complete(), "nothing cached yet: read whole");
    let again = FileStore::open(&path).unwrap().load_tail().unwrap().context;
    FileStore::open(&path).unwrap().verify().unwrap();
    assert_eq!(
        listing(dir.path()),
        ["c.jsonl"],
        "a read left files beside the log"
    );
    if FileStore::cache_dir().is_some() {
        // Kept in the user's cache instead, and used by the next open.
        assert!(
            !again.is_complete(),
            "the second open used the cached snapshot"
        );
        assert_eq!(cached_by_reads(&path), ["head", "snapshot"]);
    }
    assert_eq!(n_of(&again), json!(299));

    // A handle that appends keeps them beside the log, and reads follow.
    let mut store = FileStore::open(&path).unwrap();
    let mut context = store.load().unwrap().context;
    let m = Message::from_value(json!({"type": "state", "data": {"n": 300}})).unwrap();
    store.commit(&mut context, &m).unwrap();
    store.snapshot(&context, SnapshotWhen::Now).unwrap();
    assert_eq!(
        listing(dir.path()),
        [".c.jsonl.head", ".c.jsonl.snapshot", "c.jsonl"]
    );
    let reopened = FileStore::open(&path).unwrap().load_tail().unwrap().context;
    assert!(!reopened.is_complete());
    assert_eq!(n_of(&reopened), json!(300));
    cached_by_reads(&path);
}
