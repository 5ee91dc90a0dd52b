//! Identity and layers (R4, R5), writes and the fold (R9–R12, R14), appends
//! (R13) and schemas (R24–R27).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use agent_core::{Instance, Kind, Reference};
use agent_core::{json, json::Value};
use agent_data::{CheckMode, Context, DataMessage, Error, Identity, Message, Problem};

fn ctx(messages: Value) -> Context {
    Context::from_json(&messages.to_string()).unwrap()
}

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

fn msg(v: Value) -> DataMessage {
    DataMessage::from_value(v).unwrap()
}

fn data(v: Value) -> Message {
    msg(v).into()
}

#[test]
fn r4_identity_is_kind_and_instance() {
    let c = ctx(json!([
        {"type": "state", "data": {"a": 1}},
        {"type": "input", "data": {"a": 2}},
        {"type": "state", "data": {"b": 1}, "_instance": "x"},
        {"type": "state", "data": {"c": 1}},
    ]));
    assert_eq!(view(&c, "state", None), Some(json!({"a": 1, "c": 1})));
    assert_eq!(view(&c, "input", None), Some(json!({"a": 2})));
    let ids: Vec<String> = c.identities().map(ToString::to_string).collect();
    assert_eq!(ids, ["state", "input", "state@x"]);
    assert_eq!(c.layer_messages(&Identity::global(kind("state"))), [0, 3]);
}

#[test]
fn r5_instance_read_layers_over_global() {
    let c = ctx(json!([
        {"type": "state", "data": {"user": {"name": "G", "role": "r"}, "shared": 1}},
        {"type": "state", "data": {"user": {"name": "X"}}, "_instance": "x"},
        {"type": "state", "data": {"user": {"name": "Y"}}, "_instance": "y"},
    ]));
    assert_eq!(
        view(&c, "state", Some("x")),
        Some(json!({"user": {"name": "X", "role": "r"}, "shared": 1}))
    );
    assert_eq!(
        view(&c, "state", Some("y")),
        Some(json!({"user": {"name": "Y", "role": "r"}, "shared": 1}))
    );
    assert_eq!(
        view(&c, "state", None),
        Some(json!({"user": {"name": "G", "role": "r"}, "shared": 1}))
    );
    // A missing path in X falls back to global; X never sees Y.
    assert_eq!(read(&c, "†state.user.role", Some("x")), Some(json!("r")));
    assert_eq!(read(&c, "†state.user.name", Some("x")), Some(json!("X")));
    // An instance with no layer reads the global view.
    assert_eq!(view(&c, "state", Some("z")), view(&c, "state", None));
    assert!(!c.has_messages(&kind("input"), Some(&inst("x"))));
    assert!(c.has_messages(&kind("state"), Some(&inst("z"))));
}

#[test]
fn r5_instance_ids_in_order_of_first_appearance() {
    let c = ctx(json!([
        {"data": 1, "_instance": "②"}, {"data": 1}, {"data": 1, "_instance": "①"},
        {"type": "input", "data": 1, "_instance": "②"}, {"data": 1, "_instance": "③"},
    ]));
    let ids: Vec<&str> = c.instances().map(Instance::as_str).collect();
    assert_eq!(ids, ["②", "①", "③"]);
}

#[test]
fn r9_plain_messages_merge_output_messages_set() {
    let c = ctx(json!([
        {"type": "state", "data": {"u": {"a": 1, "b": 1}}},
        {"type": "state", "data": {"u": {"c": 1}}},
        {"type": "state", "data": {"u": {"a": 2}}, "_outputPath": "†state.u"},
    ]));
    let m = c.message(2).unwrap();
    let m = m.as_data().unwrap();
    assert_eq!(
        (m.destination().to_string(), m.method().as_str()),
        (".u".into(), "set")
    );
    assert_eq!(view(&c, "state", None), Some(json!({"u": {"a": 2}})));
}

#[test]
fn r9_value_is_found_at_destination_inside_data() {
    let c = ctx(json!([
        {"type": "state", "data": {"arr": {"2": "v"}}, "_outputPath": "†state.arr[2]"},
        {"type": "state", "data": {"x": 1}, "_outputPath": "†state", "_outputMethod": "merge"},
    ]));
    assert_eq!(
        c.message(0).unwrap().as_data().unwrap().value(),
        &json!("v")
    );
    assert_eq!(
        view(&c, "state", None),
        Some(json!({"arr": {"2": "v"}, "x": 1}))
    );
}

