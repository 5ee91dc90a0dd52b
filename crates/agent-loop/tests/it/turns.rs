//! Turns and the loop (spec R39, R40): scripted answers, real activities,
//! and one two-turn run over HTTP.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use crate::common::{Script, clock};

use agent_core::{json, json::Value};
use agent_data::Context;
use agent_loop::{
    Answer, Error, Finish, Loop, OpenAi, Provider, Reply, Request, Retry, Tool, TurnReport, Usage,
};
use agent_plan::Activities;
use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            json!({"type": "object", "properties": {"_tool": {"const": "summarize"},
                "text": {"type": "string"}, "_output": {"type": "string"}}}),
            "caller tool 0",
        )
        .unwrap(),
        Tool::new(
            json!({"type": "object", "properties": {"_tool": {"const": "shout"},
                "text": {"type": "string"}}, "required": ["text"]}),
            "caller tool 1",
        )
        .unwrap(),
    ]
}

fn activities() -> Activities {
    let mut activities = Activities::new();
    activities.register("shout", |call: &Value| {
        let text = call["text"].as_str().unwrap_or_default();
        if text.is_empty() {
            Err(json!("nothing to shout"))
        } else {
            Ok(json!(text.to_uppercase()))
        }
    });
    activities
}

fn run(
    ctx: &mut Context,
    script: &Script,
    settings: &Loop,
) -> (Result<Finish, Error>, Vec<TurnReport>) {
    let mut reports = Vec::new();
    let finish = settings.run(script, &activities(), ctx, &clock(), &mut |r| {
        reports.push(r.clone())
    });
    (finish, reports)
}

fn settings() -> Loop {
    let mut settings = Loop::new("scripted");
    settings.tools = tools();
    settings
}

