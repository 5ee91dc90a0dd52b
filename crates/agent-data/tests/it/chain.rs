//! The chain of digests over a log: one position per message as `Context`
//! numbers them, the same however the log was read or written.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use agent_core::{json, json::Value};
use agent_data::{Context, Digest, Format, Message, Position};
use proptest::prelude::*;

fn message() -> impl Strategy<Value = Value> {
    prop_oneof![
        (0i64..5, "[ab]", prop::option::of("[xy]")).prop_map(|(n, key, instance)| {
            let mut m = json!({"type": "state", "data": {key: n}});
            if let Some(i) = instance {
                m["_instance"] = json!(i);
            }
            m
        }),
        "[a-z ]{0,6}".prop_map(|text| json!({"type": "text", "role": "user", "text": text})),
        // An output write (a data message with `_outputPath`).
        (0i64..3).prop_map(
            |n| json!({"type": "data", "kind": "state", "data": {"n": n},
            "_outputPath": "†state.n"})
        ),
    ]
}

fn jsonl(messages: &[Value]) -> String {
    messages.iter().map(|m| format!("{m}\n")).collect()
}

/// The chain recomputed from the messages the context holds.
fn recomputed(context: &Context) -> Digest {
    Digest::of((0..context.len()).map(|i| context.message_json(i).unwrap().as_bytes()))
}

proptest! {
    #[test]
    fn r34e_the_chain_is_the_same_for_jsonl_a_json_array_appends_and_a_snapshot_with_its_tail(
        messages in prop::collection::vec(message(), 0..20),
        cut in any::<prop::sample::Index>(),
    ) {
        let text = jsonl(&messages);
        let from_jsonl = Context::load(text.as_bytes(), Format::Jsonl).unwrap().context;
        prop_assert_eq!(from_jsonl.head(), recomputed(&from_jsonl));
        let array = serde_json::to_string(&messages).unwrap();
        let from_array = Context::load(array.as_bytes(), Format::Json).unwrap().context;
        prop_assert_eq!(from_array.head(), from_jsonl.head());

        let mut appended = Context::new();
        for m in &messages {
            let batch = Message::from_value(m.clone()).unwrap();
            appended.append_all(&batch).unwrap();
        }
        prop_assert_eq!(appended.head(), from_jsonl.head());

        let cut = cut.index(messages.len() + 1);
        let prefix = jsonl(&messages[..cut]);
        let snapshot = Context::load(prefix.as_bytes(), Format::Jsonl).unwrap().context
            .snapshot(&json!(null)).unwrap();
        let (mut resumed, _) = Context::from_snapshot(&snapshot).unwrap();
        resumed.extend_jsonl(jsonl(&messages[cut..]).as_bytes(), Position { line: cut, offset: prefix.len() }).unwrap();
        prop_assert_eq!(resumed.head(), from_jsonl.head());
    }
}

proptest! {
    #[test]
    fn r34e_a_digest_is_sha256_of_the_previous_digest_and_the_json_at_every_length(
        previous in any::<[u8; 32]>(),
        json in prop::collection::vec(any::<u8>(), 0..300),
    ) {
        use sha2::Digest as _;
        let mut hasher = sha2::Sha256::new();
        hasher.update(previous);
        hasher.update(&json);
        let expected: [u8; 32] = hasher.finalize().into();
        prop_assert_eq!(Digest::from_bytes(previous).next(&json), Digest::from_bytes(expected));
    }
}

#[test]
fn r34e_a_digest_is_right_at_each_length_that_meets_a_block_boundary() {
    use sha2::Digest as _;
    // 32 bytes of digest, then the JSON: the padding changes at 55/56 bytes
    // in a block and a block ends every 64.
    for len in 0..=200 {
        let json: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
        let previous = Digest::from_bytes([7; 32]);
        let mut hasher = sha2::Sha256::new();
        hasher.update(previous.as_bytes());
        hasher.update(&json);
        let expected: [u8; 32] = hasher.finalize().into();
        assert_eq!(
            previous.next(&json),
            Digest::from_bytes(expected),
            "length {len}"
        );
    }
}

#[test]
fn r34e_an_empty_log_has_the_zero_digest() {
    assert_eq!(Context::new().head(), Digest::GENESIS);
    assert_eq!(Digest::GENESIS.to_string(), "0".repeat(64));
}

