//! A user's own serde_json code next to agentctx in one binary: depending
//! on agentctx changes nothing of how it behaves (D58: own JSON value; D66: serde_json defaults), while agentctx
//! itself keeps numbers exactly and members in order (R3).

use std::collections::BTreeMap;

use agentctx::prelude::*;
use serde::Deserialize;

#[derive(Debug, PartialEq, Deserialize)]
#[serde(untagged)]
enum Amount {
    Whole(i64),
    Fraction(f64),
}

#[derive(Debug, Deserialize)]
struct Reading {
    name: String,
    #[serde(flatten)]
    values: BTreeMap<String, f64>,
}

#[test]
fn d66_an_untagged_enum_of_the_users_reads_a_fraction() {
    let amount: Amount = serde_json::from_str("1.5").unwrap();
    assert_eq!(amount, Amount::Fraction(1.5));
}

#[test]
fn d66_a_flattened_float_of_the_users_reads() {
    let reading: Reading = serde_json::from_str(r#"{"name": "t", "celsius": 21.5}"#).unwrap();
    assert_eq!(reading.name, "t");
    assert_eq!(reading.values["celsius"], 21.5);
}

#[test]
fn d66_the_users_serde_json_keeps_its_recursion_limit() {
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    let error = serde_json::from_str::<serde_json::Value>(&deep).unwrap_err();
    assert!(
        error.to_string().starts_with("recursion limit exceeded"),
        "{error}"
    );
}

#[test]
fn d66_the_users_json_macro_sorts_keys_and_numbers_are_floats() {
    let value = serde_json::json!({"b": 1, "a": 1.10});
    assert_eq!(value.to_string(), r#"{"a":1.1,"b":1}"#);
    assert_eq!(serde_json::json!(1.0), serde_json::json!(1.00));
}

#[test]
fn r3_agentctx_beside_them_keeps_number_text_and_member_order() {
    let mut ctx = Context::from_json(
        r#"[{"type": "state", "b": 1.10, "a": 123456789012345678901234567890}]"#,
    )
    .unwrap();
    let view = ctx.get("†state").unwrap();
    assert_eq!(
        view.to_string(),
        r#"{"b":1.10,"a":123456789012345678901234567890}"#
    );
    let written = agentctx::json::from_str(r#"{"type": "state", "c": 2.50}"#).unwrap();
    ctx.append(&Message::from_value(written).unwrap().remove(0))
        .unwrap();
    assert_eq!(ctx.get("†state.c").unwrap().to_string(), "2.50");
    // `json!` keeps the keys as written, as the log does.
    assert_eq!(json!({"z": 1, "a": 2}).to_string(), r#"{"z":1,"a":2}"#);
}

#[test]
fn d66_question_mark_on_io_and_json_errors_gives_agentctx_errors() {
    fn read(path: &std::path::Path) -> agentctx::Result<Value> {
        let text = std::fs::read_to_string(path)?;
        let _typed: serde_json::Value = serde_json::from_str(&text)?;
        Ok(agentctx::json::from_str(&text)?)
    }
    let missing = read(std::path::Path::new("/nonexistent/agentctx")).unwrap_err();
    assert!(matches!(missing, agentctx::Error::Io(_)), "{missing:?}");
    let dir = std::env::temp_dir().join(format!("agentctx-downstream-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.json");
    std::fs::write(&bad, "{").unwrap();
    let error = read(&bad).unwrap_err();
    assert!(matches!(error, agentctx::Error::SerdeJson(_)), "{error:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}
