//! `agentctx inspect`'s plan, prompt and provenance routes (D78: inspect page): the
//! real binary over real HTTP, a real PostgreSQL server for the worker
//! plan's calls table.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use crate::support::inspect::{Server, file_context};
use crate::support::{agentctx, fresh};
use agent_core::{json, json::Value};

/// A plan of three calls — search, then summarise what it found, then
/// publish the summary once `†state.approvals.publish` is written — and
/// the results of the first two, each carrying its call as `_call`.
fn plan_context(dir: &tempfile::TempDir) -> String {
    let search = r#"{"_tool":"search","q":"†state.topic","_outputPath":"†state.found"}"#;
    let summarise = r#"{"_tool":"summarise","text":"†state.found","_outputPath":"†state.summary"}"#;
    let publish = r#"{"_tool":"publish","text":"†state.summary","ok":"†state.approvals.publish","_outputPath":"†state.published"}"#;
    let messages = format!(
        r#"[{{"type":"state","data":{{"topic":"cats"}}}},
            {{"type":"plan","calls":[{search},{summarise},{publish}]}},
            {{"type":"state","data":{{"found":["a"]}},"_outputPath":"†state.found","_call":{search}}},
            {{"type":"state","data":{{"summary":"s"}},"_outputPath":"†state.summary","_call":{summarise}}}]"#
    );
    let path = dir.path().join("plan.jsonl").display().to_string();
    let run = agentctx(&["append", &path, &messages]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    path
}

/// Each call's `(state, reason)` in the plan `/api/plan` answers.
fn standings(plan: &Value) -> Vec<(String, Value)> {
    plan["plan"]["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["state"].as_str().unwrap().to_owned(), c["reason"].clone()))
        .collect()
}

#[test]
fn d78_the_plan_is_the_newest_at_the_point_each_call_standing_and_answered_as_the_log_says() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&plan_context(&dir));
    let s = |state: &str, reason: Value| (state.to_owned(), reason);
    let now = server.json("/api/plan");
    assert_eq!(
        (&now["plan"]["number"], &now["plan"]["sort"]),
        (&json!(1), &json!("worker"))
    );
    assert_eq!(
        standings(&now),
        [
            s("done", Value::Null),
            s("done", Value::Null),
            // A worker plan has no approval gates: `status` says blocked.
            s("blocked", json!("missing †state.approvals.publish")),
        ]
    );
    assert_eq!(now["plan"]["calls"][2]["dependsOn"], json!([1]));
    // Each call that ran names the message that answered it.
    let results: Vec<&Value> = (0..3).map(|i| &now["plan"]["calls"][i]["result"]).collect();
    assert_eq!(results, [&json!(2), &json!(3), &Value::Null]);
    assert_eq!(
        server.json("/api/plan?at=3")["plan"]["calls"][1]["result"],
        Value::Null
    );
    assert_eq!(
        standings(&server.json("/api/plan?at=2")),
        [
            s("ready", Value::Null),
            s("blocked", json!("waits for call 0")),
            s("blocked", json!("waits for call 1")),
        ]
    );
    assert_eq!(
        server.json("/api/plan?at=1"),
        json!({"plan": null, "at": 1, "length": 4})
    );
}

#[test]
fn d78_the_prompt_at_a_point_is_what_render_shows_with_its_token_count() {
    let dir = tempfile::tempdir().unwrap();
    let context = file_context(&dir);
    let server = Server::start(&context);
    let rendered = agentctx(&["render", &context, "--provider", "openai", "--tokens"]);
    let tokens = rendered
        .stderr
        .strip_prefix("tokens: ")
        .and_then(|rest| rest.strip_suffix(" (o200k_base)\n"))
        .unwrap_or_else(|| panic!("{}", rendered.stderr));
    // Counted only when asked: at a large point counting takes longest.
    assert_eq!(server.json("/api/prompt")["tokens"], Value::Null);
    let now = server.json("/api/prompt?tokens=1");
    assert_eq!(now["tokens"].to_string(), tokens);
    assert_eq!(
        (&now["mode"], &now["encoding"]),
        (&json!("merged"), &json!("o200k_base"))
    );
    let texts: Vec<&str> = now["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert!(
        texts.iter().any(|t| t.contains("\"name\": \"Ada\"")),
        "{texts:?}"
    );
    let first = server.json("/api/prompt?at=1&mode=append");
    let shown = first["messages"].to_string();
    assert!(
        shown.contains("\\\"step\\\": 1") && !shown.contains("Ada"),
        "{shown}"
    );
    let bad = server.get("/api/prompt?mode=sideways");
    assert_eq!(
        (bad.status, bad.body.as_str()),
        (
            400,
            "{\"error\":\"mode \\\"sideways\\\": expected merged or append\"}\n"
        )
    );
}

