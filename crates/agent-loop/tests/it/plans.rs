//! The plan carried across turns and runs, and approval gates (spec R39c,
//! decisions D69–D72): scripted answers, real activities.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use crate::common::{Script, clock};

use agent_core::{json, json::Value};
use agent_data::Context;
use agent_loop::{Confirm, Event, Finish, Loop, RunReport, Tool};
use agent_output::{Call, Outcome, apply};
use agent_plan::Activities;
use std::sync::{Arc, Mutex};

/// `summarize` is latent; `send` and `log` are explicit.
fn settings() -> Loop {
    let tool = |schema: Value| Tool::new(schema, "test tool").unwrap();
    let mut settings = Loop::new("scripted");
    settings.tools = vec![
        tool(
            json!({"type": "object", "properties": {"_tool": {"const": "summarize"},
            "text": {"type": "string"}, "_output": {"type": "string"}}}),
        ),
        tool(
            json!({"type": "object", "properties": {"_tool": {"const": "send"},
            "to": {"type": "string"}, "approved": {"type": "boolean"}}}),
        ),
        tool(
            json!({"type": "object", "properties": {"_tool": {"const": "log"},
            "text": {}}}),
        ),
    ];
    settings
}

/// `send` and `log` activities that record each resolved call they get.
fn activities() -> (Activities, Arc<Mutex<Vec<Value>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut activities = Activities::new();
    for tool in ["send", "log"] {
        let seen = seen.clone();
        activities.register(tool, move |call: &Value| {
            seen.lock().unwrap().push(call.clone());
            // The result shows what it read, so results carry their inputs.
            let tool = call["_tool"].as_str().unwrap_or("?");
            Ok(json!(match call["text"].as_str() {
                Some(text) => format!("{tool} done: {text}"),
                None => format!("{tool} done"),
            }))
        });
    }
    (activities, seen)
}

fn task() -> Context {
    Context::from_json(
        r#"[{"type": "input", "data": {"to": "ana@example.com", "text": "the report"}},
            {"type": "state", "data": {"step": 1}}]"#,
    )
    .unwrap()
}

/// A run with `confirm`, and the requests' texts.
fn run_with(
    ctx: &mut Context,
    answers: Vec<Value>,
    confirm: &mut dyn FnMut(&Call) -> Confirm,
) -> (RunReport, Vec<Vec<String>>, Vec<String>) {
    let script = Script::new(answers.into_iter().map(Ok).collect());
    let (activities, _) = activities();
    let mut events = Vec::new();
    let report = settings()
        .run_confirmed(
            &script,
            &activities,
            ctx,
            &clock(),
            &mut |e| {
                if let Event::Carried { calls_run, errors } = e {
                    events.push(format!("carried {calls_run} {errors}"));
                }
            },
            confirm,
        )
        .unwrap();
    let asked = script.asked.lock().unwrap();
    (report, asked.iter().map(|a| a.0.clone()).collect(), events)
}

fn run(ctx: &mut Context, answers: Vec<Value>) -> (RunReport, Vec<Vec<String>>, Vec<String>) {
    run_with(ctx, answers, &mut |_| Confirm::Run)
}

fn plans(ctx: &Context) -> Vec<Value> {
    ctx.messages()
        .map(|m| m.to_value())
        .filter(|m| m["type"] == "plan")
        .collect()
}

/// What `agentctx apply CTX '{"_tool":"approve","_outputPath":GATE}'
/// --result V --write` appends.
fn decide(ctx: &mut Context, gate: &str, value: Value) {
    let call = Call::parse(json!({"_tool": "approve", "_outputPath": gate})).unwrap();
    apply(ctx, &call, Outcome::Success(value), &clock()).unwrap();
}

const SEND: &str = r#"{"_tool": "send", "to": "†input.to", "approved": "†state.approvals.send", "_outputPath": "†state.sent"}"#;

fn send() -> Value {
    agent_core::json::from_str(SEND).unwrap()
}

