//! Decision D59: a context built only through the public constructors
//! always loads back as itself — same messages, same views — whatever
//! those constructors were given.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use crate::support::{method, path, value};
use agent_core::{json, json::Value};
use agent_data::{
    Context, DataMessage, Format, Instance, Kind, Message, NativeMessage, OpaqueMessage,
    TextMessage,
};
use proptest::prelude::*;

/// One attempt at building a message through a public constructor.
#[derive(Debug, Clone)]
enum Build {
    Text(String, String),
    Data(&'static str, Value),
    Builder {
        kind: &'static str,
        instance: Option<&'static str>,
        at: Option<agent_core::Path>,
        method: Option<agent_core::Method>,
        value: Value,
        schema: Option<Value>,
    },
    Opaque(Value),
    Native(Value),
    FromValue(Value),
}

/// Objects near every boundary between the kinds of message (R1).
fn object() -> impl Strategy<Value = Value> {
    let type_field = prop::sample::select(vec![
        None,
        Some(json!("plan")),
        Some(json!("tool")),
        Some(json!("data")),
        Some(json!("text")),
        Some(json!("input")),
        Some(json!("state")),
        Some(json!(5)),
    ]);
    let extra = prop::sample::select(vec![
        json!({}),
        json!({"data": {"a": 1}}),
        json!({"text": "hi"}),
        json!({"role": "assistant", "content": "hi"}),
        json!({"role": "assistant", "tool_calls": []}),
        json!({"role": "tool", "tool_call_id": "c1", "content": "42"}),
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]}),
        json!({"role": "user", "content": [{"type": "text", "text": "a"}, "b"]}),
        json!({"tool_calls": [], "content": "x"}),
        json!({"kind": "state", "a": 1}),
    ]);
    (type_field, extra).prop_map(|(t, mut extra)| {
        if let Some(t) = t {
            extra["type"] = t;
        }
        extra
    })
}

fn build() -> impl Strategy<Value = Build> {
    let kind = prop::sample::select(vec!["state", "input", "data"]);
    let instance = prop::sample::select(vec![None, Some("x"), Some("①")]);
    let schema = prop::sample::select(vec![
        None,
        Some(json!({"type": "object"})),
        Some(json!(true)),
        Some(json!(3)),
    ]);
    prop_oneof![
        ("[a-z]{0,6}", ".{0,6}").prop_map(|(r, t)| Build::Text(r, t)),
        (kind.clone(), value()).prop_map(|(k, v)| Build::Data(k, v)),
        (
            kind,
            instance,
            proptest::option::of(path()),
            proptest::option::of(method()),
            value(),
            schema
        )
            .prop_map(
                |(kind, instance, at, method, value, schema)| Build::Builder {
                    kind,
                    instance,
                    at,
                    method,
                    value,
                    schema,
                }
            ),
        object().prop_map(Build::Opaque),
        object().prop_map(Build::Native),
        object().prop_map(Build::FromValue),
    ]
}

/// The messages `how` builds; nothing when the constructor refuses.
fn messages(how: Build) -> Vec<Message> {
    match how {
        Build::Text(role, text) => vec![TextMessage::new(&role, &text).into()],
        Build::Data(kind, v) => vec![DataMessage::new(Kind::new(kind).unwrap(), v).into()],
        Build::Builder {
            kind,
            instance,
            at,
            method,
            value,
            schema,
        } => {
            let mut b = DataMessage::builder(Kind::new(kind).unwrap()).value(value);
            if let Some(x) = instance {
                b = b.instance(Instance::new(x).unwrap());
            }
            if let Some(at) = at {
                b = b.at(at);
            }
            if let Some(m) = method {
                b = b.method(m);
            }
            if let Some(s) = schema {
                b = b.schema(s);
            }
            b.build().map(Message::from).into_iter().collect()
        }
        Build::Opaque(v) => OpaqueMessage::new(v)
            .map(Message::from)
            .into_iter()
            .collect(),
        Build::Native(v) => NativeMessage::new(v)
            .map(Message::from)
            .into_iter()
            .collect(),
        Build::FromValue(v) => Message::from_value(v).unwrap_or_default(),
    }
}

