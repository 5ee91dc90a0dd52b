//! spec R28–R31, rule by rule, plus token counts.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use agent_core::{
    json,
    json::{Map, Value},
};
use agent_data::Context;
use agent_render::{
    ChatMessage, Error, INPUT_LINE, OpaqueRenderer, Payload, PayloadFormat, RenderMode, Renderer,
    count_tokens, payload,
};

fn ctx(messages: Value) -> Context {
    Context::from_json(&messages.to_string()).unwrap()
}

fn texts(c: &Context, mode: RenderMode) -> Vec<String> {
    Renderer::new()
        .render(c, mode)
        .iter()
        .map(|m| m.text().to_owned())
        .collect()
}

#[test]
fn r28_text_passes_through_with_role() {
    let c = ctx(json!([{"type": "text", "text": "hi"}, {"role": "assistant", "content": "yo"}]));
    let chat = Renderer::new().render(&c, RenderMode::Merged);
    assert_eq!(
        chat,
        [
            ChatMessage::new("user", "hi"),
            ChatMessage::new("assistant", "yo")
        ]
    );
}

#[test]
fn r28_one_block_per_layer_at_its_first_message() {
    let c = ctx(json!([
        {"type": "state", "data": {"a": 1}},
        {"type": "text", "text": "between"},
        {"type": "state", "data": {"b": 2}},
    ]));
    assert_eq!(
        texts(&c, RenderMode::Merged),
        ["## Data: ¶state\n{\n  \"a\": 1,\n  \"b\": 2\n}", "between"]
    );
}

#[test]
fn r28_instance_block_shows_only_its_own_layer() {
    let c = ctx(json!([
        {"type": "state", "data": {"shared": 1}},
        {"type": "state", "data": {"mine": 2}, "_instance": "employee_A"},
    ]));
    assert_eq!(
        texts(&c, RenderMode::Merged)[1],
        "## Data: ¶state@employee_A\n{\n  \"mine\": 2\n}"
    );
}

#[test]
fn r28_r10b_an_erase_shows_as_null_in_the_instance_block_and_as_an_erase_block_in_append_mode() {
    let c = ctx(json!([
        {"type": "state", "data": {"step": "global", "keep": 1}},
        {"type": "state", "data": {"step": "mine", "other": 2}, "_instance": "x"},
        {"type": "state", "data": {"step": null}, "_outputPath": "†state.step", "_outputMethod": "erase", "_instance": "x"},
        {"type": "data", "kind": "gone", "data": {"a": 1}},
        {"type": "data", "kind": "gone", "data": null, "_outputMethod": "erase"},
    ]));
    // The global block still holds "global"; the instance's block says its
    // value is gone rather than let the global one show through.
    assert_eq!(
        texts(&c, RenderMode::Merged),
        [
            "## Data: ¶state\n{\n  \"step\": \"global\",\n  \"keep\": 1\n}",
            "## Data: ¶state@x\n{\n  \"step\": null,\n  \"other\": 2\n}",
            "## Data: ¶gone\nnull",
        ]
    );
    assert_eq!(
        texts(&c, RenderMode::Append)[2],
        "## Data: ¶state@x.step (erase)\nnull"
    );
}

#[test]
fn r28_schema_and_description_only_in_declaring_layer() {
    let c = ctx(json!([
        {"type": "data", "kind": "u", "data": {}, "description": "Users.", "schema": {"type": "object"}},
        {"type": "data", "kind": "u", "data": {"x": 1}, "_instance": "①"},
    ]));
    let t = texts(&c, RenderMode::Merged);
    assert_eq!(
        t[0],
        "## Data: ¶u\n{}\nUsers.\nSchema for ¶u:\n{\n  \"type\": \"object\"\n}"
    );
    assert_eq!(t[1], "## Data: ¶u@①\n{\n  \"x\": 1\n}");
}

#[test]
fn r28_input_block_has_instruction_line() {
    let c = ctx(json!([{"type": "input", "input": {"q": "?"}}]));
    assert_eq!(
        texts(&c, RenderMode::Merged),
        [format!(
            "## Data: ¶input\n{INPUT_LINE}\n{{\n  \"q\": \"?\"\n}}"
        )]
    );
}

#[test]
fn r28_opaque_generic_block_without_underscore_fields() {
    let c =
        ctx(json!([{"type": "tool", "name": "search", "_secret": 1, "args": {"_nested": "kept"}}]));
    assert_eq!(
        texts(&c, RenderMode::Merged),
        [
            "## tool\n{\n  \"type\": \"tool\",\n  \"name\": \"search\",\n  \"args\": {\n    \"_nested\": \"kept\"\n  }\n}"
        ]
    );
}