fn task() -> Context {
    Context::from_json(r#"[{"type": "input", "data": {"text": "agents keep state in logs"}}]"#)
        .unwrap()
}

fn kinds(ctx: &Context) -> Vec<String> {
    ctx.messages()
        .map(|m| m.to_value()["kind"].as_str().unwrap_or("-").to_owned())
        .collect()
}

#[test]
fn r39_calls_of_one_answer_run_in_dependency_order_latent_and_explicit() {
    let mut ctx = task();
    // The consumer comes first; it reads what the latent call writes.
    let script = Script::new(vec![
        Ok(json!({"calls": [
            {"_tool": "shout", "text": "†state.summary", "_outputPath": "†state.loud"},
            {"_tool": "summarize", "text": "†input.text", "_output": "logs hold state",
             "_outputPath": "†state.summary"}
        ], "output": null})),
        Ok(json!({"calls": [], "output": {"answer": "LOGS HOLD STATE"}})),
    ]);
    let (finish, reports) = run(&mut ctx, &script, &settings());
    assert_eq!(
        finish.unwrap(),
        Finish::Output(json!({"answer": "LOGS HOLD STATE"}))
    );
    assert_eq!(
        ctx.read(&"†state".parse().unwrap(), None),
        Some(&json!({"summary": "logs hold state", "loud": "LOGS HOLD STATE"}))
    );
    // The answer's calls are appended as one plan message (R39c) after
    // their results; an answer without calls appends none; the output is.
    assert_eq!(kinds(&ctx), ["input", "state", "state", "-", "output"]);
    let plan = ctx.messages().nth(3).unwrap().to_value();
    assert_eq!(plan["type"], "plan");
    assert_eq!(plan["plan"][1]["_tool"], "summarize");
    assert_eq!(plan["_pending"], json!([]));
    assert_eq!(
        ctx.read(&"†output".parse().unwrap(), None),
        Some(&json!({"answer": "LOGS HOLD STATE"}))
    );
    let seen: Vec<(u32, usize, usize, u64)> = reports
        .iter()
        .map(|r| (r.turn, r.calls_run, r.errors, r.tokens_sent))
        .collect();
    assert_eq!(seen, [(1, 2, 0, 100), (2, 0, 0, 100)]);
    // The second request was rebuilt from the context: it shows the results.
    let asked = script.asked.lock().unwrap();
    assert!(asked[1].0.iter().any(|t| t.contains("LOGS HOLD STATE")));
    // R36: the explicit tool has no _output in the answer schema.
    let variants = &asked[0].1["properties"]["calls"]["items"]["anyOf"];
    assert!(variants[1]["properties"].get("_output").is_none());
    assert!(variants[0]["properties"].get("_output").is_some());
}

#[test]
fn r39_every_failed_call_becomes_one_error_message_after_the_turn() {
    let mut ctx = task();
    let script = Script::new(vec![Ok(json!({"calls": [
        {"_tool": "translate", "text": "†input.text"},
        {"_tool": "shout", "text": 42, "_outputPath": "†state.a"},
        {"_tool": "shout", "text": "†state.missing", "_outputPath": "†state.b"},
        {"_tool": "shout", "text": "", "_outputPath": "†state.c"},
        {"_tool": "shout", "text": "†input.text", "_outputPath": "†state.d"},
        "not a call",
        {"_tool": "summarize", "_output": 7, "_outputPath": "†state.e"}
    ], "output": null}))]);
    let mut once = settings();
    once.max_turns = 1;
    let (finish, reports) = run(&mut ctx, &script, &once);
    assert_eq!(finish.unwrap(), Finish::Unfinished { turns: 1 });
    assert_eq!(reports[0].calls_run, 1);
    assert_eq!(reports[0].errors, 6);
    // The one good call's result, then the errors, in answer order for
    // the checks before running and in running order after.
    assert_eq!(
        kinds(&ctx),
        [
            "input", "state", "error", "error", "error", "error", "error", "error", "-"
        ]
    );
    // The plan holds the calls that passed the checks made before running.
    let plan = ctx.messages().last().unwrap().to_value();
    assert_eq!(plan["plan"].as_array().unwrap().len(), 5);
    let errors = ctx.read(&"†error".parse().unwrap(), None).unwrap();
    let texts: Vec<&str> = errors
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["error"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts,
        [
            "unknown tool \"translate\"; the tools are \"summarize\", \"shout\"",
            "a call must be a JSON object, found a string",
            "the call breaks its tool's schema: at /text: 42 is not of type \"string\" (rule `type` at /properties/text/type)",
            "still pending when nothing else could run: †state.missing not present",
            "unhandled failure: `_outputPath` has one outcome, so a failure has nowhere to go: \"nothing to shout\"",
            "the call breaks its tool's schema: at /_output: 7 is not of type \"string\" (rule `type` at /properties/_output/type)",
        ]
    );
    assert_eq!(
        errors[0]["call"],
        json!({"_tool": "translate", "text": "†input.text"})
    );
    assert_eq!(
        ctx.read(&"†state.d".parse().unwrap(), None),
        Some(&json!("AGENTS KEEP STATE IN LOGS"))
    );
}

#[test]
fn r39_a_call_whose_producer_failed_is_not_run() {
    let mut ctx = task();
    let script = Script::new(vec![Ok(json!({"calls": [
        {"_tool": "shout", "text": "", "_outputPath": "†state.first"},
        {"_tool": "shout", "text": "†state.first", "_outputPath": "†state.second"}
    ], "output": null}))]);
    let mut once = settings();
    once.max_turns = 1;
    run(&mut ctx, &script, &once).0.unwrap();
    let errors = ctx.read(&"†error".parse().unwrap(), None).unwrap();
    assert_eq!(
        errors[1]["error"],
        "not run: it reads what another call of its plan writes (shout), and that call failed"
    );
}

#[test]
fn r40_an_invalid_output_is_an_error_and_the_loop_goes_on() {
    let mut ctx = task();
    let script = Script::new(vec![
        Ok(json!({"calls": [], "output": {"answer": 3}})),
        Err("the answer is not JSON (expected value at line 1 column 1): \"hm\"".into()),
        Ok(json!({"calls": [], "output": {"answer": "ok"}})),
    ]);
    let mut settings = settings();
    settings.output_schema = Some(
        json!({"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}),
    );
    let (finish, reports) = run(&mut ctx, &script, &settings);
    assert_eq!(finish.unwrap(), Finish::Output(json!({"answer": "ok"})));
    assert_eq!(reports.len(), 3);
    let errors = ctx.read(&"†error".parse().unwrap(), None).unwrap();
    assert_eq!(
        errors,
        &json!([
            {"call": null, "error": "the output does not match the output schema: at /answer: 3 is not of type \"string\" (rule `type` at /properties/answer/type)"},
            {"call": null, "error": "the answer is not JSON (expected value at line 1 column 1): \"hm\""}
        ])
    );
    // The next request showed the model its error.
    let asked = script.asked.lock().unwrap();
    assert!(
        asked[1]
            .0
            .iter()
            .any(|t| t.contains("does not match the output schema"))
    );
}

#[test]
fn r40_after_max_turns_the_loop_ends_unfinished() {
    let mut ctx = task();
    let script = Script::new(Vec::new());
    let mut settings = settings();
    settings.max_turns = 3;
    let (finish, reports) = run(&mut ctx, &script, &settings);
    assert_eq!(finish.unwrap(), Finish::Unfinished { turns: 3 });
    assert_eq!(reports.len(), 3);
    assert_eq!(ctx.len(), 1);
}

#[test]
fn r41_a_failed_request_appends_nothing_and_ends_the_loop() {
    let mut ctx = task();
    let script = Script {
        answers: Mutex::new(VecDeque::from([Err(Error::Status {
            hint: String::new(),
            url: "http://x/chat/completions".into(),
            status: 401,
            message: "Incorrect API key provided".into(),
        })])),
        asked: Mutex::new(Vec::new()),
    };
    let (finish, reports) = run(&mut ctx, &script, &settings());
    assert_eq!(
        finish.unwrap_err().to_string(),
        "http://x/chat/completions answered 401: Incorrect API key provided"
    );
    assert!(reports.is_empty());
    assert_eq!(ctx.len(), 1);
}

#[test]
fn r39_a_two_turn_run_over_http() {
    use wiremock::matchers::method;
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let completion = |content: Value| {
        json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 1741569952,
               "model": "gpt-4.1", "choices": [{"index": 0, "message": {"role": "assistant",
               "content": content.to_string(), "refusal": null}, "finish_reason": "stop"}],
               "usage": {"prompt_tokens": 321, "completion_tokens": 20, "total_tokens": 341}})
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(MockServer::start());
    rt.block_on(
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_json(completion(json!({"calls": [
                {"_tool": "summarize", "text": "†input.text", "_output": "logs", "_outputPath": "†state.summary"},
                {"_tool": "shout", "text": "†state.summary", "_outputPath": "†state.loud"}
            ], "output": null}))))
            .up_to_n_times(1)
            .mount(&server),
    );
    rt.block_on(
        Mock::given(method("POST"))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_json(completion(json!({"calls": [], "output": "LOGS"}))),
            )
            .mount(&server),
    );
    let provider = OpenAi::new(
        &server.uri(),
        None,
        Duration::from_secs(5),
        Retry::default(),
    )
    .unwrap();
    let mut ctx = task();
    let mut reports = Vec::new();
    let finish = settings()
        .run(&provider, &activities(), &mut ctx, &clock(), &mut |r| {
            reports.push(r.clone())
        })
        .unwrap();
    assert_eq!(finish, Finish::Output(json!("LOGS")));
    assert_eq!(reports[0].tokens_sent, 321);
    assert_eq!(reports[0].calls_run, 2);
    let requests = rt.block_on(server.received_requests()).unwrap();
    assert_eq!(requests.len(), 2);
    let second: Value = serde_json::from_slice(&requests[1].body).unwrap();
    let shown = second["messages"].to_string();
    assert!(shown.contains("## Data: ¶state"), "{shown}");
    assert!(shown.contains("LOGS"), "{shown}");
}