#[test]
fn r34e_a_digest_is_sha256_of_the_previous_digest_and_the_line_as_sha256sum_computes_it() {
    let context = Context::load(
        b"{\"type\":\"state\",\"data\":{\"n\":1}}\n{\"type\":\"text\",\"role\":\"user\",\"text\":\"hi\"}\n",
        Format::Jsonl,
    )
    .unwrap()
    .context;
    // Recomputed by another program: coreutils' sha256sum over the bytes.
    let mut digest = Digest::GENESIS;
    let dir = tempfile::tempdir().unwrap();
    for i in 0..context.len() {
        let path = dir.path().join(format!("m{i}"));
        let mut bytes = digest.as_bytes().to_vec();
        bytes.extend_from_slice(context.message_json(i).unwrap().as_bytes());
        std::fs::write(&path, bytes).unwrap();
        let out = std::process::Command::new("sha256sum")
            .arg(&path)
            .output()
            .unwrap();
        assert!(out.status.success());
        let hex = String::from_utf8(out.stdout).unwrap();
        digest = hex.split_whitespace().next().unwrap().parse().unwrap();
    }
    assert_eq!(context.head(), digest);
}

#[test]
fn r34e_a_digest_reads_back_from_its_hex_and_bad_hex_is_refused_by_name() {
    let d = Digest::GENESIS.next(b"{}");
    assert_eq!(d.to_string().parse::<Digest>().unwrap(), d);
    assert_eq!(
        "abc".parse::<Digest>().unwrap_err().to_string(),
        "\"abc\" is not a chain digest (64 hex digits)"
    );
    assert!("g".repeat(64).parse::<Digest>().is_err());
}

