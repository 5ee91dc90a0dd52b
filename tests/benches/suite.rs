//! The benchmark suite: each workload beside a baseline measured
//! in the same run. `cargo xtask bench` runs it and writes
//! `target/bench-summary.json`; the ids are `{workload}-ours` and
//! `{workload}-{baseline}`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)] // bench support code

use agent_core::json::Value;
use agent_core::{Method, Path, write};
use agent_data::{Context, DataMessage, Message};
use agent_render::{RenderMode, Renderer};
use agent_store::{FileStore, Store};
use agentctx_tests::workloads::{self, kind};
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::io::Write;

const MESSAGES: usize = 100_000;
const READS: usize = 10_000;

fn w1(c: &mut Criterion) {
    let jsonl = workloads::w1_jsonl(MESSAGES);
    let ctx = workloads::load(&jsonl);
    let reads = workloads::w1_reads(&ctx, READS);
    let materialized = ctx.view(&kind("state"), None).unwrap().clone();
    let pointers: Vec<String> = reads.iter().map(workloads::pointer).collect();
    let owned: Vec<Message> = ctx.messages().collect();
    let log: Vec<&DataMessage> = owned.iter().filter_map(Message::as_data).collect();
    // Every read agrees across the three readers before anything is timed.
    for (r, p) in reads.iter().zip(&pointers) {
        let ours = ctx.read(r, None);
        assert_eq!(ours, materialized.pointer(p));
        assert_eq!(ours.cloned(), workloads::naive_read(&log, &r.path));
    }
    c.bench_function("W1-read-ours", |b| {
        b.iter(|| {
            reads
                .iter()
                .filter(|r| ctx.read(black_box(r), None).is_some())
                .count()
        })
    });
    c.bench_function("W1-read-pointer", |b| {
        b.iter(|| {
            pointers
                .iter()
                .filter(|p| black_box(&materialized).pointer(p).is_some())
                .count()
        })
    });
    c.bench_function("W1-read-naive", |b| {
        b.iter(|| {
            reads
                .iter()
                .filter(|r| workloads::naive_read(black_box(&log), &r.path).is_some())
                .count()
        })
    });
}

fn w2(c: &mut Criterion) {
    let ctx = workloads::load(&workloads::w1_jsonl(MESSAGES));
    let messages: Vec<Message> = ctx.messages().collect();
    let ops: Vec<(Path, Method, Value)> = messages
        .iter()
        .filter_map(Message::as_data)
        .map(|d| (d.destination().clone(), d.method(), d.value().clone()))
        .collect();
    c.bench_function("W2-append-ours", |b| {
        b.iter_batched(
            || (),
            |()| {
                let mut ctx = Context::new();
                for m in &messages {
                    ctx.append(m).unwrap();
                }
                ctx
            },
            BatchSize::LargeInput,
        )
    });
    c.bench_function("W2-append-inplace", |b| {
        b.iter_batched(
            || ops.clone(),
            |ops| {
                let mut view = None;
                for (path, method, value) in ops {
                    write(&mut view, &path, method, value).unwrap();
                }
                view
            },
            BatchSize::LargeInput,
        )
    });
}

fn w3(c: &mut Criterion) {
    let ctx = workloads::w3_context();
    let views: Vec<serde_json::Value> = ctx
        .identities()
        .map(|id| serde_json::Value::from(ctx.layer_view(id).unwrap()))
        .collect();
    let renderer = Renderer::new();
    c.bench_function("W3-render-ours", |b| {
        b.iter(|| renderer.render(black_box(&ctx), RenderMode::Merged))
    });
    c.bench_function("W3-render-serde", |b| {
        b.iter(|| {
            black_box(&views)
                .iter()
                .map(|v| serde_json::to_string_pretty(v).unwrap())
                .collect::<Vec<String>>()
        })
    });
    c.bench_function("W3-render-serde_in_context", |b| {
        b.iter(|| {
            let ctx = black_box(&ctx);
            ctx.identities()
                .map(|id| agent_core::json::to_string_pretty(ctx.layer_view(id).unwrap()))
                .collect::<Vec<String>>()
        })
    });
}

fn w4(c: &mut Criterion) {
    let jsonl = workloads::w1_jsonl(MESSAGES);
    c.bench_function("W4-load-ours", |b| {
        b.iter(|| workloads::load(black_box(&jsonl)))
    });
    c.bench_function("W4-load-serde", |b| {
        b.iter(|| {
            black_box(&jsonl)
                .lines()
                .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
                .collect::<Vec<serde_json::Value>>()
        })
    });
}

