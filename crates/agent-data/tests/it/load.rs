//! Loading: R1 (wire forms), R2 (fields), R3 (round trip), R33 (depth), R34 (torn line).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use agent_core::Kind;
use agent_core::{json, json::Value};
use agent_data::{Context, Error, Format, Message, MessageFault, Warning};

fn load(text: &str) -> Result<Context, Error> {
    Context::from_json(text)
}

fn jsonl(text: &str) -> Result<agent_data::Loaded, Error> {
    Context::load(text.as_bytes(), Format::Jsonl)
}

fn normalised(input: Value) -> Vec<Value> {
    let ctx = load(&json!([input]).to_string()).unwrap();
    ctx.messages().map(|m| m.to_value()).collect()
}

fn fault(input: Value) -> (usize, MessageFault) {
    match load(&json!([{"type": "text", "text": "ok"}, input]).to_string()) {
        Err(Error::Message { index, fault, .. }) => (index, fault),
        other => panic!("expected a message error, got {other:?}"),
    }
}

#[test]
fn r1_text_message_role_defaults_to_user() {
    let ctx =
        load(r#"[{"type":"text","text":"hi"},{"type":"text","text":"yo","role":"assistant"}]"#)
            .unwrap();
    let roles: Vec<_> = ctx
        .messages()
        .map(|m| match m {
            Message::Text(t) => (t.role().to_owned(), t.text().to_owned()),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        roles,
        [
            ("user".into(), "hi".into()),
            ("assistant".into(), "yo".into())
        ]
    );
}

#[test]
fn r1_data_message_kept_as_given() {
    let msg = json!({"type": "data", "data": {"a": 1}, "x-extra": [1], "description": "d"});
    assert_eq!(normalised(msg.clone()), [msg]);
}

#[test]
fn r1_input_message_with_input_field() {
    assert_eq!(
        normalised(json!({"type": "input", "input": {"q": 1}, "_instance": "①"})),
        [json!({"type": "data", "kind": "input", "data": {"q": 1}, "_instance": "①"})]
    );
}

#[test]
fn r1_input_or_state_with_data_field() {
    assert_eq!(
        normalised(json!({"type": "state", "data": [1], "schema": {"type": "array"}})),
        [json!({"type": "data", "kind": "state", "data": [1], "schema": {"type": "array"}})]
    );
}

#[test]
fn r1_input_or_state_shorthand_fields_become_data() {
    let got = normalised(json!({
        "type": "state", "name": "Ada", "description": "who", "_instance": "x",
        "kind": "ignored", "age": 36, "schema": true
    }));
    assert_eq!(
        got,
        [
            json!({"type": "data", "kind": "state", "data": {"name": "Ada", "age": 36},
                "description": "who", "_instance": "x", "schema": true})
        ]
    );
    let keys: Vec<_> = got[0]["data"]
        .as_object()
        .unwrap()
        .keys()
        .map(str::to_owned)
        .collect();
    assert_eq!(keys, ["name", "age"], "original order");
}

#[test]
fn r1_chat_wrapper_string_content() {
    assert_eq!(
        normalised(json!({"role": "system", "content": "be brief"})),
        [json!({"type": "text", "role": "system", "text": "be brief"})]
    );
}

#[test]
fn r1_chat_wrapper_object_content_takes_role_for_text() {
    assert_eq!(
        normalised(
            json!({"role": "assistant", "content": {"type": "text", "text": "t", "role": "user"}})
        ),
        [json!({"type": "text", "text": "t", "role": "assistant"})]
    );
    assert_eq!(
        normalised(json!({"role": "user", "content": {"type": "data", "data": 1}})),
        [json!({"type": "data", "data": 1})]
    );
}

#[test]
fn r1_chat_wrapper_array_content_in_order() {
    let got = normalised(json!({"role": "user", "content": [
        "first", {"type": "text", "text": "second"}, {"type": "input", "input": {"a": 1}}
    ]}));
    assert_eq!(got.len(), 3);
    assert_eq!(got[0]["text"], "first");
    assert_eq!(
        got[1],
        json!({"type": "text", "text": "second", "role": "user"})
    );
    assert_eq!(got[2]["kind"], "input");
}

#[test]
fn r1_no_type_with_data_is_data_message() {
    assert_eq!(
        normalised(json!({"kind": "user", "data": {"a": 1}})),
        [json!({"type": "data", "kind": "user", "data": {"a": 1}})]
    );
}

#[test]
fn r1_other_types_are_opaque_and_verbatim() {
    let plan = json!({"type": "plan", "steps": [{"_tool": "x"}], "n": 1.5, "_meta": null});
    let ctx = load(&json!([plan]).to_string()).unwrap();
    assert!(matches!(ctx.message(0), Some(Message::Opaque(_))));
    assert_eq!(ctx.to_json(), json!([plan]));
}

#[test]
fn r1_rejections_name_the_message_index() {
    let cases = [
        (json!(5), "a message must be a JSON object, found a number"),
        (json!([]), "a message must be a JSON object, found an array"),
        (json!({"type": 3}), "`type` must be a string"),
        (
            json!({"type": "text"}),
            "a text message needs a string `text`",
        ),
        (
            json!({"type": "text", "text": 1}),
            "a text message needs a string `text`",
        ),
        (
            json!({"type": "data", "kind": "x"}),
            "a data message needs `data`",
        ),
        (
            json!({"hello": 1}),
            "not a message: no `type`, no `data`, and no `role` with `content`",
        ),
        (
            json!({"role": "user", "content": 5}),
            "`content` must be a string, a message object or an array of them",
        ),
        (
            json!({"role": 1, "content": "x"}),
            "`role` must be a string",
        ),
    ];
    for (input, reason) in cases {
        let (index, fault) = fault(input.clone());
        assert_eq!(index, 1, "{input}");
        assert_eq!(fault.to_string(), reason, "{input}");
    }
}

#[test]
fn r1_error_display_names_index_and_jsonl_line() {
    let err = jsonl("{\"type\":\"text\",\"text\":\"a\"}\n\n{\"type\":\"text\"}\n").unwrap_err();
    assert_eq!(
        err.to_string(),
        "message 1 (line 3): a text message needs a string `text`"
    );
}

#[test]
fn r1_loading_is_all_or_nothing() {
    // A bad last message fails the whole load; nothing partial comes back.
    assert!(load(r#"[{"type":"data","data":1},{"type":"data","data":2},7]"#).is_err());
}

#[test]
fn r1_bad_json_reports_line_and_column() {
    match load("[\n {\"type\": }\n]") {
        Err(Error::Json { line, column, .. }) => assert_eq!((line, column), (2, 11)),
        other => panic!("{other:?}"),
    }
    match jsonl("{\"type\":\"text\",\"text\":\"a\"}\n{oops}\n{\"type\":\"text\",\"text\":\"b\"}\n")
    {
        Err(Error::Json { line, .. }) => assert_eq!(line, 2),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        load(r#"{"type":"text"}"#),
        Err(Error::NotAnArray { found: "an object" })
    ));
}

#[test]
fn r1_a_json_array_is_read_element_by_element_with_the_errors_of_a_whole_parse() {
    // Elements are handed on as they are parsed (a large array is never
    // held whole as a parsed value), but a JSON
    // error after a bad message still wins, as when the array was parsed
    // whole first.
    let bad_then_broken =
        r#"[{"type":"text","text":"a"}, {"type":"data","kind":"9x","data":1}, {"type": }]"#;
    assert!(matches!(load(bad_then_broken), Err(Error::Json { .. })));
    let bad_then_trailing = r#"[{"type":"data","kind":"9x","data":1}] ]"#;
    assert!(matches!(load(bad_then_trailing), Err(Error::Json { .. })));
    match load(r#"[{"type":"text","text":"a"}, {"type":"data","kind":"9x","data":1}, 7]"#) {
        Err(Error::Message { index, line, .. }) => assert_eq!((index, line), (1, None)),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        load(" \n \"text\""),
        Err(Error::NotAnArray { found: "a string" })
    ));
    // A form feed is not JSON whitespace: a JSON error, as before.
    assert!(matches!(load("\u{c}[]"), Err(Error::Json { .. })));
    let loaded = Context::load(b" [ ]\n", Format::Json).unwrap();
    assert_eq!((loaded.items, loaded.context.len()), (0, 0));
    let mut ctx = load(r#"[{"type":"text","text":"a"}]"#).unwrap();
    let count = ctx
        .extend_json(
            br#"[{"type":"text","text":"a"},{"type":"data","data":2}]"#,
            1,
        )
        .unwrap();
    assert_eq!((count, ctx.len()), (2, 2));
    // All or nothing: a bad element after a good one adds neither.
    assert!(
        ctx.extend_json(
            br#"[{},{},{"type":"data","data":3},{"type":"data","kind":"9x","data":1}]"#,
            2
        )
        .is_err()
    );
    assert_eq!(ctx.len(), 2);
}

#[test]
fn r1_jsonl_blank_lines_ignored() {
    let loaded = jsonl("\n{\"data\":1}\n  \n\r\n{\"data\":2}\r\n").unwrap();
    assert_eq!(loaded.context.len(), 2);
    assert!(loaded.warnings.is_empty());
}

#[test]
fn r2_invalid_fields_are_rejected_on_load() {
    let cases = [
        (
            json!({"type": "data", "kind": "9x", "data": 1}),
            "invalid kind \"9x\": a kind matches [A-Za-z_][A-Za-z0-9_-]*",
        ),
        (
            json!({"type": "data", "kind": 7, "data": 1}),
            "`kind` must be a string",
        ),
        (
            json!({"type": "data", "data": 1, "_instance": ""}),
            "`_instance`: invalid instance id \"\": it is empty",
        ),
        (
            json!({"type": "data", "data": 1, "_instance": "c1) ##\n## Data: state"}),
            "`_instance`: invalid instance id \"c1) ##\\n## Data: state\": it contains a control character or a line or paragraph separator",
        ),
        (
            json!({"type": "data", "data": 1, "_instance": "c1\u{2029}"}),
            "`_instance`: invalid instance id \"c1\u{2029}\": it contains a control character or a line or paragraph separator",
        ),
        (
            json!({"type": "data", "data": 1, "_instance": "c1 "}),
            "`_instance`: invalid instance id \"c1 \": it starts or ends with a blank",
        ),
        (
            json!({"type": "data", "data": 1, "_instance": "x".repeat(129)}),
            "`_instance`: invalid instance id \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"…: it is longer than 128 characters",
        ),
        (
            json!({"type": "data", "data": 1, "_instance": 3}),
            "`_instance` must be a string",
        ),
        (
            json!({"type": "data", "data": 1, "description": []}),
            "`description` must be a string",
        ),
        (
            json!({"type": "data", "data": 1, "schema": "object"}),
            "`schema` must be a JSON Schema (object or boolean)",
        ),
        (
            json!({"type": "data", "data": 1, "_outputMethod": "replace"}),
            "`_outputMethod`: unknown method \"replace\": expected set, merge, assign, push, concat or erase",
        ),
        (
            json!({"type": "state", "data": {"a": 1}, "_outputPath": "†state.a || †state.b"}),
            "`_outputPath` \"†state.a || †state.b\" is not one reference: syntax error at byte 10: unexpected ' ' after reference",
        ),
        (
            json!({"type": "state", "data": {"a": 1}, "_outputPath": "†input.a"}),
            "`_outputPath` †input.a names kind `input`, but the message is of kind `state`",
        ),
        (
            json!({"type": "state", "data": {"a": 1}, "_outputPath": "†state.b"}),
            "`data` holds no value at the destination path .b",
        ),
    ];
    for (input, reason) in cases {
        assert_eq!(fault(input.clone()).1.to_string(), reason, "{input}");
    }
}

#[test]
fn r2_unknown_fields_are_preserved() {
    let msg = json!({"type": "data", "data": 1, "zeta": 1, "_trace": {"id": 9}, "alpha": 2});
    assert_eq!(normalised(msg.clone()), [msg]);
}

#[test]
fn r3_round_trip_preserves_fields_and_key_order() {
    let text = r#"[{"type":"data","kind":"s","data":{"z":1,"a":{"y":2,"b":3}},"_date":"d","_call":{"k":1}},{"type":"tool","z":1,"a":2},{"type":"text","text":"t","role":"assistant","x":1}]"#;
    let ctx = load(text).unwrap();
    assert_eq!(ctx.to_json().to_string(), text);
    let again = Context::load(ctx.to_jsonl().as_bytes(), Format::Jsonl)
        .unwrap()
        .context;
    assert_eq!(again.to_json().to_string(), text);
}

#[test]
fn r25_invalid_schema_is_rejected_on_load() {
    let (index, fault) =
        fault(json!({"type": "data", "data": 1, "schema": {"type": "no-such-type"}}));
    assert_eq!(index, 1);
    assert!(
        matches!(fault, MessageFault::InvalidSchema { .. }),
        "{fault:?}"
    );
}

fn nested(depth: usize) -> String {
    format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
}

#[test]
fn r33_nesting_up_to_128_loads_deeper_is_an_error() {
    let ok = format!("[{{\"data\":{}}}]", nested(127)); // message object + 127 = 128 levels
    assert!(load(&ok).is_ok());
    let deep = format!("[{{\"data\":{}}}]", nested(128));
    match load(&deep) {
        Err(
            e @ Error::TooDeep {
                depth: agent_core::TooDeep { limit: 128 },
                offset,
                line: None,
            },
        ) => {
            assert_eq!(offset, 9 + 127);
            assert_eq!(
                e.to_string(),
                "JSON nested deeper than 128 levels at byte 136"
            );
        }
        other => panic!("{other:?}"),
    }
    let line = format!("{{\"data\":{}}}\n", nested(128));
    match jsonl(&format!("{{\"data\":1}}\n{line}")) {
        Err(Error::TooDeep { line: Some(2), .. }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn r33_ten_thousand_deep_is_an_error_not_a_stack_overflow() {
    let deep = format!("[{{\"data\":{}}}]", nested(10_000));
    assert!(matches!(load(&deep), Err(Error::TooDeep { .. })));
    // Brackets inside strings do not count.
    let quoted = format!("[{{\"data\":\"{}\"}}]", "[".repeat(10_000));
    assert!(load(&quoted).is_ok());
}

#[test]
fn r34_torn_last_jsonl_line_is_ignored_with_a_warning() {
    let text = "{\"data\":{\"a\":1}}\n{\"data\":{\"a\":";
    let loaded = jsonl(text).unwrap();
    assert_eq!(loaded.context.len(), 1);
    assert_eq!(
        loaded.warnings,
        [Warning::TornLastLine {
            line: 2,
            offset: 17
        }]
    );
    // The same bad line with a newline after it is an error, not a tear.
    assert!(jsonl(&format!("{text}\n")).is_err());
    // A complete last line without a newline is fine.
    assert_eq!(jsonl("{\"data\":1}").unwrap().context.len(), 1);
}

#[test]
fn format_detection() {
    use std::path::Path;
    assert_eq!(
        Format::detect(Some(Path::new("a.json")), b"{"),
        Format::Json
    );
    assert_eq!(
        Format::detect(Some(Path::new("a.jsonl")), b"["),
        Format::Jsonl
    );
    assert_eq!(Format::detect(None, b"  \n[ ]"), Format::Json);
    assert_eq!(
        Format::detect(Some(Path::new("ctx.txt")), b"{}"),
        Format::Jsonl
    );
}

#[test]
fn a_20_mb_generated_context_loads() {
    // Linear-time loading is measured by the W4 benchmark; this checks that
    // a large context loads completely and correctly.
    let mut text = String::with_capacity(21 << 20);
    let mut count = 0;
    let mut last_k999 = None;
    while text.len() < 20 << 20 {
        if count % 1000 == 999 {
            last_k999 = Some(count);
        }
        text.push_str(&format!(
            "{{\"type\":\"data\",\"kind\":\"state\",\"data\":{{\"k{}\":{{\"n\":{count},\"s\":\"{}\"}}}}}}\n",
            count % 1000,
            "x".repeat(100)
        ));
        count += 1;
    }
    let ctx = jsonl(&text).unwrap().context;
    assert_eq!(ctx.len(), count);
    let view = ctx.view(&Kind::new("state").unwrap(), None).unwrap();
    assert_eq!(view.as_object().unwrap().len(), 1000);
    assert_eq!(view["k999"]["n"], json!(last_k999.unwrap()));
}

#[test]
fn r3_message_json_is_the_normalised_message_and_to_jsonl_joins_them() {
    let ctx = load(
        r#"[{"role": "assistant", "content": "hi"},
            {"type": "input", "text": "summarise", "_instance": "①"},
            {"type": "plan", "steps": [1, 2]}]"#,
    )
    .unwrap();
    let expected = [
        json!({"type": "text", "role": "assistant", "text": "hi"}),
        json!({"type": "data", "kind": "input", "data": {"text": "summarise"}, "_instance": "①"}),
        json!({"type": "plan", "steps": [1, 2]}),
    ];
    for (i, want) in expected.iter().enumerate() {
        let text = ctx.message_json(i).unwrap();
        assert_eq!(&serde_json::from_str::<Value>(text).unwrap(), want);
        assert_eq!(&ctx.message(i).unwrap().to_value(), want);
    }
    assert_eq!(ctx.message(3), None);
    assert_eq!(ctx.message_json(3), None);
    let lines: Vec<&str> = (0..3).map(|i| ctx.message_json(i).unwrap()).collect();
    assert_eq!(ctx.to_jsonl(), format!("{}\n", lines.join("\n")));
}

#[test]
fn r4_message_identity_names_the_layer_of_data_messages_only() {
    let ctx = load(
        r#"[{"type": "text", "text": "go"},
            {"type": "state", "data": {"a": 1}, "_instance": "x"},
            {"type": "data", "data": {"b": 1}}]"#,
    )
    .unwrap();
    assert_eq!(ctx.message_identity(0), None);
    assert_eq!(
        ctx.message_identity(1).map(ToString::to_string),
        Some("state@x".to_owned())
    );
    assert_eq!(
        ctx.message_identity(2).map(ToString::to_string),
        Some("data".to_owned())
    );
    assert_eq!(ctx.message_identity(3), None);
}

/// `depth` arrays nested inside each other, around `0`.
fn nested_value(depth: usize) -> Value {
    (0..depth).fold(json!(0), |inner, _| Value::Array(vec![inner].into()))
}

#[test]
fn r33_append_and_load_share_the_depth_limit() {
    // The message object is one level, so `data` may nest MAX_DEPTH - 1 more.
    let kind = Kind::new("data").unwrap();
    let fits = Message::from(agent_data::DataMessage::new(
        kind.clone(),
        nested_value(agent_core::MAX_DEPTH - 1),
    ));
    let deep = Message::from(agent_data::DataMessage::new(
        kind,
        nested_value(agent_core::MAX_DEPTH),
    ));
    let mut ctx = Context::new();
    ctx.append(&fits).unwrap();
    let before = ctx.to_jsonl();
    match ctx.append(&deep) {
        Err(
            e @ Error::Message {
                index: 1,
                fault: MessageFault::TooDeep(agent_core::TooDeep { limit: 128 }),
                ..
            },
        ) => assert_eq!(
            e.to_string(),
            "message 1: the message is nested deeper than 128 levels"
        ),
        other => panic!("expected TooDeep, got {other:?}"),
    }
    assert_eq!(ctx.to_jsonl(), before, "a refused append changes nothing");
    // Loading draws the line in the same place.
    let line = |m: &Message| format!("{}\n", m.to_value());
    assert!(Context::load(line(&fits).as_bytes(), Format::Jsonl).is_ok());
    assert!(matches!(
        Context::load(line(&deep).as_bytes(), Format::Jsonl),
        Err(Error::TooDeep { .. })
    ));
}

#[test]
fn r33_append_refuses_a_deep_value_built_in_memory_without_overflowing() {
    // Far deeper than any parser accepts: only an in-memory value gets here.
    let kind = Kind::new("data").unwrap();
    let mut deep = json!(0);
    for _ in 0..100_000 {
        deep = Value::Array(vec![deep].into());
    }
    let message = Message::from(agent_data::DataMessage::new(kind, deep));
    let mut ctx = Context::new();
    assert!(ctx.append(&message).is_err());
    assert!(ctx.is_empty());
    // Dropping a value this deep recurses; leak it as the hostile suite does.
    std::mem::forget(message);
}

/// An OpenAI conversation with a tool call and its result, as captured.
const OPENAI_TOOL_TURNS: &str = r#"[
  {"role": "user", "content": "Weather in Paris?"},
  {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
  {"role": "tool", "tool_call_id": "call_1", "content": "18 C"},
  {"role": "assistant", "tool_calls": [{"id": "call_2", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
]"#;

#[test]
fn r1_openai_tool_call_messages_load_verbatim_as_native() {
    let ctx = Context::from_json(OPENAI_TOOL_TURNS).unwrap();
    let messages: Vec<Message> = ctx.messages().collect();
    assert_eq!(messages.len(), 4);
    assert!(matches!(messages[0], Message::Text(_)));
    let expected: Vec<Value> =
        agent_core::json::from_value(agent_core::json::from_str(OPENAI_TOOL_TURNS).unwrap())
            .unwrap();
    for i in 1..4 {
        assert!(matches!(messages[i], Message::Native(_)), "{i}");
        // R3: kept exactly as given, `content: null` included.
        assert_eq!(messages[i].to_value(), expected[i]);
    }
}

#[test]
fn r1_anthropic_tool_use_and_tool_result_blocks_stay_in_one_native_message() {
    let ctx = Context::from_json(
        r#"[{"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": [{"type": "text", "text": "Checking."},
              {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "18 C"}]}]"#,
    )
    .unwrap();
    let messages: Vec<Message> = ctx.messages().collect();
    assert_eq!(messages.len(), 3);
    assert!(matches!(messages[1], Message::Native(_)));
    assert_eq!(messages[1].fields()["content"][1]["type"], "tool_use");
    assert!(matches!(messages[2], Message::Native(_)));
    assert_eq!(messages[2].fields()["role"], "user");
}

#[test]
fn r1_native_fields_of_the_wrong_type_are_rejected() {
    let err = Context::from_json(r#"[{"role": "assistant", "content": null, "tool_calls": {}}]"#)
        .unwrap_err();
    assert_eq!(err.to_string(), "message 0: `tool_calls` must be an array");
    let err =
        Context::from_json(r#"[{"role": "tool", "tool_call_id": 7, "content": "x"}]"#).unwrap_err();
    assert_eq!(
        err.to_string(),
        "message 0: `tool_call_id` must be a string"
    );
}

#[test]
fn r33_a_schema_whose_ref_chain_is_50000_long_is_refused_without_overflowing() {
    let mut defs = agent_core::json::Map::new();
    for i in 0..50_000 {
        defs.insert(
            format!("d{i}"),
            json!({"$ref": format!("#/$defs/d{}", i + 1)}),
        );
    }
    defs.insert("d50000".into(), json!({"type": "string"}));
    let message =
        json!({"type": "data", "data": "x", "schema": {"$ref": "#/$defs/d0", "$defs": defs}});
    let err = Context::from_json(&json!([message]).to_string()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "message 0: invalid schema: a `$ref` leads through more than 256 others"
    );
}
