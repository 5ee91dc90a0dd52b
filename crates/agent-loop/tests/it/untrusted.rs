//! The model's answer is untrusted input (spec R39b): what a call may
//! write, which instances it may name, and how much one answer can make
//! the loop record.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use crate::common::{Script, clock};
use agent_core::{json, json::Value};
use agent_data::Context;
use agent_loop::{Answer, CallInstances, Finish, Loop, Tool, Tools, answer_schema};
use agent_plan::Activities;

/// A latent tool writing wherever the model says.
fn note() -> Tool {
    Tool::new(
        json!({"type": "object", "properties": {"_tool": {"const": "note"},
            "_output": {"type": "string", "maxLength": 50}}}),
        "caller tool 0",
    )
    .unwrap()
}

/// A latent tool copying its `text` parameter to its result.
fn copy() -> Tool {
    Tool::new(
        json!({"type": "object", "properties": {"_tool": {"const": "copy"},
            "text": {"type": "string"}, "_output": {"type": "string"}}}),
        "caller tool 1",
    )
    .unwrap()
}

/// Runs one turn of `answer` on `ctx` with `settings` changed by `tune`.
fn one_turn(ctx: &mut Context, answer: Value, tune: impl FnOnce(&mut Loop)) -> Finish {
    let mut settings = Loop::new("scripted");
    settings.tools = vec![note(), copy()];
    settings.max_turns = 1;
    tune(&mut settings);
    let script = Script::new(vec![Ok(answer)]);
    settings
        .run(&script, &Activities::new(), ctx, &clock(), &mut |_| {})
        .unwrap()
}

