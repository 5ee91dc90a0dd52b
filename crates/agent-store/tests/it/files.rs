//! FileStore edge cases found by red-teaming the write path (R34, R34b):
//! each leaves the file as it was or the append fully there.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use agent_core::json;
use agent_data::{Context, Message};
use agent_store::{Append, FileStore, SnapshotWhen, Store, Stored};
use std::path::PathBuf;

fn dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("agentctx-files-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn message(value: agent_core::json::Value) -> Message {
    Message::from_value(value).unwrap().remove(0)
}

fn push(n: i64) -> Message {
    message(
        json!({"type": "state", "data": {"log": n}, "_outputPath": "†state.log", "_outputMethod": "push"}),
    )
}

fn log(path: &std::path::Path) -> agent_core::json::Value {
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
        assert!(error.is_refused(), "{error}");
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
    let meta = std::fs::metadata(&path).unwrap();
    std::fs::write(
        path.with_file_name(".c.jsonl.pending"),
        format!(
            "agentctx-pending 1 dev={} ino={} before={before} end={} fnv1a={sum}\n",
            std::os::unix::fs::MetadataExt::dev(&meta),
            std::os::unix::fs::MetadataExt::ino(&meta),
            before + whole.len() as u64
        ),
    )
    .unwrap();
    let cut = &whole[..lines[0].len() + 10];
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    std::io::Write::write_all(&mut file, cut.as_bytes()).unwrap();
    drop(file);
    // A reader sees nothing of the batch, and changes nothing.
    assert_eq!(log(&path), json!([]));
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        before + cut.len() as u64
    );
    // The next writer undoes it and appends after it.
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

// ------------------------------------------------------------ snapshots (D37: snapshots)

/// A store over `path` that committed `n` pushes one by one.
fn pushed(path: &std::path::Path, n: usize) {
    let mut store = FileStore::open(path).unwrap();
    let mut context = Context::new();
    for i in 0..n {
        let push = Message::from_value(agent_core::json!({"type": "state", "data": {"log": i},
            "_outputPath": "†state.log", "_outputMethod": "push", "_instance": if i % 3 == 0 { "a" } else { "b" }}))
        .unwrap();
        store.commit(&mut context, &push).unwrap();
        let global =
            Message::from_value(agent_core::json!({"type": "state", "data": {"n": i}})).unwrap();
        store.commit(&mut context, &global).unwrap();
    }
}

fn every_view(context: &Context) -> Vec<agent_core::json::Value> {
    let mut out = vec![agent_core::json!(context.len())];
    for id in context.identities() {
        for x in context.instances().map(Some).chain([None]) {
            out.push(agent_core::json!([
                id.to_string(),
                context.view(&id.kind, x)
            ]));
        }
    }
    out.push(agent_core::json!(
        context
            .diagnostics()
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
    ));
    out
}

/// `n` writes, each to an instance of its own, committed through `store`.
fn instance_writes(store: &mut FileStore, context: &mut Context, n: usize) {
    for i in 0..n {
        let write = Message::from_value(
            agent_core::json!({"type": "state", "v": i, "_instance": format!("i{i}")}),
        )
        .unwrap();
        store.commit(context, &write).unwrap();
    }
}

#[test]
fn d106_a_snapshot_is_written_when_due_only_where_it_spares_half_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    let snapshot = dir.path().join(".c.jsonl.snapshot");
    let mut store = FileStore::open(&path).unwrap();
    let mut context = Context::new();
    // Every write is its own instance layer's, held in a snapshot as it
    // is: one would cost its writing and spare no reading.
    instance_writes(&mut store, &mut context, 300);
    assert!(!context.snapshot_pays());
    assert!(
        !snapshot.exists(),
        "a snapshot of instance writes only was written"
    );
    let mut reopened = FileStore::open(&path).unwrap();
    let tail = reopened.load_tail().unwrap().context;
    assert!(
        tail.is_complete(),
        "opened from a snapshot that should not exist"
    );
    assert!(
        !snapshot.exists(),
        "an open wrote a snapshot of instance writes only"
    );
    // Global writes fold into one view; once they are half the log a
    // snapshot pays, and the next commit past the threshold writes one.
    for n in 0..300 {
        let global =
            Message::from_value(agent_core::json!({"type": "state", "data": {"n": n}})).unwrap();
        store.commit(&mut context, &global).unwrap();
    }
    assert!(context.snapshot_pays());
    assert!(
        snapshot.is_file(),
        "no snapshot once global writes were half the log"
    );
    let resumed = FileStore::open(&path).unwrap().load_tail().unwrap().context;
    let full = FileStore::open(&path).unwrap().load().unwrap().context;
    assert!(!resumed.is_complete());
    assert_eq!(every_view(&resumed), every_view(&full));
    // Asked for, a snapshot is written whether it pays or not.
    let other = dir.path().join("d.jsonl");
    let mut store = FileStore::open(&other).unwrap();
    let mut context = Context::new();
    instance_writes(&mut store, &mut context, 100);
    assert!(store.snapshot(&context, SnapshotWhen::Now).unwrap());
    assert!(dir.path().join(".d.jsonl.snapshot").is_file());
}