#[test]
fn r9_call_output_path_used_only_when_one_reference_of_own_kind() {
    let c = ctx(json!([
        {"type": "data", "data": {"u": 1}, "_call": {"_outputPath": "†data.u"}},
        {"type": "data", "data": {"v": 1}, "_call": {"_outputPath": "†data.v || †data.w"}},
        {"type": "data", "data": {"w": 1}, "_call": {"_outputPath": "†other.w"}},
    ]));
    let dest = |i: usize| {
        c.message(i)
            .unwrap()
            .as_data()
            .unwrap()
            .destination()
            .to_string()
    };
    assert_eq!(
        (dest(0), dest(1), dest(2)),
        (".u".into(), "".into(), "".into())
    );
    assert_eq!(
        c.message(1).unwrap().as_data().unwrap().method().as_str(),
        "merge"
    );
}

#[test]
fn r12_fold_skips_type_errors_and_reports_them() {
    let c = ctx(json!([
        {"type": "state", "data": {"n": 1}},
        {"type": "state", "data": {"n": 2}, "_outputPath": "†state.n", "_outputMethod": "push"},
        {"type": "state", "data": {"m": 3}},
    ]));
    assert_eq!(view(&c, "state", None), Some(json!({"n": 1, "m": 3})));
    let diags = c.diagnostics();
    assert_eq!(diags.len(), 1);
    assert_eq!(
        diags[0].to_string(),
        "message 1 (¶state): type error at .n: cannot push onto a number; write skipped"
    );
}

#[test]
fn r12_instance_fold_diagnostics_use_the_global_view() {
    let c = ctx(json!([
        {"type": "state", "data": {"tags": "not-a-list"}},
        {"type": "state", "data": {"tags": "t"}, "_outputPath": "†state.tags", "_outputMethod": "push", "_instance": "x"},
    ]));
    let diags = c.diagnostics();
    assert_eq!(diags.len(), 1);
    assert_eq!(diags[0].index, 1);
    assert_eq!(diags[0].identity.to_string(), "state@x");
}

#[test]
fn r13_append_refuses_type_errors_and_changes_nothing() {
    let mut c = ctx(json!([{"type": "state", "data": {"n": 1}}]));
    let before = c.to_json();
    let err = c
        .append(&data(json!({"type": "state", "data": {"n": 2}, "_outputPath": "†state.n", "_outputMethod": "concat"})))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "message 1 (¶state) refused: type error at .n: cannot concat a number onto a number"
    );
    assert_eq!(c.to_json(), before);
    assert_eq!(c.len(), 1);
}

#[test]
fn r13_append_all_is_atomic() {
    let mut c = ctx(json!([{"type": "state", "data": {"list": []}}]));
    let push = |v: Value| {
        msg(
            json!({"type": "state", "data": {"list": v}, "_outputPath": "†state.list", "_outputMethod": "push", "_instance": "new"}),
        )
    };
    let bad = msg(
        json!({"type": "state", "data": {"list": 1}, "_outputPath": "†state.list", "_outputMethod": "concat"}),
    );
    let before = c.to_json();
    let err = c
        .append_all(&[push(json!(1)).into(), push(json!(2)).into(), bad.into()])
        .unwrap_err();
    assert!(matches!(err, Error::TypeError { index: 3, .. }), "{err:?}");
    assert_eq!(c.to_json(), before);
    assert_eq!(
        c.instances().count(),
        0,
        "the new instance id was rolled back"
    );
    assert_eq!(c.identities().count(), 1);
    // The same batch without the bad message lands in order, each validated
    // against the view the previous one left.
    let range = c
        .append_all(&[push(json!(1)).into(), push(json!(2)).into()])
        .unwrap();
    assert_eq!(range, 1..3);
    assert_eq!(read(&c, "†state.list", Some("new")), Some(json!([1, 2])));
}

