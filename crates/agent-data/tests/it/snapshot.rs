//! Snapshots (D37: snapshots): a context opened from a snapshot of a prefix
//! of its log, plus the messages after it, reads and validates exactly as
//! the full fold of the whole log (R5, R12, R13, R14, R24, R25).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use agent_core::{
    json,
    json::{Map, Value},
};
use agent_data::{CheckMode, Context, Error, Format, Message, Position};
use proptest::prelude::*;

const KINDS: [&str; 2] = ["state", "input"];
const INSTANCES: [Option<&str>; 4] = [None, None, Some("x"), Some("y \"q\"")];

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        (0i64..4).prop_map(Value::from),
        // Numbers whose text is not their integer or float's (R3): a
        // snapshot keeps them as written.
        prop::sample::select(vec!["-0", "1.10", "1e+400", "-0.0", "18446744073709551616"])
            .prop_map(|text| Value::Number(text.parse().unwrap())),
        "[pq\n]{0,2}".prop_map(Value::from),
    ];
    leaf.prop_recursive(2, 8, 2, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::from),
            // serde_json's private key for an exact number is a key like
            // any other in a view (R3), not a number.
            prop::collection::vec(("[ab]|\\$serde_json::private::Number", inner), 0..3)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// Any message a log may hold: data messages of every method (type errors
/// included, so the fold skips some), with schemas and descriptions now
/// and then, and text messages.
fn message() -> impl Strategy<Value = Value> {
    let path = prop::collection::vec(prop_oneof!["[ab]", Just("0".to_owned())], 0..3);
    let data = (
        prop::sample::select(KINDS.to_vec()),
        prop::sample::select(INSTANCES.to_vec()),
        path,
        prop::sample::select(vec!["set", "merge", "assign", "push", "concat", "erase"]),
        value(),
        0..8u8,
    )
        .prop_map(|(kind, instance, path, method, value, extra)| {
            let mut m = Map::new();
            m.insert("type".into(), "data".into());
            m.insert("kind".into(), kind.into());
            // An erase holds null where its value would be (R10b).
            let mut nested = if method == "erase" {
                Value::Null
            } else {
                value
            };
            for key in path.iter().rev() {
                nested = json!({ key.as_str(): nested });
            }
            m.insert("data".into(), nested);
            let dotted: String = path.iter().map(|k| format!(".{k}")).collect();
            m.insert("_outputPath".into(), format!("†{kind}{dotted}").into());
            m.insert("_outputMethod".into(), method.into());
            if let Some(x) = instance {
                m.insert("_instance".into(), x.into());
            }
            match extra {
                0 => {
                    m.insert("schema".into(), json!({"type": "object"}));
                }
                1 => {
                    m.insert(
                        "description".into(),
                        format!("about {kind}\n\"quoted\"").into(),
                    );
                }
                _ => {}
            }
            Value::Object(m)
        });
    prop_oneof![
        6 => data,
        1 => "[a-z ]{0,6}".prop_map(|text| json!({"type": "text", "text": text})),
    ]
}

fn jsonl(messages: &[Value]) -> String {
    messages.iter().map(|m| format!("{m}\n")).collect()
}

fn load(text: &str) -> Context {
    Context::load(text.as_bytes(), Format::Jsonl)
        .unwrap()
        .context
}

/// The log's first `cut` messages as a snapshot, opened, with the rest
/// loaded after it as a store does.
fn resumed(messages: &[Value], cut: usize) -> Context {
    let prefix = jsonl(&messages[..cut]);
    let anchor = json!({"offset": prefix.len()});
    let bytes = load(&prefix).snapshot(&anchor).unwrap();
    let (mut context, read_anchor) = Context::from_snapshot(&bytes).unwrap();
    assert_eq!(read_anchor, anchor);
    let at = Position {
        line: cut,
        offset: prefix.len(),
    };
    context
        .extend_jsonl(jsonl(&messages[cut..]).as_bytes(), at)
        .unwrap();
    context
}

/// Everything a reader or writer can observe without walking the messages.
/// What [`observed`] sees, read only in each layer's own scope: linear in
/// the layers, for contexts with thousands of instances (where reading
/// every kind in every instance would be quadratic).
fn observed_in_own_scope(context: &Context) -> Value {
    let reads: Vec<Value> = context
        .identities()
        .map(|id| {
            json!([
                id.to_string(),
                context.view(&id.kind, id.instance.as_ref()),
                context.layer_view(id),
                context.schema(&id.kind, id.instance.as_ref()),
                context.layer_len(id),
            ])
        })
        .collect();
    json!({
        "len": context.len(),
        "instances": context.instances().map(ToString::to_string).collect::<Vec<_>>(),
        "reads": reads,
        "check": context.check(CheckMode::Complete).iter().map(ToString::to_string).collect::<Vec<_>>(),
    })
}