struct PlanSummary;

impl OpaqueRenderer for PlanSummary {
    fn render(&self, message: &Map) -> Option<ChatMessage> {
        let steps = message
            .get("steps")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        Some(ChatMessage::new(
            "assistant",
            format!("(a plan of {steps} steps)"),
        ))
    }
}

struct Hidden;

impl OpaqueRenderer for Hidden {
    fn render(&self, _: &Map) -> Option<ChatMessage> {
        None
    }
}

#[test]
fn r28_opaque_renderers_are_registered_by_type() {
    let c = ctx(
        json!([{"type": "plan", "steps": [1, 2]}, {"type": "meta", "x": 1}, {"type": "tool", "x": 1}]),
    );
    let chat = Renderer::new()
        .with_opaque("plan", PlanSummary)
        .with_opaque("meta", Hidden)
        .render(&c, RenderMode::Merged);
    assert_eq!(chat.len(), 2);
    assert_eq!(
        chat[0],
        ChatMessage::new("assistant", "(a plan of 2 steps)")
    );
    assert!(chat[1].text().starts_with("## tool\n"));
}

#[test]
fn r21b_a_ran_record_is_left_out_in_both_modes_unless_a_renderer_is_registered() {
    let c = ctx(json!([
        {"type": "text", "text": "before"},
        {"type": "ran", "_call": {"_tool": "notify"}, "_date": "2026-01-01T00:00:00Z"},
        {"type": "text", "text": "after"}
    ]));
    for mode in [RenderMode::Merged, RenderMode::Append] {
        assert_eq!(texts(&c, mode), ["before", "after"]);
    }
    let shown = Renderer::new()
        .with_opaque("ran", PlanSummary)
        .render(&c, RenderMode::Merged);
    assert_eq!(
        shown[1],
        ChatMessage::new("assistant", "(a plan of 0 steps)")
    );
}

#[test]
fn r28_a_superseded_plan_stays_in_the_log_and_is_not_rendered() {
    let c = ctx(json!([
        {"type": "plan", "plan": [{"_tool": "old"}], "_pending": [0]},
        {"type": "plan", "calls": [{"_tool": "worked"}]},
        {"type": "text", "text": "between"},
        {"type": "plan", "plan": [{"_tool": "new"}], "_pending": []},
        {"type": "plan", "calls": [{"_tool": "worked again"}]}
    ]));
    assert_eq!(c.len(), 5);
    // Merged: the newest loop plan and the newest worker plan, where they
    // stand; each supersedes only its own sort (D69: loop and worker plans).
    let merged = texts(&c, RenderMode::Merged);
    assert_eq!(merged.len(), 3);
    assert_eq!(merged[0], "between");
    assert_eq!(
        merged[1],
        "## plan\n{\n  \"type\": \"plan\",\n  \"plan\": [\n    {\n      \"_tool\": \"new\"\n    }\n  ]\n}"
    );
    assert!(merged[2].contains("worked again"), "{}", merged[2]);
    // Append mode keeps every block as it was, so prompt caches survive.
    let append = texts(&c, RenderMode::Append);
    assert_eq!(append.len(), 5);
    assert!(append[0].contains("\"old\""));
    // A renderer that leaves the newest plan out still hides the older.
    let hidden = Renderer::new()
        .with_opaque("plan", Hidden)
        .render(&c, RenderMode::Merged);
    assert_eq!(hidden.len(), 1);
    assert_eq!(hidden[0].text(), "between");
}

#[test]
fn r29_underscore_fields_never_rendered() {
    let c = ctx(json!([
        {"type": "data", "kind": "state", "data": {"v": 1}, "_outputPath": "†state.v", "_call": {"_tool": "SECRET"}, "_date": "DATE", "_instance": "①"},
        {"type": "text", "text": "t", "_trace": "TRACE"},
    ]));
    for mode in [RenderMode::Merged, RenderMode::Append] {
        let all = texts(&c, mode).join("\n");
        for hidden in [
            "SECRET",
            "DATE",
            "TRACE",
            "_outputPath",
            "_call",
            "_date",
            "_instance",
        ] {
            assert!(!all.contains(hidden), "{mode:?} rendered {hidden}: {all}");
        }
        assert!(
            all.contains("¶state@①"),
            "the instance shows through the label only"
        );
    }
}

