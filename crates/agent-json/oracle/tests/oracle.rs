//! `agent_json` against serde_json with the workspace's exact and
//! ordered features, which it replaces (D58: own JSON value): the same text reads to the
//! same value, writes back to the same bytes, and fails with the same
//! message at the same place.

use agent_json::{self as json, Number, Value};
use proptest::prelude::*;

/// JSON text from the grammar, with the variety a log holds: numbers of
/// any size and form, escapes (surrogate pairs too), repeated keys,
/// whitespace anywhere.
fn text(depth: u32) -> BoxedStrategy<String> {
    let ws = prop::sample::select(vec!["", "", " ", "\n", "\t ", "\r\n  "]);
    let number = (
        any::<bool>(),
        prop_oneof![Just("0".to_owned()), "[1-9][0-9]{0,30}"],
        prop::option::of("[0-9]{1,20}"),
        prop::option::of((
            "[eE]",
            prop::sample::select(vec!["", "+", "-"]),
            "[0-9]{1,4}",
        )),
    )
        .prop_map(|(neg, int, frac, exp)| {
            let mut n = String::new();
            if neg {
                n.push('-');
            }
            n.push_str(&int);
            if let Some(f) = frac {
                n.push('.');
                n.push_str(&f);
            }
            if let Some((e, sign, digits)) = exp {
                n.push_str(&format!("{e}{sign}{digits}"));
            }
            n
        });
    let leaf = prop_oneof![
        Just("null".to_owned()),
        Just("true".to_owned()),
        Just("false".to_owned()),
        number,
        string(),
    ];
    leaf.prop_recursive(depth, 64, 6, move |inner| {
        let ws = ws.clone();
        prop_oneof![
            (
                prop::collection::vec((inner.clone(), ws.clone()), 0..6),
                ws.clone()
            )
                .prop_map(|(items, pad)| {
                    let body: Vec<String> = items
                        .into_iter()
                        .map(|(v, w)| format!("{w}{v}{w}"))
                        .collect();
                    format!("[{pad}{}]", body.join(","))
                }),
            (
                prop::collection::vec((key(), inner, ws.clone()), 0..6),
                ws.clone()
            )
                .prop_map(|(members, pad)| {
                    let body: Vec<String> = members
                        .into_iter()
                        .map(|(k, v, w)| format!("{w}{k}{w}:{w}{v}{w}"))
                        .collect();
                    format!("{{{pad}{}}}", body.join(","))
                }),
        ]
    })
    .boxed()
}

/// A few keys, so objects repeat them.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![r#""a""#, r#""b""#, r#""\u0061""#, r#""""#])
            .prop_map(String::from),
        string(),
    ]
}

/// A string literal: plain characters, controls escaped every way, `\u`
/// escapes including surrogate pairs.
fn string() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        "[a-z é€😀/]{0,4}".prop_map(|s| s),
        prop::sample::select(vec![
            r#"\""#,
            r"\\",
            r"\/",
            r"\b",
            r"\f",
            r"\n",
            r"\r",
            r"\t",
            r"\u0000",
            r"\u001f",
            r"\u00e9",
            r"\uD83D\uDE00",
            r"\u20AC",
            "\u{7f}",
        ])
        .prop_map(String::from),
    ];
    prop::collection::vec(piece, 0..5).prop_map(|pieces| format!("\"{}\"", pieces.concat()))
}

/// How deep the text nests (brackets outside strings), repeated keys
/// included: the reader judges what it reads, not what is left.
fn text_depth(text: &str) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0, false, false);
    for c in text.chars() {
        match (in_string, escaped, c) {
            (true, true, _) => escaped = false,
            (true, false, '\\') => escaped = true,
            (true, false, '"') | (false, _, '"') => in_string = !in_string,
            (false, _, '[' | '{') => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            (false, _, ']' | '}') => depth -= 1,
            _ => {}
        }
    }
    deepest
}

fn theirs(text: &str) -> Result<serde_json::Value, String> {
    serde_json::from_str(text).map_err(|e| e.to_string())
}

