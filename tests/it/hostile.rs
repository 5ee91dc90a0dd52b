//! Hostile input (R33): whatever arrives, every library entry point returns
//! `Ok` or a typed `Err` — never a panic, never a stack overflow — and a
//! refused write changes nothing. Proptest drives random and mutated inputs;
//! the fixed cases cover the classic attacks.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use agent_core::{json, json::Value};
use agent_data::{CheckMode, Context, DataMessage, Format, Message};
use agent_output::{FixedClock, Outcome, OutputPath};
use agent_render::{PayloadFormat, RenderMode, Renderer, payload};
use proptest::prelude::*;

/// Everything the library offers, run on one context and one call; the
/// results are ignored — only panics (which fail the test) matter.
fn exercise(ctx: &Context, call: &Value) {
    let _ = ctx.check(CheckMode::Complete);
    let _ = ctx.diagnostics();
    for instance in ctx
        .instances()
        .cloned()
        .collect::<Vec<_>>()
        .iter()
        .map(Some)
        .chain([None])
    {
        for id in ctx.identities() {
            let _ = ctx.view(&id.kind, instance);
        }
    }
    for mode in [RenderMode::Merged, RenderMode::Append] {
        let chat = Renderer::new().render(ctx, mode);
        for provider in [
            PayloadFormat::Plain,
            PayloadFormat::OpenAi,
            PayloadFormat::Anthropic,
            PayloadFormat::Text,
        ] {
            let _ = payload(&chat, provider).map(|p| p.to_text(true));
        }
    }
    let _ = agent_vars::resolve_call(call, ctx);
    let _ = agent_vars::call_reads(call);
    let _ = agent_instancing::split(ctx);
    let clock = FixedClock::parse("2026-01-01T00:00:00Z").unwrap();
    // Hostile calls must fail to parse, not panic; the rest go on.
    let Ok(parsed) = agent_output::Call::parse(call.clone()) else {
        return;
    };
    for outcome in [
        Outcome::Success(json!(1)),
        Outcome::Failure(json!("e")),
        Outcome::Chosen {
            index: 1,
            value: json!(null),
        },
        Outcome::Message(call.clone()),
    ] {
        let mut copy = ctx.clone();
        let before = copy.to_jsonl();
        if agent_output::apply(&mut copy, &parsed, outcome, &clock).is_err() {
            assert_eq!(copy.to_jsonl(), before, "a refused write changes nothing");
        }
    }
    let _ = agent_instancing::apply_batch(
        &mut ctx.clone(),
        vec![(parsed, Outcome::Success(json!(2)))],
        &clock,
        agent_instancing::Schedule::Parallel,
    );
}

fn load_both(bytes: &[u8]) {
    for format in [Format::Json, Format::Jsonl] {
        if let Ok(loaded) = Context::load(bytes, format) {
            exercise(&loaded.context, &json!({"_outputPath": "†state.x"}));
        }
    }
}

fn strings(text: &str) {
    let _ = agent_vars::parse(text);
    let _ = agent_vars::Expression::parse(text).map(|e| e.to_string());
    let _ = agent_core::Path::parse(text);
    let _ = agent_core::Reference::parse(text);
    let _ = OutputPath::parse(text);
    let _ = text.parse::<agent_core::Method>();
    let _ = agent_core::Kind::new(text);
}