#[test]
fn r29_a_fanned_out_results_call_and_call_at_are_never_rendered() {
    // D36: the first message of a result carries `_call`, the others
    // `_callAt` (-1, -2, …): both are `_` keys, hidden like the others.
    let mut c = Context::new();
    let call = agent_output::Call::parse(
        json!({"_tool": "SECRET", "_outputPath": "†state.a && †state.b && †audit.c"}),
    )
    .unwrap();
    let clock = agent_output::FixedClock::parse("2026-01-01T00:00:00Z").unwrap();
    let appended = agent_output::apply(
        &mut c,
        &call,
        agent_output::Outcome::Success(json!("v")),
        &clock,
    )
    .unwrap();
    assert_eq!(appended[2].fields()["_callAt"], json!(-2));
    for mode in [RenderMode::Merged, RenderMode::Append] {
        let all = texts(&c, mode).join("\n");
        for hidden in ["SECRET", "_call", "_callAt", "-1", "-2", "2026"] {
            assert!(!all.contains(hidden), "{mode:?} rendered {hidden}: {all}");
        }
        assert!(all.contains("\"v\""), "{mode:?}: {all}");
    }
}

#[test]
fn r30_append_mode_one_block_per_write_with_path_and_method() {
    let c = ctx(json!([
        {"type": "state", "data": {"a": 1}, "description": "State.", "schema": true},
        {"type": "state", "data": {"log": 1}, "_outputPath": "†state.log", "_outputMethod": "push"},
        {"type": "state", "data": {"a": 2}, "_outputPath": "†state.a"},
        {"type": "state", "data": {"b": 3}, "_outputMethod": "assign"},
    ]));
    assert_eq!(
        texts(&c, RenderMode::Append),
        [
            "## Data: ¶state\n{\n  \"a\": 1\n}\nState.\nSchema for ¶state:\ntrue",
            "## Data: ¶state.log (push)\n1",
            "## Data: ¶state.a\n2",
            "## Data: ¶state (assign)\n{\n  \"b\": 3\n}",
        ]
    );
}

#[test]
fn r30_append_mode_earlier_output_is_byte_stable() {
    let mut c = ctx(json!([{"type": "text", "text": "go"}, {"type": "state", "data": {"a": 1}}]));
    let before = texts(&c, RenderMode::Append);
    c.append(&agent_data::Message::from(
        agent_data::DataMessage::from_value(
            json!({"type": "state", "data": {"a": 2}, "_outputPath": "†state.a"}),
        )
        .unwrap(),
    ))
    .unwrap();
    let after = texts(&c, RenderMode::Append);
    assert_eq!(&after[..before.len()], &before[..]);
    // Merged mode, by contrast, rewrites the block.
    assert_ne!(texts(&c, RenderMode::Merged)[1], before[1]);
}

fn chat() -> Vec<ChatMessage> {
    vec![
        ChatMessage::new("system", "S1"),
        ChatMessage::new("user", "u1"),
        ChatMessage::new("system", "S2"),
        ChatMessage::new("user", "u2"),
        ChatMessage::new("assistant", "a1"),
    ]
}

#[test]
fn r31_plain_and_openai_payloads() {
    let Payload::Json(plain) = payload(&chat(), PayloadFormat::Plain).unwrap() else {
        panic!()
    };
    assert_eq!(plain[1], json!({"role": "user", "content": "u1"}));
    assert_eq!(plain.as_array().unwrap().len(), 5);
    let Payload::Json(openai) = payload(&chat(), PayloadFormat::OpenAi).unwrap() else {
        panic!()
    };
    assert_eq!(openai, json!({"messages": plain}));
}

#[test]
fn r31_anthropic_joins_system_and_merges_runs() {
    let Payload::Json(p) = payload(&chat(), PayloadFormat::Anthropic).unwrap() else {
        panic!()
    };
    assert_eq!(
        p,
        json!({"system": "S1\n\nS2", "messages": [
            {"role": "user", "content": [{"type": "text", "text": "u1"}, {"type": "text", "text": "u2"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "a1"}]}
        ]})
    );
    let Payload::Json(p) =
        payload(&[ChatMessage::new("user", "u")], PayloadFormat::Anthropic).unwrap()
    else {
        panic!()
    };
    assert!(p.get("system").is_none(), "omitted when there is none");
}

#[test]
fn r31_anthropic_assistant_first_is_an_error() {
    let err = payload(
        &[
            ChatMessage::new("system", "s"),
            ChatMessage::new("assistant", "a"),
        ],
        PayloadFormat::Anthropic,
    )
    .unwrap_err();
    assert_eq!(err, Error::AssistantFirst { index: 1 });
    let err = payload(&[ChatMessage::new("tool", "x")], PayloadFormat::Anthropic).unwrap_err();
    assert!(matches!(err, Error::UnsupportedRole { .. }));
}