fn ours(text: &str) -> Result<Value, String> {
    json::from_str_within(text, 10_000).map_err(|e| e.to_string())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// R3: the same value, the same compact and pretty bytes.
    #[test]
    fn r3_reads_and_writes_as_serde_json_did(text in text(5)) {
        let expected = theirs(&text).map_err(TestCaseError::fail)?;
        let value = ours(&text).map_err(TestCaseError::fail)?;
        prop_assert_eq!(json::to_string(&value), serde_json::to_string(&expected).unwrap());
        prop_assert_eq!(
            json::to_string_pretty(&value),
            serde_json::to_string_pretty(&expected).unwrap()
        );
        prop_assert_eq!(&Value::from(expected.clone()), &value);
        prop_assert_eq!(serde_json::Value::from(value.clone()), expected);
        // Through serde both ways: serde_json hands exact numbers over.
        let via_serde: Value = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(&via_serde, &value);
        prop_assert_eq!(serde_json::to_string(&value).unwrap(), json::to_string(&value));
    }

    /// A damaged text fails exactly when serde_json fails, with its message
    /// and position.
    #[test]
    fn d58_bad_text_fails_as_serde_json_failed(
        text in text(3),
        at in any::<prop::sample::Index>(),
        edit in 0..3u8,
        inserted in prop::sample::select(vec!['"', ',', ':', '[', ']', '{', '}', '\\', 'e', '-', '.', '0', '1', 'n', ' ', '\n', '\u{1}', 'u', 'é']),
    ) {
        let mut chars: Vec<char> = text.chars().collect();
        let i = at.index(chars.len() + 1);
        match edit {
            0 if i < chars.len() => { chars.remove(i); }
            1 if i < chars.len() => chars[i] = inserted,
            _ => chars.insert(i, inserted),
        }
        let damaged: String = chars.into_iter().collect();
        match (theirs(&damaged), ours(&damaged)) {
            (Ok(expected), Ok(value)) => {
                prop_assert_eq!(json::to_string(&value), serde_json::to_string(&expected).unwrap())
            }
            (Err(expected), Err(message)) => prop_assert_eq!(message, expected),
            (expected, got) => prop_assert!(false, "{damaged:?}: serde_json {expected:?}, ours {got:?}"),
        }
    }

    /// R33: a text deeper than the limit is refused, one within it read.
    #[test]
    fn r33_the_depth_limit_is_the_readers_own(text in text(5), limit in 0usize..6) {
        let within = text_depth(&text) <= limit;
        match json::from_str_within(&text, limit) {
            Ok(_) => prop_assert!(within),
            Err(e) => {
                prop_assert!(!within);
                prop_assert!(e.is_too_deep());
                let prefix = format!("nested deeper than {limit} levels at line ");
                prop_assert!(e.to_string().starts_with(&prefix));
            }
        }
    }
}

#[test]
fn r33_a_depth_beyond_any_stack_is_refused_or_read_without_recursion() {
    let deep = format!("{}{}", "[".repeat(1_000_000), "]".repeat(1_000_000));
    let err = json::from_str(&deep).unwrap_err();
    assert_eq!(
        err.to_string(),
        "nested deeper than 128 levels at line 1 column 129"
    );
    let value =
        json::from_str_within(&format!("{}{}", "[".repeat(5000), "]".repeat(5000)), 5000).unwrap();
    assert_eq!(json::to_string(&value).len(), 10_000);
}