/// Arbitrary JSON, biased toward the shapes messages have.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".*".prop_map(Value::from),
        prop::sample::select(vec![
            "text",
            "data",
            "input",
            "state",
            "plan",
            "†state.x",
            "†state.x || †state.y",
            "push",
            "concat",
            "set",
            "①",
            "_x",
            ""
        ])
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        let key = prop::sample::select(vec![
            "type",
            "text",
            "role",
            "content",
            "data",
            "input",
            "kind",
            "schema",
            "description",
            "_instance",
            "_outputPath",
            "_outputMethod",
            "_call",
            "_date",
            "x",
            "y",
            "0",
            "-1",
            "",
        ]);
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::from),
            prop::collection::vec((key, inner), 0..6).prop_map(|kv| Value::Object(
                kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
            )),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn r33_random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        load_both(&bytes);
    }

    #[test]
    fn r33_random_json_contexts_never_panic(messages in prop::collection::vec(json_value(), 0..8), call in json_value()) {
        let text = Value::Array(messages.clone().into()).to_string();
        if let Ok(ctx) = Context::from_json(&text) {
            exercise(&ctx, &call);
        }
        let jsonl: String = messages.iter().map(|m| format!("{m}\n")).collect();
        load_both(jsonl.as_bytes());
        for m in messages {
            let _ = Message::from_value(m.clone());
            let _ = DataMessage::from_value(m);
        }
    }

    #[test]
    fn r33_mutated_valid_contexts_never_panic(cut in 0usize..2000, byte in any::<u8>(), flip in 0usize..2000) {
        let valid = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/batch.jsonl")).unwrap();
        let mut mutated = valid.clone();
        let at = flip % mutated.len();
        mutated[at] = byte;
        load_both(&mutated);
        load_both(&valid[..cut.min(valid.len())]);
    }

    #[test]
    fn r33_expression_text_never_panics(text in "[†\"\\[\\]|&\\\\ .a-z0-9()\\-\u{0}-\u{1f}\u{2020}\u{fffd}]{0,64}", any_text in any::<String>()) {
        strings(&text);
        strings(&any_text);
        strings(&format!("†{any_text}"));
    }
}

