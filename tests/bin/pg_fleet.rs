//! PostgreSQL at fleet scale, against a real server: `pg-fleet PART`
//! prints one JSON object. `cargo xtask bench fleet` runs it.
//!
//! - `many` (MANY-*-1e6-vs-10): a database of `MANY_CONTEXTS` (default
//!   1,000,000) small contexts against one of 10, each in a schema of its
//!   own: opening a context (`PgStore::open` and `load`), appending one
//!   message (to one of ten contexts each database keeps for appends, so
//!   a context's history is the same in both), and listing a page of 5
//!   names after a name (`PgStore::context_names`; as many in both
//!   databases), each on a context chosen at random, `MANY_OPS` (100) of
//!   each per side per round, the sides alternating
//!   over `MANY_ROUNDS` (15) rounds. Each row's ratios are the large
//!   database's median over the small one's, round by round. With them, the
//!   bytes per context of each table and its indexes.
//!
//! - `claims` (FLEET-*): 1, 10, 100 and 1,000 worker threads in this one
//!   process on one plan of `FLEET_CALLS` (100,000) independent calls,
//!   through the transaction pooler `FLEET_POOLED_URL` names (its server
//!   sessions bounded, whatever the threads), each with its own store and
//!   claims: claim one call of a random window of 64 (`PgCalls::claim`),
//!   commit its result (`PgStore::commit_call`), again, for
//!   `FLEET_SECONDS` (5) seconds per pool (`FLEET_POOLS=1,10` for some). Claims and results per second,
//!   conflicts (an append that found another first and caught up), and
//!   the check that every call done has exactly one result in the log.
//!   Then (`FLEET-*-workers-one-pool`, when `FLEET_DIRECT_URL` names the
//!   server) the same threads sharing one `PgPool` of `FLEET_PROCESS_POOL`
//!   (20) connections straight to the server, with the most server
//!   sessions seen at once.
//!
//! The contexts beyond the first are made by two `INSERT … SELECT`s that
//! copy the first one's row and message (its line and chain digest, as the
//! store wrote them), so every context is one agentctx can read and check.
#![forbid(unsafe_code)]

mod fleet_claims;

use agent_core::json::{self, Value};
use agent_data::Context;
use agent_store::Store;
use agentctx_tests::interleave::median;
use agentctx_tests::pg_scratch::{Outcome, Scratch, Server, commit, message, pg, setting};
use agentctx_tests::workloads::Rng;
use std::time::Instant;

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("pg-fleet: {message}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Outcome<()> {
    let part = std::env::args().nth(1).unwrap_or_default();
    let server = Server::find()?;
    let result = match part.as_str() {
        "many" => many(&server)?,
        "claims" => fleet_claims::claims()?,
        _ => return Err("usage: pg-fleet <many|claims>".into()),
    };
    println!("{result}");
    Ok(())
}

/// The name of context `i`: letters and digits, ordered as numbered.
fn name(i: usize) -> String {
    format!("c{i:08}")
}

/// How many contexts of each database the appends go to.
const APPENDED: usize = 10;

/// The name of the `i`th context appended to.
fn appended(i: usize) -> String {
    format!("a{i:02}")
}

/// A database of `count` contexts of one message each (and [`APPENDED`]
/// more that appends go to).
struct Database {
    scratch: Scratch,
    count: usize,
}

impl Database {
    fn create(server: &Server, part: &str, count: usize) -> Outcome<Database> {
        let scratch = Scratch::create(server, part)?;
        let started = Instant::now();
        // The first through the store: the tables, and the line and digest
        // every other context copies.
        let mut store = scratch.store(&name(0))?;
        let mut context = Context::new();
        commit(
            &mut store,
            &mut context,
            json::json!({"type": "state", "data": {"n": 0}}),
        )?;
        let mut raw = scratch.client()?;
        let copied = i64::try_from(count.saturating_sub(1)).unwrap_or(0);
        raw.batch_execute("SET synchronous_commit = off")
            .map_err(|e| pg(&e))?;
        raw.execute(
            "INSERT INTO agentctx_contexts (name, length, chained) \
             SELECT 'c' || lpad(g::text, 8, '0'), 1, 1 FROM generate_series(1, $1::bigint) g",
            &[&copied],
        )
        .map_err(|e| pg(&e))?;
        raw.execute(
            "INSERT INTO agentctx_messages (context, seq, line, digest) \
             SELECT c.id, 0, m.line, m.digest FROM agentctx_contexts c, \
               (SELECT line, digest FROM agentctx_messages WHERE seq = 0 LIMIT 1) m \
             WHERE c.name <> $1",
            &[&name(0)],
        )
        .map_err(|e| pg(&e))?;
        // As autovacuum leaves them after a bulk insert: statistics, and
        // the visibility map that lets a listing read the index alone.
        for table in ["agentctx_contexts", "agentctx_messages"] {
            raw.batch_execute(&format!("VACUUM (ANALYZE) {table}"))
                .map_err(|e| pg(&e))?;
        }
        eprintln!(
            "pg-fleet: {count} contexts in {} in {:.0} s",
            scratch.schema,
            started.elapsed().as_secs_f64()
        );
        // The contexts appended to, apart (`a…` sorts before `c…`).
        for i in 0..APPENDED {
            let mut store = scratch.store(&appended(i))?;
            let first = json::json!({"type": "state", "data": {"n": i}});
            commit(&mut store, &mut Context::new(), first)?;
        }
        Ok(Database { scratch, count })
    }