#[test]
fn r13_global_append_that_breaks_an_instance_layer_is_refused() {
    let mut c = Context::new();
    c.append(&data(json!({"type": "state", "data": {"tags": ["a"]}, "_outputPath": "†state.tags", "_instance": "x"}))).unwrap();
    c.append(&data(json!({"type": "state", "data": {"tags": "b"}, "_outputPath": "†state.tags", "_outputMethod": "push", "_instance": "x"}))).unwrap();
    // x's first write is a `set`, which shadows whatever the global view
    // holds, so changing the global `tags` to a string breaks nothing.
    c.append(&data(
        json!({"type": "state", "data": {"tags": "s"}, "_outputPath": "†state.tags"}),
    ))
    .unwrap();
    // A global `push` target becoming a string breaks an instance that pushes
    // without setting first.
    let mut d = Context::new();
    d.append(&data(json!({"type": "state", "data": {"log": 1}, "_outputPath": "†state.log", "_outputMethod": "push", "_instance": "y"}))).unwrap();
    let err = d
        .append(&data(
            json!({"type": "state", "data": {"log": "text"}, "_outputPath": "†state.log"}),
        ))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "message 1 (¶state@y) refused: type error at .log: cannot push onto a string"
    );
    assert!(d.diagnostics().is_empty());
    assert!(c.diagnostics().is_empty());
}

#[test]
fn r14_read_is_traversal_of_the_fold() {
    let c = ctx(json!([
        {"type": "data", "data": {"user": {"name": "Alex", "status": "active"}}},
        {"type": "data", "data": {"user": {"tags": ["a"]}}, "_outputPath": "†data.user.tags", "_outputMethod": "concat"},
        {"type": "data", "data": {"user": {"tags": ["b"]}}, "_outputPath": "†data.user.tags", "_outputMethod": "concat"},
    ]));
    let folded = view(&c, "data", None).unwrap();
    for r in [
        "†data.user.tags[-1]",
        "†data.user.name",
        "†data.user.missing",
        "†data",
        "†data.user.tags.0",
    ] {
        let reference = Reference::parse(r).unwrap();
        assert_eq!(
            read(&c, r, None).as_ref(),
            reference.path.get(&folded),
            "{r}"
        );
    }
    assert_eq!(read(&c, "†data.user.tags", None), Some(json!(["a", "b"])));
}

fn user_schema() -> Value {
    json!({"type": "object", "required": ["name", "age"], "properties": {"name": {"type": "string"}, "age": {"type": "number"}}})
}

#[test]
fn r24_schema_and_description_come_from_newest_message_else_global() {
    let c = ctx(json!([
        {"type": "data", "kind": "user", "data": {}, "schema": {"type": "object"}, "description": "old"},
        {"type": "data", "kind": "user", "data": {}, "schema": user_schema(), "description": "new"},
        {"type": "data", "kind": "user", "data": {"name": "x"}, "_instance": "a"},
        {"type": "data", "kind": "user", "data": {}, "_instance": "b", "schema": true, "description": "b's"},
    ]));
    let user = kind("user");
    assert_eq!(c.schema(&user, None), Some(&user_schema()));
    assert_eq!(c.description(&user, None), Some("new"));
    assert_eq!(c.schema(&user, Some(&inst("a"))), Some(&user_schema()));
    assert_eq!(c.description(&user, Some(&inst("a"))), Some("new"));
    assert_eq!(c.schema(&user, Some(&inst("b"))), Some(&json!(true)));
    assert_eq!(c.description(&user, Some(&inst("b"))), Some("b's"));
}