#[test]
fn r40_without_a_providers_count_the_turn_reports_the_tokens_it_sent() {
    struct Uncounted(Mutex<u64>);
    impl Provider for Uncounted {
        fn send(&self, request: &Request<'_>) -> Result<Reply, Error> {
            let tokens = agent_render::count_tokens(request.system)
                + request
                    .chat
                    .iter()
                    .map(|m| agent_render::count_tokens(m.text()))
                    .sum::<usize>();
            *self.0.lock().unwrap() = tokens as u64;
            Ok(Reply::new(
                Ok(Answer {
                    calls: Vec::new(),
                    output: Some(json!(1)),
                }),
                Usage::default(),
            ))
        }
    }
    let provider = Uncounted(Mutex::new(0));
    let mut reports = Vec::new();
    settings()
        .run(&provider, &activities(), &mut task(), &clock(), &mut |r| {
            reports.push(r.clone())
        })
        .unwrap();
    let sent = *provider.0.lock().unwrap();
    assert!(sent > 100);
    assert_eq!(reports[0].tokens_sent, sent);
}

/// How many calls arrived at the meeting, and the names of those that
/// left, in order; with the condition its members wait on.
type Meeting = std::sync::Arc<(Mutex<(usize, Vec<String>)>, std::sync::Condvar)>;

/// An activity for calls named `names` that succeeds only when all of
/// them are inside it at once, waiting at most `patience` for the others
/// to arrive; each finishes only after every call with a later name.
fn meeting(names: &'static [&'static str], patience: Duration) -> (Activities, Meeting) {
    let shared = std::sync::Arc::new((
        Mutex::new((0, Vec::<String>::new())),
        std::sync::Condvar::new(),
    ));
    let inside = shared.clone();
    let mut activities = Activities::new();
    activities.register("meet", move |call: &Value| {
        let name = call["name"].as_str().unwrap().to_owned();
        let (lock, changed) = &*inside;
        let mut state = lock.lock().unwrap();
        state.0 += 1;
        changed.notify_all();
        let (state, waited) = changed
            .wait_timeout_while(state, patience, |s| s.0 < names.len())
            .unwrap();
        if waited.timed_out() {
            return Err(json!("ran without the others"));
        }
        let later = names.iter().filter(|n| **n > name.as_str()).count();
        let (mut state, _) = changed
            .wait_timeout_while(state, patience, |s| {
                s.1.iter().filter(|n| n.as_str() > name.as_str()).count() < later
            })
            .unwrap();
        state.1.push(name.clone());
        changed.notify_all();
        Ok(json!(name))
    });
    (activities, shared)
}

