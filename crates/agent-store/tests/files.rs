//! FileStore edge cases found by red-teaming the write path (R34, R34b):
//! each leaves the file as it was or the append fully there.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use agent_data::{Context, Message};
use agent_store::{Append, Error, FileStore, Store, Stored};
use serde_json::json;
use std::path::PathBuf;

fn dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("agentctx-files-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn message(value: serde_json::Value) -> Message {
    Message::from_value(value).unwrap().remove(0)
}

fn push(n: i64) -> Message {
    message(
        json!({"type": "state", "data": {"log": n}, "_outputPath": "†state.log", "_outputMethod": "push"}),
    )
}

fn log(path: &std::path::Path) -> serde_json::Value {
    let context = FileStore::open(path).unwrap().load().unwrap().context;
    context
        .read(&"†state.log".parse().unwrap(), None)
        .cloned()
        .unwrap_or_default()
}

#[test]
fn r34_a_blank_unterminated_last_line_takes_appends() {
    let path = dir("blank").join("c.jsonl");
    std::fs::write(&path, "{\"type\":\"state\",\"data\":{\"log\":[]}}\n   ").unwrap();
    let mut stored = Stored::open(FileStore::open(&path).unwrap()).unwrap();
    stored.append_all(&[push(1)]).unwrap();
    stored.append_all(&[push(2)]).unwrap();
    assert_eq!(log(&path), json!([1, 2]));
    assert!(std::fs::read_to_string(&path).unwrap().contains("   \n{"));
}

#[test]
fn r34b_a_refused_first_append_creates_no_file() {
    for name in ["new.json", "new.jsonl"] {
        let path = dir("refused-first").join(name);
        let schema = message(json!({"type": "data", "data": {"a": "x"},
            "schema": {"properties": {"a": {"type": "number"}}}}));
        let mut stored = Stored::create(FileStore::open(&path).unwrap());
        let error = stored.append_all(&[schema]).unwrap_err();
        assert!(matches!(error, Error::Refused(_)), "{error}");
        assert!(!path.exists(), "{name} was created by a refused append");
    }
}

#[test]
fn r34_an_empty_json_file_is_an_empty_context() {
    let path = dir("empty-json").join("c.json");
    std::fs::write(&path, "  \n").unwrap();
    let mut stored = Stored::open(FileStore::open(&path).unwrap()).unwrap();
    assert!(stored.context().is_empty());
    stored.append_all(&[push(1)]).unwrap();
    assert_eq!(log(&path), json!([1]));
}

#[test]
fn r34b_a_jsonl_file_rewritten_in_place_is_detected() {
    let path = dir("rewritten").join("c.jsonl");
    std::fs::write(&path, "{\"type\":\"state\",\"data\":{\"log\":[]}}\n").unwrap();
    let mut store = FileStore::open(&path).unwrap();
    let mut context = store.load().unwrap().context;
    // Another program empties the file and writes something longer.
    std::fs::write(&path, "{\"type\":\"state\",\"data\":{\"log\":[7]},\"schema\":{\"properties\":{\"log\":{\"maxItems\":1}}}}\n").unwrap();
    let before = std::fs::read(&path).unwrap();
    let error = store.commit(&mut context, &[push(1)]).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "{} was rewritten since it was read; load it again",
            path.display()
        )
    );
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn r34b_a_json_file_replaced_under_a_writer_is_detected() {
    let dir = dir("replaced-json");
    let path = dir.join("c.json");
    std::fs::write(&path, "[{\"type\":\"state\",\"data\":{\"log\":[]}}]").unwrap();
    let mut store = FileStore::open(&path).unwrap();
    let mut context = store.load().unwrap().context;
    let other = dir.join("other.json");
    std::fs::write(&other, "[{\"type\":\"state\",\"data\":{\"log\":[\"x\"]},\"schema\":{\"properties\":{\"log\":{\"maxItems\":1}}}}]").unwrap();
    std::fs::rename(&other, &path).unwrap();
    let before = std::fs::read(&path).unwrap();
    let error = store.commit(&mut context, &[push(1)]).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "{} was replaced since it was read; load it again",
            path.display()
        )
    );
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn r34b_appends_by_another_handle_to_a_json_file_are_caught_up() {
    let path = dir("json-catch-up").join("c.json");
    std::fs::write(&path, "[{\"type\":\"state\",\"data\":{\"log\":[]}}   ]   ").unwrap();
    let mut first = Stored::open(FileStore::open(&path).unwrap()).unwrap();
    let mut second = Stored::open(FileStore::open(&path).unwrap()).unwrap();
    first.append_all(&[push(1)]).unwrap();
    second.append_all(&[push(2)]).unwrap();
    first.append_all(&[push(3)]).unwrap();
    assert_eq!(first.context().len(), 4);
    assert_eq!(log(&path), json!([1, 2, 3]));
}