#[test]
fn d78_the_prompt_is_answered_a_page_of_messages_at_a_time_each_text_cut_where_asked() {
    let dir = tempfile::tempdir().unwrap();
    let context = file_context(&dir);
    let server = Server::start(&context);
    let whole = server.json("/api/prompt?mode=append&chars=1000000&limit=200");
    let count = whole["count"].as_u64().unwrap() as usize;
    let all = whole["messages"].as_array().unwrap();
    assert!(count >= 2, "{whole}");
    assert_eq!(all.len(), count);
    // A page from the second message: the same messages, numbered as in the whole.
    let page = server.json("/api/prompt?mode=append&from=1&limit=1&chars=1000000");
    assert_eq!(page["messages"], json!([all[1].clone()]));
    assert_eq!((&page["from"], &page["count"]), (&json!(1), &json!(count)));
    // Cut at 5 characters: says so, and how long the whole text is.
    let cut = server.json("/api/prompt?mode=append&limit=1&chars=5");
    let first = &cut["messages"][0];
    let text = all[0]["text"].as_str().unwrap();
    assert_eq!(
        first["text"],
        json!(text.chars().take(5).collect::<String>())
    );
    assert_eq!(
        (&first["cut"], &first["bytes"]),
        (&json!(true), &json!(text.len()))
    );
    assert_eq!(all[0]["cut"], json!(false));
    // Past the end: no messages, the count still.
    let past = server.json(&format!("/api/prompt?mode=append&from={}", count + 5));
    assert_eq!(
        (&past["messages"], &past["from"]),
        (&json!([]), &json!(count))
    );
}

#[test]
fn d78_provenance_names_and_describes_the_messages_that_made_a_value_in_the_layers_read() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&file_context(&dir));
    let made = |query: &str| server.json(&format!("/api/provenance?{query}"))["messages"].clone();
    // `step` is a number: the newest merge replaced it; before it, the first.
    assert_eq!(made("kind=state&path=%5B%22step%22%5D"), json!([2]));
    assert_eq!(made("kind=state&path=%5B%22step%22%5D&at=1"), json!([0]));
    // The view itself: each merge of an object merged into it.
    assert_eq!(made("kind=state&path=%5B%5D"), json!([0, 2]));
    let in_one = "kind=state&instance=%E2%91%A0&path=";
    assert_eq!(made(&format!("{in_one}%5B%22name%22%5D")), json!([1]));
    assert_eq!(made(&format!("{in_one}%5B%22step%22%5D")), json!([2]));
    assert_eq!(made("kind=state&path=%5B%22name%22%5D"), json!([]));
    // Each message named is described as the log describes it.
    let described = server.json("/api/provenance?kind=state&path=%5B%5D");
    assert_eq!(
        described["made"],
        json!([
            server.json("/api/log?from=0&limit=1")["messages"][0],
            server.json("/api/log?from=2&limit=1")["messages"][0],
        ])
    );
    let bad = server.get("/api/provenance?kind=state&path=step");
    assert_eq!(bad.status, 400);
    assert_eq!(
        bad.body,
        "{\"error\":\"path \\\"step\\\": expected a JSON array of keys (strings) and indices \
         (integers), such as [\\\"user\\\",\\\"tags\\\",0]\"}\n"
    );
}

#[test]
fn d78_a_postgres_worker_plan_shows_each_calls_worker_attempts_and_last_error_at_the_latest_point()
{
    let url = fresh("insp-plan");
    let plan = r#"{"type":"plan","calls":[{"_tool":"ok","_outputPath":"†state.a"},
                   {"_tool":"broken","_outputPath":"†state.b"}]}"#;
    let appended = agentctx(&["append", &url, plan]);
    assert_eq!(appended.code, 0, "{}", appended.stderr);
    let worked = agentctx(&[
        "worker",
        &url,
        "--name",
        "w1",
        "--activity",
        "ok=echo 1",
        "--activity",
        "broken=echo no >&2; exit 3",
        "--retries",
        "0",
        "--until-idle",
    ]);
    assert_eq!(worked.code, 1, "{}", worked.stderr);
    let server = Server::start(&url);
    let now = server.json("/api/plan");
    let calls = &now["plan"]["calls"];
    let row = |i: usize| {
        let c = &calls[i];
        (
            c["state"].clone(),
            c["worker"].clone(),
            c["attempts"].clone(),
            c["error"].is_string(),
        )
    };
    assert_eq!(row(0), (json!("done"), json!("w1"), json!(1), false));
    assert_eq!(row(1), (json!("failed"), json!("w1"), json!(1), true));
    assert!(
        calls[1]["error"].as_str().unwrap().contains("exit"),
        "{}",
        calls[1]["error"]
    );
    // Before the result, the log alone: no table rows, no failure yet.
    let before = server.json("/api/plan?at=1");
    assert_eq!(
        standings(&before),
        [
            ("ready".to_owned(), Value::Null),
            ("ready".to_owned(), Value::Null)
        ]
    );
    assert_eq!(before["plan"]["calls"][1]["attempts"], Value::Null);
}