#[test]
fn r25_append_checked_against_schema_required_tolerated() {
    let mut c = ctx(json!([{"type": "data", "kind": "user", "data": {}, "schema": user_schema()}]));
    // Missing `age` is fine while building up.
    c.append(&data(
        json!({"type": "data", "kind": "user", "data": {"name": "Ada"}}),
    ))
    .unwrap();
    let before = c.to_json();
    let err = c
        .append(&data(
            json!({"type": "data", "kind": "user", "data": {"age": "old"}}),
        ))
        .unwrap_err();
    match &err {
        Error::Schema {
            index: 2,
            violations,
            ..
        } => {
            assert_eq!(violations.len(), 1);
            assert_eq!(violations[0].instance_path, "/age");
            assert_eq!(violations[0].rule, "type");
            assert_eq!(violations[0].value, json!("old"));
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("at /age:"), "{err}");
    assert_eq!(c.to_json(), before);
}

#[test]
fn r25_instance_append_uses_global_schema_over_layered_view() {
    let mut c = ctx(
        json!([{"type": "data", "kind": "user", "data": {"name": "G"}, "schema": user_schema()}]),
    );
    let bad = msg(json!({"type": "data", "kind": "user", "data": {"name": 5}, "_instance": "i"}));
    assert!(matches!(c.append(&bad.into()), Err(Error::Schema { .. })));
    c.append(&data(
        json!({"type": "data", "kind": "user", "data": {"age": 3}, "_instance": "i"}),
    ))
    .unwrap();
}

#[test]
fn r25_append_with_invalid_schema_is_refused() {
    let mut c = Context::new();
    let err = c
        .append(&data(
            json!({"type": "data", "data": 1, "schema": {"minimum": "zero"}}),
        ))
        .unwrap_err();
    assert!(matches!(err, Error::Message { index: 0, .. }), "{err:?}");
    assert!(c.is_empty());
}

#[test]
fn r26_complete_check_enforces_required() {
    let c = ctx(
        json!([{"type": "data", "kind": "user", "data": {"name": "Ada"}, "schema": user_schema()}]),
    );
    assert!(c.check(CheckMode::Normal).is_empty());
    let problems = c.check(CheckMode::Complete);
    assert_eq!(problems.len(), 1);
    match &problems[0] {
        Problem::Schema {
            identity,
            violation,
        } => {
            assert_eq!(identity.to_string(), "user");
            assert_eq!(violation.rule, "required");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn r27_check_reports_fold_diagnostics_and_schema_violations() {
    let c = ctx(json!([
        {"type": "data", "kind": "user", "data": {"name": 1}, "schema": user_schema()},
        {"type": "state", "data": {"n": 1}},
        {"type": "state", "data": {"n": 1}, "_outputPath": "†state.n", "_outputMethod": "push"},
        {"type": "data", "kind": "user", "data": {"age": "x"}, "_instance": "i"},
    ]));
    let mut lines: Vec<String> = c
        .check(CheckMode::Normal)
        .iter()
        .map(ToString::to_string)
        .collect();
    lines[2..].sort(); // violations within one layer come in the validator's order
    assert_eq!(lines.len(), 4, "{lines:#?}");
    assert!(
        lines[0].starts_with("¶user: schema violated at /name:"),
        "{}",
        lines[0]
    );
    assert_eq!(
        lines[1],
        "message 2 (¶state): type error at .n: cannot push onto a number; write skipped"
    );
    assert!(
        lines[2].starts_with("¶user@i: schema violated at /age:"),
        "{}",
        lines[2]
    );
    assert!(
        lines[3].starts_with("¶user@i: schema violated at /name:"),
        "{}",
        lines[3]
    );
}

#[test]
fn r5_layered_view_cache_follows_global_appends_and_rollbacks() {
    let mut c = ctx(json!([
        {"type": "state", "data": {"g": 1}},
        {"type": "state", "data": {"x": 1}, "_instance": "x"},
    ]));
    assert_eq!(view(&c, "state", Some("x")), Some(json!({"g": 1, "x": 1})));
    c.append(&data(json!({"type": "state", "data": {"g": 2}})))
        .unwrap();
    assert_eq!(
        view(&c, "state", Some("x")),
        Some(json!({"g": 2, "x": 1})),
        "a global append is seen"
    );
    c.append(&data(
        json!({"type": "state", "data": {"y": 1}, "_instance": "x"}),
    ))
    .unwrap();
    assert_eq!(
        view(&c, "state", Some("x")),
        Some(json!({"g": 2, "x": 1, "y": 1})),
        "an own append is seen"
    );
    // A batch whose global write lands, then whose instance write fails:
    // validating the second built x's layered view over the first, which
    // the rollback removes again.
    let global = msg(json!({"type": "state", "data": {"g": 3}}));
    let bad = msg(
        json!({"type": "state", "data": {"g": 1}, "_outputPath": "†state.g", "_outputMethod": "push", "_instance": "x"}),
    );
    assert!(c.append_all(&[global.into(), bad.into()]).is_err());
    assert_eq!(
        view(&c, "state", Some("x")),
        Some(json!({"g": 2, "x": 1, "y": 1})),
        "no trace of the rolled-back batch"
    );
}
