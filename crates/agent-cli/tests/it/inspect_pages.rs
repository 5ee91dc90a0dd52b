//! What `agentctx inspect` answers a page at a time, so that a context of
//! thousands of instances is shown lazily (D107: the inspector at scale):
//! the instances listed with what they wrote, one instance's views or only
//! the global ones, a message's chain digest.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use crate::support::agentctx;
use crate::support::inspect::{Server, file_context, file_context_of};
use agent_core::{json, json::Value};

/// A context of `START` and instances ② to ④ writing `state` (④ twice)
/// and ③ writing `input` too.
fn with_instances(dir: &tempfile::TempDir) -> String {
    let context = file_context(dir);
    let more = r#"[
      {"type":"state","data":{"n":2},"_instance":"②"},
      {"type":"state","data":{"n":3},"_instance":"③"},
      {"type":"input","data":{"q":"why"},"_instance":"③"},
      {"type":"state","data":{"n":4},"_instance":"④"},
      {"type":"state","data":{"m":4},"_instance":"④"}
    ]"#;
    let run = agentctx(&["append", &context, more]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    context
}

#[test]
fn d107_instances_are_listed_a_page_at_a_time_with_their_kinds_and_messages() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&with_instances(&dir));
    let all = server.json("/api/instances");
    assert_eq!(
        all,
        json!({
            "at": 9, "length": 9, "total": 4, "matching": 4,
            "instances": [
                {"id": "①", "kinds": ["state"], "messages": 1},
                {"id": "②", "kinds": ["state"], "messages": 1},
                {"id": "③", "kinds": ["state", "input"], "messages": 2},
                {"id": "④", "kinds": ["state"], "messages": 2},
            ],
        })
    );
    let ids = |path: &str| -> Vec<Value> {
        let answer = server.json(path);
        answer["instances"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["id"].clone())
            .collect()
    };
    assert_eq!(
        ids("/api/instances?from=1&limit=2"),
        [json!("②"), json!("③")]
    );
    assert_eq!(ids("/api/instances?q=%E2%91%A2"), [json!("③")]);
    assert_eq!(server.json("/api/instances?q=③")["matching"], json!(1));
    // As they were: after 3 messages only ① had written.
    assert_eq!(ids("/api/instances?at=3"), [json!("①")]);
}

#[test]
fn d107_views_answer_for_one_instance_or_for_none() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&with_instances(&dir));
    let global = json!({"state": {"step": 2}});
    assert_eq!(
        server.json("/api/views?instance=③"),
        json!({
            "at": 9, "length": 9, "kinds": ["state", "input"], "global": global,
            "instances": {"③": {"state": {"step": 2, "n": 3}, "input": {"q": "why"}}},
        })
    );
    assert_eq!(
        server.json("/api/views?instances=none"),
        json!({
            "at": 9, "length": 9, "kinds": ["state", "input"], "global": global,
            "instances": {},
        })
    );
    for (query, error) in [
        (
            "instance=⑨",
            "instance \"⑨\": there is none among the first 9 messages",
        ),
        (
            "instance=②&at=2",
            "instance \"②\": there is none among the first 2 messages",
        ),
        (
            "instances=some",
            "instances \"some\": expected none (or leave it out for every instance's views)",
        ),
        (
            "instances=none&instance=②",
            "instance and instances=none: ask for one or the other",
        ),
    ] {
        let refused = server.get(&format!("/api/views?{query}"));
        assert_eq!(
            (refused.status, refused.body.as_str()),
            (400, format!("{}\n", json!({"error": error})).as_str()),
            "{query}"
        );
    }
}

