//! The suite's ratios, interleaved (`agentctx_tests::interleave`): each
//! workload of `tests/benches/suite.rs` and its baseline in turns, short
//! batches, round after round, one ratio per round. Prints
//! `{"rows":[{"workload","ours_ns","baseline","baseline_ns","ratio",
//! "ratios",…}]}`; `cargo xtask bench` judges the spread.
//!
//! `ratios [NAME…]` runs only the workloads whose name contains one of the
//! NAMEs. Knobs: `RATIO_ROUNDS` (15), `RATIO_HEAVY_ROUNDS` (9, for the
//! workloads of a second or more a round: W4, W6). The workloads are the
//! suite's (same generators, same seeds); criterion still gives absolute
//! times with confidence intervals (`cargo bench -p agentctx-tests
//! --bench suite`), but its ratios divide numbers taken seconds apart.
#![forbid(unsafe_code)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a bench binary: a failed set-up is a bug to see at once

use agent_core::{Method, Path, write};
use agent_core::{json, json::Value};
use agent_data::{Context, DataMessage, Digest, Message};
use agent_render::{RenderMode, Renderer};
use agent_store::{FileStore, Store};
use agentctx_tests::interleave::{interleave, row, timed, timed_before_drop};
use agentctx_tests::workloads::{self, kind};
use std::hint::black_box;

const MESSAGES: usize = 100_000;
const READS: usize = 10_000;
/// Reads the naive resolver makes per iteration: all 10,000 take it 10 s,
/// too long for a round; ours reads the same subset.
const NAIVE_READS: usize = 200;

fn knob(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|n| n.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(default)
}

fn main() {
    let names: Vec<String> = std::env::args().skip(1).collect();
    let wanted = |workload: &str| names.is_empty() || names.iter().any(|n| workload.contains(n));
    let rounds = knob("RATIO_ROUNDS", 15);
    let heavy = knob("RATIO_HEAVY_ROUNDS", 9);
    let mut rows = Vec::new();
    if wanted("W1") {
        w1(rounds, &mut rows);
    }
    if wanted("W2") {
        w2(rounds, &mut rows);
    }
    if wanted("W3") {
        w3(rounds, &mut rows);
    }
    if wanted("W4") {
        rows.push(w4(heavy));
    }
    if wanted("W5") {
        rows.push(w5(rounds));
    }
    if wanted("W6") {
        rows.push(w6(heavy));
    }
    if wanted("C1") {
        rows.push(c1(rounds));
    }
    if wanted("SCHEMA") {
        rows.push(schema_copy(rounds));
    }
    println!("{}", json!({ "rows": rows }));
}

fn say(workload: &str) {
    eprintln!("ratios: {workload}");
}

fn w1(rounds: usize, rows: &mut Vec<Value>) {
    let ctx = workloads::load(&workloads::w1_jsonl(MESSAGES));
    let reads = workloads::w1_reads(&ctx, READS);
    let materialized = ctx.view(&kind("state"), None).unwrap().clone();
    let pointers: Vec<String> = reads.iter().map(workloads::pointer).collect();
    let owned: Vec<Message> = ctx.messages().collect();
    let log: Vec<&DataMessage> = owned.iter().filter_map(Message::as_data).collect();
    for (r, p) in reads.iter().zip(&pointers) {
        let ours = ctx.read(r, None);
        assert_eq!(ours, materialized.pointer(p));
    }
    for r in &reads[..NAIVE_READS] {
        assert_eq!(
            ctx.read(r, None).cloned(),
            workloads::naive_read(&log, &r.path)
        );
    }
    let ours = |reads: &[agent_core::Reference]| {
        timed(|| {
            reads
                .iter()
                .filter(|r| ctx.read(black_box(r), None).is_some())
                .count()
        })
    };
    say("W1-read-vs-pointer");
    let (a, b) = interleave(
        rounds,
        || ours(&reads),
        || {
            timed(|| {
                pointers
                    .iter()
                    .filter(|p| black_box(&materialized).pointer(p).is_some())
                    .count()
            })
        },
    );
    rows.push(row(
        "W1-read-vs-pointer",
        "agent_core::json::Value::pointer on the materialised view",
        &a,
        &b,
    ));
    say("W1-read-vs-naive");
    let few = &reads[..NAIVE_READS];
    let (a, b) = interleave(
        rounds,
        || ours(few),
        || {
            timed(|| {
                few.iter()
                    .filter(|r| workloads::naive_read(black_box(&log), &r.path).is_some())
                    .count()
            })
        },
    );
    let mut naive = row(
        "W1-read-vs-naive",
        "naive newest-to-oldest resolver of R14 (both over the first 200 of the 10,000 reads)",
        &a,
        &b,
    );
    naive["reads"] = json!(NAIVE_READS);
    rows.push(naive);
}