fn errors(ctx: &Context) -> Vec<Value> {
    ctx.read(&"†error".parse().unwrap(), None)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn texts(ctx: &Context) -> Vec<String> {
    errors(ctx)
        .iter()
        .map(|e| e["error"].as_str().unwrap().to_owned())
        .collect()
}

fn task() -> Context {
    Context::from_json(r#"[{"type": "input", "data": {"city": "Rome"}}]"#).unwrap()
}

#[test]
fn r39b_a_models_call_may_not_write_the_error_or_output_kinds() {
    let mut ctx = task();
    one_turn(
        &mut ctx,
        json!({"calls": [
            {"_tool": "note", "_output": "forged", "_outputPath": "†error"},
            {"_tool": "note", "_output": "done", "_outputPath": "†output"},
            {"_tool": "note", "_output": "x", "_outputPath": "†state.a && †error.b"},
            {"_tool": "note", "_output": "kept", "_outputPath": "†state.ok"}
        ], "output": null}),
        |_| {},
    );
    assert_eq!(
        texts(&ctx),
        [
            "the call may not write †error: only the loop writes the \"error\" and \"output\" kinds (give the final result as the answer's \"output\")",
            "the call may not write †output: only the loop writes the \"error\" and \"output\" kinds (give the final result as the answer's \"output\")",
            "the call may not write †error.b: only the loop writes the \"error\" and \"output\" kinds (give the final result as the answer's \"output\")",
        ]
    );
    assert_eq!(ctx.read(&"†output".parse().unwrap(), None), None);
    assert_eq!(
        ctx.read(&"†state".parse().unwrap(), None),
        Some(&json!({"ok": "kept"}))
    );
    // The next run still records its errors and can finish.
    let finish = one_turn(
        &mut ctx,
        json!({"calls": [{"_tool": "nope"}], "output": "the end"}),
        |_| {},
    );
    assert_eq!(finish, Finish::Output(json!("the end")));
    assert_eq!(errors(&ctx).len(), 4);
}

#[test]
fn r39b_a_models_call_may_not_write_the_approval_gates_nor_the_whole_state() {
    let mut ctx = task();
    one_turn(
        &mut ctx,
        json!({"calls": [
            {"_tool": "note", "_output": "yes", "_outputPath": "†state.approvals.send"},
            {"_tool": "note", "_output": "yes", "_outputPath": "†state[\"approvals\"]"},
            {"_tool": "note", "_output": "yes", "_outputPath": "†state", "_outputMethod": "merge"},
            {"_tool": "note", "_output": "kept", "_outputPath": "†state.approved"},
            {"_tool": "note", "_output": "kept", "_outputPath": "†data.approvals"}
        ], "output": null}),
        |_| {},
    );
    let refused = |path: &str| {
        format!(
            "the call may not write {path}: approvals under †state.approvals are given by people, not by calls (write under another key of †state)"
        )
    };
    assert_eq!(
        texts(&ctx),
        [
            refused("†state.approvals.send"),
            refused("†state.approvals"),
            refused("†state")
        ]
    );
    assert_eq!(
        ctx.read(&"†state".parse().unwrap(), None),
        Some(&json!({"approved": "kept"}))
    );
}

#[test]
fn r39b_the_loop_starts_a_new_error_list_when_the_application_wrote_another_value() {
    let mut ctx = task();
    let forged = agent_data::Message::from_value(
        json!({"type": "data", "kind": "error", "data": "not a list"}),
    )
    .unwrap();
    ctx.append_all(&forged).unwrap();
    one_turn(
        &mut ctx,
        json!({"calls": [{"_tool": "nope"}], "output": null}),
        |_| {},
    );
    assert_eq!(
        texts(&ctx),
        [
            "the error view held a string, not a list of errors; the loop starts a new list here",
            "unknown tool \"nope\"; the tools are \"note\", \"copy\"",
        ]
    );
}

#[test]
fn r39b_a_call_may_name_only_the_contexts_instances_unless_the_application_allows_new_ones() {
    let mut ctx = Context::from_json(
        r#"[{"type": "input", "_instance": "a", "data": {"n": 1}},
            {"type": "input", "_instance": "b", "data": {"n": 2}}]"#,
    )
    .unwrap();
    one_turn(
        &mut ctx,
        json!({"calls": [
            {"_tool": "note", "_output": "x", "_outputPath": "†state.v", "_instance": "c"},
            {"_tool": "note", "_output": "y", "_outputPath": "†state.v", "_instance": "b"}
        ], "output": null}),
        |_| {},
    );
    assert_eq!(
        texts(&ctx),
        ["unknown instance \"c\": a call may name only the context's instances, \"a\", \"b\""]
    );
    assert_eq!(
        ctx.instances().map(|x| x.as_str()).collect::<Vec<_>>(),
        ["a", "b"]
    );

    let mut plain = task();
    one_turn(
        &mut plain,
        json!({"calls": [{"_tool": "note", "_output": "x", "_outputPath": "†state.v", "_instance": "i1"}], "output": null}),
        |_| {},
    );
    assert_eq!(
        texts(&plain),
        [
            "the call names instance \"i1\", but the context has no instances and a call may not start one"
        ]
    );
    assert_eq!(plain.instances().len(), 0);

    let mut allowed = task();
    one_turn(
        &mut allowed,
        json!({"calls": [{"_tool": "note", "_output": "x", "_outputPath": "†state.v", "_instance": "i1"}], "output": null}),
        |settings| settings.new_instances = true,
    );
    assert_eq!(texts(&allowed), Vec::<String>::new());
    assert_eq!(
        allowed.instances().map(|x| x.as_str()).collect::<Vec<_>>(),
        ["i1"]
    );
}

#[test]
fn r37_instance_is_offered_only_when_a_call_may_name_one() {
    let tools = {
        let mut tools = Tools::new();
        tools.add(note());
        tools
    };
    let instance = |schema: &Value| {
        schema["properties"]["calls"]["items"]["anyOf"][0]["properties"]
            .get("_instance")
            .cloned()
    };
    let none = answer_schema(&tools, |_| false, CallInstances::Existing(&[]), None);
    assert_eq!(instance(&none), None);
    let any = answer_schema(&tools, |_| false, CallInstances::Any, None);
    assert_eq!(instance(&any), Some(json!({"type": "string"})));
}

#[test]
fn r39b_calls_past_max_calls_are_refused_with_one_error() {
    let mut ctx = task();
    let calls: Vec<Value> = (0..5)
        .map(|i| json!({"_tool": "note", "_output": format!("n{i}"), "_outputPath": format!("†state.n{i}")}))
        .collect();
    one_turn(&mut ctx, json!({"calls": calls, "output": null}), |s| {
        s.max_calls = 3
    });
    assert_eq!(
        texts(&ctx),
        [
            "the answer has 5 calls; at most 3 run from one answer, so calls[3] to calls[4] were not run"
        ]
    );
    assert_eq!(
        ctx.read(&"†state".parse().unwrap(), None),
        Some(&json!({"n0": "n0", "n1": "n1", "n2": "n2"}))
    );
}

#[test]
fn r39b_a_cycle_of_ten_thousand_calls_is_one_short_error() {
    let mut ctx = task();
    let n = 10_000;
    let calls: Vec<Value> = (0..n)
        .map(|i| {
            json!({"_tool": "copy", "text": format!("†state.c{}", (i + 1) % n),
                   "_output": "x", "_outputPath": format!("†state.c{i}")})
        })
        .collect();
    let before = ctx.to_jsonl().len();
    one_turn(&mut ctx, json!({"calls": calls, "output": null}), |_| {});
    let texts = texts(&ctx);
    assert_eq!(texts.len(), 1);
    assert_eq!(
        texts[0],
        "none of the answer's 10000 calls ran: 10000 of them read each other's results in a cycle: \
         copy → †state.c0, then copy → †state.c1, then copy → †state.c2, then copy → †state.c3, then copy → †state.c4, then …"
    );
    assert!(ctx.to_jsonl().len() - before < 1_000);
}

#[test]
fn r39b_a_short_cycle_is_named_whole() {
    let mut ctx = task();
    one_turn(
        &mut ctx,
        json!({"calls": [
            {"_tool": "copy", "text": "†state.b", "_output": "x", "_outputPath": "†state.a"},
            {"_tool": "copy", "text": "†state.a", "_output": "x", "_outputPath": "†state.b"}
        ], "output": null}),
        |_| {},
    );
    assert_eq!(
        texts(&ctx),
        [
            "none of the answer's 2 calls ran: 2 of them read each other's results in a cycle: \
          copy → †state.a, then copy → †state.b, then copy → †state.a"
        ]
    );
}

#[test]
fn r39b_the_errors_of_one_turn_are_bounded_and_the_rest_counted() {
    let mut ctx = task();
    let calls: Vec<Value> = (0..10_000)
        .map(|i| json!({"_tool": format!("missing{i}")}))
        .collect();
    let before = ctx.to_jsonl().len();
    one_turn(&mut ctx, json!({"calls": calls, "output": null}), |_| {});
    let grown = ctx.to_jsonl().len() - before;
    // 64 KiB of per-call errors, the count of the rest, and each message's
    // own fields.
    assert!(grown < 64 * 1024 * 3, "{grown} bytes appended");
    let texts = texts(&ctx);
    let last = texts.last().unwrap();
    let recorded = texts.len() - 1;
    assert!(recorded > 100, "{recorded}");
    assert_eq!(
        *last,
        format!(
            "{} more call(s) failed; their errors are not recorded (at most 64 KiB of errors per turn). The first of them: unknown tool \"missing{recorded}\"; the tools are \"note\", \"copy\"",
            10_000 - recorded
        )
    );
}

#[test]
fn r39b_a_huge_call_is_recorded_by_its_meta_keys_and_a_long_error_is_cut() {
    let mut ctx = task();
    let long = "x".repeat(100_000);
    let call = json!({"_tool": "note", "_output": long, "_outputPath": "†state.v"});
    let call_bytes = call.to_string().len();
    one_turn(&mut ctx, json!({"calls": [call], "output": null}), |_| {});
    let errors = errors(&ctx);
    assert_eq!(errors.len(), 1);
    assert_eq!(
        errors[0]["call"],
        json!({"_tool": "note", "_outputPath": "†state.v"})
    );
    let text = errors[0]["error"].as_str().unwrap();
    assert!(
        text.starts_with("the call breaks its tool's schema: at /_output: \"xxx"),
        "{text}"
    );
    let (kept, rest) = text.split_once('…').unwrap();
    assert_eq!(kept.chars().count(), 1_000);
    assert!(
        rest.starts_with(" (") && rest.ends_with(&format!(
            " characters in all) (the call, {call_bytes} bytes of JSON, is recorded by its meta keys only)"
        )),
        "{rest}"
    );
    assert!(text.chars().count() < 1_200);
}

#[test]
fn r40_an_answer_fenced_as_json_is_read_and_other_fences_are_not() {
    let answer = |text: &str| Answer::from_text(text).map(|a| a.output);
    assert_eq!(
        answer("```json\n{\"calls\": [], \"output\": 1}\n```"),
        Ok(Some(json!(1)))
    );
    assert_eq!(
        answer("  ```\n{\"calls\": [], \"output\": 2}\n```\n"),
        Ok(Some(json!(2)))
    );
    assert_eq!(
        answer("```JSON\n{\"calls\": [], \"output\": 3}```"),
        Ok(Some(json!(3)))
    );
    for refused in [
        "```python\n{\"calls\": [], \"output\": 1}\n```",
        "Here it is: ```json\n{\"calls\": [], \"output\": 1}\n```",
        "```json\n{\"calls\": [], \"output\": 1}\n``` and more",
        "```json\n{\"calls\": [], \"output\": 1}",
    ] {
        let err = answer(refused).unwrap_err();
        assert!(
            err.starts_with("the answer is not JSON"),
            "{refused}: {err}"
        );
    }
}

#[test]
fn r39b_a_call_writes_at_most_16_destinations_and_each_once() {
    let mut ctx = task();
    let many: Vec<String> = (0..17).map(|i| format!("†state.a{i}")).collect();
    one_turn(
        &mut ctx,
        json!({"calls": [
            {"_tool": "note", "_output": "x", "_outputPath": many.join(" && ")},
            {"_tool": "note", "_output": "x", "_outputPath": "†state.a && †state.b && †state.a"},
            {"_tool": "note", "_output": "x", "_outputPath": many[..16].join(" && ")},
            {"_tool": "note", "_output": "x", "_outputPath": "†state.c || †state.c"}
        ], "output": null}),
        |_| {},
    );
    assert_eq!(
        texts(&ctx),
        [
            "the call's `_outputPath` has 17 destinations; a call may write at most 16",
            "the call's `_outputPath` writes †state.a twice in one outcome",
        ]
    );
    let state = ctx.read(&"†state".parse().unwrap(), None).unwrap();
    assert_eq!(state.as_object().unwrap().len(), 17, "{state}");
}

#[test]
fn r39b_an_answer_whose_calls_depend_on_each_other_too_often_is_one_error() {
    let mut ctx = task();
    // 400 calls write †state.x and 400 read it: 160,000 dependencies.
    let writers = (0..400)
        .map(|i| json!({"_tool": "note", "_output": format!("w{i}"), "_outputPath": "†state.x"}));
    let readers = (0..400).map(|i| json!({"_tool": "copy", "text": "†state.x", "_output": "r", "_outputPath": format!("†state.r{i}")}));
    let calls: Vec<Value> = writers.chain(readers).collect();
    let before = ctx.len();
    one_turn(&mut ctx, json!({"calls": calls, "output": null}), |_| {});
    assert_eq!(
        texts(&ctx),
        [
            "none of the answer's 800 calls ran: the calls depend on each other more than 100000 times in all"
        ]
    );
    assert_eq!(ctx.len(), before + 1);
}
