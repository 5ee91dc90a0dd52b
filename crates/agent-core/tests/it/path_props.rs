//! Property tests: path display/parse round trip (R7) and write algebra (R10, R10b).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use agent_core::{Method, Path, Reference, Segment, write};
use agent_core::{json, json::Value};
use proptest::prelude::*;

fn segment() -> impl Strategy<Value = Segment> {
    prop_oneof![
        any::<i64>().prop_map(Segment::Index),
        "[a-z0-9_]{1,6}".prop_map(Segment::Key),
        any::<String>().prop_map(Segment::Key),
        prop::sample::select(vec![
            "", " ", ".", "[", "]", "\"", "†", "|", "&", "a b", "\\"
        ])
        .prop_map(|s| Segment::Key(s.to_owned())),
    ]
}

fn path() -> impl Strategy<Value = Path> {
    prop::collection::vec(segment(), 0..6).prop_map(Path::from_segments)
}

fn small_object() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(json!(null)),
        any::<i8>().prop_map(|n| json!(n)),
        "[a-c]".prop_map(Value::String)
    ];
    leaf.prop_recursive(3, 16, 3, |inner| {
        prop::collection::vec(("[a-c]", inner), 0..3)
            .prop_map(|kvs| Value::Object(kvs.into_iter().collect()))
    })
    .prop_map(|v| if v.is_object() { v } else { json!({"k": v}) })
}

/// Objects whose keys `a`–`c` always hold objects and `x`–`z` always hold
/// leaves: every path has one shape across generated values. Deep merge is
/// associative only on such values (see docs/decisions.md, D3: merge associativity).
fn shaped_object() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(json!(null)),
        any::<i8>().prop_map(|n| json!(n)),
        "[a-c]".prop_map(Value::String),
        Just(json!([1]))
    ];
    let leaves = prop::collection::vec(("[x-z]", leaf), 0..3);
    leaves
        .clone()
        .prop_map(|kvs| Value::Object(kvs.into_iter().collect()))
        .prop_recursive(3, 24, 3, move |inner| {
            (
                prop::collection::vec(("[a-c]", inner), 0..3),
                leaves.clone(),
            )
                .prop_map(|(objs, leaves)| Value::Object(objs.into_iter().chain(leaves).collect()))
        })
}

proptest! {
    #[test]
    fn r7_display_then_parse_round_trips(p in path()) {
        let text = p.to_string();
        prop_assert_eq!(Path::parse(&text).unwrap(), p);
    }

    #[test]
    fn r7_parser_never_panics(text in "[.\\[\\]\"†|& a0-9\\\\-]{0,20}") {
        let _ = Path::parse(&text);
        let _ = Reference::parse(&text);
    }

    #[test]
    fn r15_reference_round_trips(p in path(), kind in "[a-z_][a-z0-9_-]{0,5}") {
        let text = format!("†{kind}{p}");
        let r = Reference::parse(&text).unwrap();
        prop_assert_eq!(r.to_string(), text);
    }

    #[test]
    fn r10_deep_merge_of_objects_is_associative(a in shaped_object(), b in shaped_object(), c in shaped_object()) {
        let root = Path::root();
        let mut left = Some(a.clone());
        write(&mut left, &root, Method::Merge, b.clone()).unwrap();
        write(&mut left, &root, Method::Merge, c.clone()).unwrap();
        let mut bc = Some(b);
        write(&mut bc, &root, Method::Merge, c).unwrap();
        let mut right = Some(a);
        write(&mut right, &root, Method::Merge, bc.unwrap()).unwrap();
        prop_assert_eq!(left, right);
    }

    #[test]
    fn r10_patches_with_disjoint_keys_commute(a in small_object(), b in small_object()) {
        // Make the top-level keys disjoint by prefixing.
        let prefix = |v: Value, p: &str| Value::Object(v.as_object().unwrap().iter().map(|(k, v)| (format!("{p}{k}"), v.clone())).collect());
        let (a, b) = (prefix(a, "x"), prefix(b, "y"));
        let root = Path::root();
        let mut ab = None;
        write(&mut ab, &root, Method::Merge, a.clone()).unwrap();
        write(&mut ab, &root, Method::Merge, b.clone()).unwrap();
        let mut ba = None;
        write(&mut ba, &root, Method::Merge, b).unwrap();
        write(&mut ba, &root, Method::Merge, a).unwrap();
        // Same content; key order may differ, which serde_json's PartialEq ignores.
        prop_assert_eq!(ab, ba);
    }

    #[test]
    fn r10_set_then_read_returns_value(start in small_object(), p in prop::collection::vec("[a-c]", 1..4), v in small_object()) {
        let path = Path::from_segments(p.into_iter().map(Segment::Key).collect());
        let mut view = Some(start);
        if write(&mut view, &path, Method::Set, v.clone()).is_ok() {
            prop_assert_eq!(path.get(view.as_ref().unwrap()), Some(&v));
        }
    }

    #[test]
    fn r10b_erase_then_read_finds_no_value_and_leaves_other_paths_alone(
        start in json_value(),
        p in erase_path(),
        other in erase_path(),
    ) {
        let mut view = Some(start.clone());
        write(&mut view, &p, Method::Erase, json!(null)).unwrap();
        // The erased path reads absent, or null where it named an array element.
        let read = view.as_ref().and_then(|v| p.get(v));
        prop_assert!(read.is_none_or(Value::is_null), "{p} reads {read:?}");
        // A path the erased one is no prefix of reads as before, unless the
        // erase reached through a negative index (counted from the end).
        let negative = p.segments().iter().chain(other.segments()).any(|s| matches!(s, Segment::Index(i) if *i < 0));
        if !p.is_prefix_of(&other) && !negative && !(other.is_prefix_of(&p)) {
            prop_assert_eq!(view.as_ref().and_then(|v| other.get(v)), other.get(&start));
        }
        // Erasing twice is erasing once.
        let once = view.clone();
        write(&mut view, &p, Method::Erase, json!(1)).unwrap();
        prop_assert_eq!(view, once);
    }
}

/// Any small JSON value: objects keyed `a`–`b` (and `0`), arrays, leaves.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(json!(null)),
        any::<i8>().prop_map(|n| json!(n)),
        "[a-c]".prop_map(Value::String)
    ];
    leaf.prop_recursive(3, 16, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::from),
            prop::collection::vec(("[ab0]", inner), 0..3)
                .prop_map(|kvs| Value::Object(kvs.into_iter().collect())),
        ]
    })
}

/// Paths into [`json_value`]s: keys, canonical and other indexes.
fn erase_path() -> impl Strategy<Value = Path> {
    let seg = prop_oneof![
        3 => "[ab0]".prop_map(Segment::Key),
        2 => (-3i64..3).prop_map(Segment::Index),
    ];
    prop::collection::vec(seg, 0..4).prop_map(Path::from_segments)
}
