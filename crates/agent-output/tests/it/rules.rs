//! spec R19–R23, with R6, R13 and R25 as they apply to writes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use agent_core::{json, json::Value};
use agent_data::Append;
use agent_data::{Context, Error as DataError};
use agent_output::{Call, Clock, Error, FixedClock, Outcome, OutputPath, Result};

// The crate's functions, given a call as the model wrote it: parsed here,
// so a call's parse errors are part of what each rule test sees.

fn apply(
    target: &mut (impl Append + ?Sized),
    call: &Value,
    outcome: Outcome,
    clock: &dyn Clock,
) -> Result<Vec<agent_data::Message>> {
    agent_output::apply(target, &Call::parse(call.clone())?, outcome, clock)
}

fn messages_for(
    call: &Value,
    outcome: Outcome,
    clock: &dyn Clock,
) -> Result<Vec<agent_data::Message>> {
    agent_output::messages_for(&Call::parse(call.clone())?, outcome, clock)
}

fn check_tool_schema(call: &Value, context: &Context, schema: &Value) -> Result<()> {
    agent_output::check_tool_schema(&Call::parse(call.clone())?, context, schema)
}

fn clock() -> FixedClock {
    FixedClock::parse("2026-11-21T10:00:00Z").unwrap()
}

fn read(ctx: &Context, r: &str, instance: Option<&str>) -> Option<Value> {
    let instance = instance.map(|x| agent_core::Instance::new(x).unwrap());
    ctx.read(&r.parse().unwrap(), instance.as_ref()).cloned()
}

fn values(messages: &[agent_data::Message]) -> Vec<Value> {
    messages.iter().map(|m| m.to_value()).collect()
}

#[test]
fn r19_outcomes_and_destinations() {
    let p = OutputPath::parse("†state.receipt || †state.error").unwrap();
    assert_eq!(p.outcomes().len(), 2);
    let p = OutputPath::parse(" †data.user.summary&&†data.audit.summary ").unwrap();
    assert_eq!(p.outcomes().len(), 1);
    assert_eq!(p.to_string(), "†data.user.summary && †data.audit.summary");
    assert!(matches!(
        OutputPath::parse("state.x"),
        Err(Error::OutputPathNotExpression { .. })
    ));
    assert!(matches!(
        OutputPath::parse("†state.x ||"),
        Err(Error::OutputPathSyntax(_))
    ));
}

#[test]
fn r20_success_writes_outcome_0_with_metadata() {
    // spec §11 example 2.
    let mut ctx = Context::from_json(
        r#"[{"type":"data","data":{"user":{"name":"Alex","status":"active"}}}]"#,
    )
    .unwrap();
    let call = json!({"_tool": "updateUserStatus", "newStatus": "inactive", "_outputPath": "†data.user.status"});
    let appended = apply(
        &mut ctx,
        &call,
        Outcome::Success(json!("inactive")),
        &clock(),
    )
    .unwrap();
    assert_eq!(
        values(&appended),
        [
            json!({"type": "data", "kind": "data", "data": {"user": {"status": "inactive"}},
                "_outputPath": "†data.user.status", "_outputMethod": "set", "_call": call,
                "_date": "2026-11-21T10:00:00Z"})
        ]
    );
    assert_eq!(
        read(&ctx, "†data.user.status", None),
        Some(json!("inactive"))
    );
    assert_eq!(read(&ctx, "†data.user.name", None), Some(json!("Alex")));
}

#[test]
fn r20_failure_writes_outcome_1() {
    let mut ctx = Context::new();
    let call = json!({"_outputPath": "†state.receipt || †state.error"});
    apply(
        &mut ctx,
        &call,
        Outcome::Failure(json!({"code": 402})),
        &clock(),
    )
    .unwrap();
    assert_eq!(read(&ctx, "†state.error.code", None), Some(json!(402)));
    assert_eq!(read(&ctx, "†state.receipt", None), None);
}

