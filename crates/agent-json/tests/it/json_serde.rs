//! serde in and out of agentctx's value (D66: serde_json defaults): `json!`, `to_value` and
//! `from_value` keep what the log keeps — keys as written, numbers as
//! their text.

use agent_json::{self as json, Value};

#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Report {
    zeta: i64,
    alpha: Value,
    ratio: f32,
}

#[test]
fn d66_json_keeps_keys_in_the_order_written() {
    let v = agent_json::json!({"z": 1, "a": {"y": [true, null], "b": "x"}});
    assert_eq!(v.to_string(), r#"{"z":1,"a":{"y":[true,null],"b":"x"}}"#);
}

#[test]
fn d66_to_value_keeps_field_order_and_writes_an_f32_as_itself() {
    let alpha = json::from_str("1.10").unwrap();
    let v = json::to_value(&Report {
        zeta: 2,
        alpha,
        ratio: 0.1,
    })
    .unwrap();
    assert_eq!(v.to_string(), r#"{"zeta":2,"alpha":1.10,"ratio":0.1}"#);
    assert_eq!(agent_json::json!(0.1f32).to_string(), "0.1");
}

#[test]
fn d66_from_value_keeps_every_numbers_text() {
    for text in ["-0", "1.10", "1e+400", "18446744073709551616", "-0.0", "7"] {
        let value =
            json::from_str(&format!(r#"{{"zeta": 1, "alpha": {text}, "ratio": 2}}"#)).unwrap();
        let report: Report = json::from_value(value).unwrap();
        assert_eq!(report.alpha.to_string(), text);
    }
}

#[test]
fn d66_from_value_says_what_is_missing() {
    let error = json::from_value::<Report>(agent_json::json!({"zeta": 1})).unwrap_err();
    assert_eq!(error.to_string(), "missing field `alpha`");
}
