//! The PostgreSQL benchmarks, against a real server:
//! `pg-bench PART` prints one JSON object. `cargo xtask bench` runs them.
//!
//! - `server`: checks that the server answers; prints its version.
//! - `append` (S2-pg-append-vs-insert): one durable append through the
//!   store (`PgStore::commit` of one small message: catch-up, validate,
//!   compare-and-append) against a plain single-row `INSERT` of the same
//!   line into a plain table (autocommit: the insert and its commit in one
//!   statement, prepared once), alternating one of each so drift hits both
//!   alike; medians of `PG_S2_ROUNDS` (default 2,000) rounds.
//! - `writers` (S3-pg-writers): appends per second with 1, 2, 4 and 8
//!   writer threads, each with its own connection, committing pushes for
//!   `PG_S3_SECONDS` (default 2) seconds to one context, and to 8 contexts
//!   (writer i to context i mod 8); every acknowledged append is checked
//!   present afterwards.
//! - `bytes` (S4-pg-bytes-per-write): `PG_S4_STEPS` (default 10,000) commits
//!   of one small message onto a fresh context in a fresh schema (its
//!   session with `synchronous_commit=off`: sizes, not durability), then the
//!   size of `agentctx_messages`, `agentctx_contexts` and the snapshot
//!   tables (`pg_total_relation_size`: heap, indexes, TOAST, free space and
//!   visibility maps) over the bytes of the message lines, as they are
//!   (no `VACUUM`); then the snapshot tables after `VACUUM FULL`, so the
//!   dead bytes snapshots left are counted apart (`snapshots.dead_ratio`:
//!   dead bytes over the live snapshot's). Three times: a `set` whose state
//!   stays small, (`growing`) a `push` whose state grows with every write,
//!   and (`rewrites`) the `set` with a snapshot rewritten after every write
//!   and the snapshot tables vacuumed (plain `VACUUM`, as autovacuum does)
//!   every 1,000.
//! - `load` (PG-load-vs-file): a 100,000-message context (the W1 workload)
//!   loaded from PostgreSQL (`PgStore::load`) against the same messages from
//!   a JSONL file (`FileStore::load`), alternating, medians of
//!   `PG_LOAD_ROUNDS` (default 7) rounds.
//!
//! The timed parts also print `ratios`, one per round (S2: per 50 pairs),
//! from which `cargo xtask bench` takes the median and its spread.
//!
//! The server is `AGENTCTX_TEST_DATABASE_URL`, else
//! `postgres://root@127.0.0.1:5432/test`; when it does not answer, every
//! part fails saying how to provide one. Each part works in a schema of its
//! own (`agentctx_bench_PART_PID_NANOS`, reached with the URL option
//! `options=-c search_path=…`), dropped when it ends.
#![forbid(unsafe_code)]

use agent_core::{json, json::Value};
use agent_data::Context;
use agent_store::{FileStore, PgStore, SnapshotWhen, Store};
use agentctx_tests::pg_scratch::{
    Outcome, Scratch, Server, commit, median, message, pg, setting, unique,
};
use agentctx_tests::{interleave, workloads};
use postgres::Client;
use std::time::{Duration, Instant};

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("pg-bench: {message}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Outcome<()> {
    let part = std::env::args().nth(1).unwrap_or_default();
    let server = Server::find()?;
    let result = match part.as_str() {
        "server" => server.describe()?,
        "append" => append(&server)?,
        "writers" => writers(&server)?,
        "bytes" => bytes(&server)?,
        "load" => load(&server)?,
        _ => return Err("usage: pg-bench <server|append|writers|bytes|load>".into()),
    };
    println!("{result}");
    Ok(())
}