#[test]
fn r20_unhandled_failure_is_an_error_and_appends_nothing() {
    let mut ctx = Context::new();
    let err = apply(
        &mut ctx,
        &json!({"_outputPath": "†state.x"}),
        Outcome::Failure(json!("boom")),
        &clock(),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "unhandled failure: `_outputPath` has one outcome, so a failure has nowhere to go: \"boom\""
    );
    assert!(ctx.is_empty());
}

#[test]
fn r20_chosen_outcome_and_out_of_range() {
    let mut ctx = Context::new();
    let call = json!({"_outputPath": "†state.a || †state.b || †state.c"});
    apply(
        &mut ctx,
        &call,
        Outcome::Chosen {
            index: 2,
            value: json!(1),
        },
        &clock(),
    )
    .unwrap();
    assert_eq!(read(&ctx, "†state.c", None), Some(json!(1)));
    let err = apply(
        &mut ctx,
        &call,
        Outcome::Chosen {
            index: 3,
            value: json!(1),
        },
        &clock(),
    )
    .unwrap_err();
    assert!(matches!(err, Error::NoSuchOutcome { index: 3, count: 3 }));
    assert_eq!(ctx.len(), 1);
}

#[test]
fn r20_fan_out_one_message_per_destination() {
    let mut ctx = Context::new();
    let call =
        json!({"_outputPath": "†data.user.summary && †audit.summary", "_outputMethod": "set"});
    let appended = apply(&mut ctx, &call, Outcome::Success(json!("s")), &clock()).unwrap();
    let paths: Vec<&str> = appended
        .iter()
        .map(|m| m.fields()["_outputPath"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["†data.user.summary", "†audit.summary"]);
    assert_eq!(read(&ctx, "†data.user.summary", None), Some(json!("s")));
    assert_eq!(read(&ctx, "†audit.summary", None), Some(json!("s")));
}

#[test]
fn r20_fan_out_records_the_call_once_and_later_messages_point_back_to_it() {
    // D36: the first message carries `_call`; each later one `_callAt`, how
    // many messages back the one carrying it is.
    let mut ctx = Context::new();
    let call = json!({"_tool": "t", "p": 1, "_instance": "c1", "_outputMethod": "push",
        "_outputPath": "†state.a && †audit.b.c && †state.d"});
    let appended = apply(&mut ctx, &call, Outcome::Success(json!("v")), &clock()).unwrap();
    let common = |kind: &str, data: Value, path: &str| {
        json!({"type": "data", "kind": kind, "data": data, "_outputPath": path,
            "_outputMethod": "push"})
    };
    let mut expected = vec![
        common("state", json!({"a": "v"}), "†state.a"),
        common("audit", json!({"b": {"c": "v"}}), "†audit.b.c"),
        common("state", json!({"d": "v"}), "†state.d"),
    ];
    for (i, message) in expected.iter_mut().enumerate() {
        let fields = message.as_object_mut().unwrap();
        match i {
            0 => fields.insert("_call".into(), call.clone()),
            i => fields.insert("_callAt".into(), json!(-(i as i64))),
        };
        fields.insert("_date".into(), json!("2026-11-21T10:00:00Z"));
        fields.insert("_instance".into(), json!("c1"));
    }
    assert_eq!(values(&appended), expected);
    // Key order too: `_callAt` stands where `_call` would.
    assert_eq!(
        appended[2].to_value().to_string(),
        r#"{"type":"data","kind":"state","data":{"d":"v"},"_outputPath":"†state.d","_outputMethod":"push","_callAt":-2,"_date":"2026-11-21T10:00:00Z","_instance":"c1"}"#
    );
    // Appended together and contiguously, so each offset lands on `_call`.
    let stored: Vec<Value> = ctx.messages().map(|m| m.to_value()).collect();
    for (at, message) in stored.iter().enumerate() {
        let back = message.get("_callAt").map_or(0, |k| k.as_i64().unwrap());
        let first = usize::try_from(at as i64 + back).unwrap();
        assert_eq!(stored[first]["_call"], call, "message {at}");
    }
    assert_eq!(read(&ctx, "†audit.b.c", Some("c1")), Some(json!(["v"])));
    // A result with one destination is unchanged: `_call`, no `_callAt`.
    let one = messages_for(
        &json!({"_outputPath": "†state.x"}),
        Outcome::Success(json!(1)),
        &clock(),
    )
    .unwrap();
    assert!(one[0].fields().contains_key("_call"));
    assert!(!one[0].fields().contains_key("_callAt"));
}

#[test]
fn r20_index_segments_nest_as_digit_keys_and_path_is_canonical() {
    let call = json!({"_outputPath": "†state[\"arr\"][2]"});
    let messages = messages_for(&call, Outcome::Success(json!("v")), &clock()).unwrap();
    assert_eq!(messages[0].fields()["data"], json!({"arr": {"2": "v"}}));
    assert_eq!(messages[0].fields()["_outputPath"], json!("†state.arr[2]"));
}

#[test]
fn r20_empty_path_stores_value_itself() {
    let messages = messages_for(
        &json!({"_outputPath": "†state"}),
        Outcome::Success(json!([1])),
        &clock(),
    )
    .unwrap();
    assert_eq!(messages[0].fields()["data"], json!([1]));
}

#[test]
fn r20_output_method_is_carried_and_validated_first() {
    let mut ctx = Context::new();
    let call = json!({"_outputPath": "†state.log", "_outputMethod": "push"});
    apply(&mut ctx, &call, Outcome::Success(json!(1)), &clock()).unwrap();
    apply(&mut ctx, &call, Outcome::Success(json!(2)), &clock()).unwrap();
    assert_eq!(read(&ctx, "†state.log", None), Some(json!([1, 2])));
    // The rejected value is shown as JSON, once quoted (no Rust debug text).
    for (method, shown) in [
        (json!("append"), "\"append\""),
        (json!("a\"b"), "\"a\\\"b\""),
    ] {
        let bad = json!({"_outputPath": "†state.log", "_outputMethod": method});
        let error = apply(&mut ctx, &bad, Outcome::Success(json!(3)), &clock()).unwrap_err();
        assert!(matches!(error, Error::UnknownMethod(_)), "{error}");
        assert_eq!(
            error.to_string(),
            format!(
                "`_outputMethod`: unknown method {shown}: expected set, merge, assign, push, concat or erase"
            )
        );
    }
    let bad = json!({"_outputPath": "†state.log", "_outputMethod": 5});
    let error = apply(&mut ctx, &bad, Outcome::Success(json!(3)), &clock()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "`_outputMethod` must be a string, found a number"
    );
    assert_eq!(ctx.len(), 2);
}

#[test]
fn r20_all_messages_of_a_result_are_validated_before_any_is_appended() {
    let mut ctx = Context::from_json(r#"[{"type":"state","data":{"n":1}}]"#).unwrap();
    let before = ctx.to_jsonl();
    // The first destination is fine, the second is a type error (push onto a number).
    let call = json!({"_outputPath": "†state.ok && †state.n", "_outputMethod": "push"});
    let err = apply(&mut ctx, &call, Outcome::Success(json!(1)), &clock()).unwrap_err();
    assert!(
        matches!(err, Error::Append(DataError::TypeError { index: 2, .. })),
        "{err:?}"
    );
    assert_eq!(ctx.to_jsonl(), before);
}

#[test]
fn r21_no_output_path_appends_nothing() {
    let mut ctx = Context::new();
    for outcome in [
        Outcome::Success(json!(1)),
        Outcome::Failure(json!(1)),
        Outcome::Message(json!({"type": "data", "data": 1})),
    ] {
        assert!(
            apply(&mut ctx, &json!({"_tool": "log"}), outcome, &clock())
                .unwrap()
                .is_empty()
        );
    }
    assert!(ctx.is_empty());
}

#[test]
fn r22_returned_message_appended_with_call_and_date_added() {
    let mut ctx = Context::new();
    let call = json!({"_tool": "fetch", "_outputPath": "†state.profile"});
    let message = json!({"type": "state", "data": {"profile": {"id": 1}}, "_date": "2000-01-01T00:00:00Z", "note": "kept"});
    let appended = apply(&mut ctx, &call, Outcome::Message(message), &clock()).unwrap();
    assert_eq!(
        values(&appended),
        [
            json!({"type": "data", "kind": "state", "data": {"profile": {"id": 1}}, "_date": "2000-01-01T00:00:00Z", "note": "kept", "_call": call})
        ]
    );
    assert!(matches!(
        apply(
            &mut ctx,
            &call,
            Outcome::Message(json!({"type": "text", "text": "x"})),
            &clock()
        ),
        Err(Error::BadMessage(_))
    ));
}

#[test]
fn r6_call_instance_is_set_on_every_message_and_forced_on_returned_ones() {
    let mut ctx = Context::from_json(r#"[{"type":"state","data":{"shared":1}}]"#).unwrap();
    let call = json!({"_instance": "①", "_outputPath": "†state.a && †state.b"});
    let appended = apply(&mut ctx, &call, Outcome::Success(json!(1)), &clock()).unwrap();
    assert!(
        appended
            .iter()
            .all(|m| m.fields()["_instance"] == json!("①"))
    );
    assert_eq!(read(&ctx, "†state.a", Some("①")), Some(json!(1)));
    assert_eq!(
        read(&ctx, "†state.a", None),
        None,
        "the global layer is untouched"
    );
    let returned = apply(
        &mut ctx,
        &call,
        Outcome::Message(json!({"type": "state", "data": {"c": 2}})),
        &clock(),
    )
    .unwrap();
    assert_eq!(returned[0].fields()["_instance"], json!("①"));
    let err = apply(
        &mut ctx,
        &call,
        Outcome::Message(json!({"type": "state", "data": {"c": 3}, "_instance": "②"})),
        &clock(),
    )
    .unwrap_err();
    assert!(matches!(err, Error::WrongInstance { .. }), "{err:?}");
}

#[test]
fn r13_type_error_against_current_view_is_refused() {
    let mut ctx = Context::from_json(r#"[{"type":"state","data":{"title":"t"}}]"#).unwrap();
    let call = json!({"_outputPath": "†state.title", "_outputMethod": "concat"});
    assert!(apply(&mut ctx, &call, Outcome::Success(json!([1])), &clock()).is_err());
    apply(&mut ctx, &call, Outcome::Success(json!("!")), &clock()).unwrap();
    assert_eq!(read(&ctx, "†state.title", None), Some(json!("t!")));
}

#[test]
fn r25_schema_violation_is_refused() {
    let mut ctx = Context::from_json(
        r#"[{"type":"state","data":{},"schema":{"properties":{"score":{"type":"number"}}}}]"#,
    )
    .unwrap();
    let call = json!({"_outputPath": "†state.score"});
    let err = apply(&mut ctx, &call, Outcome::Success(json!("high")), &clock()).unwrap_err();
    assert!(
        matches!(err, Error::Append(DataError::Schema { .. })),
        "{err:?}"
    );
    apply(&mut ctx, &call, Outcome::Success(json!(9)), &clock()).unwrap();
}

#[test]
fn r23_tool_schema_prescribes_or_constrains_output_path() {
    let ctx = Context::new();
    let fixed = json!({"type": "object", "properties": {"_outputPath": {"type": "string", "const": "†data.user.summary"}}});
    assert!(check_tool_schema(&json!({"_outputPath": "†data.user.summary"}), &ctx, &fixed).is_ok());
    let err = check_tool_schema(&json!({"_outputPath": "†data.other"}), &ctx, &fixed).unwrap_err();
    assert!(err.to_string().contains("rule `const`"), "{err}");
    let dynamic = json!({"properties": {"_outputPath": {"type": "string", "pattern": "^†"}, "id": {"type": "integer"}}, "required": ["id"]});
    assert!(
        check_tool_schema(&json!({"_outputPath": "†state.x", "id": 1}), &ctx, &dynamic).is_ok()
    );
    assert!(
        check_tool_schema(&json!({"_outputPath": "state.x", "id": 1}), &ctx, &dynamic).is_err()
    );
    assert!(
        check_tool_schema(&json!({"_outputPath": "†state.x"}), &ctx, &dynamic).is_err(),
        "required applies to calls"
    );
    assert!(matches!(
        check_tool_schema(&json!({}), &ctx, &json!({"type": 7})),
        Err(Error::BadToolSchema(_))
    ));
}

#[test]
fn r23_one_destination_is_judged_canonically_as_each_of_many_is() {
    let ctx = Context::new();
    let safe =
        json!({"properties": {"_outputPath": {"type": "string", "pattern": "^†state\\.safe\\."}}});
    // Alone or beside others, `†state["safe"].b` is `†state.safe.b`.
    for ok in [
        r#"†state["safe"].b"#,
        r#"†state.safe.a && †state["safe"].c"#,
    ] {
        assert!(
            check_tool_schema(&json!({"_outputPath": ok}), &ctx, &safe).is_ok(),
            "{ok}"
        );
    }
    for escape in [
        r#"†state["other"].b"#,
        r#"†state.safe.a && †state["other"].b"#,
    ] {
        let err = check_tool_schema(&json!({"_outputPath": escape}), &ctx, &safe)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("the call breaks its tool's schema: at /_outputPath: destination ")
                && err.contains(r#""†state.other.b" does not match"#),
            "{escape}: {err}"
        );
    }
}

#[test]
fn r23_a_pattern_on_output_path_holds_for_every_destination_and_alternative() {
    let ctx = Context::new();
    let state_only =
        json!({"properties": {"_outputPath": {"type": "string", "pattern": "^†state\\."}}});
    for ok in [
        "†state.x",
        "†state.x && †state.y",
        "†state.x || †state.error",
    ] {
        assert!(
            check_tool_schema(&json!({"_outputPath": ok}), &ctx, &state_only).is_ok(),
            "{ok}"
        );
    }
    for (escape, destination) in [
        ("†state.x && †input.city", "†input.city"),
        ("†state.x || †input.city", "†input.city"),
        ("†state.a && †state.b || †error", "†error"),
    ] {
        let err = check_tool_schema(&json!({"_outputPath": escape}), &ctx, &state_only)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("the call breaks its tool's schema: at /_outputPath: destination ")
                && err.contains(&format!("{destination:?} does not match")),
            "{escape}: {err}"
        );
    }
    // A pattern anchored at both ends judges each destination, not the
    // whole expression, which it could never match.
    let exact = json!({"properties": {"_outputPath": {"pattern": "^†state\\.[a-z]+$"}}});
    assert!(
        check_tool_schema(
            &json!({"_outputPath": "†state.a && †state.b"}),
            &ctx,
            &exact
        )
        .is_ok()
    );
    // `const` and `enum` still name the whole expression.
    let fixed = json!({"properties": {"_outputPath": {
        "enum": ["†state.a && †state.b"], "pattern": "^†state\\."}}});
    assert!(
        check_tool_schema(
            &json!({"_outputPath": "†state.a && †state.b"}),
            &ctx,
            &fixed
        )
        .is_ok()
    );
    let err = check_tool_schema(
        &json!({"_outputPath": "†state.a && †state.c"}),
        &ctx,
        &fixed,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("rule `enum`"), "{err}");
}

#[test]
fn r23_parameters_are_judged_after_resolution_and_meta_keys_as_written() {
    let ctx = Context::from_json(
        r#"[{"type":"input","data":{"days":3,"name":"Ada"}},
            {"type":"input","_instance":"b","data":{"days":"three"}}]"#,
    )
    .unwrap();
    let schema = json!({
        "properties": {
            "_tool": {"const": "plan"},
            "_outputPath": {"const": "†state.plan"},
            "days": {"type": "integer"}
        },
        "required": ["days"]
    });
    let call = json!({"_tool": "plan", "days": "†input.days", "_outputPath": "†state.plan"});
    assert!(
        check_tool_schema(&call, &ctx, &schema).is_ok(),
        "a reference to an integer passes an integer parameter; `_outputPath` is not resolved"
    );
    let err = check_tool_schema(
        &json!({"_tool": "plan", "days": "†input.name", "_outputPath": "†state.plan"}),
        &ctx,
        &schema,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the call breaks its tool's schema: at /days: \"Ada\" is not of type \"integer\" (rule `type` at /properties/days/type)"
    );
    let in_b = json!({"_tool": "plan", "days": "†input.days", "_outputPath": "†state.plan", "_instance": "b"});
    assert!(
        check_tool_schema(&in_b, &ctx, &schema).is_err(),
        "parameters resolve in the call's instance, where days is a string"
    );
}

#[test]
fn r23_meta_keys_never_trip_additional_properties() {
    let ctx = Context::from_json(r#"[{"type":"input","data":{"days":3}}]"#).unwrap();
    let closed =
        json!({"properties": {"days": {"type": "integer"}}, "additionalProperties": false});
    let call = json!({"_tool": "plan", "days": "†input.days", "_outputPath": "†state.x",
                      "_outputMethod": "push", "_instance": "a"});
    assert!(check_tool_schema(&call, &ctx, &closed).is_ok());
    let unevaluated = json!({"properties": {"days": true}, "unevaluatedProperties": false});
    assert!(check_tool_schema(&call, &ctx, &unevaluated).is_ok());
    let err = check_tool_schema(
        &json!({"_tool": "plan", "days": 1, "extra": 2}),
        &ctx,
        &closed,
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("extra"),
        "a parameter the tool does not declare is still refused: {err}"
    );
}

#[test]
fn r23_a_missing_reference_cannot_be_judged() {
    let ctx = Context::new();
    let schema = json!({"properties": {"days": {"type": "integer"}}});
    let err = check_tool_schema(
        &json!({"_tool": "plan", "days": "†input.days"}),
        &ctx,
        &schema,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot check the call against its tool's schema: †input.days not present"
    );
}

fn nested(depth: usize) -> Value {
    (0..depth).fold(json!(0), |inner, _| Value::Array(vec![inner].into()))
}

#[test]
fn r33_the_recording_message_is_measured_where_it_is_built() {
    // The message object is level 1 and `data` level 2; `†state.a.b` nests
    // the value two levels further: the value may be 128 - 1 - 2 = 125 deep.
    let call = json!({"_outputPath": "†state.a.b"});
    let fits = messages_for(&call, Outcome::Success(nested(125)), &clock()).unwrap();
    let mut ctx = Context::new();
    ctx.append(&fits[0])
        .expect("what the engine builds within the limit, the context accepts");
    let err = messages_for(&call, Outcome::Success(nested(126)), &clock()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the message recording this result would be nested deeper than 128 levels"
    );
    // Fanned out, the longest destination decides for all of them.
    let fan = json!({"_outputPath": "†state.a && †state.a.b.c && †state.d"});
    assert!(messages_for(&fan, Outcome::Success(nested(124)), &clock()).is_ok());
    assert_eq!(
        messages_for(&fan, Outcome::Success(nested(125)), &clock())
            .unwrap_err()
            .to_string(),
        "the message recording this result would be nested deeper than 128 levels"
    );
    // `_call` sits one level down: a call may be 127 deep, its object counted.
    let deep_call = |depth: usize| json!({"_outputPath": "†state.x", "p": nested(depth - 1)});
    assert!(messages_for(&deep_call(127), Outcome::Success(json!(1)), &clock()).is_ok());
    assert!(matches!(
        messages_for(&deep_call(128), Outcome::Success(json!(1)), &clock()),
        Err(Error::TooDeep(_))
    ));
}

#[test]
fn r22_only_a_returned_message_is_called_the_returned_message() {
    let call = json!({"_outputPath": "†state.x", "_instance": "c1"});
    let err = messages_for(
        &call,
        Outcome::Message(
            json!({"type": "data", "kind": "state", "data": {"x": 1}, "_instance": "c2"}),
        ),
        &clock(),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the returned message writes instance \"c2\", but the call runs in \"c1\""
    );
    let global = messages_for(
        &json!({"_outputPath": "†state.x"}),
        Outcome::Message(
            json!({"type": "data", "kind": "state", "data": {"x": 1}, "_instance": "c2"}),
        ),
        &clock(),
    )
    .unwrap_err();
    assert_eq!(
        global.to_string(),
        "the returned message writes instance \"c2\", but the call runs in the global scope"
    );
    let bad = messages_for(&call, Outcome::Message(json!({"type": "data"})), &clock()).unwrap_err();
    assert_eq!(
        bad.to_string(),
        "the returned message is invalid: a data message needs `data`"
    );
}

#[test]
fn r18_r20_a_call_parses_its_meta_keys_once_and_says_what_is_wrong() {
    let call = Call::parse(json!({
        "_tool": "score", "_instance": "c1", "text": "†input.text", "_outputPath": "†state.a && †log.a",
        "_outputMethod": "push", "_extra": 1, "limit": 3
    }))
    .unwrap();
    assert_eq!(call.tool(), Some("score"));
    assert_eq!(call.instance().map(|x| x.as_str()), Some("c1"));
    assert_eq!(call.method(), agent_core::Method::Push);
    assert_eq!(
        call.output_path().map(ToString::to_string).as_deref(),
        Some("†state.a && †log.a")
    );
    let parameters: Vec<&str> = call.parameters().map(|(k, _)| k).collect();
    assert_eq!(parameters, ["text", "limit"], "`_`-keys are not parameters");
    assert_eq!(call.as_value()["_extra"], json!(1), "kept as written");
    for (bad, shown) in [
        (json!([1]), "a call must be a JSON object, found an array"),
        (
            json!({"_tool": 7}),
            "`_tool` must be a string, found a number",
        ),
        (json!({"_instance": 7}), "`_instance` must be a string"),
        (
            json!({"_instance": "a\nb"}),
            "`_instance`: invalid instance id \"a\\nb\": it contains a control character or a line or paragraph separator",
        ),
        (
            json!({"_outputPath": ["†state.a"]}),
            "`_outputPath` must be a string",
        ),
        (
            json!({"_outputPath": "state.a"}),
            "`_outputPath` \"state.a\" is not an expression: it must start with '†'; did you mean \"†state.a\"?",
        ),
        (
            json!({"_outputMethod": null}),
            "`_outputMethod` must be a string, found null",
        ),
    ] {
        assert_eq!(
            Call::parse(bad.clone()).unwrap_err().to_string(),
            shown,
            "{bad}"
        );
    }
}

#[test]
fn d60_a_clock_is_a_system_time_and_one_outside_rfc_3339_fails_the_write() {
    use std::time::{Duration, UNIX_EPOCH};
    let call = Call::parse(json!({"_outputPath": "†state.x"})).unwrap();
    let at = |clock: &FixedClock| {
        let messages = agent_output::messages_for(&call, Outcome::Success(json!(1)), clock)?;
        Ok::<_, Error>(messages[0].fields()["_date"].clone())
    };
    let epoch = FixedClock::at(UNIX_EPOCH + Duration::from_millis(1500));
    assert_eq!(at(&epoch).unwrap(), json!("1970-01-01T00:00:01.500Z"));
    let far = FixedClock::at(UNIX_EPOCH + Duration::from_secs(300_000_000_000));
    let fault = at(&far).unwrap_err().to_string();
    assert!(
        fault.ends_with("is not RFC 3339: the clock's time is outside the years 0000 to 9999"),
        "{fault}"
    );
}
