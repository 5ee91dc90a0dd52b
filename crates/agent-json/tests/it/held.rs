//! Objects and arrays nested 16 or more containers deep are kept as their
//! text until read (D85: held objects; D86: held arrays). Property tests: a deep value read from any
//! spelling reads, writes, compares and changes exactly as the same value
//! built in memory.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use crate::support::text;
use agent_json::{self as json, Map, Value};
use proptest::prelude::*;

/// One level around a value: its text's opening and closing, and the same
/// level built around a value in memory.
#[derive(Clone, Copy, Debug)]
enum Level {
    /// `{"a":…}`
    Object,
    /// `{ "k" : 1 , "a" : … }`, blanks and a member before.
    SpacedObject,
    /// `{"a":…,"z":[{"y":2}]}`: a member after, holding an object.
    ObjectThenMore,
    /// `[…]`
    Array,
    /// `[0,…]`
    SecondItem,
}

impl Level {
    fn wrap_text(self, inner: &str) -> String {
        match self {
            Level::Object => format!(r#"{{"a":{inner}}}"#),
            Level::SpacedObject => format!(r#"{{ "k" : 1 , "a" : {inner} }}"#),
            Level::ObjectThenMore => format!(r#"{{"a":{inner},"z":[{{"y":2}}]}}"#),
            Level::Array => format!("[{inner}]"),
            Level::SecondItem => format!("[0,{inner}]"),
        }
    }

    fn wrap_value(self, inner: Value) -> Value {
        let object = |members: Vec<(&str, Value)>| Value::Object(members.into_iter().collect());
        match self {
            Level::Object => object(vec![("a", inner)]),
            Level::SpacedObject => object(vec![("k", Value::from(1)), ("a", inner)]),
            Level::ObjectThenMore => object(vec![
                ("a", inner),
                (
                    "z",
                    Value::Array(vec![object(vec![("y", Value::from(2))])].into()),
                ),
            ]),
            Level::Array => Value::Array(vec![inner].into()),
            Level::SecondItem => Value::Array(vec![Value::from(0), inner].into()),
        }
    }

    /// The inner value's place under this level.
    fn step(self) -> &'static str {
        match self {
            Level::Object | Level::SpacedObject | Level::ObjectThenMore => "/a",
            Level::Array => "/0",
            Level::SecondItem => "/1",
        }
    }
}

fn levels() -> impl Strategy<Value = Vec<Level>> {
    let level = prop::sample::select(vec![
        Level::Object,
        Level::SpacedObject,
        Level::ObjectThenMore,
        Level::Array,
        Level::SecondItem,
    ]);
    // Around the depth where holding starts, on both sides of it.
    prop::collection::vec(level, 10..24)
}

/// A deep text, and the same value built without reading the deep text.
fn deep(levels: &[Level], inner: &str) -> (String, Value, String) {
    let mut text = inner.to_owned();
    let mut value = json::from_str(inner).unwrap();
    let mut pointer = String::new();
    for level in levels.iter().rev() {
        text = level.wrap_text(&text);
        value = level.wrap_value(value);
    }
    for level in levels {
        pointer.push_str(level.step());
    }
    (text, value, pointer)
}

/// The value under `levels`, mutably.
fn down<'v>(mut value: &'v mut Value, levels: &[Level]) -> &'v mut Value {
    for level in levels {
        value = match level.step() {
            "/a" => value.get_mut("a"),
            "/0" => value.get_mut(0),
            _ => value.get_mut(1),
        }
        .unwrap();
    }
    value
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn d85_a_deep_value_read_writes_as_the_same_value_built(levels in levels(), inner in text()) {
        let (text, built, _) = deep(&levels, &inner);
        let read = json::from_str(&text).unwrap();
        prop_assert_eq!(json::to_string(&read), json::to_string(&built));
        prop_assert_eq!(json::to_string_pretty(&read), json::to_string_pretty(&built));
        prop_assert_eq!(serde_json::to_string(&read).unwrap(), serde_json::to_string(&built).unwrap());
        prop_assert_eq!(
            serde_json::to_string_pretty(&read).unwrap(),
            serde_json::to_string_pretty(&built).unwrap()
        );
        prop_assert_eq!(format!("{read:#}"), format!("{built:#}"));
        // Through serde into a value: every call the serializer gets.
        prop_assert_eq!(json::to_value(&read).unwrap(), built.clone());
        prop_assert_eq!(serde_json::Value::from(&read), serde_json::Value::from(&built));
        prop_assert_eq!(&read, &built);
        prop_assert_eq!(format!("{read:?}"), format!("{built:?}"));
    }