#[test]
fn r3_numbers_keep_their_text_in_the_kept_form() {
    for (text, kept) in [
        (
            "123456789012345678901234567890",
            "123456789012345678901234567890",
        ),
        ("-0", "-0"),
        ("-0.0", "-0.0"),
        ("1E5", "1e+5"),
        ("1e-5", "1e-5"),
        ("2.50", "2.50"),
        ("1e400", "1e+400"),
        ("18446744073709551615", "18446744073709551615"),
    ] {
        let number: Number = text.parse().unwrap();
        assert_eq!(number.to_string(), kept, "{text}");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(text)
                .unwrap()
                .to_string(),
            kept
        );
    }
    assert_eq!(
        "18446744073709551615".parse::<Number>().unwrap().as_u64(),
        Some(u64::MAX)
    );
    assert_eq!("1e400".parse::<Number>().unwrap().as_f64(), None);
    assert_eq!(Number::from_f64(1e20).unwrap().to_string(), "1e+20");
    assert_eq!(Number::from_f64(0.1).unwrap().to_string(), "0.1");
    assert_eq!(Number::from_f64(f64::NAN), None);
    assert_ne!(
        "1.0".parse::<Number>().unwrap(),
        "1".parse::<Number>().unwrap()
    );
    assert_eq!(
        "[1]".parse::<Number>().unwrap_err().to_string(),
        "invalid number at line 1 column 1"
    );
    assert!(" 5".parse::<Number>().is_err());
    // serde_json's comparisons: `-0 == 0`; beyond 64 bits is not an f64.
    assert_eq!(json::from_str("-0").unwrap(), 0);
    assert!(
        !json::from_str("123456789012345678901234567890")
            .unwrap()
            .is_f64()
    );
    assert!(!json::from_str("1e400").unwrap().is_f64());
    assert!(json::from_str("1.5").unwrap().is_f64());
    // serde_json's exact-number token carries a number, nothing else.
    let token = serde_json::json!({"$serde_json::private::Number": "[1,2]"});
    assert_eq!(
        serde_json::from_value::<Value>(token)
            .unwrap_err()
            .to_string(),
        "invalid number at line 1 column 1"
    );
}

#[test]
fn r3_a_repeated_key_keeps_its_first_place_and_last_value() {
    let value = json::from_str(r#"{"a":1,"b":2,"a":3}"#).unwrap();
    assert_eq!(json::to_string(&value), r#"{"a":3,"b":2}"#);
}

#[test]
fn d58_a_value_is_32_bytes() {
    assert_eq!(std::mem::size_of::<Value>(), 32);
}

#[derive(Debug, Clone)]
enum Op {
    Insert(u8, i64),
    Remove(u8),
    ShiftRemove(u8),
}

proptest! {
    /// R3: a map is a list of members in first-written order, each key
    /// once, whether it is searched in order or through its index; removing
    /// moves members as serde_json's ordered map did.
    #[test]
    fn r3_a_map_behaves_as_its_list_of_members(
        ops in prop::collection::vec(
            prop_oneof![
                (0u8..24, any::<i64>()).prop_map(|(k, v)| Op::Insert(k, v)),
                (0u8..24).prop_map(Op::Remove),
                (0u8..24).prop_map(Op::ShiftRemove),
            ],
            0..80,
        )
    ) {
        let mut map = json::Map::new();
        let mut model: Vec<(String, i64)> = Vec::new();
        for op in ops {
            match op {
                Op::Insert(k, v) => {
                    let key = format!("k{k}");
                    let old = map.insert(key.clone(), Value::from(v));
                    match model.iter_mut().find(|(mk, _)| *mk == key) {
                        Some(slot) => {
                            prop_assert_eq!(old, Some(Value::from(slot.1)));
                            slot.1 = v;
                        }
                        None => {
                            prop_assert_eq!(old, None);
                            model.push((key, v));
                        }
                    }
                }
                // `remove` is serde_json's: the last member takes the place.
                Op::Remove(k) => {
                    let key = format!("k{k}");
                    let at = model.iter().position(|(mk, _)| *mk == key);
                    let expected = at.map(|i| Value::from(model.swap_remove(i).1));
                    prop_assert_eq!(map.remove(&key), expected);
                }
                Op::ShiftRemove(k) => {
                    let key = format!("k{k}");
                    let at = model.iter().position(|(mk, _)| *mk == key);
                    let expected = at.map(|i| Value::from(model.remove(i).1));
                    prop_assert_eq!(map.shift_remove(&key), expected);
                }
            }
            let members: Vec<(String, Value)> =
                map.iter().map(|(k, v)| (k.to_owned(), v.clone())).collect();
            let expected: Vec<(String, Value)> =
                model.iter().map(|(k, v)| (k.clone(), Value::from(*v))).collect();
            prop_assert_eq!(members, expected);
            for k in 0..24u8 {
                let key = format!("k{k}");
                let expected = model.iter().find(|(mk, _)| *mk == key).map(|(_, v)| Value::from(*v));
                prop_assert_eq!(map.get(&key).cloned(), expected);
            }
        }
    }
}
