//! Tools, the answer schema and the system text (spec R35–R38).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use agent_core::Instance;
use agent_core::{json, json::Value};
use agent_data::Context;
use agent_loop::{Answer, CallInstances, SYSTEM_TEXT, Tool, Tools, answer_schema};

fn tool(name: &str, extra: Value) -> Value {
    let mut schema = json!({"type": "object", "properties": {"_tool": {"const": name}}});
    if let (Value::Object(extra), Some(Value::Object(props))) =
        (extra, schema.get_mut("properties"))
    {
        props.extend(extra);
    }
    schema
}

#[test]
fn r35_tools_come_from_the_context_and_the_caller_and_later_definitions_win() {
    let ctx = Context::from_json(&format!(
        r#"[{{"type": "tool", "tool": {}}},
            {{"type": "text", "text": "hi"}},
            {{"type": "tool", "tool": {}}},
            {{"type": "tool", "tool": {}}}]"#,
        tool("a", json!({"x": {"type": "string"}})),
        tool("b", json!({})),
        tool("a", json!({"y": {"type": "integer"}}))
    ))
    .unwrap();
    let mut tools = Tools::from_context(&ctx).unwrap();
    let names: Vec<&str> = tools.iter().map(Tool::name).collect();
    assert_eq!(names, ["a", "b"]);
    assert!(
        tools.get("a").unwrap().schema()["properties"]
            .get("y")
            .is_some()
    );
    assert!(
        tools.get("a").unwrap().schema()["properties"]
            .get("x")
            .is_none()
    );
    // The caller's tools come after the context's.
    tools.add(Tool::new(tool("b", json!({"z": {}})), "caller tool 0").unwrap());
    assert!(
        tools.get("b").unwrap().schema()["properties"]
            .get("z")
            .is_some()
    );
    assert_eq!(tools.len(), 2);
}

