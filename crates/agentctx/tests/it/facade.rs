//! The facade: one import, one error type, and each convenience doing what
//! its layer would, with the errors' `Display` asserted.
//!
//! The PostgreSQL test uses `AGENTCTX_TEST_DATABASE_URL`, else
//! `postgres://root@127.0.0.1:5432/test` (what `cargo xtask ci` provides);
//! without a server it fails and says so, it is never skipped.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use agent_core::{json, json::Value};
use agentctx::prelude::*;
use agentctx::{BoxError, Error};

fn context() -> Context {
    Context::from_json(
        r#"[
          {"type": "input", "data": {"name": "Ada", "days": 3}},
          {"type": "state", "data": {"lang": "en", "empty": null}},
          {"type": "state", "data": {"lang": "fr"}, "_instance": "①"}
        ]"#,
    )
    .unwrap()
}

#[test]
fn r17_get_reads_an_expression_in_one_call() {
    let ctx = context();
    assert_eq!(ctx.get("†input.name").unwrap(), json!("Ada"));
    assert_eq!(ctx.get("†state.empty || †state.lang").unwrap(), json!("en"));
    let missing = ctx
        .get("†state.name || †state.empty && †input.x")
        .unwrap_err();
    assert!(missing.is_unresolved());
    assert_eq!(
        missing.to_string(),
        "†state.name || †state.empty && †input.x is unresolved: not present: †state.name, †state.empty, †input.x"
    );
}

#[test]
fn r5_get_in_reads_the_instance_layer_over_the_global_one() {
    let ctx = context();
    assert_eq!(ctx.get_in("†state.lang", "①").unwrap(), json!("fr"));
    assert_eq!(ctx.get_in("†input.name", "①").unwrap(), json!("Ada"));
    assert_eq!(ctx.get("†state.lang").unwrap(), json!("en"));
    let bad = ctx.get_in("†state.lang", " ①").unwrap_err();
    assert!(matches!(bad, Error::Core(_)), "{bad:?}");
    assert!(
        bad.to_string().starts_with("invalid instance id \" ①\": "),
        "{bad}"
    );
}

#[test]
fn r15_syntax_errors_display_the_expression_and_a_caret() {
    let ctx = context();
    let error = ctx.get("†state.a && (†state.b)").unwrap_err();
    assert_eq!(
        error.to_string(),
        "syntax error at byte 14: parentheses are not part of the expression syntax\n\
         †state.a && (†state.b)\n            ^"
    );
    let forgotten = ctx.get("input.name").unwrap_err();
    assert_eq!(
        forgotten.to_string(),
        "syntax error at byte 0: expected '†' (an expression starts with a reference): \
         did you mean \"†input.name\"?\ninput.name\n^"
    );
}

#[test]
fn r18_resolve_call_replaces_references_and_a_pending_call_is_unresolved() {
    let ctx = context();
    let call = json!({"_tool": "book", "who": "†input.name", "n": "†input.days", "_outputPath": "†state.x"});
    assert_eq!(
        ctx.resolve_call(&call).unwrap(),
        json!({"_tool": "book", "who": "Ada", "n": 3, "_outputPath": "†state.x"})
    );
    let pending = ctx
        .resolve_call(&json!({"a": "†state.gone", "b": ["†input.none"]}))
        .unwrap_err();
    assert_eq!(
        pending.to_string(),
        "the call is unresolved: not present: †state.gone, †input.none"
    );
    let bad = ctx
        .resolve_call(&json!({"a": {"b": "†input.x ||"}}))
        .unwrap_err();
    assert!(matches!(bad, Error::Syntax { .. }), "{bad:?}");
    assert_eq!(
        bad.to_string(),
        "/a/b: syntax error at byte 13: expected a reference after the operator, found the end\n\
         †input.x ||\n           ^"
    );
}

