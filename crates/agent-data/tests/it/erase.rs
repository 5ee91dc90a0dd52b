//! Erase (R10b): the path reads absent, later writes start from nothing,
//! an instance's erase does not fall through to the global value, and an
//! erase message holds null at its path (R9).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use agent_core::{Instance, Kind, Reference};
use agent_core::{json, json::Value};
use agent_data::{Context, DataMessage, Message};

fn kind(k: &str) -> Kind {
    Kind::new(k).unwrap()
}

fn inst(x: &str) -> Instance {
    Instance::new(x).unwrap()
}

fn view(c: &Context, k: &str, x: Option<&str>) -> Option<Value> {
    c.view(&kind(k), x.map(inst).as_ref()).cloned()
}

fn read(c: &Context, r: &str, x: Option<&str>) -> Option<Value> {
    c.read(&Reference::parse(r).unwrap(), x.map(inst).as_ref())
        .cloned()
}

fn data(v: Value) -> Message {
    DataMessage::from_value(v).unwrap().into()
}

fn erase(path: &str, x: Option<&str>) -> Message {
    let reference = Reference::parse(path).unwrap();
    let mut m = json!({
        "type": "data", "kind": reference.kind.as_str(),
        "data": reference.path.nest(Value::Null),
        "_outputPath": path, "_outputMethod": "erase",
    });
    if let Some(x) = x {
        m["_instance"] = json!(x);
    }
    data(m)
}

#[test]
fn r10b_erase_makes_the_path_read_absent_and_a_later_merge_start_from_nothing() {
    let mut c = Context::new();
    c.append(&data(
        json!({"type": "state", "data": {"step1": {"a": 1, "b": 2}, "other": 3}}),
    ))
    .unwrap();
    c.append(&erase("†state.step1", None)).unwrap();
    assert_eq!(read(&c, "†state.step1", None), None);
    assert_eq!(view(&c, "state", None), Some(json!({"other": 3})));
    c.append(&data(json!({"type": "state", "data": {"step1": {"c": 3}}, "_outputPath": "†state.step1", "_outputMethod": "merge"})))
        .unwrap();
    assert_eq!(read(&c, "†state.step1", None), Some(json!({"c": 3})));
    // A push after an erase starts a new list.
    c.append(&data(json!({"type": "state", "data": {"log": 1}, "_outputPath": "†state.log", "_outputMethod": "push"})))
        .unwrap();
    c.append(&erase("†state.log", None)).unwrap();
    c.append(&data(json!({"type": "state", "data": {"log": 2}, "_outputPath": "†state.log", "_outputMethod": "push"})))
        .unwrap();
    assert_eq!(read(&c, "†state.log", None), Some(json!([2])));
    assert!(c.diagnostics().is_empty());
}

#[test]
fn r10b_erase_of_the_whole_view_leaves_the_layer_absent() {
    let c = Context::from_json(
        &json!([
            {"type": "state", "data": {"a": 1}},
            {"type": "data", "kind": "state", "data": null, "_outputMethod": "erase"},
        ])
        .to_string(),
    )
    .unwrap();
    assert_eq!(view(&c, "state", None), None);
    assert!(
        c.has_messages(&kind("state"), None),
        "the layer still has its messages"
    );
    let mut c = c;
    c.append(&data(json!({"type": "state", "data": {"b": 2}})))
        .unwrap();
    assert_eq!(view(&c, "state", None), Some(json!({"b": 2})));
}

#[test]
fn r10b_erase_at_an_array_index_leaves_null_and_the_other_elements_in_place() {
    let mut c = Context::new();
    c.append(&data(
        json!({"type": "state", "data": {"results": ["r0", "r1", "r2"]}}),
    ))
    .unwrap();
    c.append(&erase("†state.results[1]", None)).unwrap();
    assert_eq!(
        read(&c, "†state.results", None),
        Some(json!(["r0", null, "r2"]))
    );
    assert_eq!(read(&c, "†state.results[2]", None), Some(json!("r2")));
    // Written again at its index, as a re-run step would.
    c.append(&data(json!({"type": "state", "data": {"results": {"1": "again"}}, "_outputPath": "†state.results[1]"})))
        .unwrap();
    assert_eq!(
        read(&c, "†state.results", None),
        Some(json!(["r0", "again", "r2"]))
    );
    c.append(&erase("†state.results[-1]", None)).unwrap();
    assert_eq!(
        read(&c, "†state.results", None),
        Some(json!(["r0", "again", null]))
    );
}

