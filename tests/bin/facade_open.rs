//! The facade's cold open against the store's own (D50: facade opens in O(tail)):
//! `facade-open [MESSAGES]` prints `{"about":{…},"rows":[…]}`, one row per
//! store, in the shape of the suite's interleaved rows (`cargo xtask bench`
//! judges their spread).
//!
//! For the W5 context of `MESSAGES` messages (default 100,000; its
//! snapshot [`W5_TAIL`] messages before the end, as `w5 files` writes it),
//! in a JSONL file (`FACADE-open-vs-store-tail`) and in PostgreSQL
//! (`FACADE-pg-open-vs-store-tail`), it runs in turns, short batches round
//! after round (`agentctx_tests::interleave`), `FACADE_OPEN_ROUNDS`
//! (default 15) rounds:
//!
//! - ours: `StoredContext::open_existing(ADDRESS)` and a read of
//!   `†state.x` through it (the facade);
//! - the baseline: `agent_store::open(ADDRESS)?.load_tail()` and the same
//!   read — the store's own O(tail) open, what the CLI's reads do.
//!
//! Then, for scale, the median of three whole reads
//! (`agent_store::open(ADDRESS)?.load()` and the read: `whole_read_ns`).
//! Each open is a fresh handle (a fresh connection on PostgreSQL), so the
//! times include connecting. The values both read are checked against a
//! whole read's first. `complete` says whether the facade's handle held
//! every message after opening (false: it opened from the snapshot).
//!
//! The server is `AGENTCTX_TEST_DATABASE_URL`, else
//! `postgres://root@127.0.0.1:5432/test`; the context lives in a schema of
//! this process's own, dropped when it ends.
#![forbid(unsafe_code)]

use agent_store::SnapshotWhen;

use agent_core::{json, json::Value};
use agent_data::{Context, Format, Message};
use agent_store::Store;
use agentctx::StoredContext;
use agentctx_tests::interleave::{self, interleave, timed};
use agentctx_tests::workloads::{self, W5_TAIL};
use postgres::{Client, NoTls};
use std::time::Instant;

type Outcome<T> = Result<T, String>;

/// Whole reads timed for scale after the rounds (each about half a second
/// at 100,000 messages).
const WHOLE_READS: usize = 3;

