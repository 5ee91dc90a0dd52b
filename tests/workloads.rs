//! Generated benchmark workloads, from a fixed seed so every run measures
//! the same contexts.

use agent_store::SnapshotWhen;

use agent_core::{Method, Path, Reference, write};
use agent_core::{json, json::Value};
use agent_data::{Context, DataMessage, Format};

/// xorshift64*: small, fixed-seed, good enough to spread paths.
pub struct Rng(pub u64);

impl Rng {
    /// The next pseudo-random number.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number below `n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// W1/W2/W4: 100,000 output messages into one `state` as JSONL — 70% `set`
/// over 1,000 paths, 20% `push` onto 10 lists, 10% `merge` into the same
/// 1,000 paths.
pub fn w1_jsonl(messages: usize) -> String {
    let mut rng = Rng(0x5EED_0001);
    let mut out = String::with_capacity(messages * 160);
    for i in 0..messages {
        let roll = rng.below(100);
        let (path, method, value) = if roll < 70 {
            (
                format!(".p{}", rng.below(1000)),
                "set",
                json!({"v": i, "s": "some text value"}),
            )
        } else if roll < 90 {
            (format!(".l{}", rng.below(10)), "push", json!(i))
        } else {
            (format!(".p{}", rng.below(1000)), "merge", json!({"m": i}))
        };
        push_output(&mut out, &path, method, value);
    }
    out
}

/// W6: JSONL of a text, a global `item` and `instances`
/// instances of one small write each (`{"type":"data","kind":"item",
/// "data":{"n":5},"_instance":"i000005"}`, about 71 bytes a line).
pub fn w6_jsonl(instances: usize) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(instances * 72 + 128);
    out.push_str(r#"{"type":"text","text":"Process every item."}"#);
    out.push('\n');
    out.push_str(r#"{"type":"data","kind":"item","data":{"n":0,"label":"default"}}"#);
    out.push('\n');
    for i in 0..instances {
        // Writing to a String cannot fail.
        let _ = writeln!(
            out,
            r#"{{"type":"data","kind":"item","data":{{"n":{i}}},"_instance":"i{i:06}"}}"#
        );
    }
    out
}

/// Loads a JSONL workload.
pub fn load(jsonl: &str) -> Context {
    Context::load(jsonl.as_bytes(), Format::Jsonl)
        .map(|l| l.context)
        .unwrap_or_default()
}

/// W1: `count` random reads of paths that exist in `context`'s `state`.
pub fn w1_reads(context: &Context, count: usize) -> Vec<Reference> {
    let mut rng = Rng(0x5EED_0002);
    let state = context.view(&kind("state"), None);
    let mut reads = Vec::with_capacity(count);
    while reads.len() < count {
        let text = if rng.below(10) < 9 {
            format!("†state.p{}", rng.below(1000))
        } else {
            let list = rng.below(10);
            let len = state
                .and_then(|s| s.get(format!("l{list}")))
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            format!("†state.l{list}[{}]", rng.below(len.max(1) as u64))
        };
        if let Ok(reference) = Reference::parse(&text)
            && context.read(&reference, None).is_some()
        {
            reads.push(reference);
        }
    }
    reads
}

/// A reference's path as a JSON Pointer (for the `Value::pointer` baseline).
pub fn pointer(reference: &Reference) -> String {
    reference
        .path
        .segments()
        .iter()
        .map(|s| format!("/{}", s.as_key().replace('~', "~0").replace('/', "~1")))
        .collect()
}

/// The naive resolver of R14 (the seed's algorithm): search the layer's
/// messages newest to oldest, collecting writes that overlap the path,
/// until a `set` covers it; then replay what was collected oldest first.
pub fn naive_read(messages: &[&DataMessage], path: &Path) -> Option<Value> {
    let mut collected = Vec::new();
    for message in messages.iter().rev() {
        let destination = message.destination();
        if destination.overlaps(path) {
            collected.push(*message);
            if message.method() == Method::Set && destination.is_prefix_of(path) {
                break;
            }
        }
    }
    let mut view = None;
    for message in collected.iter().rev() {
        let _ = write(
            &mut view,
            message.destination(),
            message.method(),
            message.value().clone(),
        );
    }
    view.as_ref().and_then(|v| path.get(v)).cloned()
}

/// W3: 1,000 instances × 20 writes (pushes, merges, sets) over a global input.
pub fn w3_context() -> Context {
    let mut jsonl = String::from("{\"type\":\"input\",\"data\":{\"policy\":\"be kind\"}}\n");
    for i in 0..1000 {
        let x = format!("#{i}");
        jsonl.push_str(
            &json!({"type": "input", "data": {"comment": format!("comment {i}")}, "_instance": x})
                .to_string(),
        );
        jsonl.push('\n');
        for w in 0..20 {
            let m = match w % 4 {
                0 => {
                    json!({"type": "data", "kind": "state", "data": {"notes": format!("note {w}")}, "_outputPath": "†state.notes", "_outputMethod": "push", "_instance": x})
                }
                1 => {
                    json!({"type": "data", "kind": "state", "data": {"scores": {format!("s{w}"): w}}, "_outputPath": "†state.scores", "_outputMethod": "merge", "_instance": x})
                }
                _ => {
                    json!({"type": "data", "kind": "state", "data": {format!("k{w}"): {"label": "ok", "w": w}}, "_outputPath": format!("†state.k{w}"), "_instance": x})
                }
            };
            jsonl.push_str(&m.to_string());
            jsonl.push('\n');
        }
    }
    load(&jsonl)
}

/// A kind known to be valid.
pub fn kind(name: &str) -> agent_core::Kind {
    agent_core::Kind::new(name).unwrap_or_else(|_| agent_core::Kind::data())
}

/// W5: messages after the snapshot in every W5 file, at every size.
pub const W5_TAIL: usize = 32;

/// Appends to `out` the JSONL line of an output message writing `value` to
/// `†state{path}` with `method`.
fn push_output(out: &mut String, path: &str, method: &str, value: Value) {
    let data = Path::parse(path)
        .map(|p| p.nest(value))
        .unwrap_or(Value::Null);
    let message = json!({"type": "data", "kind": "state", "data": data,
        "_outputPath": format!("†state{path}"), "_outputMethod": method, "_date": "2026-01-01T00:00:00Z"});
    out.push_str(&message.to_string());
    out.push('\n');
}

/// W5: a long history whose *state* stays bounded while the
/// *log* grows — an agent's working state updated once per step. Message 0
/// sets `state` to `{"x", "status", "meta", "recent"}`; after it, 50% set
/// `†state.x` to the step number, 15% set `†state.status` (one of four
/// words), 15% merge one of 8 keys into `†state.meta`, 20% push a small
/// object onto `†state.recent`, which every 32nd message sets back to `[]`
/// (so it never holds more than 32 items). About 140 bytes a line.
pub fn w5_jsonl(messages: usize) -> String {
    const STATUS: [&str; 4] = ["thinking", "calling", "waiting", "done"];
    let mut rng = Rng(0x5EED_0005);
    let mut out = String::with_capacity(messages * 160);
    for i in 0..messages {
        let (path, method, value) = if i == 0 {
            (
                String::new(),
                "set",
                json!({"x": 0, "status": "start", "meta": {}, "recent": []}),
            )
        } else if i % 32 == 0 {
            (".recent".into(), "set", json!([]))
        } else {
            match rng.below(100) {
                0..50 => (".x".into(), "set", json!(i)),
                50..65 => (
                    ".status".into(),
                    "set",
                    json!(STATUS[rng.below(4) as usize]),
                ),
                65..80 => (
                    ".meta".into(),
                    "merge",
                    json!({format!("k{}", rng.below(8)): i}),
                ),
                _ => (
                    ".recent".into(),
                    "push",
                    json!({"step": i, "note": "observed"}),
                ),
            }
        };
        push_output(&mut out, &path, method, value);
    }
    out
}

/// Writes the W5 context of `messages` messages to the JSONL file `path`
/// as a long-lived context leaves it: all but the last [`W5_TAIL`]
/// messages, a snapshot of them beside the file (`store.snapshot(&context,
/// true)` after a full load), then the last [`W5_TAIL`] messages committed
/// after it, through the store, so the records kept beside the log follow
/// it (an open trusts the snapshot only when they do). Returns the
/// snapshot's size in bytes.
///
/// # Errors
/// The first failure, as text: writing `path` or reading its snapshot's size, a line that is
/// not a message, or opening, loading, snapshotting or committing through the store.
pub fn w5_file(path: &std::path::Path, messages: usize) -> Result<u64, String> {
    use agent_data::Message;
    use agent_store::{FileStore, Store};
    let jsonl = w5_jsonl(messages);
    let cut = jsonl
        .match_indices('\n')
        .nth(messages.saturating_sub(W5_TAIL + 1))
        .map_or(0, |(at, _)| at + 1);
    // All but the prefix's last line written as a file; that line appended
    // through the store, so this handle is the log's writer and keeps its
    // snapshot beside it (a handle that only read would keep it in the
    // user's cache directory, D101: reads leave nothing beside).
    let last = jsonl[..cut.saturating_sub(1)]
        .rfind('\n')
        .map_or(0, |at| at + 1);
    std::fs::write(path, &jsonl[..last]).map_err(|e| e.to_string())?;
    let mut store = FileStore::open(path).map_err(|e| e.to_string())?;
    let mut context = store.load().map_err(|e| e.to_string())?.context;
    let mut prefix_end = Vec::new();
    for line in jsonl[last..cut].lines() {
        let value: Value = agent_core::json::from_str(line).map_err(|e| e.to_string())?;
        prefix_end.extend(Message::from_value(value).map_err(|e| e.to_string())?);
    }
    store
        .commit(&mut context, &prefix_end)
        .map_err(|e| e.to_string())?;
    store
        .snapshot(&context, SnapshotWhen::Now)
        .map_err(|e| e.to_string())?;
    let snapshot = path.with_file_name(format!(
        ".{}.snapshot",
        path.file_name().unwrap_or_default().to_string_lossy()
    ));
    let snapshot_bytes = std::fs::metadata(&snapshot)
        .map(|m| m.len())
        .map_err(|e| e.to_string())?;
    let mut tail = Vec::new();
    for line in jsonl[cut..].lines() {
        let value: Value = agent_core::json::from_str(line).map_err(|e| e.to_string())?;
        tail.extend(Message::from_value(value).map_err(|e| e.to_string())?);
    }
    store
        .commit(&mut context, &tail)
        .map_err(|e| e.to_string())?;
    Ok(snapshot_bytes)
}