#[test]
fn r39c_plan_messages_hold_the_answers_calls() {
    let mut ctx = task();
    let calls = json!([
        {"_tool": "summarize", "text": "†input.text", "_output": "short", "_outputPath": "†state.summary"},
        {"_tool": "log", "text": "†state.summary", "_outputPath": "†state.logged"}
    ]);
    let (report, _, _) = run(
        &mut ctx,
        vec![
            json!({"calls": calls, "output": null}),
            json!({"calls": [], "output": "ok"}),
        ],
    );
    assert_eq!(report.finish, Finish::Output(json!("ok")));
    assert_eq!(
        plans(&ctx),
        [json!({"type": "plan", "plan": calls, "_pending": []})]
    );
}

#[test]
fn r39c_a_latent_call_without_output_is_carried_into_the_next_prompt_not_failed() {
    let mut ctx = task();
    let (report, asked, _) = run(
        &mut ctx,
        vec![
            json!({"calls": [
                {"_tool": "summarize", "text": "†input.text", "_outputPath": "†state.summary"},
                {"_tool": "log", "text": "†state.summary", "_outputPath": "†state.logged"}
            ], "output": null}),
            json!({"calls": [], "output": "later"}),
        ],
    );
    assert_eq!(report.finish, Finish::Output(json!("later")));
    assert!(report.gates.is_empty());
    // Neither the unevaluated latent call nor the call waiting on it is an
    // error; both stay owed in the plan.
    assert_eq!(ctx.read(&"†error".parse().unwrap(), None), None);
    assert_eq!(plans(&ctx)[0]["_pending"], json!([0, 1]));
    // The next request shows the plan, the latent call in it.
    let plan_block = asked[1]
        .iter()
        .find(|t| t.starts_with("## plan"))
        .expect("the plan is shown");
    assert!(
        plan_block.contains("\"_tool\": \"summarize\""),
        "{plan_block}"
    );
    assert!(!plan_block.contains("_pending"), "{plan_block}");
    assert!(!asked[1].iter().any(|t| t.contains("## Data: ¶error")));
}

#[test]
fn r39c_a_gated_call_waits_is_named_once_and_runs_in_the_next_run_after_approval() {
    let mut ctx = task();
    let log_sent = json!({"_tool": "log", "text": "†state.sent", "_outputPath": "†state.logged"});
    let (report, asked, _) = run(
        &mut ctx,
        vec![
            json!({"calls": [send(), log_sent.clone(),
                {"_tool": "log", "text": "†input.text", "_outputPath": "†state.noted"}], "output": null}),
            json!({"calls": [], "output": null}),
        ],
    );
    // The ungated call ran; the gated one and the one reading what it
    // writes wait, without an error; a turn that changed nothing ends the
    // run, waiting.
    assert_eq!(report.finish, Finish::Waiting { turns: 2 });
    assert_eq!(asked.len(), 2);
    assert_eq!(
        report.gates.to_json(),
        json!({"waiting": [{"gate": "†state.approvals.send", "tools": ["send", "log"]}], "rejected": []})
    );
    assert_eq!(ctx.read(&"†error".parse().unwrap(), None), None);
    assert_eq!(
        ctx.read(&"†state.noted".parse().unwrap(), None),
        Some(&json!("log done: the report"))
    );
    assert_eq!(plans(&ctx)[0]["_pending"], json!([0, 1]));

    // Approved between runs: the next run runs the held calls before it
    // asks the model.
    decide(&mut ctx, "†state.approvals.send", json!(true));
    let (report, asked, events) = run(&mut ctx, vec![json!({"calls": [], "output": "sent"})]);
    assert_eq!(events, ["carried 2 0"]);
    assert_eq!(report.finish, Finish::Output(json!("sent")));
    assert!(report.gates.is_empty());
    assert!(
        asked[0]
            .iter()
            .any(|t| t.contains("\"sent\": \"send done\""))
    );
    let sent = ctx
        .messages()
        .map(|m| m.to_value())
        .find(|m| m["data"].get("sent").is_some())
        .unwrap();
    assert_eq!(sent["_call"], send());
    // The carried plan now owes nothing, and a third run runs nothing again.
    assert_eq!(plans(&ctx).last().unwrap()["_pending"], json!([]));
    let before = ctx.len();
    let (_, _, events) = run(&mut ctx, vec![json!({"calls": [], "output": "again"})]);
    assert!(events.is_empty());
    assert_eq!(ctx.len(), before + 1, "only the output");
}