#[test]
fn r20_activity_closures_use_question_mark_on_any_error() {
    let parse = activity(|call: &Value| {
        let text = call["text"].as_str().ok_or("text must be a string")?;
        let parsed: Value = agent_core::json::from_str(text)?;
        let n: i64 = parsed["n"].as_str().ok_or("no n")?.parse()?;
        if n < 0 {
            return Err(Failure(json!({"negative": n})).into());
        }
        Ok(json!(n))
    });
    assert_eq!(
        parse.run(&json!({"text": "{\"n\": \"5\"}"})),
        Outcome::Success(json!(5))
    );
    assert_eq!(
        parse.run(&json!({"text": 1})),
        Outcome::Failure(json!({"error": "text must be a string"}))
    );
    assert_eq!(
        parse.run(&json!({"text": "{"})),
        Outcome::Failure(json!({"error": "EOF while parsing an object at line 1 column 1"}))
    );
    assert_eq!(
        parse.run(&json!({"text": "{\"n\": \"x\"}"})),
        Outcome::Failure(json!({"error": "invalid digit found in string"}))
    );
    assert_eq!(
        parse.run(&json!({"text": "{\"n\": \"-2\"}"})),
        Outcome::Failure(json!({"negative": -2}))
    );
}

#[test]
fn r20_an_activity_error_is_written_to_the_failure_outcome_of_a_plan() {
    let mut ctx = context();
    let mut activities = Activities::new();
    activities.register(
        "check",
        activity(|call: &Value| -> Result<Value, BoxError> {
            Err(format!("{} days is too long", call["days"]).into())
        }),
    );
    let plan = Plan::new(vec![json!({
        "_tool": "check", "days": "†input.days",
        "_outputPath": "†state.ok || †state.error"
    })])
    .unwrap();
    assert!(plan.run(&mut ctx, &activities, &SystemClock).all_done());
    assert_eq!(
        ctx.get("†state.error").unwrap(),
        json!({"error": "3 days is too long"})
    );
}

#[test]
fn r31_render_returns_the_payload_as_one_json_value() {
    let ctx = context();
    let openai = payload(&ctx, PayloadFormat::OpenAi, RenderMode::Merged).unwrap();
    assert_eq!(openai["messages"].as_array().unwrap().len(), 3);
    assert!(
        openai["messages"][0]["content"]
            .as_str()
            .unwrap()
            .starts_with("## Data: ¶input\n")
    );
    let text = payload(&ctx, PayloadFormat::Text, RenderMode::Append).unwrap();
    assert!(
        text.as_str()
            .unwrap()
            .starts_with("[user]\n## Data: ¶input\n")
    );
    let assistant_first =
        Context::from_json(r#"[{"type":"text","role":"assistant","text":"hi"}]"#).unwrap();
    let refused = payload(
        &assistant_first,
        PayloadFormat::Anthropic,
        RenderMode::Merged,
    )
    .unwrap_err();
    assert!(matches!(refused, Error::Render(_)), "{refused:?}");
}

#[test]
fn r34_a_stored_context_opens_applies_and_saves_in_one_motion() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("task.jsonl");
    let address = path.to_str().unwrap();
    assert!(StoredContext::open_existing(address).is_err());
    let mut ctx = StoredContext::open(address)
        .unwrap()
        .with_clock(FixedClock::parse("2026-01-02T03:04:05Z").unwrap());
    assert_eq!(
        ctx.append(json!([
            {"type": "input", "data": {"city": "Austin"}},
            {"type": "state", "data": {"n": 0}, "schema": {"properties": {"n": {"maximum": 1}}}}
        ]))
        .unwrap(),
        2
    );
    let written = ctx
        .apply(
            json!({"_tool": "t", "_outputPath": "†state.n"}),
            Outcome::Success(json!(1)),
        )
        .unwrap();
    assert_eq!(written.len(), 1);
    // Saved already: a second handle reads it from the file.
    let other = StoredContext::open_existing(address).unwrap();
    assert_eq!(other.get("†state.n").unwrap(), json!(1));
    assert_eq!(other.context().len(), 3);
    let line = std::fs::read_to_string(&path).unwrap();
    assert!(
        line.contains("\"_date\":\"2026-01-02T03:04:05Z\""),
        "{line}"
    );

    // A refused write leaves the file as it was.
    let before = std::fs::read(&path).unwrap();
    let refused = ctx
        .apply(
            json!({"_tool": "t", "_outputPath": "†state.n"}),
            Outcome::Success(json!(2)),
        )
        .unwrap_err();
    assert!(matches!(refused, Error::Output(_)), "{refused:?}");
    assert!(refused.to_string().contains("schema violated"), "{refused}");
    assert_eq!(std::fs::read(&path).unwrap(), before);

    // A bad message names its place in the batch.
    let bad = ctx
        .append(json!([{"type": "text", "text": "ok"}, {"type": "data"}]))
        .unwrap_err();
    assert!(bad.to_string().starts_with("message 1: "), "{bad}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn r34b_a_stored_context_sees_other_writers_after_refresh() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.jsonl");
    let address = path.to_str().unwrap();
    let mut first = StoredContext::open(address).unwrap();
    let mut second = StoredContext::open(address).unwrap();
    first
        .append(json!({"type": "state", "data": {"log": []}}))
        .unwrap();
    // The second handle has not read the file since; its push is still
    // validated against — and lands after — the first one's message.
    second
        .apply(
            json!({"_tool": "t", "_outputPath": "†state.log", "_outputMethod": "push"}),
            Outcome::Success(json!("b")),
        )
        .unwrap();
    assert_eq!(second.get("†state.log").unwrap(), json!(["b"]));
    assert!(first.get("†state.log").unwrap() == json!([]));
    first.refresh().unwrap();
    assert_eq!(first.get("†state.log").unwrap(), json!(["b"]));
}