#[test]
fn d107_a_messages_digest_is_the_chains_after_it_as_verify_computes_it() {
    let dir = tempfile::tempdir().unwrap();
    let context = file_context(&dir);
    let server = Server::start(&context);
    let checked = agentctx(&["verify", &context]);
    let verified: Value = agent_core::json::from_str(&checked.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", checked.stdout));
    assert_eq!(
        server.json("/api/digest?n=3")["digest"],
        verified["head"],
        "{verified}"
    );
    let first = server.json("/api/digest?n=0");
    assert_eq!(first["number"], json!(0));
    assert_ne!(first["digest"], verified["head"]);
    assert_eq!(
        server.json("/api/digest?n=0&at=1"),
        json!({"number": 0, "digest": first["digest"], "at": 1, "length": 4})
    );
    let past = server.get("/api/digest?n=4");
    assert_eq!(
        (past.status, past.body.as_str()),
        (
            400,
            "{\"error\":\"n=4: there is no message 4 among the first 4 (0 to 3)\"}\n"
        )
    );
}

#[test]
fn d107_a_call_that_writes_nothing_is_unrecorded_not_ready() {
    let dir = tempfile::tempdir().unwrap();
    let plan = r#"[{"type":"state","data":{"topic":"cats"}},
        {"type":"plan","calls":[{"_tool":"notify","text":"†state.topic"},
                                {"_tool":"search","q":"†state.topic","_outputPath":"†state.found"}]}]"#;
    let path = file_context_of(&dir, plan);
    let server = Server::start(&path);
    let calls = server.json("/api/plan")["plan"]["calls"].clone();
    assert_eq!(
        (&calls[0]["state"], &calls[0]["reason"]),
        (
            &json!("unrecorded"),
            &json!(
                "it writes nothing (no _outputPath) and no `ran` record says it ran: the log \
                 cannot show whether it did"
            )
        )
    );
    assert_eq!(
        (&calls[1]["state"], &calls[1]["reason"]),
        (&json!("ready"), &Value::Null)
    );
}

#[test]
fn d112_a_ran_record_shows_a_call_that_writes_nothing_done_with_when_and_how_long() {
    let dir = tempfile::tempdir().unwrap();
    let notify = r#"{"_tool":"notify","text":"†state.topic"}"#;
    let search = r#"{"_tool":"search","q":"†state.topic","_outputPath":"†state.found"}"#;
    let messages = format!(
        r#"[{{"type":"state","data":{{"topic":"cats"}}}},
            {{"type":"plan","calls":[{notify},{search}]}},
            {{"type":"ran","_call":{notify},"_started":"2026-11-29T10:00:00Z",
              "_date":"2026-11-29T10:00:01.250Z","_failed":true}},
            {{"type":"state","data":{{"found":"x"}},"_outputPath":"†state.found","_call":{search},
              "_started":"2026-11-29T10:00:00Z","_date":"2026-11-29T10:02:03Z",
              "_worker":"w-1","_attempt":2}}]"#
    );
    let path = file_context_of(&dir, &messages);
    let server = Server::start(&path);
    let calls = server.json("/api/plan")["plan"]["calls"].clone();
    let seen = |i: usize, keys: &[&str]| -> Vec<Value> {
        keys.iter().map(|k| calls[i][*k].clone()).collect()
    };
    assert_eq!(
        seen(0, &["state", "result", "started", "ms", "failed", "error"]),
        [
            json!("done"),
            json!(2),
            json!("2026-11-29T10:00:00Z"),
            json!(1250),
            json!(true),
            json!("it failed; with no _outputPath its failure is not written")
        ]
    );
    assert_eq!(
        seen(1, &["state", "result", "ended", "ms", "worker", "attempts"]),
        [
            json!("done"),
            json!(3),
            json!("2026-11-29T10:02:03Z"),
            json!(123_000),
            json!("w-1"),
            json!(2)
        ]
    );
    // The log says the same of the message: how long, who, which attempt.
    let row = server.json("/api/log?before=4&limit=1")["messages"][0].clone();
    assert_eq!(
        (&row["number"], &row["ms"], &row["worker"], &row["attempt"]),
        (&json!(3), &json!(123_000), &json!("w-1"), &json!(2))
    );
    // Before the record, nothing says the call ran.
    let past = server.json("/api/plan?at=2")["plan"]["calls"].clone();
    assert_eq!(
        (&past[0]["state"], &past[0]["ms"]),
        (&json!("unrecorded"), &Value::Null)
    );
}