    /// Bytes per context of `table` (heap and TOAST) and of its indexes.
    fn bytes_per_context(&self, table: &str) -> Outcome<Value> {
        let mut raw = self.scratch.client()?;
        let row = raw
            .query_one(
                "SELECT pg_table_size(c.oid), pg_indexes_size(c.oid) FROM pg_class c \
                 JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE n.nspname = $1 AND c.relname = $2",
                &[&self.scratch.schema, &table],
            )
            .map_err(|e| pg(&e))?;
        let (heap, indexes): (i64, i64) = (row.get(0), row.get(1));
        let per = |bytes: i64| bytes as f64 / self.count as f64;
        Ok(json::json!({"table": per(heap), "indexes": per(indexes)}))
    }
}

/// The names a listing asks for: a full page in the small database too.
const PAGE: usize = 5;

/// What one round measured on one side: each operation's median.
struct Round {
    open: f64,
    append: f64,
    list: f64,
}

/// `ops` opens, appends and listings on contexts chosen by `pick`.
fn round(database: &Database, ops: usize, pick: &mut impl FnMut() -> usize) -> Outcome<Round> {
    let (mut open, mut append, mut list) = (Vec::new(), Vec::new(), Vec::new());
    let note = message(json::json!({"type": "state", "data": {"seen": 1}}))?;
    for _ in 0..ops {
        // Opened and listed: contexts nothing is appended to, the same
        // one message in either database.
        let chosen = name(pick() % database.count);
        let started = Instant::now();
        let mut store = database.scratch.store(&chosen)?;
        store.load().map_err(|e| e.to_string())?;
        open.push(started.elapsed().as_nanos() as f64);
        // A name with a full page after it, in either database.
        let after = name(pick() % (database.count - PAGE));
        let started = Instant::now();
        let page = store
            .context_names(&after, PAGE)
            .map_err(|e| e.to_string())?;
        list.push(started.elapsed().as_nanos() as f64);
        if page.len() != PAGE || page.first().is_some_and(|first| *first <= after) {
            return Err(format!("the page after {after} is {page:?}"));
        }
        // Appended to: one of the ten contexts each database keeps for
        // that, so a context's history is the same in both.
        let mut store = database.scratch.store(&appended(pick() % APPENDED))?;
        let mut context = store.load().map_err(|e| e.to_string())?.context;
        let started = Instant::now();
        store
            .commit(&mut context, &note)
            .map_err(|e| e.to_string())?;
        append.push(started.elapsed().as_nanos() as f64);
    }
    Ok(Round {
        open: median(open),
        append: median(append),
        list: median(list),
    })
}

fn many(server: &Server) -> Outcome<Value> {
    let count = setting("MANY_CONTEXTS", 1_000_000);
    let rounds = setting("MANY_ROUNDS", 15);
    let ops = setting("MANY_OPS", 100);
    let small = Database::create(server, "many_small", 10)?;
    let large = Database::create(server, "many_large", count)?;
    // A fixed sequence, so every run picks the same contexts.
    let mut rng = Rng(0x5EED_F1EE);
    let mut pick = move || usize::try_from(rng.next_u64() >> 1).unwrap_or(0);
    let mut sides: [Vec<Round>; 2] = [Vec::new(), Vec::new()];
    for r in 0..=rounds {
        // Round 0 warms both up; the order alternates.
        for side in [r % 2, 1 - r % 2] {
            let database = if side == 0 { &small } else { &large };
            let measured = round(database, ops, &mut pick)?;
            if r > 0 {
                sides[side].push(measured);
            }
        }
    }
    let row = |workload: &str, what: &str, of: fn(&Round) -> f64| {
        let ratios: Vec<f64> = sides[1]
            .iter()
            .zip(&sides[0])
            .map(|(large, small)| of(large) / of(small))
            .collect();
        let ours = median(sides[1].iter().map(of).collect());
        let base = median(sides[0].iter().map(of).collect());
        json::json!({
            "workload": workload,
            "ratios": ratios,
            "ratio": ours / base,
            "ours_ns": ours,
            "baseline": format!("{what} in a database of 10 contexts, interleaved"),
            "baseline_ns": base,
            "rounds": rounds,
            "contexts": count,
        })
    };
    Ok(json::json!({
        "rows": [
            row("MANY-open-1e6-vs-10", "PgStore::open and load of one context", |r| r.open),
            row("MANY-append-1e6-vs-10", "one append", |r| r.append),
            row("MANY-list-1e6-vs-10", "a page of 5 names after a name", |r| r.list),
        ],
        "bytes_per_context": {
            "contexts": count,
            "agentctx_contexts": large.bytes_per_context("agentctx_contexts")?,
            "agentctx_messages": large.bytes_per_context("agentctx_messages")?,
        },
    }))
}