#[test]
fn r35_a_definition_that_is_not_a_tool_says_where_and_why() {
    let cases = [
        (
            json!([1]),
            "caller tool 0: a tool must be a JSON Schema object",
        ),
        (
            json!({"properties": {"_tool": {"enum": ["a"]}}}),
            "caller tool 0: a tool's `properties._tool.const` must be its name, a string",
        ),
        (
            json!({"properties": {"_tool": {"const": ""}}}),
            "caller tool 0: a tool's name (`properties._tool.const`) must not be empty",
        ),
    ];
    for (schema, message) in cases {
        assert_eq!(
            Tool::new(schema, "caller tool 0").unwrap_err().to_string(),
            message
        );
    }
    let ctx = Context::from_json(r#"[{"type": "text", "text": "x"}, {"type": "tool"}]"#).unwrap();
    assert_eq!(
        Tools::from_context(&ctx).unwrap_err().to_string(),
        "message 1: a tool message needs a `tool` field holding the tool's schema"
    );
}

#[test]
fn r36_an_explicit_tool_hides_its_output_and_a_latent_one_keeps_it() {
    let t = Tool::new(
        json!({"type": "object", "properties": {"_tool": {"const": "t"}, "_output": {"type": "string"}},
               "required": ["_tool", "_output"]}),
        "t",
    )
    .unwrap();
    let explicit = t.for_model(agent_loop::Execution::Explicit);
    assert!(explicit["properties"].get("_output").is_none());
    assert_eq!(explicit["required"], json!(["_tool"]));
    let latent = t.for_model(agent_loop::Execution::Latent);
    assert_eq!(latent["properties"]["_output"], json!({"type": "string"}));
    assert_eq!(latent["required"], json!(["_tool", "_output"]));
    assert_eq!(t.output_schema(), Some(&json!({"type": "string"})));
}

#[test]
fn r37_the_answer_schema_has_one_variant_per_tool_and_parameters_accept_references() {
    let mut tools = Tools::new();
    tools.add(
        Tool::new(
            tool(
                "fetch",
                json!({"id": {"type": "integer"}, "_output": {"type": "object"},
                       "_outputPath": {"const": "†state.profile"}}),
            ),
            "t",
        )
        .unwrap(),
    );
    tools.add(Tool::new(tool("note", json!({"text": {"type": "string"}})), "t").unwrap());
    let instances = [Instance::new("①").unwrap(), Instance::new("②").unwrap()];
    let output = json!({"type": "object", "required": ["done"]});
    let schema = answer_schema(
        &tools,
        |name| name == "fetch",
        CallInstances::Existing(&instances),
        Some(&output),
    );
    let variants = schema["properties"]["calls"]["items"]["anyOf"]
        .as_array()
        .unwrap();
    assert_eq!(variants.len(), 2);
    let fetch = &variants[0]["properties"];
    assert_eq!(
        fetch["id"],
        json!({"anyOf": [{"type": "integer"}, {"type": "string", "pattern": "^†"}]})
    );
    // Explicit: no _output. A prescribed path stays as declared.
    assert!(fetch.get("_output").is_none());
    assert_eq!(fetch["_outputPath"], json!({"const": "†state.profile"}));
    assert_eq!(
        fetch["_instance"],
        json!({"type": "string", "enum": ["①", "②"]})
    );
    assert_eq!(fetch["_tool"], json!({"const": "fetch"}));
    // A tool that does not declare _outputPath accepts a reference there.
    let note = &variants[1]["properties"];
    assert_eq!(
        note["_outputPath"],
        json!({"type": "string", "pattern": "^†"})
    );
    assert_eq!(
        schema["properties"]["output"],
        json!({"anyOf": [{"type": "null"}, output]})
    );
    assert_eq!(schema["required"], json!(["calls", "output"]));
    assert_eq!(schema["additionalProperties"], json!(false));
}

#[test]
fn r37_without_tools_no_call_is_accepted_and_any_output_is() {
    let schema = answer_schema(&Tools::new(), |_| false, CallInstances::Existing(&[]), None);
    assert_eq!(
        schema["properties"]["calls"],
        json!({"type": "array", "maxItems": 0})
    );
    assert_eq!(
        schema["properties"]["output"],
        json!({"anyOf": [{"type": "null"}, {}]})
    );
}

#[test]
fn r37_the_answer_schema_is_valid_json_schema_and_accepts_a_referencing_call() {
    let mut tools = Tools::new();
    tools.add(
        Tool::new(
            json!({"type": "object", "properties": {"_tool": {"const": "book"}, "days": {"type": "integer"}},
                   "required": ["_tool", "days"], "additionalProperties": false}),
            "t",
        )
        .unwrap(),
    );
    let schema = answer_schema(&tools, |_| true, CallInstances::Existing(&[]), None);
    let compiled = agent_data::Schema::compile(&schema).unwrap();
    let ok = json!({"calls": [{"_tool": "book", "days": "†input.days", "_outputPath": "†state.booking",
                              "_outputMethod": "push"}], "output": null});
    assert!(
        compiled
            .violations(&ok, agent_data::CheckMode::Complete)
            .is_empty()
    );
    let bad = json!({"calls": [{"_tool": "book", "days": "three"}], "output": null});
    assert!(
        !compiled
            .violations(&bad, agent_data::CheckMode::Complete)
            .is_empty()
    );
}

#[test]
fn r38_the_system_text_is_the_golden_one() {
    let golden = include_str!("golden/system.txt");
    assert_eq!(
        SYSTEM_TEXT, golden,
        "the system text every model reads changed: update tests/it/golden/system.txt if that was meant"
    );
    for topic in [
        "†KIND.PATH",
        "_outputPath",
        "_instance",
        "\"output\"",
        "_output\"",
    ] {
        assert!(SYSTEM_TEXT.contains(topic), "{topic}");
    }
}

#[test]
fn r40_an_answer_is_read_structurally_and_says_what_is_wrong() {
    let cases = [
        (
            "[]",
            "the answer must be a JSON object {\"calls\": [...], \"output\": ...}, found an array",
        ),
        (
            "{\"output\": null}",
            "the answer has no \"calls\" (use [] for none)",
        ),
        (
            "{\"calls\": {}, \"output\": null}",
            "the answer's \"calls\" must be an array, found an object",
        ),
        (
            "{\"calls\": []}",
            "the answer has no \"output\" (use null while work remains)",
        ),
        (
            "{\"calls\": [], \"output\": null, \"note\": 1}",
            "the answer has a key besides \"calls\" and \"output\": \"note\"",
        ),
        (
            "Sure! Here is the JSON",
            "the answer is not JSON (expected value at line 1 column 1): \"Sure! Here is the JSON\"",
        ),
    ];
    for (text, message) in cases {
        assert_eq!(Answer::from_text(text).unwrap_err(), message, "{text}");
    }
    let answer = Answer::from_text("{\"calls\": [{\"_tool\": \"x\"}, 3], \"output\": 0}").unwrap();
    assert_eq!(answer.calls, vec![json!({"_tool": "x"}), json!(3)]);
    assert_eq!(answer.output, Some(json!(0)));
}