#[test]
fn r34c_a_long_file_opens_from_its_snapshot_and_reads_as_the_full_fold() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    pushed(&path, 150);
    assert!(
        dir.path().join(".c.jsonl.snapshot").is_file(),
        "no snapshot was written"
    );
    let full = FileStore::open(&path).unwrap().load().unwrap().context;
    let mut store = FileStore::open(&path).unwrap();
    let mut resumed = store.load_tail().unwrap().context;
    assert!(!resumed.is_complete());
    // At most the threshold's worth of messages after the snapshot.
    assert!(full.len() - resumed.held_from() <= 2 * agent_store::SNAPSHOT_AFTER);
    assert_eq!(every_view(&resumed), every_view(&full));
    // Appending through it lands where the full fold would.
    let push = Message::from_value(agent_core::json!({"type": "state", "data": {"log": "x"},
        "_outputPath": "†state.log", "_outputMethod": "push", "_instance": "a"}))
    .unwrap();
    store.commit(&mut resumed, &push).unwrap();
    let full = FileStore::open(&path).unwrap().load().unwrap().context;
    assert_eq!(every_view(&resumed), every_view(&full));
}

#[test]
fn r34c_a_snapshot_that_does_not_match_the_file_is_ignored_and_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    let snapshot = dir.path().join(".c.jsonl.snapshot");
    pushed(&path, 100);
    let original = std::fs::read(&path).unwrap();
    let good = std::fs::read(&snapshot).unwrap();
    let full = FileStore::open(&path).unwrap().load().unwrap().context;
    let open_tail = || FileStore::open(&path).unwrap().load_tail().unwrap().context;
    // A damaged snapshot: one byte changed.
    let mut damaged = good.clone();
    let at = damaged.len() / 2;
    damaged[at] ^= 1;
    std::fs::write(&snapshot, &damaged).unwrap();
    let read = open_tail();
    assert!(read.is_complete(), "a damaged snapshot was used");
    assert_eq!(every_view(&read), every_view(&full));
    // …and rebuilt by that read, so the next one uses it again.
    assert!(!open_tail().is_complete());
    // The file changed just before the snapshot's end (same length).
    std::fs::write(&snapshot, &good).unwrap();
    let offset = std::str::from_utf8(&good)
        .unwrap()
        .split("\"offset\":")
        .nth(1)
        .unwrap()
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse::<usize>()
        .unwrap();
    let mut edited = original.clone();
    let digit = edited[..offset]
        .iter()
        .rposition(u8::is_ascii_digit)
        .unwrap();
    edited[digit] = if edited[digit] == b'7' { b'8' } else { b'7' };
    std::fs::write(&path, &edited).unwrap();
    let read = open_tail();
    assert!(read.is_complete(), "a snapshot of other bytes was used");
    assert_eq!(
        every_view(&read),
        every_view(&FileStore::open(&path).unwrap().load().unwrap().context)
    );
    // The file cut back before the snapshot's end.
    std::fs::write(&snapshot, &good).unwrap();
    let cut = &original[..=original[..offset / 2]
        .iter()
        .rposition(|&b| b == b'\n')
        .unwrap()];
    std::fs::write(&path, cut).unwrap();
    let read = open_tail();
    assert!(
        read.is_complete(),
        "a snapshot longer than the file was used"
    );
    assert_eq!(
        every_view(&read),
        every_view(&FileStore::open(&path).unwrap().load().unwrap().context)
    );
}
