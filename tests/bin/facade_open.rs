//! The facade's cold open against the store's own (decision D50):
//! `facade-open [MESSAGES]` prints one JSON object.
//!
//! For the W5 context of `MESSAGES` messages (default 100,000; its
//! snapshot [`W5_TAIL`] messages before the end, as `w5 files` writes it),
//! in a JSONL file and in PostgreSQL, it times, alternating which goes
//! first, medians of `FACADE_OPEN_ROUNDS` (default 11) rounds:
//!
//! - `facade`: `StoredContext::open_existing(ADDRESS)` and a read of
//!   `†state.x` through it;
//! - `store_tail`: `agent_store::open(ADDRESS)?.load_tail()` and the same
//!   read — the store's own O(tail) open, what the CLI's reads do;
//! - `store_whole`: `agent_store::open(ADDRESS)?.load()` and the read — a
//!   whole read of the log, for scale.
//!
//! Each open is a fresh handle (a fresh connection on PostgreSQL), so the
//! times include connecting. Every value read is checked against a whole
//! read's. `complete` says whether the facade's handle held every message
//! after opening (false: it opened from the snapshot).
//!
//! The server is `AGENTCTX_TEST_DATABASE_URL`, else
//! `postgres://root@127.0.0.1:5432/test`; the context lives in a schema of
//! this process's own, dropped when it ends.
#![forbid(unsafe_code)]

use agent_data::{Context, Format, Message};
use agent_store::Store;
use agentctx::StoredContext;
use agentctx_tests::workloads::{self, W5_TAIL};
use postgres::{Client, NoTls};
use serde_json::{Value, json};
use std::time::Instant;

type Outcome<T> = Result<T, String>;

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
        .unwrap_or(11);
    let dir = tempfile::tempdir_in(".").map_err(|e| e.to_string())?;
    let path = dir.path().join(format!("w5-{messages}.jsonl"));
    workloads::w5_file(&path, messages)?;
    let file = path.to_str().ok_or("the temporary path is not UTF-8")?;
    // The tail was appended by hand, not by agentctx: a first open reads
    // the file whole and records it, so every timed open can trust it.
    let warm = agent_store::open(file)
        .and_then(|mut store| store.load_tail())
        .map_err(|e| e.to_string())?
        .context;
    let files = measure(file, rounds)?;

    let scratch = Scratch::create()?;
    let url = scratch.filled(&warm)?;
    let pg = measure(&url, rounds)?;
    Ok(
        json!({"messages": messages, "rounds": rounds, "tail": W5_TAIL,
        "file": files, "postgres": pg}),
    )
}

/// Medians of `rounds` rounds of each way to open `address`.
fn measure(address: &str, rounds: usize) -> Outcome<Value> {
    let x: agent_core::Reference = "†state.x".parse().map_err(|e| format!("{e}"))?;
    let expected = agent_store::open(address)
        .and_then(|mut store| store.load())
        .map_err(|e| e.to_string())?
        .context
        .read(&x, None)
        .cloned();
    let mut times: [Vec<u128>; 3] = Default::default();
    let mut complete = None;
    for round in 0..rounds {
        for step in 0..3 {
            let which = (round + step) % 3;
            let started = Instant::now();
            let value = match which {
                0 => {
                    let ctx = StoredContext::open_existing(address).map_err(|e| e.to_string())?;
                    complete = Some(ctx.context().is_complete());
                    ctx.get("†state.x").ok()
                }
                1 => store_read(address, &x, |store| store.load_tail())?,
                _ => store_read(address, &x, |store| store.load())?,
            };
            times[which].push(started.elapsed().as_nanos());
            if value != expected {
                return Err(format!(
                    "{address}: open {which} read {value:?}, a whole read {expected:?}"
                ));
            }
        }
    }
    let [facade, tail, whole] = times.map(median_ms);
    Ok(
        json!({"facade_ms": facade, "store_tail_ms": tail, "store_whole_ms": whole,
        "facade_over_store_tail": facade / tail, "complete": complete}),
    )
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

fn median_ms(mut nanos: Vec<u128>) -> f64 {
    nanos.sort_unstable();
    nanos.get(nanos.len() / 2).copied().unwrap_or_default() as f64 / 1e6
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
        store.snapshot(&held, true).map_err(|e| e.to_string())?;
        let mut tail = Vec::new();
        for line in jsonl[cut..].lines() {
            let value: Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
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