fn main() -> std::process::ExitCode {
    match run() {
        Ok(summary) => {
            println!("{summary}");
            std::process::ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("facade-open: {message}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Outcome<Value> {
    let messages = match std::env::args().nth(1) {
        Some(n) => n.parse().map_err(|_| format!("bad size {n:?}"))?,
        None => 100_000,
    };
    let rounds = std::env::var("FACADE_OPEN_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(15);
    let dir = tempfile::tempdir_in(".").map_err(|e| e.to_string())?;
    let path = dir.path().join(format!("w5-{messages}.jsonl"));
    workloads::w5_file(&path, messages)?;
    let file = path.to_str().ok_or("the temporary path is not UTF-8")?;
    // Every message, for the PostgreSQL copy: the file's snapshot and head
    // record are trusted, so `load_tail` would hold only the tail.
    let warm = agent_store::open(file)
        .and_then(|mut store| store.load())
        .map_err(|e| e.to_string())?
        .context;
    let files = measure(file, rounds, "FACADE-open-vs-store-tail")?;

    let scratch = Scratch::create()?;
    let url = scratch.filled(&warm)?;
    let pg = measure(&url, rounds, "FACADE-pg-open-vs-store-tail")?;
    let about = json!({"messages": messages, "tail": W5_TAIL});
    Ok(json!({ "about": about, "rows": [files, pg] }))
}

/// The facade's open against the store's own on `address`, interleaved
/// (`agentctx_tests::interleave`): a row of per-round ratios, facade over
/// store; then [`WHOLE_READS`] whole reads, for scale.
fn measure(address: &str, rounds: usize, workload: &str) -> Outcome<Value> {
    let x: agent_core::Reference = "†state.x".parse().map_err(|e| format!("{e}"))?;
    let expected = store_read(address, &x, |store| store.load())?;
    let facade = || -> Outcome<(Option<Value>, bool)> {
        let ctx = StoredContext::open_existing(address).map_err(|e| e.to_string())?;
        Ok((ctx.get("†state.x").ok(), ctx.context().is_complete()))
    };
    let (value, complete) = facade()?;
    let tail = store_read(address, &x, |store| store.load_tail())?;
    for (which, read) in [("the facade", &value), ("the store's load_tail", &tail)] {
        if *read != expected {
            return Err(format!(
                "{address}: {which} read {read:?}, a whole read {expected:?}"
            ));
        }
    }
    // A failed open inside the rounds is kept here and reported after them.
    let failure = std::cell::RefCell::new(None);
    let fail = |error: String| {
        failure.borrow_mut().get_or_insert(error);
    };
    let (ours, base) = interleave(
        rounds,
        || {
            timed(|| {
                let opened = facade();
                if let Err(e) = &opened {
                    fail(e.clone());
                }
                opened
            })
        },
        || {
            timed(|| {
                let read = store_read(address, &x, |store| store.load_tail());
                if let Err(e) = &read {
                    fail(e.clone());
                }
                read
            })
        },
    );
    if let Some(error) = failure.into_inner() {
        return Err(error);
    }
    let mut whole = Vec::new();
    for _ in 0..WHOLE_READS {
        let started = Instant::now();
        store_read(address, &x, |store| store.load())?;
        whole.push(started.elapsed().as_nanos() as f64);
    }
    let mut row = interleave::row(
        workload,
        "agent_store::open(ADDRESS)?.load_tail() and the same read: the store's own \
         snapshot-and-tail open",
        &ours,
        &base,
    );
    row["complete"] = json!(complete);
    row["whole_read_ns"] = json!(interleave::median(whole));
    Ok(row)
}

fn store_read(
    address: &str,
    x: &agent_core::Reference,
    load: impl FnOnce(&mut Box<dyn Store + Send>) -> agent_store::Result<agent_data::Loaded>,
) -> Outcome<Option<Value>> {
    let mut store = agent_store::open(address).map_err(|e| e.to_string())?;
    let context = load(&mut store).map_err(|e| e.to_string())?.context;
    Ok(context.read(x, None).cloned())
}

/// A schema of this process's own, dropped when it goes out of scope.
struct Scratch {
    admin: Client,
    schema: String,
    url: String,
}

impl Scratch {
    fn create() -> Outcome<Scratch> {
        let server = std::env::var("AGENTCTX_TEST_DATABASE_URL")
            .unwrap_or_else(|_| "postgres://root@127.0.0.1:5432/test".to_owned());
        let mut admin = Client::connect(&server, NoTls).map_err(|e| {
            format!(
                "no PostgreSQL server answers ({e}): set AGENTCTX_TEST_DATABASE_URL to one \
                 where this may create and drop a schema"
            )
        })?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_err(|e| e.to_string())?
            .as_nanos();
        let schema = format!("agentctx_facade_open_{}_{nanos}", std::process::id());
        admin
            .batch_execute(&format!("CREATE SCHEMA {schema}"))
            .map_err(|e| format!("cannot create schema {schema}: {e}"))?;
        let sep = if server.contains('?') { '&' } else { '?' };
        let url = format!("{server}{sep}options=-c%20search_path%3D{schema}&context=w5");
        Ok(Scratch { admin, schema, url })
    }

    /// The context's address, holding `context`'s messages as the file
    /// does: all but the last [`W5_TAIL`] copied, a snapshot of them, then
    /// the last ones committed after it.
    fn filled(&self, context: &Context) -> Outcome<String> {
        let jsonl = context.to_jsonl();
        let cut = jsonl
            .match_indices('\n')
            .nth(context.len().saturating_sub(W5_TAIL + 1))
            .map_or(0, |(at, _)| at + 1);
        let head = Context::load(&jsonl.as_bytes()[..cut], Format::Jsonl)
            .map_err(|e| e.to_string())?
            .context;
        let mut store = agent_store::open(&self.url).map_err(|e| e.to_string())?;
        agent_store::copy_context(&head, &mut store).map_err(|e| e.to_string())?;
        let mut store = agent_store::open(&self.url).map_err(|e| e.to_string())?;
        let mut held = store.load().map_err(|e| e.to_string())?.context;
        store
            .snapshot(&held, SnapshotWhen::Now)
            .map_err(|e| e.to_string())?;
        let mut tail = Vec::new();
        for line in jsonl[cut..].lines() {
            let value: Value = agent_core::json::from_str(line).map_err(|e| e.to_string())?;
            tail.extend(Message::from_value(value).map_err(|e| e.to_string())?);
        }
        store.commit(&mut held, &tail).map_err(|e| e.to_string())?;
        Ok(self.url.clone())
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let drop = format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema);
        if let Err(e) = self.admin.batch_execute(&drop) {
            eprintln!(
                "facade-open: cannot drop schema {} (drop it by hand): {e}",
                self.schema
            );
        }
    }
}