#[test]
fn r10b_erase_of_a_path_that_reads_absent_is_accepted_and_changes_nothing() {
    let mut c = Context::new();
    c.append(&data(
        json!({"type": "state", "data": {"s": "text", "l": [1]}}),
    ))
    .unwrap();
    let before = view(&c, "state", None);
    for path in [
        "†state.missing",
        "†state.s.inside",
        "†state.l[5]",
        "†state.l.x",
        "†other.a",
    ] {
        c.append(&erase(path, None)).unwrap();
    }
    assert_eq!(view(&c, "state", None), before);
    assert_eq!(view(&c, "other", None), None);
    assert!(c.diagnostics().is_empty());
}

#[test]
fn r10b_erase_in_an_instance_reads_absent_there_and_not_the_global_value() {
    let mut c = Context::new();
    c.append(&data(
        json!({"type": "state", "data": {"step": "global", "keep": 1}}),
    ))
    .unwrap();
    c.append(&data(json!({"type": "state", "data": {"step": "mine"}, "_outputPath": "†state.step", "_instance": "x"})))
        .unwrap();
    c.append(&erase("†state.step", Some("x"))).unwrap();
    c.append(&erase("†state", Some("y"))).unwrap();
    assert_eq!(read(&c, "†state.step", Some("x")), None);
    assert_eq!(view(&c, "state", Some("x")), Some(json!({"keep": 1})));
    assert_eq!(view(&c, "state", Some("y")), None);
    // Other instances and the global layer still read the global value.
    assert_eq!(read(&c, "†state.step", Some("z")), Some(json!("global")));
    assert_eq!(read(&c, "†state.step", None), Some(json!("global")));
    // A later global write does not show through the instance's erase.
    c.append(&data(
        json!({"type": "state", "data": {"step": "new"}, "_outputPath": "†state.step"}),
    ))
    .unwrap();
    assert_eq!(read(&c, "†state.step", Some("x")), None);
    assert_eq!(view(&c, "state", Some("y")), None);
}

#[test]
fn r9_r10b_an_erase_message_holds_null_at_its_path() {
    let refused = |v: Value| {
        Context::from_json(&json!([v]).to_string())
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        refused(
            json!({"type": "state", "data": {"a": 1}, "_outputPath": "†state.a", "_outputMethod": "erase"})
        ),
        "message 0: `_outputMethod` erase: `data` must hold null at the destination path .a, not a number"
    );
    assert_eq!(
        refused(json!({"type": "data", "kind": "state", "data": {}, "_outputMethod": "erase"})),
        "message 0: `_outputMethod` erase: `data` must hold null at the destination path (root), not an object"
    );
    // The path must still be in `data`, as for every write (R9).
    assert_eq!(
        refused(
            json!({"type": "state", "data": {}, "_outputPath": "†state.a", "_outputMethod": "erase"})
        ),
        "message 0: `data` holds no value at the destination path .a"
    );
    let m = DataMessage::from_value(json!({"type": "state", "data": {"a": {"0": null}}, "_outputPath": "†state.a[0]", "_outputMethod": "erase"})).unwrap();
    assert_eq!(m.method().as_str(), "erase");
    assert_eq!(m.value(), &Value::Null);
}

#[test]
fn r10b_r28_an_instance_erase_shows_as_null_in_its_own_view_and_reads_absent() {
    let mut c = Context::new();
    c.append(&data(json!({"type": "state", "data": {"step": "global"}})))
        .unwrap();
    c.append(&erase("†state.step", Some("x"))).unwrap();
    let own = agent_data::Identity {
        kind: kind("state"),
        instance: Some(inst("x")),
    };
    assert_eq!(c.layer_view(&own), Some(&json!({"step": null})));
    assert_eq!(view(&c, "state", Some("x")), Some(json!({})));
    // A global erase is absent in the global layer's own view too.
    c.append(&erase("†state.step", None)).unwrap();
    let global = agent_data::Identity {
        kind: kind("state"),
        instance: None,
    };
    assert_eq!(c.layer_view(&global), Some(&json!({})));
}

#[test]
fn r10b_r25_a_schema_that_forbids_null_items_refuses_erasing_an_element() {
    let mut c = Context::new();
    c.append(&data(json!({"type": "state", "data": {"l": ["a", "b"]},
        "schema": {"properties": {"l": {"items": {"type": "string"}}}}})))
        .unwrap();
    let err = c.append(&erase("†state.l[0]", None)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "message 1 (¶state) refused: schema violated: at /l/0: null is not of type \"string\" (rule `type` at /properties/l/items/type)"
    );
    assert_eq!(view(&c, "state", None), Some(json!({"l": ["a", "b"]})));
    // Erasing the whole list is allowed: nothing is left to break the schema.
    c.append(&erase("†state.l", None)).unwrap();
    assert_eq!(view(&c, "state", None), Some(json!({})));
}