#[test]
fn d112_a_loop_plans_calls_are_answered_by_the_results_of_its_turn_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let call = r#"{"_tool":"search","q":"†state.topic","_outputPath":"†state.found"}"#;
    let messages = format!(
        r#"[{{"type":"state","data":{{"topic":"cats"}}}},
            {{"type":"plan","plan":[{call}],"_pending":[]}},
            {{"type":"state","data":{{"found":"x"}},"_outputPath":"†state.found","_call":{call},
              "_started":"2026-11-29T10:00:00Z","_date":"2026-11-29T10:00:00.040Z"}},
            {{"type":"plan","plan":[{call}],"_pending":[]}}]"#
    );
    let path = file_context_of(&dir, &messages);
    let server = Server::start(&path);
    let calls = server.json("/api/plan")["plan"]["calls"].clone();
    assert_eq!(
        (&calls[0]["state"], &calls[0]["result"], &calls[0]["ms"]),
        (&json!("done"), &json!(2), &json!(40))
    );
    // The plan before it owes nothing and its turn wrote nothing after it
    // began: its call is done, answered by nothing before it.
    let first = server.json("/api/plan?at=3")["plan"]["calls"].clone();
    assert_eq!(
        (&first[0]["state"], &first[0]["result"]),
        (&json!("done"), &Value::Null)
    );
}

#[test]
fn d112_the_first_loop_plans_call_is_answered_by_its_turns_result_not_an_older_equal_one() {
    let dir = tempfile::tempdir().unwrap();
    let call = r#"{"_tool":"search","q":"†state.topic","_outputPath":"†state.found"}"#;
    let messages = format!(
        r#"[{{"type":"state","data":{{"topic":"cats"}}}},
            {{"type":"state","data":{{"found":"old"}},"_outputPath":"†state.found","_call":{call},
              "_started":"2026-11-28T10:00:00Z","_date":"2026-11-28T10:00:09Z"}},
            {{"type":"state","data":{{"found":"x"}},"_outputPath":"†state.found","_call":{call},
              "_started":"2026-11-29T10:00:00Z","_date":"2026-11-29T10:00:00.040Z"}},
            {{"type":"plan","plan":[{call}],"_pending":[]}}]"#
    );
    let path = file_context_of(&dir, &messages);
    let server = Server::start(&path);
    let calls = server.json("/api/plan")["plan"]["calls"].clone();
    assert_eq!(
        (&calls[0]["result"], &calls[0]["ms"]),
        (&json!(2), &json!(40))
    );
}

#[test]
fn d107_an_answer_goes_to_the_call_still_owed_not_to_an_equal_call_done_before() {
    let dir = tempfile::tempdir().unwrap();
    let call = r#"{"_tool":"search","q":"†state.topic","_outputPath":"†state.found"}"#;
    let messages = format!(
        r#"[{{"type":"state","data":{{"topic":"cats"}}}},
            {{"type":"plan","plan":[{call},{call}],"_pending":[1]}},
            {{"type":"state","data":{{"found":"x"}},"_outputPath":"†state.found","_call":{call}}}]"#
    );
    let path = file_context_of(&dir, &messages);
    let server = Server::start(&path);
    let calls = server.json("/api/plan")["plan"]["calls"].clone();
    let seen: Vec<(&Value, &Value)> = (0..2)
        .map(|i| (&calls[i]["state"], &calls[i]["result"]))
        .collect();
    assert_eq!(
        seen,
        [(&json!("done"), &Value::Null), (&json!("done"), &json!(2))]
    );
}

#[test]
fn d107_a_results_inputs_are_its_call_resolved_as_the_context_read_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let call = r#"{"_tool":"search","q":"†state.topic","_outputPath":"†state.found"}"#;
    let messages = format!(
        r#"[{{"type":"state","data":{{"topic":"cats"}}}},
            {{"type":"state","data":{{"found":"x"}},"_outputPath":"†state.found","_call":{call}}},
            {{"type":"state","data":{{"topic":"dogs"}}}}]"#
    );
    let path = file_context_of(&dir, &messages);
    let server = Server::start(&path);
    // Resolved as it read before message 1 was written, not as it reads now.
    let got = server.json("/api/inputs?n=1");
    assert_eq!(got["inputs"]["q"], json!("cats"), "{got}");
    assert_eq!((&got["number"], &got["missing"]), (&json!(1), &json!([])));
    for (query, error) in [
        ("n=0", "n=0: message 0 carries no call (`_call`)"),
        (
            "n=3",
            "n=3: there is no message 3 among the first 3 (0 to 2)",
        ),
        (
            "n=1&at=1",
            "n=1: there is no message 1 among the first 1 (0 to 0)",
        ),
    ] {
        let refused = server.get(&format!("/api/inputs?{query}"));
        assert_eq!(
            (refused.status, refused.body.as_str()),
            (400, format!("{}\n", json!({"error": error})).as_str()),
            "{query}"
        );
    }
}
