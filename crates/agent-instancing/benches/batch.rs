//! 1,000 instances × 20 calls, applied sequentially and in parallel, in the
//! same run: the ratio is the parallel speed-up on this machine.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)] // bench support code

use agent_core::json;
use agent_data::Context;
use agent_instancing::{Schedule, apply_batch, assign_inputs};
use agent_output::{Call, FixedClock, Outcome};
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};

fn setup() -> (Context, Vec<(Call, Outcome)>) {
    let mut ctx =
        Context::from_json(r#"[{"type":"input","data":{"policy":"be kind","threshold":0.5}}]"#)
            .unwrap();
    let inputs = (0..1000)
        .map(|i| json!({"comment": format!("comment number {i}"), "author": i}))
        .collect();
    let (ids, _) = assign_inputs(&mut ctx, inputs).unwrap();
    let mut items = Vec::with_capacity(20_000);
    for step in 0..20 {
        for id in &ids {
            let call = Call::parse(json!({"_tool": "score", "_instance": id.as_str(), "_outputPath": format!("†state.scores.s{step}")})).unwrap();
            items.push((
                call,
                Outcome::Success(json!({"score": step, "labels": ["a", "b"]})),
            ));
        }
    }
    (ctx, items)
}

fn batch(c: &mut Criterion) {
    let (ctx, items) = setup();
    let clock = FixedClock::parse("2026-01-01T00:00:00Z").unwrap();
    for (name, mode) in [
        ("batch/1000x20-sequential", Schedule::Sequential),
        ("batch/1000x20-parallel", Schedule::Parallel),
    ] {
        c.bench_function(name, |b| {
            b.iter_batched(
                || (ctx.clone(), items.clone()),
                |(mut ctx, items)| {
                    let results = apply_batch(&mut ctx, items, &clock, mode);
                    assert!(results.iter().all(Result::is_ok));
                    ctx
                },
                BatchSize::LargeInput,
            )
        });
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(std::time::Duration::from_secs(8)).warm_up_time(std::time::Duration::from_secs(1));
    targets = batch
}
criterion_main!(benches);
