//! The head record beside a JSONL file (R34e): an open goes through the
//! snapshot only while the file is exactly as an agentctx writer (or a
//! whole read) left it; an edit in place, a copy over it or a restore is
//! read whole, so every command says what the file holds.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use agent_data::{Context, Message};
use agent_store::{FileStore, Finding, Store};
use serde_json::json;
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
    store.snapshot(&context, true).unwrap();
    assert!(
        path.with_file_name(".c.jsonl.snapshot").exists(),
        "a snapshot was written"
    );
    assert!(
        path.with_file_name(".c.jsonl.head").exists(),
        "a record was written"
    );
}

fn n_of(context: &Context) -> serde_json::Value {
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
    // That read recorded the file and wrote a snapshot of it: the next
    // open goes through the snapshot again, and reads the same.
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