#[test]
fn r34e_a_line_is_hashed_as_its_messages_compact_json_however_it_is_spelled() {
    let lines = [
        // Compact already: stored as read.
        r#"{"type":"data","kind":"k","data":{"a":1}}"#,
        r#"{"type": "data", "kind":"k","data":{"a":1}}"#,
        r#"{"type":"data","kind":"k","data":{"a":"\u0041\/"}}"#,
        r#"{"type":"data","kind":"k","data":{"a":1E5,"b":2e5,"c":3e+5}}"#,
        r#"{"type":"data","kind":"k","data":{"a":1,"a":2}}"#,
        // Escapes as the writer writes them: compact.
        r#"{"type":"data","kind":"k","data":{"a":"x\n\u001f\"\\"}}"#,
        r#"{"type":"data","kind":"k","data":{"a":"\u001F"}}"#,
        r#"{"type":"note","x":[1, 2]}"#,
        "{\"type\":\"text\",\"text\":\"hi\"} ",
        "\t{\"type\":\"text\",\"text\":\"hi\"}\r",
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let context = Context::load(text.as_bytes(), Format::Jsonl)
        .unwrap()
        .context;
    let compact: Vec<String> = lines
        .iter()
        .map(|l| json::to_string(&json::from_str(l).unwrap()))
        .collect();
    assert_eq!(context.len(), lines.len());
    for (i, expected) in compact.iter().enumerate() {
        assert_eq!(context.message_json(i), Some(expected.as_str()), "line {i}");
    }
    assert_eq!(
        context.message_json(3),
        Some(r#"{"type":"data","kind":"k","data":{"a":1e+5,"b":2e+5,"c":3e+5}}"#)
    );
    assert_eq!(
        context.message_json(4),
        Some(r#"{"type":"data","kind":"k","data":{"a":2}}"#)
    );
    assert_eq!(
        context.head(),
        Digest::of(compact.iter().map(String::as_bytes))
    );
    assert_eq!(context.head(), recomputed(&context));
}

/// A load of a megabyte or more chains its lines on a second thread;
/// this hint is past that size whatever the input's own.
const LARGE: usize = 1 << 20;

proptest! {
    #[test]
    fn r34e_a_large_load_chained_on_a_second_thread_has_the_same_head(
        messages in prop::collection::vec(message(), 0..20),
    ) {
        let text = jsonl(&messages);
        let plain = Context::load(text.as_bytes(), Format::Jsonl).unwrap().context;
        let large = Context::load_jsonl_reader_sized(text.as_bytes(), "large", LARGE)
            .unwrap()
            .context;
        prop_assert_eq!(large.head(), plain.head());
        prop_assert_eq!(large.head(), recomputed(&large));
    }
}

/// About 1.3 MB of lines, many batches for the chaining thread: shorthands
/// taken unread, text messages, output writes, writes to one layer.
fn many_lines() -> String {
    (0..24_000)
        .map(|i| match i % 4 {
            0 => format!("{{\"type\":\"state\",\"v\":{i},\"_instance\":\"i{i}\"}}\n"),
            1 => format!("{{\"type\":\"text\",\"role\":\"user\",\"text\":\"line {i}\"}}\n"),
            2 => format!(
                "{{\"type\":\"data\",\"kind\":\"state\",\"data\":{{\"n\":{i}}},\"_outputPath\":\"†state.n\"}}\n"
            ),
            _ => format!("{{\"type\":\"state\",\"k{}\":{i}}}\n", i % 50),
        })
        .collect()
}

/// `text` loaded as a large input (its chain on a second thread) and as
/// one with no size hint (chained as it is read).
fn loaded_large_and_plain(text: &str) -> (Context, Context) {
    let large = Context::load_jsonl_reader_sized(text.as_bytes(), "large", text.len());
    let plain = Context::load_jsonl_reader_sized(text.as_bytes(), "plain", 0);
    (large.unwrap().context, plain.unwrap().context)
}

#[test]
fn r34e_a_load_of_many_batches_chained_on_a_second_thread_has_the_head_of_its_messages() {
    let text = many_lines();
    assert!(text.len() > LARGE, "{}", text.len());
    let (loaded, plain) = loaded_large_and_plain(&text);
    assert_eq!(loaded.len(), 24_000);
    assert_eq!(loaded.to_jsonl(), plain.to_jsonl());
    assert_eq!(loaded.head(), recomputed(&loaded));
    assert_eq!(loaded.head(), plain.head());
}

#[test]
fn r34e_a_large_file_loads_with_the_head_and_lines_of_its_messages() {
    let text = many_lines();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("large.jsonl");
    std::fs::write(&path, &text).unwrap();
    let from_file = Context::load_file(&path).unwrap().context;
    let (_, plain) = loaded_large_and_plain(&text);
    assert_eq!(from_file.to_jsonl(), plain.to_jsonl());
    assert_eq!(from_file.head(), plain.head());
    assert_eq!(from_file.head(), recomputed(&from_file));
}

#[test]
fn r34e_a_large_load_that_fails_part_way_fails_as_a_small_one() {
    let mut text = many_lines();
    text.push_str("{\"type\":\"text\",\"text\":\n");
    text.push_str("{\"type\":\"text\",\"role\":\"user\",\"text\":\"after\"}\n");
    let large = Context::load_jsonl_reader_sized(text.as_bytes(), "f", text.len()).unwrap_err();
    let plain = Context::load_jsonl_reader_sized(text.as_bytes(), "f", 0).unwrap_err();
    assert_eq!(large.to_string(), plain.to_string());
    assert!(large.to_string().contains("line 24001"), "{large}");
}

#[test]
fn r34e_a_line_too_large_to_copy_is_chained_in_its_place_between_the_threads_lines() {
    let huge = "x".repeat(LARGE + 10);
    let mut text = many_lines();
    text.push_str(&format!(
        "{{\"type\":\"text\",\"role\":\"user\",\"text\":\"{huge}\"}}\n"
    ));
    for line in many_lines().lines().take(2_000) {
        text.push_str(line);
        text.push('\n');
    }
    let (loaded, plain) = loaded_large_and_plain(&text);
    assert_eq!(loaded.len(), 26_001);
    assert_eq!(loaded.head(), recomputed(&loaded));
    assert_eq!(loaded.head(), plain.head());
}

#[test]
fn r34e_a_large_load_of_lines_that_normalise_to_several_messages_chains_each_message() {
    // A chat wrapper with a content array is one line and three messages:
    // the chain counts positions as the context numbers them.
    let mut text = many_lines();
    for i in 0..2_000 {
        text.push_str(&format!(
            "{{\"role\":\"user\",\"content\":[{{\"type\":\"text\",\"text\":\"a{i}\"}},{{\"type\":\"text\",\"text\":\"b{i}\"}},\"c{i}\"]}}\n"
        ));
    }
    let (loaded, plain) = loaded_large_and_plain(&text);
    assert_eq!(loaded.len(), 24_000 + 3 * 2_000);
    assert_eq!(loaded.to_jsonl(), plain.to_jsonl());
    assert_eq!(loaded.head(), recomputed(&loaded));
    assert_eq!(loaded.head(), plain.head());
}
