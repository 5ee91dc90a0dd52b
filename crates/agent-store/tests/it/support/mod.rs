//! Racing writers against any store and checking the result is some serial
//! order of what they were told landed (R34b): shared by the file and the
//! PostgreSQL tests.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use agent_core::{json, json::Value};
use agent_data::{Context, Message};
use agent_store::Store;
use proptest::prelude::*;
use std::sync::Barrier;
use std::time::Instant;

/// A push of the tag `writer.batch.item` onto `†state.log`.
pub fn push(writer: usize, batch: usize, item: usize) -> Message {
    let tag = format!("{writer}.{batch}.{item}");
    Message::from_value(json!({"type": "state", "data": {"log": tag},
        "_outputPath": "†state.log", "_outputMethod": "push"}))
    .unwrap()
    .remove(0)
}

/// The tags in `†state.log`.
pub fn log_of(context: &Context) -> Vec<String> {
    match context.read(&"†state.log".parse().unwrap(), None) {
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect(),
        other => panic!("no log: {other:?}"),
    }
}

/// One acknowledged batch: its tags, and when its commit started and ended.
pub struct Acked {
    tags: Vec<String>,
    started: Instant,
    acked: Instant,
}

/// Batch sizes per writer: 2–5 writers, 1–7 batches of 1–3 pushes each.
pub fn plans() -> impl Strategy<Value = Vec<Vec<usize>>> {
    prop::collection::vec(prop::collection::vec(1usize..4, 1..8), 2..6)
}

/// Runs `plan[w]` (batch sizes) for each writer `w` at once, each with its
/// own store from `open` (as separate processes have), and returns every
/// acknowledged batch.
pub fn race<S: Store>(open: &(dyn Fn() -> S + Sync), plan: &[Vec<usize>]) -> Vec<Acked> {
    let barrier = Barrier::new(plan.len());
    std::thread::scope(|scope| {
        let handles: Vec<_> = plan
            .iter()
            .enumerate()
            .map(|(writer, batches)| {
                let barrier = &barrier;
                scope.spawn(move || {
                    let mut store = open();
                    let mut context = Context::new();
                    let mut acked = Vec::new();
                    barrier.wait();
                    for (batch, &size) in batches.iter().enumerate() {
                        let messages: Vec<Message> =
                            (0..size).map(|item| push(writer, batch, item)).collect();
                        let started = Instant::now();
                        store.commit(&mut context, &messages).unwrap();
                        acked.push(Acked {
                            tags: (0..size).map(|i| format!("{writer}.{batch}.{i}")).collect(),
                            started,
                            acked: Instant::now(),
                        });
                    }
                    acked
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    })
}

/// The log is some serial order of the acknowledged batches: each batch
/// whole and contiguous, nothing lost or duplicated, and a batch
/// acknowledged before another started comes first.
pub fn assert_linearizable(log: &[String], acked: &[Acked]) {
    let total: usize = acked.iter().map(|a| a.tags.len()).sum();
    assert_eq!(log.len(), total, "lost or duplicated appends: {log:?}");
    let mut position = std::collections::HashMap::new();
    for a in acked {
        let start = log
            .iter()
            .position(|t| *t == a.tags[0])
            .unwrap_or_else(|| panic!("acknowledged batch {:?} is missing", a.tags));
        assert_eq!(
            &log[start..start + a.tags.len()],
            a.tags.as_slice(),
            "batch torn apart"
        );
        position.insert(a.tags[0].clone(), start);
    }
    for a in acked {
        for b in acked {
            if a.acked < b.started {
                assert!(
                    position[&a.tags[0]] < position[&b.tags[0]],
                    "{:?} was acknowledged before {:?} started but comes after it",
                    a.tags,
                    b.tags
                );
            }
        }
    }
}

/// The PostgreSQL server the store tests run against.
#[cfg(feature = "postgres")]
pub mod pg;