/// S2: a store commit against a plain `INSERT`, interleaved.
fn append(server: &Server) -> Outcome<Value> {
    let rounds = setting("PG_S2_ROUNDS", 2000);
    let warmup = 50;
    let scratch = Scratch::create(server, "append")?;
    let name = format!("s2-{}", unique('-'));
    let mut store = scratch.store(&name)?;
    let mut context = Context::new();
    commit(
        &mut store,
        &mut context,
        json!({"type": "state", "data": {"n": 0}}),
    )?;
    let set = message(json!({"type": "state", "data": {"n": 1}, "_outputPath": "†state.n"}))?;
    store
        .commit(&mut context, &set)
        .map_err(|e| e.to_string())?;
    let line = context
        .message_json(context.len() - 1)
        .ok_or("the committed message is missing")?
        .to_owned();

    let mut raw = scratch.client()?;
    raw.batch_execute("CREATE TABLE plain_lines (seq bigint PRIMARY KEY, line json NOT NULL)")
        .map_err(|e| pg(&e))?;
    let insert = raw
        .prepare("INSERT INTO plain_lines (seq, line) VALUES ($1, $2::text::json)")
        .map_err(|e| pg(&e))?;
    let ping = raw.prepare("SELECT 1").map_err(|e| pg(&e))?;

    let mut seq = 0i64;
    let (mut ours, mut baseline, mut trip) = (
        Vec::with_capacity(rounds),
        Vec::with_capacity(rounds),
        Vec::with_capacity(rounds),
    );
    for round in 0..warmup + rounds {
        // Alternate which goes first, so neither always follows the other.
        let mut timed = [0u128; 2];
        for which in [round % 2, 1 - round % 2] {
            let started = Instant::now();
            if which == 0 {
                store
                    .commit(&mut context, &set)
                    .map_err(|e| e.to_string())?;
            } else {
                raw.execute(&insert, &[&seq, &line]).map_err(|e| pg(&e))?;
                seq += 1;
            }
            timed[which] = started.elapsed().as_nanos();
        }
        let started = Instant::now();
        raw.query_one(&ping, &[]).map_err(|e| pg(&e))?;
        let ping_ns = started.elapsed().as_nanos();
        if round >= warmup {
            ours.push(timed[0]);
            baseline.push(timed[1]);
            trip.push(ping_ns);
        }
    }

    // Where the time goes: the steps of `Store::commit` one by one (what
    // `commit` does when nothing conflicts), next to the plain INSERT sent
    // as text, which the client prepares on every call as the store does.
    let parts = (rounds / 4).max(1);
    let unprepared = "INSERT INTO plain_lines (seq, line) VALUES ($1, $2::text::json)";
    let mut steps: [Vec<u128>; 5] = Default::default();
    for _ in 0..parts {
        let started = Instant::now();
        store.catch_up(&mut context).map_err(|e| e.to_string())?;
        let caught_up = Instant::now();
        let prepared = context.prepare(&set).map_err(|e| e.to_string())?;
        let validated = Instant::now();
        store.append_at(&prepared).map_err(|e| e.to_string())?;
        let appended = Instant::now();
        context
            .append_prepared(prepared)
            .map_err(|e| e.to_string())?;
        let landed = Instant::now();
        raw.execute(unprepared, &[&seq, &line])
            .map_err(|e| pg(&e))?;
        seq += 1;
        let inserted = Instant::now();
        let marks = [started, caught_up, validated, appended, landed, inserted];
        for (step, pair) in steps.iter_mut().zip(marks.windows(2)) {
            step.push(pair[1].duration_since(pair[0]).as_nanos());
        }
    }
    let [catch_up, validate, append_at, land, insert_unprepared] = steps.map(median);

    let stored: i64 = raw
        .query_one(
            "SELECT length FROM agentctx_contexts WHERE name = $1",
            &[&name],
        )
        .and_then(|row| row.try_get(0))
        .map_err(|e| pg(&e))?;
    if usize::try_from(stored).ok() != Some(context.len()) {
        return Err(format!(
            "the context holds {stored} messages, {} were committed",
            context.len()
        ));
    }
    let (ours_ns, baseline_ns) = (median(ours.clone()), median(baseline.clone()));
    // Rounds of 50 pairs (a fraction of a second), one ratio each.
    let (a, b) = interleave::rounds_of_pairs(&ours, &baseline, 50);
    let ratios = interleave::ratios(&a, &b);
    Ok(json!({
        "workload": "S2-pg-append-vs-insert",
        "ours_ns": ours_ns,
        "ours_us": ours_ns / 1e3,
        "baseline": "plain single-row INSERT (autocommit, prepared once) of the same line into a \
                     plain table, same client and server, interleaved",
        "baseline_ns": baseline_ns,
        "baseline_us": baseline_ns / 1e3,
        "ratio": ours_ns / baseline_ns,
        "ratios": ratios,
        "round_trip_us": median(trip) / 1e3,
        "steps_us": {
            "catch_up": catch_up / 1e3,
            "validate": validate / 1e3,
            "append_at": append_at / 1e3,
            "land": land / 1e3,
            "rounds": parts,
        },
        "baseline_unprepared_us": insert_unprepared / 1e3,
        "line_bytes": line.len(),
        "rounds": rounds,
    }))
}