/// Every layer's identity and own view, and every message.
fn everything(ctx: &Context) -> (Vec<(String, Option<Value>)>, Vec<Message>) {
    let layers = ctx
        .identities()
        .map(|id| (id.to_string(), ctx.layer_view(id).cloned()))
        .collect();
    (layers, ctx.messages().collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn d59_a_context_built_through_the_public_api_reloads_as_itself(
        builds in prop::collection::vec(build(), 0..16)
    ) {
        let mut ctx = Context::new();
        for how in builds {
            for message in messages(how) {
                // A refused append changes nothing; what lands must reload.
                let _ = ctx.append(&message);
            }
        }
        let jsonl = Context::load(ctx.to_jsonl().as_bytes(), Format::Jsonl)
            .expect("the JSONL of a built context loads");
        prop_assert_eq!(everything(&jsonl.context), everything(&ctx));
        let json = Context::load(ctx.to_json().to_string().as_bytes(), Format::Json)
            .expect("the JSON of a built context loads");
        prop_assert_eq!(everything(&json.context), everything(&ctx));
    }
}

#[test]
fn d59_an_opaque_message_cannot_be_data_or_typeless() {
    let fault = |v: Value| OpaqueMessage::new(v).unwrap_err().to_string();
    assert_eq!(
        fault(json!({"type": "data", "data": {"a": 1}})),
        "type \"data\" is not an opaque message's: it loads as a text or data message"
    );
    assert_eq!(
        fault(json!({})),
        "not a message: no `type`, no `data`, and no `role` with `content`"
    );
    assert_eq!(fault(json!({"type": 5})), "`type` must be a string");
    assert_eq!(
        fault(json!([1])),
        "a message must be a JSON object, found an array"
    );
    assert_eq!(
        OpaqueMessage::new(json!({"type": "plan"}))
            .unwrap()
            .type_name(),
        "plan"
    );
}

#[test]
fn d59_a_native_message_must_load_back_as_native() {
    let fault = |v: Value| NativeMessage::new(v).unwrap_err().to_string();
    let not_native = "not a native message: it needs a `role`, no `type` or `data`, and tool calls or tool results";
    assert_eq!(fault(json!({"role": "user", "content": "hi"})), not_native);
    assert_eq!(
        fault(json!({"role": "tool", "tool_call_id": "c", "data": 1})),
        not_native
    );
    assert_eq!(fault(json!({"tool_calls": []})), "`role` must be a string");
    let native = NativeMessage::new(json!({"role": "assistant", "tool_calls": []})).unwrap();
    assert_eq!(native.role(), "assistant");
}

#[test]
fn d59_the_builder_writes_at_a_path_of_an_instance() {
    let msg = DataMessage::builder(Kind::new("state").unwrap())
        .instance(Instance::new("x").unwrap())
        .at(".a[0]".parse().unwrap())
        .value(json!(1))
        .schema(json!({"type": "object"}))
        .description("the state")
        .build()
        .unwrap();
    assert_eq!(
        Value::Object(msg.fields().clone()),
        json!({"type": "data", "kind": "state", "data": {"a": {"0": 1}},
               "schema": {"type": "object"}, "description": "the state",
               "_instance": "x", "_outputPath": "†state.a[0]"})
    );
    assert_eq!(msg.method(), agent_core::Method::Set);
    let erase = DataMessage::builder(Kind::new("state").unwrap())
        .at(".a".parse().unwrap())
        .method(agent_core::Method::Erase)
        .value(json!(2))
        .build()
        .unwrap_err();
    assert_eq!(
        erase.to_string(),
        "`_outputMethod` erase: `data` must hold null at the destination path .a, not a number"
    );
}