fn meet_tool() -> Tool {
    Tool::new(
        json!({"type": "object", "properties": {"_tool": {"const": "meet"},
            "name": {"type": "string"}}}),
        "caller tool 2",
    )
    .unwrap()
}

#[test]
fn r39_independent_explicit_calls_run_at_once_and_results_land_in_answer_order() {
    let mut ctx = task();
    let script = Script::new(vec![Ok(json!({"calls": [
        {"_tool": "meet", "name": "a", "_outputPath": "†state.a"},
        {"_tool": "meet", "name": "b", "_outputPath": "†state.b"},
        {"_tool": "meet", "name": "c", "_outputPath": "†state.c"}
    ], "output": null}))]);
    let (activities, shared) = meeting(&["a", "b", "c"], Duration::from_secs(20));
    let mut once = settings();
    once.tools.push(meet_tool());
    once.max_turns = 1;
    once.run(&script, &activities, &mut ctx, &clock(), &mut |_| {})
        .unwrap();
    assert_eq!(ctx.read(&"†error".parse().unwrap(), None), None);
    // They finished c, b, a; their results were written a, b, c.
    assert_eq!(shared.0.lock().unwrap().1, ["c", "b", "a"]);
    let written: Vec<Value> = ctx
        .messages()
        .skip(1)
        .filter(|m| m.as_data().is_some())
        .map(|m| m.to_value()["data"].clone())
        .collect();
    assert_eq!(
        written,
        [json!({"a": "a"}), json!({"b": "b"}), json!({"c": "c"})]
    );
}

#[test]
fn r39_parallel_bounds_the_activities_running_at_once() {
    let mut ctx = task();
    let script = Script::new(vec![Ok(json!({"calls": [
        {"_tool": "meet", "name": "a", "_outputPath": "†state.a"},
        {"_tool": "meet", "name": "b", "_outputPath": "†state.b"}
    ], "output": null}))]);
    let (activities, _) = meeting(&["a", "b"], Duration::from_millis(300));
    let mut one = settings();
    one.tools.push(meet_tool());
    one.max_turns = 1;
    one.parallel = 1;
    one.run(&script, &activities, &mut ctx, &clock(), &mut |_| {})
        .unwrap();
    // "a" ran alone and gave up waiting; "b" found it had been there.
    let errors = ctx.read(&"†error".parse().unwrap(), None).unwrap();
    assert_eq!(errors.as_array().unwrap().len(), 1, "{errors}");
    assert_eq!(errors[0]["call"]["name"], "a");
    assert!(
        errors[0]["error"]
            .as_str()
            .unwrap()
            .ends_with("\"ran without the others\""),
        "{errors}"
    );
}

#[test]
fn r21b_a_turn_stamps_each_activitys_start_and_records_a_call_that_writes_nothing_unseen() {
    let mut ctx = task();
    let script = Script::new(vec![
        Ok(json!({"calls": [
            {"_tool": "shout", "text": "hi", "_outputPath": "†state.loud"},
            {"_tool": "shout", "text": "bye"}
        ], "output": null})),
        Ok(json!({"calls": [], "output": {"answer": "done"}})),
    ]);
    let (finish, _) = run(&mut ctx, &script, &settings());
    assert_eq!(finish.unwrap(), Finish::Output(json!({"answer": "done"})));
    let log: Vec<Value> = ctx.messages().map(|m| m.to_value()).collect();
    let result = log.iter().find(|m| m["kind"] == "state").unwrap();
    // The start is read from the clock that stamps `_date` (fixed here).
    assert_eq!(result["_started"], result["_date"]);
    let ran: Vec<&Value> = log.iter().filter(|m| m["type"] == "ran").collect();
    assert_eq!(ran.len(), 1, "{log:?}");
    assert_eq!(ran[0]["_call"], json!({"_tool": "shout", "text": "bye"}));
    assert_eq!(ran[0]["_started"], result["_date"]);
    // The record is bookkeeping: the next request does not show it.
    let asked = script.asked.lock().unwrap();
    assert!(
        asked[1].0.iter().all(|text| !text.contains("## ran")),
        "{:?}",
        asked[1].0
    );
    assert!(asked[1].0.iter().any(|text| text.contains("HI")));
}