#[test]
fn r39c_a_gate_written_false_rejects_its_calls_reported_never_run() {
    let mut ctx = task();
    let (activities, seen) = activities();
    let script = Script::new(vec![Ok(json!({"calls": [send()], "output": null}))]);
    let finish = settings()
        .run(&script, &activities, &mut ctx, &clock(), &mut |_| {})
        .unwrap();
    assert_eq!(finish, Finish::Waiting { turns: 1 });
    decide(&mut ctx, "†state.approvals.send", json!(false));
    let (report, _, events) = run(&mut ctx, vec![json!({"calls": [], "output": "not sent"})]);
    assert_eq!(events, ["carried 0 0"]);
    assert_eq!(
        report.gates.to_json(),
        json!({"waiting": [], "rejected": [{"gate": "†state.approvals.send", "tools": ["send"]}]})
    );
    assert!(seen.lock().unwrap().is_empty());
    assert_eq!(ctx.read(&"†state.sent".parse().unwrap(), None), None);
    assert_eq!(ctx.read(&"†error".parse().unwrap(), None), None);
    // Rejected is decided: the plan owes it no more.
    assert_eq!(plans(&ctx).last().unwrap()["_pending"], json!([]));
}

#[test]
fn r39c_a_gate_holding_anything_but_true_or_false_fails_its_call() {
    let mut ctx = task();
    run(&mut ctx, vec![json!({"calls": [send()], "output": null})]);
    decide(&mut ctx, "†state.approvals.send", json!("yes"));
    run(&mut ctx, vec![json!({"calls": [], "output": "?"})]);
    let errors = ctx.read(&"†error".parse().unwrap(), None).unwrap();
    assert_eq!(
        errors[0]["error"],
        "not run: the approval gate †state.approvals.send holds a string; a gate is true (run the calls it holds) or false (reject them)"
    );
}

#[test]
fn r39c_a_call_also_missing_what_nothing_writes_is_an_error_however_gated() {
    let mut ctx = task();
    run(
        &mut ctx,
        vec![json!({"calls": [{"_tool": "send", "to": "†state.nobody",
            "approved": "†state.approvals.send", "_outputPath": "†state.sent"}], "output": null})],
    );
    let errors = ctx.read(&"†error".parse().unwrap(), None).unwrap();
    assert_eq!(
        errors[0]["error"],
        "still pending when nothing else could run: †state.nobody, †state.approvals.send not present"
    );
}

#[test]
fn r39c_the_confirm_hook_edits_what_runs_and_what_is_recorded_or_skips_it() {
    let mut ctx = task();
    let edited = json!({"_tool": "log", "text": "edited", "_outputPath": "†state.logged"});
    let mut asked_about = Vec::new();
    let (report, _, _) = run_with(
        &mut ctx,
        vec![
            json!({"calls": [{"_tool": "log", "text": "†input.text", "_outputPath": "†state.logged"},
                {"_tool": "log", "text": "skip me", "_outputPath": "†state.skipped"}], "output": null}),
            json!({"calls": [], "output": "done"}),
        ],
        &mut |call| {
            asked_about.push(call.as_value()["text"].clone());
            if call.as_value()["text"] == "skip me" {
                Confirm::Skip
            } else {
                Confirm::Edit(Call::parse(edited.clone()).unwrap())
            }
        },
    );
    assert_eq!(report.finish, Finish::Output(json!("done")));
    assert_eq!(asked_about, [json!("†input.text"), json!("skip me")]);
    let logged = ctx
        .messages()
        .map(|m| m.to_value())
        .find(|m| m["data"].get("logged").is_some())
        .unwrap();
    assert_eq!(logged["data"], json!({"logged": "log done: edited"}));
    assert_eq!(logged["_call"], edited);
    let errors = ctx.read(&"†error".parse().unwrap(), None).unwrap();
    assert_eq!(errors[0]["error"], "not run: the application skipped it");
    assert_eq!(ctx.read(&"†state.skipped".parse().unwrap(), None), None);
}

