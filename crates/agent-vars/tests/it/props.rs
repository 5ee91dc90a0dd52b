//! Property tests: display/parse round trip (R15), no panics on any string,
//! and the `||` / `&&` laws (R16, R17).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use agent_core::{Kind, Path, Reference, Segment};
use agent_core::{json, json::Value};
use agent_vars::{Alternative, Evaluation, Expression, Lookup, parse};
use proptest::prelude::*;
use std::borrow::Cow;
use std::collections::HashMap;

fn segment() -> impl Strategy<Value = Segment> {
    prop_oneof![
        any::<i64>().prop_map(Segment::Index),
        "[a-z0-9_-]{1,5}".prop_map(Segment::Key),
        any::<String>().prop_map(Segment::Key),
        prop::sample::select(vec!["", " ", "||", "&&", "†", "\"", "]", "a b"])
            .prop_map(|s| Segment::Key(s.into())),
    ]
}

fn reference() -> impl Strategy<Value = Reference> {
    (
        "[A-Za-z_][A-Za-z0-9_-]{0,4}",
        prop::collection::vec(segment(), 0..4),
    )
        .prop_map(|(k, segs)| Reference::new(Kind::new(k).unwrap(), Path::from_segments(segs)))
}

fn expression() -> impl Strategy<Value = Expression> {
    prop::collection::vec(
        prop::collection::vec(reference(), 1..4)
            .prop_map(|references| Alternative::new(references).unwrap()),
        1..4,
    )
    .prop_map(|alternatives| Expression::new(alternatives).unwrap())
}

/// A lookup over a fixed map from reference text to value.
struct Map(HashMap<String, Value>);

impl Lookup for Map {
    fn lookup(&self, reference: &Reference) -> Option<Cow<'_, Value>> {
        self.0.get(&reference.to_string()).map(Cow::Borrowed)
    }
}

/// Absent, null (not present, R16) or a present value (falsy ones included).
fn slot() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        Just(None),
        Just(Some(Value::Null)),
        prop::sample::select(vec![
            json!(0),
            json!(false),
            json!(""),
            json!([]),
            json!({}),
            json!("v"),
            json!([1])
        ])
        .prop_map(Some),
    ]
}

fn lookup(a: &Option<Value>, b: &Option<Value>) -> Map {
    let mut map = HashMap::new();
    if let Some(v) = a {
        map.insert("†s.a".to_owned(), v.clone());
    }
    if let Some(v) = b {
        map.insert("†s.b".to_owned(), v.clone());
    }
    Map(map)
}

fn is_present(v: &Option<Value>) -> bool {
    v.as_ref().is_some_and(|v| !v.is_null())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn r15_display_then_parse_round_trips(e in expression()) {
        let text = e.to_string();
        prop_assert_eq!(Expression::parse(&text).unwrap(), e.clone());
        // Blanks around operators and at the ends do not matter.
        let spaced = format!("  {}\t", text.replace(" || ", "  ||\t").replace(" && ", "&&"));
        prop_assert_eq!(Expression::parse(&spaced).unwrap(), e);
    }

    #[test]
    fn r15_parser_never_panics(text in "[†\"\\[\\]|&\\\\ .a-c0-9()\\-\u{0}-\u{7f}\u{2020}\u{fffd}\u{1f600}]{0,40}") {
        let _ = parse(&text);
        if let Err(err) = Expression::parse(&text) {
            prop_assert!(err.offset <= text.len());
            prop_assert!(text.is_char_boundary(err.offset));
            let _ = err.caret();
        }
    }

    #[test]
    fn r15_parser_never_panics_on_any_string(text in any::<String>()) {
        let _ = parse(&text);
        let _ = Expression::parse(&format!("†{text}"));
        let _ = Expression::parse(&format!("†s.a || {text}"));
    }

    #[test]
    fn r17_or_is_a_when_present_else_b(a in slot(), b in slot()) {
        let e = Expression::parse("†s.a || †s.b").unwrap();
        let map = lookup(&a, &b);
        let got = e.evaluate(&map);
        let expected = if is_present(&a) { a.clone() } else if is_present(&b) { b.clone() } else { None };
        match (got, expected) {
            (Evaluation::Value(v), Some(want)) => prop_assert_eq!(v.into_owned(), want),
            (Evaluation::Unresolved(missing), None) => {
                prop_assert_eq!(missing.len(), 2);
            }
            (got, want) => prop_assert!(false, "got {:?}, want {:?}", got, want),
        }
    }

    #[test]
    fn r17_and_is_b_when_both_present_else_unresolved(a in slot(), b in slot()) {
        let e = Expression::parse("†s.a && †s.b").unwrap();
        let map = lookup(&a, &b);
        match e.evaluate(&map) {
            Evaluation::Value(v) => {
                prop_assert!(is_present(&a) && is_present(&b));
                prop_assert_eq!(Some(v.into_owned()), b);
            }
            Evaluation::Unresolved(missing) => {
                prop_assert!(!(is_present(&a) && is_present(&b)));
                let names: Vec<String> = missing.iter().map(ToString::to_string).collect();
                let mut want = Vec::new();
                if !is_present(&a) { want.push("†s.a".to_owned()); }
                if !is_present(&b) { want.push("†s.b".to_owned()); }
                prop_assert_eq!(names, want);
            }
        }
    }
}