#[cfg(feature = "postgres")]
#[test]
fn r34b_a_stored_context_in_postgresql_runs_a_plan() {
    let (url, mut ctx) = crate::support::fresh_pg("facade");
    ctx.append(json!({"type": "input", "data": {"id": 7}}))
        .unwrap_or_else(|e| {
            panic!("{e}\nthis test needs PostgreSQL: run `cargo xtask ci`, or set AGENTCTX_TEST_DATABASE_URL")
        });
    let mut activities = Activities::new();
    activities.register(
        "fetch",
        activity(|call: &Value| Ok(json!({"name": format!("user {}", call["id"])}))),
    );
    let report = ctx
        .run(
            vec![json!({"_tool": "fetch", "id": "†input.id", "_outputPath": "†state.profile"})],
            &activities,
        )
        .unwrap();
    assert!(report.all_done(), "{}", agent_core::json!(report));
    let reopened = StoredContext::open_existing(&url).unwrap();
    assert_eq!(
        reopened.get("†state.profile.name").unwrap(),
        json!("user 7")
    );
    assert_eq!(reopened.context().len(), 2);
}

/// What an application writes around the facade: its own file read and its
/// own JSON parsed, both with `?` into `agentctx::Error`.
fn read_call(path: &std::path::Path) -> agentctx::Result<agent_core::json::Value> {
    let text = std::fs::read_to_string(path)?;
    Ok(agent_core::json::from_str(&text)?)
}

#[test]
fn an_applications_io_and_json_errors_convert_into_the_facades_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.json");
    let err = read_call(&missing).unwrap_err();
    assert!(matches!(err, agentctx::Error::Io(_)), "{err:?}");
    assert!(err.to_string().starts_with("I/O error: "), "{err}");

    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{").unwrap();
    let err = read_call(&bad).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid JSON: EOF while parsing an object at line 1 column 1"
    );

    let good = dir.path().join("call.json");
    std::fs::write(&good, r#"{"_tool": "t"}"#).unwrap();
    assert_eq!(read_call(&good).unwrap(), agent_core::json!({"_tool": "t"}));
}
