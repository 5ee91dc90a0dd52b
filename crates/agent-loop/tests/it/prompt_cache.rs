//! What a provider's prompt cache can reuse across turns (spec R30): over a
//! 20-turn scripted run, the share of each request's tokens (o200k) that
//! equals the start of the previous request, in merged and append mode.
//! `cargo test -p agent-loop --test prompt_cache -- --nocapture` prints the
//! numbers docs/performance.md reports.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use agent_core::{json, json::Value};
use agent_data::Context;
use agent_loop::{Answer, Error, Loop, OpenAi, Provider, Reply, Request, Tool, Usage};
use agent_output::FixedClock;
use agent_plan::Activities;
use agent_render::RenderMode;
use std::sync::Mutex;

const TURNS: u32 = 20;

/// Answers turn N with two calls (a latent note pushed onto a log, an
/// explicit lookup), and the output on the last turn; keeps every
/// request's messages as they would be sent (the OpenAI body's `messages`).
struct Scripted {
    sent: Mutex<Vec<Vec<Value>>>,
}

impl Provider for Scripted {
    fn send(&self, request: &Request<'_>) -> Result<Reply, Error> {
        let body = OpenAi::body(request)?;
        let mut sent = self.sent.lock().unwrap();
        sent.push(body["messages"].as_array().unwrap().clone());
        let turn = sent.len();
        let answer = json!({
            "calls": [
                {"_tool": "note", "_output": format!("step {turn} done"),
                 "_outputPath": "†state.log", "_outputMethod": "push"},
                {"_tool": "lookup", "n": turn, "_outputPath": "†state.last"}
            ],
            "output": if turn as u32 == TURNS { json!("finished") } else { Value::Null }
        });
        Ok(Reply::new(Answer::from_value(answer), Usage::default()))
    }
}

/// The requests of a 20-turn run in `mode`, each as its messages.
fn requests(mode: RenderMode) -> Vec<Vec<Value>> {
    let mut ctx = Context::from_json(
        r#"[{"type": "text", "role": "system", "text": "Work through the list."},
            {"type": "state", "data": {"log": []}, "description": "What has been done so far."},
            {"type": "input", "data": {"items": ["a", "b", "c", "d", "e"]}},
            {"type": "text", "text": "Process every item; note each step in the log, look each item up, and finish with a summary."}]"#,
    )
    .unwrap();
    let mut settings = Loop::new("scripted");
    settings.mode = mode;
    settings.max_turns = TURNS;
    settings.tools = vec![
        Tool::new(
            json!({"type": "object", "properties": {"_tool": {"const": "note"}, "_output": {"type": "string"}}}),
            "note",
        )
        .unwrap(),
        Tool::new(
            json!({"type": "object", "properties": {"_tool": {"const": "lookup"}, "n": {"type": "integer"}}}),
            "lookup",
        )
        .unwrap(),
    ];
    let mut activities = Activities::new();
    activities.register("lookup", |call: &Value| {
        Ok(json!({"n": call["n"], "found": true}))
    });
    let provider = Scripted {
        sent: Mutex::new(Vec::new()),
    };
    settings
        .run(
            &provider,
            &activities,
            &mut ctx,
            &FixedClock::parse("2026-01-01T00:00:00Z").unwrap(),
            &mut |_| {},
        )
        .unwrap();
    provider.sent.into_inner().unwrap()
}

/// Tokens of request N+1 that repeat the start of request N, as a share of
/// request N+1's tokens, for every N; and the mean.
fn shares(requests: &[Vec<Value>]) -> (Vec<f64>, f64) {
    let bpe = tiktoken_rs::o200k_base_singleton();
    let tokens: Vec<Vec<u32>> = requests
        .iter()
        .map(|messages| bpe.encode_ordinary(&Value::Array(messages.clone().into()).to_string()))
        .collect();
    let shares: Vec<f64> = tokens
        .windows(2)
        .map(|pair| {
            let common = pair[0]
                .iter()
                .zip(&pair[1])
                .take_while(|(a, b)| a == b)
                .count();
            common as f64 / pair[1].len() as f64
        })
        .collect();
    let mean = shares.iter().sum::<f64>() / shares.len() as f64;
    (shares, mean)
}

#[test]
fn r30_in_append_mode_each_request_starts_with_the_previous_one() {
    let append = requests(RenderMode::Append);
    assert_eq!(append.len(), TURNS as usize);
    for pair in append.windows(2) {
        assert!(pair[1].len() > pair[0].len());
        assert_eq!(
            pair[1][..pair[0].len()],
            pair[0][..],
            "a turn rewrote an earlier message"
        );
    }
    let (append_shares, append_mean) = shares(&append);
    let (merged_shares, merged_mean) = shares(&requests(RenderMode::Merged));
    let min = |s: &[f64]| s.iter().copied().fold(f64::INFINITY, f64::min);
    eprintln!(
        "prompt prefix reused from the previous request over {TURNS} turns (o200k tokens): \
         append mean {:.1}% (min {:.1}%), merged mean {:.1}% (min {:.1}%)",
        100.0 * append_mean,
        100.0 * min(&append_shares),
        100.0 * merged_mean,
        100.0 * min(&merged_shares)
    );
    assert!(
        append_mean >= 0.9,
        "append mode reuses only {append_mean:.3}"
    );
    assert!(merged_mean < append_mean);
}