#[test]
fn r39c_a_later_answer_with_calls_supersedes_the_carried_plan() {
    let mut ctx = task();
    let (report, asked, _) = run(
        &mut ctx,
        vec![
            json!({"calls": [send(), {"_tool": "log", "text": "x", "_outputPath": "†state.a"}], "output": null}),
            json!({"calls": [{"_tool": "log", "text": "y", "_outputPath": "†state.b"}], "output": null}),
            json!({"calls": [], "output": "replanned"}),
        ],
    );
    // The second answer's plan does not hold the gated call: nothing waits.
    assert_eq!(report.finish, Finish::Output(json!("replanned")));
    assert!(report.gates.is_empty());
    assert_eq!(plans(&ctx).len(), 2);
    // Only the newest plan is shown (R28).
    let shown: Vec<&String> = asked[2]
        .iter()
        .filter(|t| t.starts_with("## plan"))
        .collect();
    assert_eq!(shown.len(), 1);
    assert!(shown[0].contains("\"text\": \"y\""), "{}", shown[0]);
}

mod approval_commutes {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    /// Call `n` writes `†state.kN`, its text literal or another call's
    /// result (an earlier one, so there is no cycle), gated or not.
    fn answer() -> impl Strategy<Value = Vec<Value>> {
        prop::collection::vec(
            (any::<prop::sample::Index>(), 0usize..4, any::<bool>()),
            1..12,
        )
        .prop_map(|specs| {
            specs
                .iter()
                .enumerate()
                .map(|(n, (from, gate, literal))| {
                    let text = if *literal || n == 0 {
                        json!(format!("t{n}"))
                    } else {
                        json!(format!("†state.k{}", from.index(n)))
                    };
                    let mut call = json!({"_tool": "log", "text": text,
                            "_outputPath": format!("†state.k{n}")});
                    if *gate < 3 {
                        call["ok"] = json!(format!("†state.approvals.g{gate}"));
                    }
                    call
                })
                .collect()
        })
    }

    /// The `state` view without its approvals, keys sorted.
    fn results(ctx: &Context) -> BTreeMap<String, Value> {
        let state = ctx.read(&"†state".parse().unwrap(), None).cloned();
        let mut found: BTreeMap<String, Value> = state
            .and_then(|s| s.as_object().cloned())
            .map(|m| m.into_iter().collect())
            .unwrap_or_default();
        found.remove("approvals");
        found
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Proposing, approving every gate between runs and running again
        /// writes what running with the gates approved from the start
        /// writes; no call held at a gate is ever an error, and the first
        /// run writes exactly the calls no gate holds.
        #[test]
        fn r39c_approving_between_runs_equals_running_approved(calls in answer()) {
            let approve_all = |ctx: &mut Context| {
                for g in 0..3 {
                    decide(ctx, &format!("†state.approvals.g{g}"), json!(true));
                }
            };
            let mut later = task();
            let (first, _, _) = run(&mut later, vec![json!({"calls": calls, "output": "proposed"})]);
            prop_assert_eq!(first.finish, Finish::Output(json!("proposed")));
            prop_assert_eq!(later.read(&"†error".parse().unwrap(), None), None);
            // Held: a gated call, or one reading a held call's result.
            let mut held = vec![false; calls.len()];
            for (n, call) in calls.iter().enumerate() {
                let reads_held = call["text"].as_str()
                    .and_then(|t| t.strip_prefix("†state.k"))
                    .and_then(|m| m.parse::<usize>().ok())
                    .is_some_and(|m| held[m]);
                held[n] = call.get("ok").is_some() || reads_held;
            }
            let written = results(&later);
            for (n, is_held) in held.iter().enumerate() {
                prop_assert_eq!(written.contains_key(&format!("k{n}")), !is_held);
            }
            prop_assert_eq!(first.gates.waiting.is_empty(), !held.contains(&true));

            approve_all(&mut later);
            let (second, _, _) = run(&mut later, vec![json!({"calls": [], "output": "done"})]);
            prop_assert!(second.gates.is_empty());

            let mut at_once = task();
            approve_all(&mut at_once);
            run(&mut at_once, vec![json!({"calls": calls, "output": "done"})]);
            prop_assert_eq!(results(&later), results(&at_once));
            prop_assert_eq!(later.read(&"†error".parse().unwrap(), None), None);
        }
    }
}

