//! Preparing a batch without changing the context, then landing it: the
//! validation engine behind every append (R13, R25, R34b).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use agent_core::json;
use agent_data::{Context, Error, Message};

fn message(value: agent_core::json::Value) -> Message {
    Message::from_value(value).unwrap().remove(0)
}

fn push(n: i64) -> Message {
    message(
        json!({"type": "state", "data": {"items": n}, "_outputPath": "†state.items", "_outputMethod": "push"}),
    )
}

#[test]
fn r13_prepare_changes_nothing_and_lines_are_what_lands() {
    let mut ctx = Context::from_json(r#"[{"type":"state","data":{"items":[]}}]"#).unwrap();
    let batch = [push(1), push(2)];
    let prepared = ctx.prepare(&batch).unwrap();
    assert_eq!((ctx.len(), prepared.base(), prepared.len()), (1, 1, 2));
    let lines: Vec<String> = prepared.lines().map(str::to_owned).collect();
    let range = ctx.append_prepared(prepared).unwrap();
    assert_eq!(range, 1..3);
    assert_eq!(ctx.message_json(1), Some(lines[0].as_str()));
    assert_eq!(ctx.message_json(2), Some(lines[1].as_str()));
    assert_eq!(
        ctx.read(&"†state.items".parse().unwrap(), None),
        Some(&json!([1, 2]))
    );
}

#[test]
fn r34b_a_prepared_batch_does_not_land_on_a_grown_context() {
    let ctx = Context::from_json(r#"[{"type":"state","data":{"items":[]}}]"#).unwrap();
    let batch = [push(1)];
    let prepared = ctx.prepare(&batch).unwrap();
    let mut other = ctx.clone();
    other.append(&push(9)).unwrap();
    let error = other.append_prepared(prepared).unwrap_err();
    assert!(matches!(
        error,
        Error::Changed {
            validated: 1,
            now: 2
        }
    ));
    assert_eq!(
        error.to_string(),
        "a batch validated against 1 messages cannot land: the context has 2 now"
    );
    assert_eq!(other.len(), 2);
}

#[test]
fn r25_a_batch_is_checked_against_the_schema_its_own_messages_declare() {
    let ctx = Context::from_json(r#"[{"type":"state","data":{"items":[]}}]"#).unwrap();
    let schema = message(
        json!({"type": "state", "data": {}, "schema": {"properties": {"items": {"maxItems": 1}}}}),
    );
    let batch = [schema, push(1), push(2)];
    let error = ctx.prepare(&batch).unwrap_err();
    assert!(matches!(error, Error::Schema { index: 3, .. }), "{error}");
    assert!(
        error
            .to_string()
            .starts_with("message 3 (¶state) refused: schema violated: at /items"),
        "{error}"
    );
}

fn set(path: &str, value: agent_core::json::Value) -> Message {
    let data = path
        .parse::<agent_core::Reference>()
        .unwrap()
        .path
        .nest(value);
    message(json!({"type": "state", "data": data, "_outputPath": path}))
}

#[test]
fn r25_a_batch_may_break_a_schema_between_two_of_its_writes() {
    // D39: a batch lands whole, so no reader sees the view between its
    // writes; only the view its last write leaves is judged.
    let mut ctx = Context::from_json(
        r#"[{"type":"state","data":{"n":1},"schema":{"properties":{"n":{"type":"integer"}}}}]"#,
    )
    .unwrap();
    let batch = [set("†state.n", json!("two")), set("†state.n", json!(2))];
    assert!(
        ctx.clone().append(&batch[0]).is_err(),
        "alone, the first breaks the schema"
    );
    assert_eq!(ctx.append_all(&batch).unwrap(), 1..3);
    assert_eq!(
        ctx.read(&"†state.n".parse().unwrap(), None),
        Some(&json!(2))
    );
}

#[test]
fn r25_a_batch_whose_last_write_leaves_a_broken_view_is_refused_naming_that_write() {
    let ctx = Context::from_json(
        r#"[{"type":"state","data":{"items":[]},"schema":{"properties":{"items":{"maxItems":1}}}}]"#,
    )
    .unwrap();
    // The view breaks at push(2) (index 2) and stays broken; the error
    // names the batch's last write to the layer (index 3), after which the
    // view is judged.
    let batch = [push(1), push(2), set("†state.note", json!("n"))];
    let error = ctx.prepare(&batch).unwrap_err();
    assert!(matches!(error, Error::Schema { index: 3, .. }), "{error}");
    assert_eq!(
        error.to_string(),
        "message 3 (¶state) refused: schema violated: at /items: [1,2] has more than 1 item (rule `maxItems` at /properties/items/maxItems)"
    );
}

#[test]
fn r13_a_batch_whose_global_writes_break_an_instance_layer_is_refused() {
    let ctx = Context::from_json(
        r#"[{"type":"state","data":{"tags":[]}},
            {"type":"state","data":{"tags":"a"},"_outputPath":"†state.tags","_outputMethod":"push","_instance":"x"}]"#,
    )
    .unwrap();
    // D4, judged on the global view the batch's last global write leaves
    // (D39: batch judged together): that write is named, with the instance layer it breaks.
    let batch = [
        set("†state.tags", json!("s")),
        set("†state.other", json!(1)),
    ];
    let error = ctx.prepare(&batch).unwrap_err();
    assert!(
        matches!(error, Error::TypeError { index: 3, .. }),
        "{error}"
    );
    assert_eq!(
        error.to_string(),
        "message 3 (¶state@x) refused: type error at .tags: cannot push onto a string"
    );
    // Set back before the batch ends, the list breaks nothing.
    let repaired = [
        set("†state.tags", json!("s")),
        set("†state.tags", json!([])),
    ];
    assert_eq!(ctx.clone().append_all(&repaired).unwrap(), 2..4);
}
