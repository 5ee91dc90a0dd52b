//! A model's misspelt `_` key is its call's error, naming the key it
//! meant (D63: typos refused); `_` keys the tool's schema declares are the
//! application's own.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use crate::common::{Script, clock};
use agent_core::{json, json::Value};
use agent_data::Context;
use agent_loop::{Loop, Tool};
use agent_plan::Activities;

/// A latent tool whose schema declares an application key, `_trace`.
fn note() -> Tool {
    Tool::new(
        json!({"type": "object", "properties": {"_tool": {"const": "note"},
            "_trace": {"type": "string"}, "_output": {"type": "string"}}}),
        "caller tool 0",
    )
    .unwrap()
}

fn one_turn(ctx: &mut Context, answer: Value) {
    let mut settings = Loop::new("scripted");
    settings.tools = vec![note()];
    settings.max_turns = 1;
    let script = Script::new(vec![Ok(answer)]);
    settings
        .run(&script, &Activities::new(), ctx, &clock(), &mut |_| {})
        .unwrap();
}

#[test]
fn d63_a_models_misspelt_key_is_its_calls_error_naming_the_key_meant() {
    let mut ctx = Context::from_json(r#"[{"type": "input", "data": {"city": "Rome"}}]"#).unwrap();
    one_turn(
        &mut ctx,
        json!({"calls": [
            {"_tool": "note", "_output": "lost", "_outputpath": "†state.a"},
            {"_tool": "note", "_output": "kept", "_outputPath": "†state.b", "_trace": "t1"}
        ], "output": null}),
    );
    let errors = ctx.read(&"†error".parse().unwrap(), None).unwrap();
    let texts: Vec<&str> = errors
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["error"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts,
        [r#"unknown key "_outputpath"; did you mean "_outputPath"?"#]
    );
    // The key the tool declares is admitted; the misspelt call wrote nothing.
    let state = ctx.read(&"†state".parse().unwrap(), None).unwrap();
    assert_eq!(state, &json!({"b": "kept"}));
}
