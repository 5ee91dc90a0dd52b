//! Benchmarks for agent-vars, each beside a baseline measured in the same run:
//!
//! - `parse/reference-5`: parse `†state.a.b.c[3]["e f"]` (five segments),
//!   against `baseline/split-5`, splitting the same text on `.` into owned
//!   strings (the least any tokenizer must do).
//! - `resolve/call-20x10k`: resolve a 20-parameter call against a
//!   10,000-message context, against `baseline/pointer-20`, reading the same
//!   20 values with `agent_core::json::Value::pointer` from the folded view and
//!   building the same output object.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)] // bench support code

use agent_core::Kind;
use agent_core::{
    json,
    json::{Map, Value},
};
use agent_data::{Context, Format};
use agent_vars::{Expression, Resolution, resolve_call};
use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;

const REFERENCE: &str = "†state.a.b.c[3][\"e f\"]";

fn parse(c: &mut Criterion) {
    c.bench_function("parse/reference-5", |b| {
        b.iter(|| Expression::parse(black_box(REFERENCE)).unwrap())
    });
    c.bench_function("baseline/split-5", |b| {
        b.iter(|| {
            black_box(REFERENCE)
                .split('.')
                .map(str::to_owned)
                .collect::<Vec<String>>()
        })
    });
}

/// 10,000 output messages into one `state`: 200 users, 50 writes each.
fn context() -> Context {
    let mut jsonl = String::new();
    for i in 0..10_000 {
        let user = i % 200;
        let m = json!({
            "type": "data", "kind": "state",
            "data": {"users": {format!("u{user}"): {"score": i, "name": format!("name{user}")}}},
            "_outputPath": format!("†state.users.u{user}"), "_outputMethod": "merge"
        });
        jsonl.push_str(&m.to_string());
        jsonl.push('\n');
    }
    Context::load(jsonl.as_bytes(), Format::Jsonl)
        .unwrap()
        .context
}

fn resolve(c: &mut Criterion) {
    let ctx = context();
    let mut call = Map::new();
    call.insert("_tool".into(), "t".into());
    let mut pointers = Vec::new();
    for p in 0..20 {
        let user = p * 10;
        call.insert(
            format!("p{p}"),
            format!("†state.users.u{user}.score").into(),
        );
        pointers.push((format!("p{p}"), format!("/users/u{user}/score")));
    }
    let call = Value::Object(call);
    assert!(matches!(
        resolve_call(&call, &ctx).unwrap(),
        Resolution::Ready(_)
    ));
    c.bench_function("resolve/call-20x10k", |b| {
        b.iter(|| resolve_call(black_box(&call), &ctx).unwrap())
    });

    let view = ctx
        .view(&Kind::new("state").unwrap(), None)
        .unwrap()
        .clone();
    c.bench_function("baseline/pointer-20", |b| {
        b.iter(|| {
            let mut out = Map::new();
            out.insert("_tool".into(), "t".into());
            for (key, pointer) in &pointers {
                out.insert(
                    key.clone(),
                    black_box(&view).pointer(pointer).unwrap().clone(),
                );
            }
            Value::Object(out)
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(std::time::Duration::from_secs(2)).warm_up_time(std::time::Duration::from_millis(500));
    targets = parse, resolve
}
criterion_main!(benches);