/// S3: appends per second with 1, 2, 4 and 8 writers, to one context and
/// to 8.
fn writers(server: &Server) -> Outcome<Value> {
    let seconds = setting("PG_S3_SECONDS", 2) as u64;
    let scratch = Scratch::create(server, "writers")?;
    let run = unique('-');
    let (mut one, mut eight) = (Vec::new(), Vec::new());
    for writers in [1, 2, 4, 8] {
        // Interleaved, so drift hits both curves alike.
        one.push(writers_run(&scratch, &run, writers, 1, seconds)?);
        eight.push(writers_run(&scratch, &run, writers, 8, seconds)?);
    }
    Ok(json!({
        "workload": "S3-pg-writers",
        "seconds_per_run": seconds,
        "one_context": one,
        "eight_contexts": eight,
    }))
}

/// `writers` threads, each with its own store, committing pushes to
/// `contexts` contexts (writer i to context i mod `contexts`) for `seconds`.
fn writers_run(
    scratch: &Scratch,
    run: &str,
    writers: usize,
    contexts: usize,
    seconds: u64,
) -> Outcome<Value> {
    let names: Vec<String> = (0..contexts)
        .map(|c| format!("s3-{run}-{contexts}-{writers}-{c}"))
        .collect();
    for name in &names {
        let mut context = Context::new();
        commit(
            &mut scratch.store(name)?,
            &mut context,
            json!({"type": "state", "data": {"log": []}}),
        )?;
    }
    // Connected and loaded before the clock starts.
    let mut stores = Vec::with_capacity(writers);
    for w in 0..writers {
        let name = &names[w % contexts];
        let mut store = scratch.store(name)?;
        let context = store.load().map_err(|e| e.to_string())?.context;
        stores.push((store, context));
    }
    let started = Instant::now();
    let deadline = started + Duration::from_secs(seconds);
    let counts: Vec<Outcome<usize>> = std::thread::scope(|scope| {
        let handles: Vec<_> = stores
            .into_iter()
            .enumerate()
            .map(|(w, (mut store, mut context))| {
                scope.spawn(move || -> Outcome<usize> {
                    let mut count = 0;
                    while Instant::now() < deadline {
                        let push = message(json!({"type": "state",
                            "data": {"log": format!("{w}.{count}")},
                            "_outputPath": "†state.log", "_outputMethod": "push"}))?;
                        store
                            .commit(&mut context, &push)
                            .map_err(|e| format!("writer {w}: {e}"))?;
                        count += 1;
                    }
                    Ok(count)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a writer thread died".into()))
            })
            .collect()
    });
    let elapsed = started.elapsed().as_secs_f64();
    let mut per_context = vec![0usize; contexts];
    for (w, count) in counts.into_iter().enumerate() {
        per_context[w % contexts] += count?;
    }
    for (name, &count) in names.iter().zip(&per_context) {
        let found = scratch
            .store(name)?
            .load()
            .map_err(|e| e.to_string())?
            .context
            .len();
        if found != count + 1 {
            return Err(format!(
                "context {name}: {count} appends acknowledged, {} found",
                found.saturating_sub(1)
            ));
        }
    }
    let appends: usize = per_context.iter().sum();
    Ok(json!({
        "writers": writers,
        "contexts": contexts.min(writers),
        "appends": appends,
        "seconds": elapsed,
        "appends_per_second": appends as f64 / elapsed,
    }))
}

/// S4: bytes stored per byte of message line after many small writes,
/// snapshots included (their dead versions too), for a context whose state
/// stays small and for one whose state grows with every write.
fn bytes(server: &Server) -> Outcome<Value> {
    let steps = setting("PG_S4_STEPS", 10_000);
    let set = bytes_run(
        server,
        "bytes",
        steps,
        |n| json!({"type": "state", "data": {"n": n}, "_outputPath": "†state.n"}),
    )?;
    let growing = bytes_run(
        server,
        "growing",
        steps,
        |n| json!({"type": "state", "data": {"log": n}, "_outputPath": "†state.log", "_outputMethod": "push"}),
    )?;
    // A snapshot rewritten after every one of the writes, its tables
    // vacuumed every 1,000 rewrites as autovacuum would: dead versions are
    // reused, so the bytes hold.
    let rewritten = bytes_run_with(
        server,
        "rewrites",
        steps,
        |n| json!({"type": "state", "data": {"n": n}, "_outputPath": "†state.n"}),
        Some(1_000),
    )?;
    let mut row = set;
    let dead_ratio = |v: &Value| v["snapshots"]["dead_ratio"].as_f64().unwrap_or_default();
    let worst = dead_ratio(&row).max(dead_ratio(&growing));
    row["workload"] = json!("S4-pg-bytes-per-write");
    row["stored"] = json!(
        "pg_total_relation_size of agentctx_messages + agentctx_contexts + the snapshot tables \
         (dead versions included)"
    );
    row["snapshot_dead_ratio"] = json!(worst);
    row["growing"] = growing;
    row["rewrites"] = rewritten;
    Ok(row)
}

/// `steps` commits of `message(n)` onto a fresh context in a fresh schema,
/// then what the tables hold: as written, and the snapshot tables again
/// after `VACUUM FULL`, which keeps only their live rows — the difference
/// is dead versions and the free space they left.
fn bytes_run(
    server: &Server,
    part: &str,
    steps: usize,
    message: impl Fn(usize) -> Value,
) -> Outcome<Value> {
    bytes_run_with(server, part, steps, message, None)
}

/// [`bytes_run`]; with `rewrites`, a snapshot written after every commit,
/// and the snapshot tables vacuumed (plain `VACUUM`, as autovacuum does)
/// every that many.
fn bytes_run_with(
    server: &Server,
    part: &str,
    steps: usize,
    message: impl Fn(usize) -> Value,
    rewrites: Option<usize>,
) -> Outcome<Value> {
    let scratch = Scratch::create(server, part)?;
    // Sizes, not durability: commits that do not wait for their WAL flush
    // leave the same rows and pages, sooner.
    let url = scratch.context(&format!("s4-{}", unique('-')));
    let url = url.replacen("options=", "options=-c%20synchronous_commit%3Doff%20", 1);
    let mut store = PgStore::open(&url).map_err(|e| e.to_string())?;
    let mut context = Context::new();
    let mut vacuum = scratch.client()?;
    let started = Instant::now();
    for n in 0..steps {
        commit(&mut store, &mut context, message(n))?;
        if let Some(every) = rewrites {
            store
                .snapshot(&context, SnapshotWhen::Now)
                .map_err(|e| e.to_string())?;
            if n % every == every - 1 {
                for table in ["agentctx_snapshots", "agentctx_snapshot_chunks"] {
                    vacuum
                        .batch_execute(&format!("VACUUM {table}"))
                        .map_err(|e| pg(&e))?;
                }
            }
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let line_bytes: usize = (0..context.len())
        .filter_map(|i| context.message_json(i))
        .map(str::len)
        .sum();
    let mut raw = scratch.client()?;
    let row = raw
        .query_one(
            "SELECT count(*), coalesce(sum(octet_length(line::text)), 0)::bigint \
             FROM agentctx_messages",
            &[],
        )
        .map_err(|e| pg(&e))?;
    let rows: i64 = row.try_get(0).map_err(|e| pg(&e))?;
    let stored_line_bytes: i64 = row.try_get(1).map_err(|e| pg(&e))?;
    if usize::try_from(rows).ok() != Some(context.len())
        || usize::try_from(stored_line_bytes).ok() != Some(line_bytes)
    {
        return Err(format!(
            "the table holds {rows} lines of {stored_line_bytes} bytes; {} lines of \
             {line_bytes} bytes were committed",
            context.len()
        ));
    }
    let snapshot_tables: Vec<String> = raw
        .query(
            "SELECT relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = $1 AND c.relkind = 'r' AND relname LIKE 'agentctx_snapshot%' \
             ORDER BY relname",
            &[&scratch.schema],
        )
        .map_err(|e| pg(&e))?
        .iter()
        .map(|row| row.try_get(0))
        .collect::<Result<_, _>>()
        .map_err(|e| pg(&e))?;
    let mut tables = agent_core::json::Map::new();
    let mut stored = 0i64;
    let mut snapshot_bytes = 0i64;
    let counted = ["agentctx_messages", "agentctx_contexts"];
    for table in counted
        .iter()
        .map(|t| t.to_string())
        .chain(snapshot_tables.iter().cloned())
        .chain(["agentctx_migrations".to_owned()])
    {
        let (total, parts) = relation_size(&mut raw, &scratch.schema, &table)?;
        if table != "agentctx_migrations" {
            stored += total;
        }
        if table.starts_with("agentctx_snapshot") {
            snapshot_bytes += total;
        }
        tables.insert(table, parts);
    }
    // The snapshot's own bytes, as the store sealed them: a whole body
    // (schema versions 3 to 8) or its chunks (version 9).
    let live: i64 = raw
        .query_one(
            "SELECT ((SELECT coalesce(sum(octet_length(body)), 0) FROM agentctx_snapshots) \
             + (SELECT coalesce(sum(octet_length(body)), 0) FROM agentctx_snapshot_chunks))::bigint",
            &[],
        )
        .and_then(|row| row.try_get::<_, i64>(0))
        .map_err(|e| pg(&e))?;
    let vacuums = raw
        .query_one(
            "SELECT coalesce(sum(autovacuum_count + vacuum_count), 0)::bigint \
             FROM pg_stat_user_tables WHERE schemaname = $1",
            &[&scratch.schema],
        )
        .and_then(|row| row.try_get::<_, i64>(0))
        .map_err(|e| pg(&e))?;
    let mut compact = 0i64;
    for table in &snapshot_tables {
        raw.batch_execute(&format!("VACUUM FULL {}.{table}", scratch.schema))
            .map_err(|e| pg(&e))?;
        compact += relation_size(&mut raw, &scratch.schema, table)?.0;
    }
    let dead = snapshot_bytes - compact;
    Ok(json!({
        "workload": format!("S4-pg-bytes-per-write ({part})"),
        "steps": steps,
        "messages": context.len(),
        "line_bytes": line_bytes,
        "stored_bytes": stored,
        "ratio": stored as f64 / line_bytes as f64,
        "tables": tables,
        "snapshots": {
            "tables": snapshot_tables,
            "on_disk": snapshot_bytes,
            "live_bytes": live,
            "after_vacuum_full": compact,
            "dead_bytes": dead,
            "dead_ratio": dead as f64 / live.max(1) as f64,
            "dead": "on_disk - after_vacuum_full: dead versions and the space they left",
        },
        "vacuums_seen": vacuums,
        "seconds": seconds,
    }))
}

/// `pg_total_relation_size` of `schema.table`, and its parts.
fn relation_size(raw: &mut Client, schema: &str, table: &str) -> Outcome<(i64, Value)> {
    let row = raw
        .query_one(
            "SELECT pg_total_relation_size(c), pg_relation_size(c), \
             pg_table_size(c) - pg_relation_size(c), pg_indexes_size(c) \
             FROM (SELECT $1::text::regclass AS c) t",
            &[&format!("{schema}.{table}")],
        )
        .map_err(|e| pg(&e))?;
    let size = |i: usize| row.try_get::<_, i64>(i).map_err(|e| pg(&e));
    let total = size(0)?;
    Ok((
        total,
        json!({"total": total, "heap": size(1)?, "toast_fsm_vm": size(2)?, "indexes": size(3)?}),
    ))
}

/// Load: 100,000 messages from PostgreSQL against the same from a file.
fn load(server: &Server) -> Outcome<Value> {
    let messages = setting("PG_LOAD_MESSAGES", 100_000);
    let rounds = setting("PG_LOAD_ROUNDS", 7);
    let jsonl = workloads::w1_jsonl(messages);
    let dir = tempfile::tempdir_in(".").map_err(|e| e.to_string())?;
    let path = dir.path().join("load.jsonl");
    std::fs::write(&path, &jsonl).map_err(|e| e.to_string())?;
    let mut file = FileStore::open(&path).map_err(|e| e.to_string())?;
    let scratch = Scratch::create(server, "load")?;
    let mut store = scratch.store(&format!("load-{}", unique('-')))?;
    let started = Instant::now();
    let copied = agent_store::copy(&mut file, &mut store).map_err(|e| e.to_string())?;
    let copy_seconds = started.elapsed().as_secs_f64();

    let from_file = file.load().map_err(|e| e.to_string())?.context;
    let from_pg = store.load().map_err(|e| e.to_string())?.context;
    if from_file.len() != copied || from_pg.to_jsonl() != from_file.to_jsonl() {
        return Err(format!(
            "the context loaded from PostgreSQL ({} messages) differs from the file's ({})",
            from_pg.len(),
            from_file.len()
        ));
    }
    drop((from_file, from_pg));
    let (mut ours, mut baseline) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        for which in [round % 2, 1 - round % 2] {
            let started = Instant::now();
            let loaded = if which == 0 {
                store.load()
            } else {
                file.load()
            };
            let length = loaded.map_err(|e| e.to_string())?.context.len();
            let elapsed = started.elapsed().as_nanos();
            if length != copied {
                return Err(format!("a load found {length} messages, not {copied}"));
            }
            if which == 0 {
                ours.push(elapsed);
            } else {
                baseline.push(elapsed);
            }
        }
    }
    let ratios: Vec<f64> = ours
        .iter()
        .zip(&baseline)
        .map(|(&o, &b)| o as f64 / b as f64)
        .collect();
    let (ours_ns, baseline_ns) = (median(ours), median(baseline));
    Ok(json!({
        "workload": "PG-load-vs-file",
        "ratios": ratios,
        "messages": copied,
        "jsonl_bytes": jsonl.len(),
        "ours_ns": ours_ns,
        "baseline": "FileStore::load of the same messages from a JSONL file, interleaved",
        "baseline_ns": baseline_ns,
        "ratio": ours_ns / baseline_ns,
        "copy_seconds": copy_seconds,
        "rounds": rounds,
    }))
}
