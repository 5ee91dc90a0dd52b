//! What more than one test file of agent-core reads.

#![allow(dead_code)] // each test file uses part of it

use proptest::prelude::*;

/// JSON text in many spellings: compact or not, escapes the writer uses
/// and ones it does not, exponents in and out of the kept form, repeated
/// keys.
pub fn text() -> impl Strategy<Value = String> {
    let number = prop::sample::select(vec![
        "0",
        "-0",
        "7",
        "1.10",
        "12345678901234567890123",
        "1e+5",
        "1e-5",
        "1e5",
        "1E+5",
        "2.5E-3",
    ]);
    let piece = prop::sample::select(vec![
        "a",
        "é",
        "\\n",
        "\\t",
        "\\b",
        "\\f",
        "\\r",
        "\\\"",
        "\\\\",
        "\\/",
        "\\u000a",
        "\\u001f",
        "\\u001F",
        "\\u0000",
        "\\u0041",
        "\\u007f",
        "\\ud83d\\ude00",
    ]);
    let string =
        prop::collection::vec(piece, 0..4).prop_map(|pieces| format!("\"{}\"", pieces.concat()));
    let leaf = prop_oneof![
        Just("null".to_owned()),
        Just("true".to_owned()),
        number.prop_map(str::to_owned),
        string,
    ];
    let blank = prop::sample::select(vec!["", "", "", " ", "\n", "\t", "\r"]);
    leaf.prop_recursive(3, 24, 4, move |inner| {
        let blank = blank.clone();
        prop_oneof![
            (
                prop::collection::vec((inner.clone(), blank.clone()), 0..4),
                blank.clone()
            )
                .prop_map(|(items, end)| {
                    let items: Vec<String> = items
                        .into_iter()
                        .map(|(item, b)| format!("{b}{item}"))
                        .collect();
                    format!("[{}{end}]", items.join(","))
                }),
            prop::collection::vec(
                (
                    prop::sample::select(vec!["a", "b", "c", "\\u0062"]),
                    blank,
                    inner
                ),
                0..4
            )
            .prop_map(|members| {
                let members: Vec<String> = members
                    .into_iter()
                    .map(|(key, b, value)| format!("\"{key}\":{b}{value}"))
                    .collect();
                format!("{{{}}}", members.join(","))
            }),
        ]
    })
}