/// S1: one durable JSONL append through the store (lock, tail check,
/// validate, one `O_APPEND` write, fsync, unlock) against a raw `write` +
/// `fdatasync` of the same line on an open file — what any durable append
/// costs at least.
fn s1(c: &mut Criterion) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let path = dir.path().join("s1.jsonl");
    std::fs::write(&path, "{\"type\":\"state\",\"data\":{\"n\":0}}\n").unwrap();
    let set: Vec<Message> = Message::from_value(agent_core::json!({"type": "state",
        "data": {"n": 1}, "_outputPath": "†state.n"}))
    .unwrap();
    let mut store = FileStore::open(&path).unwrap();
    let mut ctx = store.load().unwrap().context;
    // One append first, so the raw baseline's line exists however the
    // suite is filtered (criterion runs this setup even when S1 is not).
    store.commit(&mut ctx, &set).unwrap();
    c.bench_function("S1-append-ours", |b| {
        b.iter(|| store.commit(&mut ctx, black_box(&set)).unwrap())
    });
    let raw_path = dir.path().join("raw.jsonl");
    let mut raw = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&raw_path)
        .unwrap();
    let line = format!("{}\n", ctx.message_json(1).unwrap());
    c.bench_function("S1-append-raw", |b| {
        b.iter(|| {
            raw.write_all(black_box(line.as_bytes())).unwrap();
            raw.sync_data().unwrap();
        })
    });
}

/// W5: opening a long file context costs O(tail). A cold open
/// — `FileStore::open(path)?.load_tail()`, which reads the snapshot beside
/// the file and the lines after it — and one read (`†state.x`) at 100,000
/// messages of history against the same at 100; both files have their
/// last [`workloads::W5_TAIL`] messages after the snapshot.
fn w5(c: &mut Criterion) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let x: agent_core::Reference = "†state.x".parse().unwrap();
    for (id, messages) in [("W5-open-100k", 100_000), ("W5-open-100", 100)] {
        let path = dir.path().join(format!("w5-{messages}.jsonl"));
        workloads::w5_file(&path, messages).unwrap();
        // It opens from the snapshot, and reads what the whole log folds to.
        let tail = FileStore::open(&path).unwrap().load_tail().unwrap().context;
        let full = FileStore::open(&path).unwrap().load().unwrap().context;
        assert!(!tail.is_complete() && full.is_complete());
        assert_eq!(tail.read(&x, None), full.read(&x, None));
        assert_eq!(
            tail.view(&kind("state"), None),
            full.view(&kind("state"), None)
        );
        c.bench_function(id, |b| {
            b.iter(|| {
                let context = FileStore::open(black_box(&path))
                    .unwrap()
                    .load_tail()
                    .unwrap()
                    .context;
                context.read(&x, None).cloned()
            })
        });
    }
}

/// W6: loading a context of 1,000,000 instances of one small
/// write each (71 MB of JSONL), against parsing each line alone.
fn w6(c: &mut Criterion) {
    let jsonl = workloads::w6_jsonl(1_000_000);
    c.bench_function("W6-load-instances-ours", |b| {
        b.iter(|| workloads::load(black_box(&jsonl)))
    });
    c.bench_function("W6-load-instances-parse", |b| {
        b.iter(|| {
            for line in black_box(&jsonl).lines() {
                black_box(serde_json::from_str::<serde_json::Value>(line).unwrap());
            }
        })
    });
}

/// C1: the chain over a log of 100,000 typical messages (W1's log), one
/// digest per message as `verify` computes it, against SHA-256 of the
/// same bytes in one pass (what `sha256sum` of the file computes). The
/// chain hashes each message with the 32-byte digest before it.
fn c1(c: &mut Criterion) {
    let jsonl = workloads::w1_jsonl(MESSAGES);
    c.bench_function("C1-chain-ours", |b| {
        b.iter(|| agent_data::Digest::of(black_box(&jsonl).lines().map(str::as_bytes)))
    });
    c.bench_function("C1-chain-sha256", |b| {
        b.iter(|| {
            use sha2::Digest as _;
            black_box(sha2::Sha256::digest(black_box(jsonl.as_bytes())))
        })
    });
}

criterion_group! {
    name = suite;
    config = Criterion::default().sample_size(10).measurement_time(std::time::Duration::from_secs(5)).warm_up_time(std::time::Duration::from_secs(1));
    targets = w1, w2, w3, w4, s1, w5, w6, c1
}
criterion_main!(suite);