    #[test]
    fn d85_a_deep_value_read_is_as_deep_as_the_value_built(levels in levels(), inner in text()) {
        let (text, built, _) = deep(&levels, &inner);
        let read = json::from_str(&text).unwrap();
        let object = |v: &Value| Map::from_iter([("x", v.clone())]);
        let (read_object, built_object) = (object(&read), object(&built));
        for limit in levels.len().saturating_sub(2)..levels.len() + 8 {
            prop_assert_eq!(
                agent_json::within_depth(&read, limit),
                agent_json::within_depth(&built, limit),
                "{} at {}", text, limit
            );
            // Refused or written, the same text in `out`.
            let (mut r, mut b) = (String::new(), String::new());
            prop_assert_eq!(
                json::write_object_within(&mut r, &read_object, limit),
                json::write_object_within(&mut b, &built_object, limit),
                "{} at {}", text, limit
            );
            prop_assert_eq!(r, b);
        }
    }

    #[test]
    fn d85_compact_is_reported_for_a_deep_text_as_for_any(levels in levels(), inner in text()) {
        let (text, built, _) = deep(&levels, &inner);
        let (read, compact) = json::from_str_compact_within(&text, 128).unwrap();
        prop_assert_eq!(compact, json::to_string(&built) == text);
        prop_assert_eq!(read, built);
    }

