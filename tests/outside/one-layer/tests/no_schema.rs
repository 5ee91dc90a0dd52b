//! A build without the `schema` feature (D61: features cut): logs that carry schemas
//! load and fold as ever, and whatever would have to be checked against a
//! schema is refused with an error that names the feature — never taken
//! unchecked. This crate builds agent-data without it, as a user picking
//! the fold alone would (`cargo xtask ci` runs it).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use agent_data::Kind;
use agent_data::{json, json::Value};
use agent_data::{CheckMode, Context, DataMessage, Error, Message, MessageFault, Problem, Schema};

fn data(v: Value) -> Message {
    DataMessage::from_value(v).unwrap().into()
}

fn user_schema() -> Value {
    json!({"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}})
}

#[test]
fn d61_without_schema_a_log_with_schemas_loads_and_folds() {
    let c = Context::from_json(
        &json!([
            {"type": "data", "kind": "user", "data": {"name": "Ada"}, "schema": user_schema()},
            {"type": "data", "kind": "user", "data": {"age": 36}},
            {"type": "data", "kind": "note", "data": "free"},
        ])
        .to_string(),
    )
    .unwrap();
    let user = Kind::new("user").unwrap();
    assert_eq!(
        c.view(&user, None),
        Some(&json!({"name": "Ada", "age": 36}))
    );
    assert_eq!(c.schema(&user, None), Some(&user_schema()));
}

#[test]
fn d61_without_schema_an_append_to_a_layer_with_a_schema_is_refused_naming_the_feature() {
    let mut c = Context::from_json(
        &json!([{"type": "data", "kind": "user", "data": {}, "schema": user_schema()}]).to_string(),
    )
    .unwrap();
    let before = c.to_json();
    let err = c
        .append(&data(
            json!({"type": "data", "kind": "user", "data": {"name": "Ada"}}),
        ))
        .unwrap_err();
    assert!(
        matches!(err, Error::SchemaUnchecked { index: 1, .. }),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "message 1 (¶user) refused: its layer has a schema, and agent-data was built without its `schema` feature, which checks it"
    );
    assert_eq!(c.to_json(), before);
}

#[test]
fn d61_without_schema_a_message_declaring_a_schema_is_refused() {
    let mut c = Context::new();
    let err = c
        .append(&data(
            json!({"type": "data", "kind": "user", "data": {}, "schema": user_schema()}),
        ))
        .unwrap_err();
    assert!(
        matches!(err, Error::SchemaUnchecked { index: 0, .. }),
        "{err:?}"
    );
    assert!(c.is_empty());
}

#[test]
fn d61_without_schema_layers_without_a_schema_append_as_ever() {
    let mut c = Context::from_json(
        &json!([{"type": "data", "kind": "user", "data": {}, "schema": user_schema()}]).to_string(),
    )
    .unwrap();
    c.append(&data(
        json!({"type": "data", "kind": "note", "data": {"x": 1}}),
    ))
    .unwrap();
    assert_eq!(c.len(), 2);
}

#[test]
fn d61_without_schema_check_reports_each_schema_layer_unchecked() {
    let c = Context::from_json(
        &json!([
            {"type": "data", "kind": "user", "data": {"name": 1}, "schema": user_schema()},
            {"type": "data", "kind": "note", "data": 1},
        ])
        .to_string(),
    )
    .unwrap();
    let problems = c.check(CheckMode::Complete);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(matches!(&problems[0], Problem::Unchecked { .. }));
    assert_eq!(
        problems[0].to_string(),
        "¶user: schema not checked: agent-data was built without its `schema` feature"
    );
}

#[test]
fn d61_without_schema_compiling_a_schema_is_refused_naming_the_feature() {
    let err = Schema::compile(&json!({"type": "object"})).unwrap_err();
    assert!(matches!(err, MessageFault::SchemaUnsupported));
    assert_eq!(
        err.to_string(),
        "cannot check a JSON Schema: agent-data was built without its `schema` feature"
    );
}
