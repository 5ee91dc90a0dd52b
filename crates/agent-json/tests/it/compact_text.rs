//! Property test: the reader says a text is compact exactly when the
//! writer gives the same bytes back for the value read (what lets a log
//! keep a line's own text as the message's compact JSON, D46: the chain).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use crate::support::text;
use agent_json as json;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn compact_is_reported_exactly_when_the_writer_writes_the_text_read(text in text()) {
        let (value, compact) = json::from_str_compact_within(&text, 128).unwrap();
        prop_assert_eq!(compact, json::to_string(&value) == text, "{}", text);
    }

    #[test]
    fn compact_members_are_read_exactly_when_the_reader_reads_a_compact_object(
        text in text(),
        limit in 1usize..6,
    ) {
        let mut object = json::CompactObject::new();
        let read = object.read(&text, limit);
        match json::from_str_compact_within(&text, limit) {
            Ok((json::Value::Object(map), true)) => {
                prop_assert!(read, "{}", text);
                let members: Vec<_> = object.members(&text).collect();
                prop_assert_eq!(members.len(), map.len());
                for ((key, value), (k, v)) in members.into_iter().zip(map.iter()) {
                    prop_assert_eq!(json::to_string(&json::Value::String(k.to_string())), format!("\"{key}\""));
                    prop_assert_eq!(value, json::to_string(v));
                }
            }
            _ => prop_assert!(!read, "{}", text),
        }
    }

    #[test]
    fn compact_is_reported_for_whatever_the_writer_writes(text in text()) {
        let written = json::to_string(&json::from_str(&text).unwrap());
        let (again, compact) = json::from_str_compact_within(&written, 128).unwrap();
        prop_assert!(compact, "{}", written);
        prop_assert_eq!(json::to_string(&again), written);
    }
}

#[test]
fn surrounding_blanks_are_not_compact() {
    for text in [" 1", "1 ", "{\"a\":1}\n", "\r{}"] {
        assert!(
            !json::from_str_compact_within(text, 128).unwrap().1,
            "{text:?}"
        );
    }
    assert!(json::from_str_compact_within("{\"a\":1}", 128).unwrap().1);
}

/// Each escape is found wherever it stands in a long string: before, inside
/// and after the stretches the writer skips eight bytes at a time.
#[test]
fn d46_compact_text_escapes_wherever_the_escape_stands() {
    let escapes = [
        ("\"", "\\\""),
        ("\\", "\\\\"),
        ("\n", "\\n"),
        ("\u{1}", "\\u0001"),
        ("\u{1f}", "\\u001f"),
        ("\u{7f}", "\u{7f}"),
        ("é", "é"),
        (" ", " "),
    ];
    for (len, at) in (1..=20).flat_map(|len| (0..len).map(move |at| (len, at))) {
        for (raw, written) in escapes {
            let (before, after) = ("a".repeat(at), "b".repeat(len - 1 - at));
            let value = json::Value::String(format!("{before}{raw}{after}"));
            assert_eq!(
                json::to_string(&value),
                format!("\"{before}{written}{after}\""),
                "{raw:?} at {at}"
            );
        }
    }
}

#[test]
fn compact_members_decline_what_is_not_a_compact_object() {
    let mut object = json::CompactObject::new();
    for text in [
        "[1]",
        "1",
        "{\"a\":1} ",
        "{\"a\":1,}",
        "{\"a\":1,\"a\":2}",
        "{\"a\":{\"b\":1,\"b\":2}}",
        "{\"a\":1E+5}",
        "{\"a\":1e5}",
        "{\"a\":01}",
        "{\"a\":\"\\u0041\"}",
        "{\"a\":\"\\/\"}",
        "{\"a\":\"\\u000a\"}",
        "{\"a\":\"\\u001F\"}",
        "{\"a\":tru}",
        "{\"a\":[1,]}",
        "{\"a\":[1 ]}",
        "{\"a\":\"x",
        "{\"a\"}",
        "{\"a\":1}}",
    ] {
        assert!(!object.read(text, 128), "{text}");
    }
    let wide = format!(
        "{{\"a\":{{{}}}}}",
        (0..33)
            .map(|i| format!("\"k{i}\":{i}"))
            .collect::<Vec<_>>()
            .join(",")
    );
    assert!(!object.read(&wide, 128), "33 members are declined");
    assert!(
        object.read(&wide.replace(",\"k32\":32", ""), 128),
        "32 are read"
    );
}

#[test]
fn compact_members_hold_the_depth_limit_as_the_reader_does() {
    let mut object = json::CompactObject::new();
    let nested = |depth: usize| format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth));
    for depth in 1..6 {
        for limit in 0..7 {
            let text = nested(depth);
            assert_eq!(
                object.read(&text, limit),
                json::from_str_compact_within(&text, limit).is_ok(),
                "depth {depth}, limit {limit}"
            );
        }
    }
}