fn w2(rounds: usize, rows: &mut Vec<Value>) {
    let ctx = workloads::load(&workloads::w1_jsonl(MESSAGES));
    let messages: Vec<Message> = ctx.messages().collect();
    // The baselines borrow each path, as an append does (D80: global write folded once), from one
    // vector of them; they own each value, so a copy is made untimed
    // before every run. (Borrowing the paths from the messages themselves
    // makes the in-place writes about twice as slow, as they are read from
    // memory the cache no longer holds; that would flatter the append,
    // which reads them there, so the baselines read them packed.)
    let paths: Vec<Path> = messages
        .iter()
        .filter_map(Message::as_data)
        .map(|d| d.destination().clone())
        .collect();
    let ops: Vec<(Method, Value)> = messages
        .iter()
        .filter_map(Message::as_data)
        .map(|d| (d.method(), d.value().clone()))
        .collect();
    // Each message as an object, for its line.
    let objects: Vec<json::Map> = messages
        .iter()
        .filter_map(|m| match m.to_value() {
            Value::Object(map) => Some(map),
            _ => None,
        })
        .collect();
    assert_eq!(ops.len(), messages.len(), "every W2 message writes");
    assert_eq!(objects.len(), messages.len());
    let append_all = || {
        let mut ctx = Context::new();
        for m in &messages {
            ctx.append(m).unwrap();
        }
        ctx
    };
    let append = || timed_before_drop(append_all);
    // The record an append keeps, made the same way: every line written
    // after the last into one text, each chained.
    let record = |log: &mut String, head: Digest, object: &json::Map| {
        let start = log.len();
        json::write_object_within(log, object, 128);
        let head = head.next(&log.as_bytes()[start..]);
        log.push('\n');
        head
    };
    // Checked untimed: the record is byte for byte what an append keeps.
    let (mut log, mut head) = (String::new(), Digest::GENESIS);
    for object in &objects {
        head = record(&mut log, head, object);
    }
    let appended = append_all();
    assert_eq!(
        log,
        appended.to_jsonl(),
        "the baseline's record is the context's lines"
    );
    assert_eq!(head, appended.head(), "and its chain the context's");
    let inplace = || {
        let ops = ops.clone();
        timed_before_drop(|| {
            let mut view = None;
            for (path, (method, value)) in paths.iter().zip(ops) {
                write(&mut view, path, method, value).unwrap();
            }
            view
        })
    };
    say("W2-append-vs-inplace");
    let (a, b) = interleave(rounds, append, inplace);
    rows.push(row(
        "W2-append-vs-inplace",
        "agent_core::write on one Value in place, each path borrowed",
        &a,
        &b,
    ));
    // What an append keeps besides the write: each message's line written
    // and chained (D19: messages as text; D46: the chain). Over the same baseline, this row is the
    // least W2 can be, less one.
    let line_and_digest = || {
        timed_before_drop(|| {
            let (mut log, mut head) = (String::new(), Digest::GENESIS);
            for object in black_box(&objects) {
                head = record(&mut log, head, object);
            }
            (log, head)
        })
    };
    say("W2-line-and-digest-vs-inplace");
    let (a, b) = interleave(rounds, line_and_digest, inplace);
    rows.push(row(
        "W2-line-and-digest-vs-inplace",
        "agent_core::write on one Value in place (as W2)",
        &a,
        &b,
    ));
    // The baseline an append is judged against (D88: recorded baseline): the same writes in
    // place, recorded as the log records them.
    let recorded_inplace = || {
        let ops = ops.clone();
        timed_before_drop(|| {
            let (mut view, mut log, mut head) = (None, String::new(), Digest::GENESIS);
            for ((path, (method, value)), object) in paths.iter().zip(ops).zip(black_box(&objects))
            {
                head = record(&mut log, head, object);
                write(&mut view, path, method, value).unwrap();
            }
            (view, log, head)
        })
    };
    say("W2-append-vs-recorded-inplace");
    let (a, b) = interleave(rounds, append, recorded_inplace);
    rows.push(row(
        "W2-append-vs-recorded-inplace",
        "agent_core::write in place, each message's line written after the last and chained (D88: recorded baseline)",
        &a,
        &b,
    ));
}

fn w3(rounds: usize, rows: &mut Vec<Value>) {
    let ctx = workloads::w3_context();
    // The baseline is serde_json printing its own value of each view.
    let views: Vec<serde_json::Value> = ctx
        .identities()
        .map(|id| serde_json::Value::from(ctx.layer_view(id).unwrap()))
        .collect();
    let renderer = Renderer::new();
    let ours = || timed(|| renderer.render(black_box(&ctx), RenderMode::Merged));
    say("W3-render-vs-serde");
    let (a, b) = interleave(rounds, ours, || {
        timed(|| {
            black_box(&views)
                .iter()
                .map(|v| serde_json::to_string_pretty(v).unwrap())
                .collect::<Vec<String>>()
        })
    });
    rows.push(row(
        "W3-render-vs-serde",
        "serde_json::to_string_pretty of the views as serde_json values",
        &a,
        &b,
    ));
    say("W3-render-vs-serde-in-context");
    let (a, b) = interleave(rounds, ours, || {
        timed(|| {
            let ctx = black_box(&ctx);
            ctx.identities()
                .map(|id| agent_core::json::to_string_pretty(ctx.layer_view(id).unwrap()))
                .collect::<Vec<String>>()
        })
    });
    rows.push(row(
        "W3-render-vs-serde-in-context",
        "the pretty text of the context's own views, without rendering",
        &a,
        &b,
    ));
}