#[test]
fn r39c_a_gate_is_read_in_the_calls_instance_and_approved_there() {
    let mut ctx = Context::from_json(
        r#"[{"type": "input", "data": {"to": "shared@example.com"}},
            {"type": "input", "_instance": "①", "data": {"to": "one@example.com"}}]"#,
    )
    .unwrap();
    let mut send_one = send();
    send_one["_instance"] = json!("①");
    let (report, _, _) = run(&mut ctx, vec![json!({"calls": [send_one], "output": null})]);
    assert_eq!(report.finish, Finish::Waiting { turns: 1 });
    assert_eq!(
        report.gates.to_json(),
        json!({"waiting": [{"gate": "†state.approvals.send", "tools": ["send"], "instance": "①"}], "rejected": []})
    );
    assert_eq!(
        report.gates.waiting[0].to_string(),
        "†state.approvals.send (instance ①) holds send"
    );
    // Approved in another instance only: ①'s call still waits.
    let call = Call::parse(json!({"_tool": "approve", "_instance": "②",
        "_outputPath": "†state.approvals.send"}))
    .unwrap();
    apply(&mut ctx, &call, Outcome::Success(json!(true)), &clock()).unwrap();
    let (report, _, _) = run(&mut ctx, vec![json!({"calls": [], "output": null})]);
    assert_eq!(report.finish, Finish::Waiting { turns: 1 });
    // Approved in ①'s own scope: it runs there.
    let call = Call::parse(json!({"_tool": "approve", "_instance": "①",
        "_outputPath": "†state.approvals.send"}))
    .unwrap();
    apply(&mut ctx, &call, Outcome::Success(json!(true)), &clock()).unwrap();
    let (report, _, events) = run(&mut ctx, vec![json!({"calls": [], "output": "sent"})]);
    assert_eq!(events, ["carried 1 0"]);
    assert_eq!(report.finish, Finish::Output(json!("sent")));
    let one = Some(agent_core::Instance::new("①").unwrap());
    assert_eq!(
        ctx.read(&"†state.sent".parse().unwrap(), one.as_ref()),
        Some(&json!("send done"))
    );
    assert_eq!(ctx.read(&"†state.sent".parse().unwrap(), None), None);
}

#[test]
fn r39c_an_approved_call_runs_though_its_destination_already_holds_a_value() {
    // `†state.sent` holds a value from before the plan, and a latent call
    // of the same answer writes it too: neither settles the held send.
    let mut ctx = task();
    decide(&mut ctx, "†state.sent", json!("an earlier send"));
    let latent = json!({"_tool": "summarize", "text": "†input.text", "_output": "draft", "_outputPath": "†state.sent"});
    let (report, _, _) = run(
        &mut ctx,
        vec![
            json!({"calls": [latent, send()], "output": null}),
            json!({"calls": [], "output": null}),
        ],
    );
    assert_eq!(report.finish, Finish::Waiting { turns: 2 });
    decide(&mut ctx, "†state.approvals.send", json!(true));
    let (report, _, events) = run(&mut ctx, vec![json!({"calls": [], "output": "sent"})]);
    assert_eq!(events, ["carried 1 0"]);
    assert_eq!(report.finish, Finish::Output(json!("sent")));
    assert_eq!(
        ctx.read(&"†state.sent".parse().unwrap(), None),
        Some(&json!("send done"))
    );
    assert_eq!(plans(&ctx).last().unwrap()["_pending"], json!([]));
}