fn observed(context: &Context) -> Value {
    let identities: Vec<_> = context.identities().cloned().collect();
    let mut instances: Vec<_> = context.instances().cloned().map(Some).collect();
    instances.push(None);
    let mut reads = Vec::new();
    for id in &identities {
        for x in &instances {
            reads.push(json!([
                id.to_string(),
                x.as_ref().map(|x| x.to_string()),
                // Absent (an erased view) is not null.
                context.view(&id.kind, x.as_ref()).is_some(),
                context.view(&id.kind, x.as_ref()),
                context.schema(&id.kind, x.as_ref()),
                context.description(&id.kind, x.as_ref()),
            ]));
        }
    }
    let layers: Vec<Value> = identities
        .iter()
        .map(|id| {
            json!([
                id.to_string(),
                context.layer_view(id),
                context.layer_schema(id),
                context.layer_description(id),
                context.layer_len(id),
            ])
        })
        .collect();
    let text = |items: Vec<String>| json!(items);
    json!({
        "len": context.len(),
        "instances": context.instances().map(ToString::to_string).collect::<Vec<_>>(),
        "layers": layers,
        "reads": reads,
        "diagnostics": text(context.diagnostics().iter().map(ToString::to_string).collect()),
        "check": text(context.check(CheckMode::Normal).iter().map(ToString::to_string).collect()),
        "complete": text(context.check(CheckMode::Complete).iter().map(ToString::to_string).collect()),
    })
}

/// What appending `batch` would do: the lines it would write, or the error.
fn appended(context: &Context, batch: &[Message]) -> Result<Vec<String>, String> {
    context
        .prepare(batch)
        .map(|p| p.lines().map(str::to_owned).collect())
        .map_err(|e| e.to_string())
}

fn batch(values: &[Value]) -> Vec<Message> {
    values
        .iter()
        .flat_map(|v| Message::from_value(v.clone()).unwrap())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn r34c_a_snapshot_and_its_tail_read_as_the_full_fold(
        messages in prop::collection::vec(message(), 0..28),
        cut in any::<prop::sample::Index>(),
        extra in prop::collection::vec(message(), 1..4),
    ) {
        let cut = cut.index(messages.len() + 1);
        let full = load(&jsonl(&messages));
        let resumed = resumed(&messages, cut);
        prop_assert_eq!(observed(&resumed), observed(&full));
        // Appends are validated identically (R13, R25, D4: instances unbroken).
        let extra = batch(&extra);
        prop_assert_eq!(appended(&resumed, &extra), appended(&full, &extra));
        // A snapshot of the resumed context is the full context's snapshot.
        let anchor = json!(null);
        prop_assert_eq!(resumed.snapshot(&anchor).unwrap(), full.snapshot(&anchor).unwrap());
        // Every message from the cut on is held, as the full context has it.
        prop_assert_eq!(resumed.held_from() <= cut, true);
        for index in cut..full.len() {
            prop_assert_eq!(resumed.message_json(index), full.message_json(index));
        }
        prop_assert_eq!(resumed.is_complete(), full.is_empty() || resumed.held_from() == 0);
        // A snapshot pays when at least half the messages are not instance
        // writes (D106: snapshots that pay), however the context was read.
        let instance_writes = messages.iter().filter(|m| m.get("_instance").is_some()).count();
        let pays = (messages.len() - instance_writes) * 2 >= messages.len();
        prop_assert_eq!(full.snapshot_pays(), pays);
        prop_assert_eq!(resumed.snapshot_pays(), pays);
    }
}