fn w4(rounds: usize) -> Value {
    let jsonl = workloads::w1_jsonl(MESSAGES);
    say("W4-load-vs-serde");
    let (a, b) = interleave(
        rounds,
        || timed(|| workloads::load(black_box(&jsonl))),
        || {
            timed(|| {
                black_box(&jsonl)
                    .lines()
                    .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
                    .collect::<Vec<serde_json::Value>>()
            })
        },
    );
    row(
        "W4-load-vs-serde",
        "serde_json::from_str of each line",
        &a,
        &b,
    )
}

fn w5(rounds: usize) -> Value {
    let dir = tempfile::tempdir_in(".").unwrap();
    let x: agent_core::Reference = "†state.x".parse().unwrap();
    let mut paths = Vec::new();
    for messages in [100_000, 100] {
        let path = dir.path().join(format!("w5-{messages}.jsonl"));
        workloads::w5_file(&path, messages).unwrap();
        // It opens from the snapshot, and reads what the whole log folds to.
        let tail = FileStore::open(&path).unwrap().load_tail().unwrap().context;
        let full = FileStore::open(&path).unwrap().load().unwrap().context;
        assert!(!tail.is_complete() && full.is_complete());
        assert_eq!(tail.read(&x, None), full.read(&x, None));
        paths.push(path);
    }
    let open = |path: &std::path::Path| {
        timed(|| {
            let context = FileStore::open(black_box(path))
                .unwrap()
                .load_tail()
                .unwrap()
                .context;
            context.read(&x, None).cloned()
        })
    };
    say("W5-open-100k-vs-100");
    let (a, b) = interleave(rounds, || open(&paths[0]), || open(&paths[1]));
    row(
        "W5-open-100k-vs-100",
        "the same load_tail and read at 100 messages of history",
        &a,
        &b,
    )
}

fn w6(rounds: usize) -> Value {
    let jsonl = workloads::w6_jsonl(1_000_000);
    say("W6-load-instances-vs-parse");
    let (a, b) = interleave(
        rounds,
        || timed(|| workloads::load(black_box(&jsonl))),
        || {
            timed(|| {
                for line in black_box(&jsonl).lines() {
                    black_box(serde_json::from_str::<serde_json::Value>(line).unwrap());
                }
            })
        },
    );
    row(
        "W6-load-instances-vs-parse",
        "serde_json::from_str of each line, dropped",
        &a,
        &b,
    )
}

fn c1(rounds: usize) -> Value {
    let jsonl = workloads::w1_jsonl(MESSAGES);
    say("C1-chain-vs-sha256");
    let (a, b) = interleave(
        rounds,
        || timed(|| agent_data::Digest::of(black_box(&jsonl).lines().map(str::as_bytes))),
        || {
            timed(|| {
                use sha2::Digest as _;
                sha2::Sha256::digest(black_box(jsonl.as_bytes()))
            })
        },
    );
    row(
        "C1-chain-vs-sha256",
        "SHA-256 of the same bytes in one pass (what sha256sum computes)",
        &a,
        &b,
    )
}

/// What a schema check spends copying the view into serde_json's value for
/// the validator (D93: the schema seam's copy): the copy alone against the
/// whole checked append of the same view, 1,000 items under a schema that
/// types every field. Printed, not judged: the share it shows is the most
/// a copy-free validator could save.
fn schema_copy(rounds: usize) -> Value {
    let items: Vec<Value> = (0..1_000)
        .map(|i| {
            json!({"id": i, "name": format!("item {i}"), "tags": ["a", "b", "c"],
                   "score": f64::from(i) / 7.0})
        })
        .collect();
    let view = json!({"title": "catalog", "items": items});
    let schema = json!({"type": "object", "required": ["title"], "properties": {
        "title": {"type": "string"},
        "items": {"type": "array", "items": {"type": "object", "required": ["id", "name"],
            "properties": {"id": {"type": "integer"}, "name": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "score": {"type": "number"}}}}}});
    let message = Message::from_value(
        json!({"type": "data", "kind": "catalog", "data": view, "schema": schema}),
    )
    .unwrap()
    .remove(0);
    let checked = || {
        timed_before_drop(|| {
            let mut ctx = Context::new();
            ctx.append(black_box(&message)).unwrap();
            ctx
        })
    };
    // The view as the context holds it (read lazily from the message's
    // text), which is what the check copies.
    let mut held = Context::new();
    held.append(&message).unwrap();
    let held_view = held.view(&kind("catalog"), None).unwrap().clone();
    let copy = || timed(|| serde_json::Value::from(black_box(&held_view)));
    say("SCHEMA-copy-vs-checked-append");
    let (a, b) = interleave(rounds, copy, checked);
    row(
        "SCHEMA-copy-vs-checked-append",
        "the schema-checked append of the same view (copy, validation, append)",
        &a,
        &b,
    )
}