#[test]
fn r39c_a_latent_call_is_settled_only_by_a_write_after_its_plan() {
    // Carried: `†state.summary` held a value before the plan, so that
    // value does not settle the latent call; an `_output` written after
    // the plan does.
    let mut ctx = task();
    decide(&mut ctx, "†state.summary", json!("old"));
    let latent =
        json!({"_tool": "summarize", "text": "†input.text", "_outputPath": "†state.summary"});
    run(
        &mut ctx,
        vec![
            json!({"calls": [latent.clone()], "output": null}),
            json!({"calls": [], "output": "later"}),
        ],
    );
    assert_eq!(plans(&ctx).last().unwrap()["_pending"], json!([0]));
    // Still owed: the carried pass looks at it (and leaves it to the model).
    let (_, _, events) = run(&mut ctx, vec![json!({"calls": [], "output": "still"})]);
    assert_eq!(events, ["carried 0 0"]);
    decide(&mut ctx, "†state.summary", json!("new"));
    let before = ctx.len();
    let (_, _, events) = run(&mut ctx, vec![json!({"calls": [], "output": "done"})]);
    assert!(events.is_empty(), "{events:?}");
    assert_eq!(ctx.len(), before + 1, "only the output");
}

#[test]
fn r39b_gates_inherited_through_dependencies_are_bounded_per_call() {
    // One call reads 40 gates; 30 calls read what it writes. Each
    // dependant names at most 16 inherited gates, and every gate is still
    // named once, by the call that reads it.
    let mut ctx = task();
    let gates: Vec<String> = (0..40)
        .map(|g| format!("†state.approvals.g{g:02}"))
        .collect();
    let mut call = json!({"_tool": "send", "to": "†input.to", "_outputPath": "†state.sent"});
    for (g, gate) in gates.iter().enumerate() {
        call.as_object_mut()
            .unwrap()
            .insert(format!("g{g:02}"), json!(gate));
    }
    let mut calls = vec![call];
    for i in 0..30 {
        calls.push(
            json!({"_tool": "log", "text": "†state.sent", "_outputPath": format!("†state.l{i}")}),
        );
    }
    let (report, _, _) = run(&mut ctx, vec![json!({"calls": calls, "output": null})]);
    assert_eq!(report.finish, Finish::Waiting { turns: 1 });
    let waiting = report.gates.to_json()["waiting"]
        .as_array()
        .unwrap()
        .clone();
    let named: Vec<&str> = waiting
        .iter()
        .map(|w| w["gate"].as_str().unwrap())
        .collect();
    assert_eq!(named, gates.iter().map(String::as_str).collect::<Vec<_>>());
    let holding_log = waiting
        .iter()
        .filter(|w| w["tools"].as_array().unwrap().contains(&json!("log")))
        .count();
    assert_eq!(holding_log, 16);
}

#[test]
fn r39c_a_run_waits_for_approval_only_once_the_model_owes_nothing() {
    // The held send reads what a latent call writes: the model still owes
    // that call's `_output`, so the run asks again instead of stopping.
    let mut ctx = task();
    let latent =
        json!({"_tool": "summarize", "text": "†input.text", "_outputPath": "†state.summary"});
    let evaluated = json!({"_tool": "summarize", "text": "†input.text", "_output": "short", "_outputPath": "†state.summary"});
    let send_summary = json!({"_tool": "send", "to": "†state.summary", "approved": "†state.approvals.send", "_outputPath": "†state.sent"});
    let (report, asked, _) = run(
        &mut ctx,
        vec![
            json!({"calls": [latent, send_summary.clone()], "output": null}),
            json!({"calls": [evaluated, send_summary], "output": null}),
            json!({"calls": [], "output": null}),
        ],
    );
    assert_eq!(asked.len(), 3);
    assert_eq!(report.finish, Finish::Waiting { turns: 3 });
    assert_eq!(
        ctx.read(&"†state.summary".parse().unwrap(), None),
        Some(&json!("short"))
    );
    assert_eq!(plans(&ctx).last().unwrap()["_pending"], json!([1]));
}