#[test]
fn r34c_a_snapshot_keeps_skipped_writes_and_instance_layers() {
    let messages = [
        json!({"type": "data", "kind": "s", "data": {"n": 1}}),
        json!({"type": "data", "kind": "s", "data": {"n": {"m": 2}}, "_outputPath": "†s.n.m", "_outputMethod": "set"}),
        json!({"type": "data", "kind": "s", "data": {"l": [1]}, "_instance": "a", "_outputPath": "†s.l", "_outputMethod": "concat"}),
        json!({"type": "text", "text": "hello"}),
    ];
    let full = load(&jsonl(&messages));
    assert_eq!(
        full.diagnostics()[0].to_string(),
        "message 1 (¶s): type error at .n: cannot write inside a number; write skipped"
    );
    let (resumed, _) = Context::from_snapshot(&full.snapshot(&json!(1)).unwrap()).unwrap();
    assert_eq!(observed(&resumed), observed(&full));
    assert!(!resumed.is_complete());
    assert_eq!(resumed.held_from(), 4);
    // The instance layer's message is held (its writes fold again over a
    // changed global view); the global and text messages are not.
    assert!(resumed.message(2).is_some());
    assert_eq!(resumed.message(0), None);
    assert_eq!(resumed.message(3), None);
}

#[test]
fn r34c_r10b_an_erased_view_round_trips_through_a_snapshot() {
    let messages = [
        json!({"type": "data", "kind": "s", "data": {"n": 1, "keep": 2}}),
        json!({"type": "data", "kind": "t", "data": {"gone": 1}}),
        json!({"type": "data", "kind": "t", "data": null, "_outputMethod": "erase"}),
        json!({"type": "data", "kind": "s", "data": {"n": null}, "_instance": "a", "_outputPath": "†s.n", "_outputMethod": "erase"}),
        json!({"type": "data", "kind": "s", "data": null, "_instance": "b", "_outputPath": "†s", "_outputMethod": "erase"}),
    ];
    let full = load(&jsonl(&messages));
    for cut in 0..=messages.len() {
        let resumed = resumed(&messages, cut);
        assert_eq!(observed(&resumed), observed(&full), "cut at {cut}");
        assert_eq!(
            resumed.view(&"t".parse().unwrap(), None),
            None,
            "cut at {cut}"
        );
        let (a, b) = ("a".parse().unwrap(), "b".parse().unwrap());
        assert_eq!(
            resumed.view(&"s".parse().unwrap(), Some(&a)),
            Some(&json!({"keep": 2}))
        );
        assert_eq!(resumed.view(&"s".parse().unwrap(), Some(&b)), None);
    }
    let (resumed, _) = Context::from_snapshot(&full.snapshot(&json!(1)).unwrap()).unwrap();
    assert_eq!(observed(&resumed), observed(&full));
}