#[test]
fn r31_text_transcript() {
    let Payload::Text(t) = payload(&chat()[..2], PayloadFormat::Text).unwrap() else {
        panic!()
    };
    assert_eq!(t, "[system]\nS1\n\n[user]\nu1\n\n");
}

#[test]
fn r31_openai_payload_deserializes_into_async_openai_types() {
    use async_openai::types::chat::ChatCompletionRequestMessage;
    let c = Context::from_json(
        &json!([
            {"type": "text", "role": "system", "text": "sys"},
            {"type": "input", "data": {"q": 1}, "_instance": "①"},
            {"type": "plan", "steps": []},
            {"type": "text", "role": "assistant", "text": "ok"},
        ])
        .to_string(),
    )
    .unwrap();
    for mode in [RenderMode::Merged, RenderMode::Append] {
        let Payload::Json(p) =
            payload(&Renderer::new().render(&c, mode), PayloadFormat::OpenAi).unwrap()
        else {
            panic!()
        };
        let messages: Vec<ChatCompletionRequestMessage> =
            agent_core::json::from_value(p["messages"].clone()).unwrap();
        assert_eq!(messages.len(), 4);
        assert!(matches!(
            messages[0],
            ChatCompletionRequestMessage::System(_)
        ));
        assert!(matches!(messages[1], ChatCompletionRequestMessage::User(_)));
        assert!(matches!(
            messages[3],
            ChatCompletionRequestMessage::Assistant(_)
        ));
        // And back: what the client would send is what we produced.
        assert_eq!(json!(messages), p["messages"]);
    }
}

#[test]
fn token_counts_use_o200k_base() {
    assert_eq!(count_tokens(""), 0);
    assert_eq!(count_tokens("hello world"), 2);
    let long = "data ".repeat(1000);
    assert!(count_tokens(&long) >= 1000);
}

/// A captured OpenAI conversation with a tool call and its result.
fn openai_tool_turns() -> Value {
    json!([
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": null, "_date": "2026-01-01T00:00:00Z",
         "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "18 C"}
    ])
}

/// The same conversation as captured from Anthropic's Messages API.
fn anthropic_tool_turns() -> Value {
    json!([
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "18 C"}]}
    ])
}

fn payload_of(messages: Value, provider: PayloadFormat) -> Value {
    let chat = Renderer::new().render(&ctx(messages), RenderMode::Merged);
    payload(&chat, provider).unwrap().into_value()
}

#[test]
fn r31_openai_payload_keeps_tool_calls_and_tool_call_id() {
    let mut expected = openai_tool_turns();
    // R29: top-level `_` keys never reach the model.
    expected[1].as_object_mut().unwrap().shift_remove("_date");
    assert_eq!(
        payload_of(openai_tool_turns(), PayloadFormat::OpenAi),
        json!({"messages": expected})
    );
}

#[test]
fn r31_anthropic_payload_keeps_tool_use_and_tool_result_in_their_roles() {
    assert_eq!(
        payload_of(anthropic_tool_turns(), PayloadFormat::Anthropic),
        json!({"messages": anthropic_tool_turns()
            .as_array()
            .unwrap()
            .iter()
            .map(|m| if m["content"].is_string() {
                json!({"role": m["role"], "content": [{"type": "text", "text": m["content"]}]})
            } else {
                m.clone()
            })
            .collect::<Vec<_>>()})
    );
}

#[test]
fn r31_native_tool_messages_convert_to_the_other_provider() {
    // OpenAI's capture for Anthropic: tool_use from tool_calls (arguments
    // parsed), the tool message a user turn of tool_result.
    assert_eq!(
        payload_of(openai_tool_turns(), PayloadFormat::Anthropic),
        payload_of(anthropic_tool_turns(), PayloadFormat::Anthropic)
    );
    // Anthropic's capture for OpenAI.
    let mut expected = openai_tool_turns();
    expected[1].as_object_mut().unwrap().shift_remove("_date");
    assert_eq!(
        payload_of(anthropic_tool_turns(), PayloadFormat::OpenAi),
        json!({"messages": expected})
    );
    // Plain and text formats show the calls as JSON in their role.
    let plain = payload_of(openai_tool_turns(), PayloadFormat::Plain);
    assert_eq!(plain[2]["role"], "tool");
    assert_eq!(
        plain[2]["content"],
        "{\"tool_call_id\":\"call_1\",\"content\":\"18 C\"}"
    );
}