#[test]
fn r34b_an_interrupted_batch_is_undone_by_the_next_writer() {
    let path = dir("interrupted").join("c.jsonl");
    std::fs::write(&path, "{\"type\":\"state\",\"data\":{\"log\":[]}}\n").unwrap();
    // A writer records a two-line batch, writes one line and a half, dies.
    let context = FileStore::open(&path).unwrap().load().unwrap().context;
    let batch = [push(1), push(2)];
    let prepared = context.prepare(&batch).unwrap();
    let lines: Vec<String> = prepared.lines().map(|l| format!("{l}\n")).collect();
    let before = std::fs::metadata(&path).unwrap().len();
    let whole = lines.concat();
    let sum = whole.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    std::fs::write(
        path.with_file_name(".c.jsonl.pending"),
        format!("{before} {} {sum}\n", before + whole.len() as u64),
    )
    .unwrap();
    let cut = &whole[..lines[0].len() + 10];
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    std::io::Write::write_all(&mut file, cut.as_bytes()).unwrap();
    drop(file);
    // A reader that can write undoes the batch before reading.
    assert_eq!(log(&path), json!([]));
    assert_eq!(std::fs::metadata(&path).unwrap().len(), before);
    // And a writer appends after it.
    let mut fresh = Context::new();
    let mut writer = FileStore::open(&path).unwrap();
    writer.commit(&mut fresh, &[push(3)]).unwrap();
    assert_eq!(log(&path), json!([3]));
}

#[test]
fn r34b_a_whole_batch_lands_and_its_record_is_removed() {
    let path = dir("whole").join("c.jsonl");
    std::fs::write(&path, "{\"type\":\"state\",\"data\":{\"log\":[]}}\n").unwrap();
    let mut stored = Stored::open(FileStore::open(&path).unwrap()).unwrap();
    stored.append_all(&[push(1), push(2)]).unwrap();
    stored.append_all(&[push(3)]).unwrap();
    assert_eq!(log(&path), json!([1, 2, 3]));
    assert!(
        !path.with_file_name(".c.jsonl.pending").exists(),
        "the record is removed once the batch landed"
    );
}

#[test]
fn r34_a_dead_writers_temporary_file_is_swept_by_the_next_json_append() {
    let dir = dir("sweep");
    let path = dir.join("c.json");
    std::fs::write(&path, "[{\"type\":\"state\",\"data\":{\"log\":[]}}]").unwrap();
    let stale = dir.join(".c.json.Ab12Cd.tmp");
    std::fs::write(&stale, "[half a rewrite").unwrap();
    let other = dir.join(".c.json.keep.tmp");
    std::fs::write(&other, "not ours").unwrap();
    let mut stored = Stored::open(FileStore::open(&path).unwrap()).unwrap();
    stored.append_all(&[push(1)]).unwrap();
    assert!(!stale.exists(), "the dead writer's temporary file is gone");
    assert!(other.exists(), "a file not named like ours is kept");
    assert_eq!(log(&path), json!([1]));
}