#[test]
fn d78_provenance_follows_the_fold_instance_layer_first_stopping_where_a_write_replaced_the_value()
{
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.jsonl").display().to_string();
    // Written as a file, not appended: an append refuses the push onto a
    // string (R13), where loading skips it (R12).
    let lines = [
        r#"{"type":"state","data":{"name":"G0","list":[1]}}"#,
        r#"{"type":"state","data":{"name":"I"},"_instance":"i1"}"#,
        r#"{"type":"state","data":{"name":"G1"}}"#,
        r#"{"type":"state","data":null,"_outputMethod":"erase","_instance":"i2"}"#,
        r#"{"type":"state","data":{"x":1},"_instance":"i2"}"#,
        r#"{"type":"state","data":{"x":2}}"#,
        r#"{"type":"state","data":{"list":2},"_outputPath":"†state.list","_outputMethod":"push"}"#,
        r#"{"type":"state","data":{"name":"oops"},"_outputPath":"†state.name","_outputMethod":"push"}"#,
        r#"{"type":"state","data":{"a":{"b":1,"c":2}}}"#,
        r#"{"type":"state","data":{"a":{"c":3}},"_outputMethod":"assign"}"#,
    ];
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let server = Server::start(&path);
    let made = |instance: &str, segments: &str| {
        let query = format!("kind=state&instance={instance}&path={segments}");
        server.json(&format!("/api/provenance?{query}"))["messages"].clone()
    };
    // i1 reads its own name, written over the whole global view (R5).
    assert_eq!(made("i1", "%5B%22name%22%5D"), json!([1]));
    // i2's own write made its x: the later global one is beneath it.
    assert_eq!(made("i2", "%5B%22x%22%5D"), json!([4]));
    // i2's erase removed the global view beneath its layer: its view is
    // what it wrote since, over nothing global.
    assert_eq!(made("i2", "%5B%5D"), json!([3, 4]));
    // A push adds to the list the first write made; a push onto a string
    // was skipped (R12) and made nothing.
    assert_eq!(made("", "%5B%22list%22%5D"), json!([0, 6]));
    assert_eq!(made("", "%5B%22name%22%5D"), json!([2]));
    // An assign replaces the top-level keys it names whole.
    assert_eq!(made("", "%5B%22a%22,%22b%22%5D"), json!([9]));
}

#[test]
fn r39c_a_loop_plans_calls_are_held_and_rejected_at_approval_gates_as_the_loop_would() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gates.jsonl").display().to_string();
    let messages = r#"[{"type":"state","data":{"approvals":{"b":false,"c":"yes"}}},
      {"type":"plan","plan":[
        {"_tool":"a","ok":"†state.approvals.a","_outputPath":"†state.x"},
        {"_tool":"a2","in":"†state.x","_outputPath":"†state.y"},
        {"_tool":"b","ok":"†state.approvals.b","_outputPath":"†state.z"},
        {"_tool":"c","in":"†state.approvalsLog","_outputPath":"†state.w"},
        {"_tool":"d","ok":"†state.approvals.c","_outputPath":"†state.v"},
        {"_tool":"e","in":"†state.missing","ok":"†state.approvals.e","_outputPath":"†state.u"}]}]"#;
    let run = agentctx(&["append", &path, messages]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let server = Server::start(&path);
    let plan = server.json("/api/plan");
    assert_eq!(plan["plan"]["sort"], json!("loop"));
    let s = |state: &str, reason: &str| (state.to_owned(), json!(reason));
    assert_eq!(
        standings(&plan),
        [
            s(
                "held",
                "held at an approval gate: missing †state.approvals.a"
            ),
            s(
                "held",
                "held: it depends on call 0, held at an approval gate"
            ),
            s(
                "rejected",
                "rejected at the approval gate †state.approvals.b"
            ),
            // Not a gate: a reference under another key.
            s("blocked", "missing †state.approvalsLog"),
            s(
                "failed",
                "not run: the approval gate †state.approvals.c holds a string; a gate is true \
                 (run the calls it holds) or false (reject them)"
            ),
            // Missing more than a gate: blocked however it is gated.
            s("blocked", "missing †state.missing, †state.approvals.e"),
        ]
    );
}