#[test]
fn r33_ten_thousand_deep_nesting_is_an_error() {
    let deep = format!(
        "[{{\"data\":{}1{}}}]",
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    assert!(Context::from_json(&deep).is_err());
    let deep_object = format!("{}1{}", "{\"a\":".repeat(10_000), "}".repeat(10_000));
    assert!(
        Context::load(
            format!("{{\"data\":{deep_object}}}\n").as_bytes(),
            Format::Jsonl
        )
        .is_err()
    );
    // Values built in memory, deeper than any parser here would allow, are
    // refused before anything walks them recursively. (Built by moving, not
    // with `json!` or `clone`, which recurse; leaked at the end because
    // serde_json's own `Drop` recurses too.)
    let deep = || {
        (0..10_000).fold(Value::from("†state.x"), |inner, _| {
            Value::Array(vec![inner].into())
        })
    };
    let object = |pairs: Vec<(&str, Value)>| {
        Value::Object(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
    };
    let call = object(vec![("p", Value::from(1)), ("_meta", deep())]);
    let err = agent_vars::resolve_call(&call, &Context::new()).unwrap_err();
    assert!(matches!(err, agent_vars::Error::TooDeep { .. }), "{err}");
    let clock = FixedClock::parse("2026-01-01T00:00:00Z").unwrap();
    let outcome = Outcome::Success(deep());
    let shallow = agent_output::Call::parse(json!({"_outputPath": "†state.x"})).unwrap();
    let err = agent_output::messages_for(&shallow, outcome, &clock).unwrap_err();
    assert!(matches!(err, agent_output::Error::TooDeep { .. }), "{err}");
    let message = object(vec![("type", Value::from("data")), ("data", deep())]);
    assert!(matches!(
        DataMessage::from_value(message),
        Err(agent_data::MessageFault::TooDeep { .. })
    ));
    agent_core::drop_deep(call);
}

#[test]
fn r33_ten_megabyte_strings_and_huge_arrays_load() {
    let big = "x".repeat(10 << 20);
    let text = json!([{"type": "text", "text": big}, {"type": "state", "data": {"s": big, "list": vec![0; 1_000_000]}}]).to_string();
    let mut ctx = Context::from_json(&text).unwrap();
    // One pass of each kind of work (the full `exercise` is slow at this size
    // in a debug build): read, check, render, resolve, write.
    let state = agent_core::Kind::new("state").unwrap();
    assert_eq!(
        ctx.view(&state, None).unwrap()["list"]
            .as_array()
            .map(Vec::len),
        Some(1_000_000)
    );
    assert!(ctx.check(CheckMode::Complete).is_empty());
    let chat = Renderer::new().render(&ctx, RenderMode::Merged);
    assert!(payload(&chat, PayloadFormat::OpenAi).is_ok());
    assert!(agent_vars::resolve_call(&json!({"s": "†state.s"}), &ctx).is_ok());
    let clock = FixedClock::parse("2026-01-01T00:00:00Z").unwrap();
    let call =
        agent_output::Call::parse(json!({"_outputPath": "†state.s", "_outputMethod": "concat"}))
            .unwrap();
    agent_output::apply(&mut ctx, &call, Outcome::Success(json!("y")), &clock).unwrap();
    assert_eq!(
        ctx.read(&"†state.s".parse().unwrap(), None)
            .and_then(Value::as_str)
            .map(str::len),
        Some((10 << 20) + 1)
    );
    let expr = format!("†state.{big}");
    strings(&expr);
    strings(&"†".repeat(1 << 20));
    strings(&"|| &&".repeat(200_000));
}

#[test]
fn r3_numbers_of_any_size_round_trip_exactly() {
    // serde_json's arbitrary_precision keeps a number's text: nothing is
    // rounded through f64 or refused for its size (D20: numbers keep their text).
    for number in [
        "123456789012345678901234567890",
        "-18446744073709551617",
        "0.10000000000000000000000001",
        "1.0",
        "1e+400",
    ] {
        let ctx = Context::from_json(&format!(r#"[{{"data": {{"n": {number}}}}}]"#)).unwrap();
        let line = ctx.to_jsonl();
        assert!(
            line.contains(&format!(r#""n":{number}"#)),
            "{number} became {line}"
        );
    }
    // Exponents are written with their sign: the same number, spelled canonically.
    let ctx = Context::from_json(r#"[{"data": {"n": 1e400}}]"#).unwrap();
    assert!(
        ctx.to_jsonl().contains(r#""n":1e+400"#),
        "{}",
        ctx.to_jsonl()
    );
}

#[test]
fn r33_duplicate_keys_keep_the_last_value() {
    let ctx =
        Context::from_json(r#"[{"type":"state","data":{"a":1,"a":2},"type":"state"}]"#).unwrap();
    assert_eq!(
        ctx.view(&agent_core::Kind::new("state").unwrap(), None),
        Some(&json!({"a": 2}))
    );
}

#[test]
fn r33_control_characters_and_surrogates() {
    assert!(
        Context::from_json("[{\"type\":\"text\",\"text\":\"a\u{1}b\"}]").is_err(),
        "raw control characters are invalid JSON"
    );
    let ok = Context::from_json(r#"[{"type":"text","text":"a\u0001b\u0000"}]"#).unwrap();
    exercise(&ok, &json!({}));
    let err = Context::from_json(r#"[{"type":"text","text":"\ud800"}]"#).unwrap_err();
    assert!(
        matches!(err, agent_data::Error::Json { .. }),
        "a lone surrogate is an error: {err}"
    );
    assert!(
        Context::from_json(r#"[{"type":"text","text":"\ud83d\ude00"}]"#).is_ok(),
        "a pair is fine"
    );
}

#[test]
fn r33_invalid_utf8_is_an_error() {
    let mut bytes = b"{\"type\":\"text\",\"text\":\"".to_vec();
    bytes.extend_from_slice(&[0xff, 0xfe, 0x80]);
    bytes.extend_from_slice(b"\"}\n");
    let err = Context::load(&bytes, Format::Jsonl).unwrap_err();
    assert!(
        matches!(err, agent_data::Error::Json { line: 1, .. }),
        "{err}"
    );
}

#[test]
fn r33_dagger_storms() {
    for storm in [
        "†".repeat(10_000),
        "†a||".repeat(10_000),
        "†a&&†".repeat(10_000),
        format!("†a{}", "[".repeat(10_000)),
        "\\†".repeat(10_000),
    ] {
        strings(&storm);
        let ctx = Context::from_json(r#"[{"type":"state","data":{"a":1}}]"#).unwrap();
        let _ = agent_vars::resolve_call(&json!({"p": storm, "q": [storm, {"r": storm}]}), &ctx);
    }
}
