//! Rendering a 1,000-instance context (20 writes each) in merged mode,
//! against `serde_json::to_string_pretty` of the same views, in one run:
//! `baseline/to_string_pretty-in-context` serialises the very values the
//! context holds; `baseline/to_string_pretty-cloned` serialises fresh,
//! compact copies of them (a different memory layout, and faster).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)] // bench support code

use agent_data::{Context, Format, Identity};
use agent_render::{Mode, Renderer};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use std::hint::black_box;

/// 1,000 instances × 20 output writes (sets, pushes and merges).
pub fn context() -> Context {
    let mut jsonl = String::from("{\"type\":\"input\",\"data\":{\"policy\":\"be kind\"}}\n");
    for i in 0..1000 {
        let x = format!("#{i}");
        jsonl.push_str(
            &json!({"type": "input", "data": {"comment": format!("comment {i}")}, "_instance": x})
                .to_string(),
        );
        jsonl.push('\n');
        for w in 0..20 {
            let m = match w % 4 {
                0 => {
                    json!({"type": "data", "kind": "state", "data": {"notes": format!("note {w}")}, "_outputPath": "†state.notes", "_outputMethod": "push", "_instance": x})
                }
                1 => {
                    json!({"type": "data", "kind": "state", "data": {"scores": {format!("s{w}"): w}}, "_outputPath": "†state.scores", "_outputMethod": "merge", "_instance": x})
                }
                _ => {
                    json!({"type": "data", "kind": "state", "data": {format!("k{w}"): {"label": "ok", "w": w}}, "_outputPath": format!("†state.k{w}"), "_instance": x})
                }
            };
            jsonl.push_str(&m.to_string());
            jsonl.push('\n');
        }
    }
    Context::load(jsonl.as_bytes(), Format::Jsonl)
        .unwrap()
        .context
}

fn render(c: &mut Criterion) {
    let ctx = context();
    let views: Vec<Value> = ctx
        .identities()
        .map(|id: &Identity| ctx.layer_view(id).unwrap().clone())
        .collect();
    let renderer = Renderer::new();
    c.bench_function("render/1000-instances-merged", |b| {
        b.iter(|| renderer.render(black_box(&ctx), Mode::Merged))
    });
    c.bench_function("baseline/to_string_pretty-in-context", |b| {
        b.iter(|| {
            let ctx = black_box(&ctx);
            ctx.identities()
                .map(|id| serde_json::to_string_pretty(ctx.layer_view(id).unwrap()).unwrap())
                .collect::<Vec<String>>()
        })
    });
    c.bench_function("baseline/to_string_pretty-cloned", |b| {
        b.iter(|| {
            black_box(&views)
                .iter()
                .map(|v| serde_json::to_string_pretty(v).unwrap())
                .collect::<Vec<String>>()
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(std::time::Duration::from_secs(4)).warm_up_time(std::time::Duration::from_secs(1));
    targets = render
}
criterion_main!(benches);