    #[test]
    fn d85_a_deep_value_read_is_found_and_changed_as_the_value_built(
        levels in levels(),
        inner in text(),
        key in prop::sample::select(vec!["a", "new", "k"]),
    ) {
        let (text, mut built, pointer) = deep(&levels, &inner);
        let mut read = json::from_str(&text).unwrap();
        // Every level on the way down, from the top.
        let mut at = String::new();
        for level in &levels {
            at.push_str(level.step());
            prop_assert_eq!(read.pointer(&at), built.pointer(&at), "{}", at);
        }
        prop_assert_eq!(at, pointer);
        // A member set on every object on the way, from the bottom up.
        for depth in (0..=levels.len()).rev() {
            let (r, b) = (down(&mut read, &levels[..depth]), down(&mut built, &levels[..depth]));
            if let (Some(r), Some(b)) = (r.as_object_mut(), b.as_object_mut()) {
                prop_assert_eq!(r.insert(key.to_owned(), Value::from(7)), b.insert(key.to_owned(), Value::from(7)));
                prop_assert_eq!(r.len(), b.len());
                prop_assert_eq!(r.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
            }
            prop_assert_eq!(json::to_string(&read), json::to_string(&built));
        }
        let copy = read.clone();
        prop_assert_eq!(json::to_string(&copy), json::to_string(&built));
        json::drop_deep(copy);
    }

    #[test]
    fn d85_a_deep_object_taken_apart_gives_the_members_built(levels in levels(), inner in text()) {
        let (text, built, _) = deep(&levels, &inner);
        let (mut read, mut built) = (json::from_str(&text).unwrap(), built);
        // Down the first member or item of each level, taking each object
        // apart by value as the fold does.
        loop {
            match (read, built) {
                (Value::Object(r), Value::Object(b)) => {
                    let r: Vec<(String, Value)> = r.into_iter().collect();
                    let b: Vec<(String, Value)> = b.into_iter().collect();
                    prop_assert_eq!(r.len(), b.len());
                    let (mut r, mut b) = (r.into_iter(), b.into_iter());
                    match (r.next(), b.next()) {
                        (Some((rk, rv)), Some((bk, bv))) => {
                            prop_assert_eq!(rk, bk);
                            (read, built) = (rv, bv);
                        }
                        (r, b) => {
                            prop_assert_eq!(r, b);
                            break;
                        }
                    }
                }
                (Value::Array(mut r), Value::Array(mut b)) if !r.is_empty() && !b.is_empty() => {
                    (read, built) = (r.swap_remove(0), b.swap_remove(0));
                }
                (r, b) => {
                    prop_assert_eq!(r, b);
                    break;
                }
            }
        }
    }
}

/// Empty objects are never held, and a held object's emptiness is told
/// from its text, blanks and all.
#[test]
fn d85_emptiness_of_deep_objects_is_read_from_their_text() {
    // The innermost of 16 arrays is inside 15 containers: not held itself.
    let nest = |inner: &str| format!("{}{inner}{}", "[".repeat(16), "]".repeat(16));
    for (inner, empty) in [
        ("{}", true),
        ("{ }", true),
        ("{\n}", true),
        ("{\"a\":{}}", false),
        ("{ \"a\" : 1 }", false),
    ] {
        let value = json::from_str(&nest(inner)).unwrap();
        let mut at = &value;
        for _ in 0..16 {
            at = &at[0];
        }
        let map: &Map = at.as_object().unwrap();
        assert_eq!(map.is_empty(), empty, "{inner}");
        #[allow(clippy::len_zero)] // `len` reads the object; `is_empty` reads its text
        let counted_empty = map.len() == 0;
        assert_eq!(counted_empty, empty, "{inner}");
    }
}

/// A deep text past the reader's limit fails as it always did: holding
/// starts only after an object has been read whole.
#[test]
fn d85_a_deep_text_past_the_limit_fails_where_it_did() {
    let text = format!("{}1{}", "{\"a\":".repeat(40), "}".repeat(40));
    let err = json::from_str_within(&text, 30).unwrap_err();
    assert_eq!(
        err.to_string(),
        "nested deeper than 30 levels at line 1 column 151"
    );
    // A fault inside the part that would be held: serde_json's message.
    let bad = format!("{}1,{}", "{\"a\":".repeat(40), "}".repeat(40));
    let err = json::from_str(&bad).unwrap_err();
    let serde = serde_json::from_str::<serde_json::Value>(&bad).unwrap_err();
    assert_eq!(err.to_string(), serde.to_string());
    assert_eq!(err.to_string(), "trailing comma at line 1 column 203");
}

/// Holding costs nothing in the value's own size: a value is 32 bytes,
/// an object 16 and an array 24, as before (the held text sits behind the
/// pointer an object's hash index uses, or in place of a built array).
#[test]
fn d85_a_value_is_32_bytes_an_object_16_and_an_array_24() {
    assert_eq!(std::mem::size_of::<Value>(), 32);
    assert_eq!(std::mem::size_of::<Map>(), 16);
    assert_eq!(std::mem::size_of::<json::Array>(), 24);
    fn shared<T: Send + Sync>() {}
    shared::<Value>();
}

/// Strings holding what delimits JSON, empty containers, every kind of
/// scalar: a deep compact object serialises through serde exactly as the
/// same object built.
#[test]
fn d85_a_deep_compact_object_serialises_through_serde_as_built() {
    let inner = r#"{"k{,}":"v:[]\"\\","e":{},"f":[],"g":[{},[],[1,[2]],{"x":{"y":"}"}}],"n":-1.5e+3,"t":true,"u":false,"z":null,"é\n":"\u001f","big":123456789012345678901234567890}"#;
    assert_eq!(json::to_string(&json::from_str(inner).unwrap()), inner);
    let levels = vec![Level::Object; 20];
    let (text, built, _) = deep(&levels, inner);
    let read = json::from_str(&text).unwrap();
    assert_eq!(
        serde_json::to_string(&read).unwrap(),
        serde_json::to_string(&built).unwrap()
    );
    assert_eq!(
        serde_json::to_string_pretty(&read).unwrap(),
        serde_json::to_string_pretty(&built).unwrap()
    );
    assert_eq!(json::to_value(&read).unwrap(), built);
    assert_eq!(
        json::to_string_pretty(&read),
        json::to_string_pretty(&built)
    );
}

/// Depth that an empty container ends, or that a repeated key's replaced
/// value held, counts as it does in the value built.
#[test]
fn d85_empty_containers_count_and_replaced_values_do_not() {
    // Held from the 17th array on: the object is inside a held text.
    let nest = |inner: &str| format!("{}{inner}{}", "[".repeat(20), "]".repeat(20));
    for (inner, depth) in [
        (r#"{"a":[]}"#, 22),
        (r#"{"a":{}}"#, 22),
        (r#"{"a":[{}]}"#, 23),
        (r#"{"a":1,"b":[[]]}"#, 23),
        (r#"{"b":[1],"b":2}"#, 21),
        (r#"{"b":{"c":{"d":1}},"\u0062":0}"#, 21),
        (r#"{"b":0,"b":{"c":[]}}"#, 23),
    ] {
        let value = json::from_str(&nest(inner)).unwrap();
        assert!(agent_json::within_depth(&value, depth), "{inner}");
        assert!(!agent_json::within_depth(&value, depth - 1), "{inner}");
    }
}

/// A value nested far past any stack, read with no limit, is written and
/// dropped without recursion, its held part read apart or not.
#[test]
fn d85_a_very_deep_value_is_written_and_dropped_within_a_small_stack() {
    const LEVELS: usize = 200_000;
    let spaced = format!("[{}1{}]", r#"{"a": "#.repeat(LEVELS), "}".repeat(LEVELS));
    let compact = format!("[{}1{}]", r#"{"a":"#.repeat(LEVELS), "}".repeat(LEVELS));
    let worker = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || {
            let mut lengths = Vec::new();
            for text in [spaced, compact] {
                let value = json::from_str_within(&text, usize::MAX).unwrap();
                // (Pretty text this deep would be tens of gigabytes of
                // indentation: compact only.)
                lengths.push(json::to_string(&value).len());
                assert!(!agent_json::within_depth(&value, LEVELS));
                assert!(agent_json::within_depth(&value, LEVELS + 1));
                json::drop_deep(value);
            }
            lengths
        })
        .unwrap();
    let lengths = worker.join().unwrap();
    assert_eq!(lengths, [6 * LEVELS + 3, 6 * LEVELS + 3]);
}