#[test]
fn r34c_a_damaged_snapshot_is_an_error_saying_so() {
    let full = load(&jsonl(&[
        json!({"type": "data", "kind": "s", "data": {"n": 1}}),
    ]));
    let bytes = full.snapshot(&json!(null)).unwrap();
    let cut = Context::from_snapshot(&bytes[..bytes.len() - 3]).unwrap_err();
    assert!(matches!(cut, Error::Snapshot { .. }));
    assert!(
        cut.to_string()
            .starts_with("invalid snapshot: EOF while parsing"),
        "{cut}"
    );
    let text = String::from_utf8(bytes).unwrap();
    let other = text.replace("\"version\":4", "\"version\":99");
    assert_eq!(
        Context::from_snapshot(other.as_bytes())
            .unwrap_err()
            .to_string(),
        "invalid snapshot: agentctx-snapshot version 99 (this build reads agentctx-snapshot versions 3 to 4)"
    );
    let overfull = text.replace("\"messages\":1", "\"messages\":0");
    assert_eq!(
        Context::from_snapshot(overfull.as_bytes())
            .unwrap_err()
            .to_string(),
        "invalid snapshot: its layers hold 1 messages, more than the 0 it summarises"
    );
    // Instance layers are read from their messages, which follow the
    // header one per line; what the header says about them must agree.
    let two = load(&jsonl(&[
        json!({"type": "data", "kind": "s", "data": 1, "_instance": "a"}),
        json!({"type": "data", "kind": "g", "data": 0}),
        json!({"type": "data", "kind": "s", "data": 2, "_instance": "b"}),
    ]));
    let text = String::from_utf8(two.snapshot(&json!(null)).unwrap()).unwrap();
    let (header, held) = text.split_once('\n').unwrap();
    assert!(
        header.contains(r#""layers":3,"globals":[{"at":1,"kind":"g""#),
        "{header}"
    );
    assert!(header.ends_with(r#""held":[[0,1],[2,1]]}"#), "{header}");
    assert_eq!(
        held.lines().count(),
        2,
        "each instance message once: {held}"
    );
    let (resumed, _) = Context::from_snapshot(text.as_bytes()).unwrap();
    assert_eq!(observed(&resumed), observed(&two));
    let cases = [
        (
            text.replace(r#""layers":3"#, r#""layers":4"#),
            "invalid snapshot: it lists 4 layers and describes 3",
        ),
        (
            text.replace(r#"[[0,1],[2,1]]"#, r#"[[0,1]]"#),
            "invalid snapshot: it lists 1 held messages and holds 2",
        ),
        (
            text.replace(r#"[[0,1],[2,1]]"#, r#"[[0,1],[2,9]]"#),
            "invalid snapshot: held messages 2+9 out of order or past its length",
        ),
        (
            text.replace(r#"[[0,1],[2,1]]"#, r#"[[2,1],[0,1]]"#),
            "invalid snapshot: held messages 0+1 out of order or past its length",
        ),
        (
            text.replace(r#""at":1"#, r#""at":5"#),
            "invalid snapshot: layer ¶g is at position 5, not 2",
        ),
        // A held line may be packed (D87: packed snapshot lines) or as the log holds it.
        (
            text.replace(r#"["s","b",2]"#, r#"{"type":"data","kind":"s","data":2}"#),
            "invalid snapshot: held message 2: not an instance layer's",
        ),
        (
            text.replace(r#"["s","b",2]"#, r#"["s","",2]"#),
            "invalid snapshot: held message 2: invalid instance id \"\": it is empty",
        ),
        (
            text.replace(
                r#"["s","b",2]"#,
                r#"{"type":"text","text":"x","_instance":"b"}"#,
            ),
            "invalid snapshot: held message 2: a text message, not a data message",
        ),
        (
            text.replace(r#"["s","b",2]"#, r#"["s","b"]"#),
            "invalid snapshot: held message 2: not a packed line",
        ),
        (
            text.replace(r#"["s","b",2]"#, r#"["s","b",{]"#),
            // Read as the line it unpacks to: `{"type":"data","kind":"s","data":{,…`.
            "invalid snapshot: held message 2: key must be a string at line 1 column 35",
        ),
    ];
    for (planted, expected) in cases {
        assert_ne!(planted, text, "{expected}");
        assert_eq!(
            Context::from_snapshot(planted.as_bytes())
                .unwrap_err()
                .to_string(),
            expected
        );
    }
}

#[test]
fn r34c_a_snapshot_holds_each_message_once_and_is_no_bigger_than_the_log() {
    // Many instances of one write each: the shape whose snapshot used to
    // hold every write twice (as a view and as a message).
    let lines: String = (0..2000)
        .map(|i| format!("{{\"type\":\"state\",\"v\":\"marker-{i}\",\"_instance\":\"i{i}\"}}\n"))
        .collect();
    let full = load(&lines);
    let bytes = full.snapshot(&json!(null)).unwrap();
    let text = String::from_utf8(bytes.clone()).unwrap();
    for i in [0, 1, 999, 1999] {
        assert_eq!(
            text.matches(&format!("\"marker-{i}\"")).count(),
            1,
            "marker-{i}"
        );
    }
    // Packed (D87: packed snapshot lines), each line without what every instance write repeats.
    let ratio = bytes.len() as f64 / lines.len() as f64;
    assert!(
        ratio <= 1.0,
        "snapshot {} bytes, log {}",
        bytes.len(),
        lines.len()
    );
    // Read in place or from a borrowed slice, the same context.
    let (borrowed, _) = Context::from_snapshot(&bytes).unwrap();
    let (owned, _) = Context::from_snapshot_bytes(bytes).unwrap();
    let expected = observed_in_own_scope(&full);
    assert_eq!(observed_in_own_scope(&owned), expected);
    assert_eq!(observed_in_own_scope(&borrowed), expected);
    assert_eq!(
        owned
            .instances()
            .map(|x| x.as_str())
            .take(3)
            .collect::<Vec<_>>(),
        ["i0", "i1", "i2"]
    );
}

#[test]
fn d87_a_version_3_snapshot_holding_lines_unpacked_opens_as_the_same_context() {
    let lines: String = (0..50)
        .map(|i| format!("{{\"type\":\"state\",\"v\":{i},\"_instance\":\"i{i}\"}}\n"))
        .collect();
    let full = load(&lines);
    let text = String::from_utf8(full.snapshot(&json!(null)).unwrap()).unwrap();
    let (header, held) = text.split_once('\n').unwrap();
    assert!(header.contains("\"version\":4"), "{header}");
    assert!(held.starts_with(r#"["state","i0",{"v":0}]"#), "{held}");
    // What version 3 wrote: the header of version 3, every line as the
    // log holds it.
    let unpacked: String = (0..50)
        .map(|i| format!("{}\n", full.message_json(i).unwrap()))
        .collect();
    let old = format!(
        "{}\n{unpacked}",
        header.replace("\"version\":4", "\"version\":3")
    );
    let (new, _) = Context::from_snapshot(text.as_bytes()).unwrap();
    let (opened, _) = Context::from_snapshot(old.as_bytes()).unwrap();
    // Streamed from a reader, either version: the same context.
    for bytes in [&text, &old] {
        let (streamed, anchor) = Context::from_snapshot_reader(&mut bytes.as_bytes(), 0).unwrap();
        assert_eq!(anchor, json!(null));
        assert_eq!(
            observed_in_own_scope(&streamed),
            observed_in_own_scope(&full)
        );
        assert_eq!(streamed.head(), full.head());
        assert_eq!(streamed.message_json(49), full.message_json(49));
    }
    let bad = text.replacen(r#"["state","i3",{"v":3}]"#, r#"["state","i3"]"#, 1);
    assert_eq!(
        Context::from_snapshot_reader(&mut bad.as_bytes(), 0)
            .unwrap_err()
            .to_string(),
        "invalid snapshot: held message 3: not a packed line"
    );
    assert_eq!(observed_in_own_scope(&opened), observed_in_own_scope(&new));
    assert_eq!(observed_in_own_scope(&new), observed_in_own_scope(&full));
    assert_eq!(opened.head(), full.head());
    for i in 0..50 {
        assert_eq!(opened.message_json(i), full.message_json(i), "message {i}");
        assert_eq!(new.message_json(i), full.message_json(i), "message {i}");
    }
}

#[test]
fn r5_a_global_write_forgets_the_layered_views_read_before_it() {
    // Layered views are cached by reads and must fold over the newest
    // global view: each global write forgets those built before it.
    let mut context = load(&jsonl(&[
        json!({"type": "data", "kind": "s", "data": {"g": 0}}),
        json!({"type": "data", "kind": "s", "data": {"i": 1}, "_instance": "a"}),
        json!({"type": "data", "kind": "t", "data": {"i": 2}, "_instance": "a"}),
    ]));
    let s = agent_core::Kind::new("s").unwrap();
    let t = agent_core::Kind::new("t").unwrap();
    let a = agent_core::Instance::new("a").unwrap();
    for round in 1..4 {
        assert_eq!(context.view(&t, Some(&a)), Some(&json!({"i": 2})));
        let before = context.view(&s, Some(&a)).cloned();
        assert_eq!(before, Some(json!({"g": round - 1, "i": 1})));
        let write = json!({"type": "data", "kind": "s", "data": {"g": round}});
        context.append(&batch(&[write])[0]).unwrap();
        assert_eq!(
            context.view(&s, Some(&a)),
            Some(&json!({"g": round, "i": 1}))
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    /// A snapshot is a file anyone may have planted or damaged: whatever
    /// its bytes, reading it is an error or a context whose every read,
    /// append and snapshot works — never a panic.
    #[test]
    fn r34c_a_snapshot_with_any_bytes_changed_is_refused_or_read_without_panicking(
        messages in prop::collection::vec(message(), 1..12),
        // Bytes JSON is made of, so that many edits still parse.
        edits in prop::collection::vec(
            (any::<prop::sample::Index>(), prop::sample::select(b"0123456789aisx\"\\,:{}[]\n ".to_vec())),
            1..3,
        ),
        cut in any::<prop::sample::Index>(),
        truncate in any::<bool>(),
    ) {
        let full = load(&jsonl(&messages));
        let mut bytes = full.snapshot(&json!(null)).unwrap();
        for (at, byte) in edits {
            let at = at.index(bytes.len());
            bytes[at] = byte;
        }
        if truncate {
            bytes.truncate(cut.index(bytes.len() + 1));
        }
        for read in [Context::from_snapshot(&bytes), Context::from_snapshot_bytes(bytes.clone())] {
            let Ok((mut context, _)) = read else { continue };
            let _ = observed(&context);
            for index in 0..context.len() {
                let _ = context.message(index);
            }
            let _ = context.snapshot(&json!(null));
            let _ = context.check(CheckMode::Normal);
            let _ = appended(&context, &batch(&messages[..1]));
            let _ = context.extend_jsonl(jsonl(&messages).as_bytes(), Position::default());
        }
    }
}
