//! `pg-fleet claims`: many workers' claims and results on one plan,
//! through a transaction pooler, and sharing one process's pool of
//! connections (see the binary's documentation).

use agent_core::json::{self, Value};
use agent_data::{Context, Message};
use agent_store::{CallState, ClaimRequest, Error, PgCalls, PgPool, PgStore, Store};
use agentctx_tests::pg_scratch::{Outcome, setting};
use agentctx_tests::workloads::Rng;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// The worker pools measured, in threads.
const POOLS: [usize; 4] = [1, 10, 100, 1000];

/// The calls a worker offers to claim at once: a window of the plan.
const WINDOW: usize = 64;

/// How the worker threads connect.
#[derive(Clone)]
enum Connect {
    /// Each its own store and claims, two connections, through the pooler.
    Own,
    /// Every thread's store and claims from one [`PgPool`] of this process,
    /// straight to the server.
    Shared(PgPool),
}

/// What the threads of one pool counted.
#[derive(Default)]
struct Counts {
    claimed: AtomicU64,
    committed: AtomicU64,
    conflicts: AtomicU64,
    empty: AtomicU64,
    /// Microseconds spent claiming, and committing.
    claiming: AtomicU64,
    committing: AtomicU64,
}

pub(crate) fn claims() -> Outcome<Value> {
    let url = std::env::var("FLEET_POOLED_URL").map_err(
        |_| "FLEET_POOLED_URL names no pooler: run it through `cargo xtask bench fleet`",
    )?;
    let calls = setting("FLEET_CALLS", 100_000);
    let seconds = setting("FLEET_SECONDS", 5) as u64;
    let mut rows = Vec::new();
    // `FLEET_POOLS=1,10` measures those alone.
    let pools: Vec<usize> = match std::env::var("FLEET_POOLS") {
        Ok(list) => list
            .split(',')
            .filter_map(|n| n.trim().parse().ok())
            .collect(),
        Err(_) => POOLS.to_vec(),
    };
    let time = Duration::from_secs(seconds);
    for &pool in &pools {
        rows.push(one_pool(&url, calls, pool, time, &Connect::Own)?);
    }
    // The same threads sharing one pool of this process's connections.
    if let Ok(direct) = std::env::var("FLEET_DIRECT_URL") {
        let size = setting("FLEET_PROCESS_POOL", 20);
        let application = format!("agentctx-fleet-{}", std::process::id());
        let sep = if direct.contains('?') { '&' } else { '?' };
        let direct = format!("{direct}{sep}application_name={application}");
        // Queued behind a thousand threads for a connection, as for the
        // pooler above: the wait must outlast the queue.
        let shared = PgPool::open(&direct, size)
            .map_err(|e| e.to_string())?
            .with_wait(Duration::from_secs(120));
        for &pool in &pools {
            let connect = Connect::Shared(shared.clone());
            let mut row = one_pool(&direct, calls, pool, time, &connect)?;
            row["process_pool"] = json::json!(size);
            rows.push(row);
        }
    }
    Ok(json::json!({ "rows": rows }))
}

/// A fresh context holding a plan of `calls` independent calls, its call
/// rows set up; its URL and the plan's row.
fn plan(url: &str, calls: usize, pool: usize) -> Outcome<(String, u64)> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let sep = if url.contains('?') { '&' } else { '?' };
    // Queued in the pooler behind the other workers' transactions, a
    // query hears nothing: the idle deadline must outlast the queue.
    let url = format!(
        "{url}{sep}agentctx_idle_timeout=120&context=fleet-{pool}-{}-{nanos}",
        std::process::id()
    );
    let plan: Vec<Value> = (0..calls)
        .map(|i| json::json!({"_tool": "t", "i": i, "_outputPath": format!("†state.r{i}")}))
        .collect();
    let plan = Message::from_value(json::json!({"type": "plan", "calls": plan}))
        .map_err(|e| e.to_string())?;
    let mut store = PgStore::open(&url).map_err(|e| e.to_string())?;
    let range = store
        .commit(&mut Context::new(), &plan)
        .map_err(|e| e.to_string())?;
    let row = range.start as u64;
    let mut table = PgCalls::open(&url).map_err(|e| e.to_string())?;
    table.set_up(row, calls).map_err(|e| e.to_string())?;
    Ok((url, row))
}

fn one_pool(
    url: &str,
    calls: usize,
    pool: usize,
    time: Duration,
    connect: &Connect,
) -> Outcome<Value> {
    let (url, row) = plan(url, calls, pool)?;
    let counts = Arc::new(Counts::default());
    let start = Arc::new(Barrier::new(pool + 1));
    let mut threads = Vec::new();
    for worker in 0..pool {
        let (url, counts, start) = (url.clone(), Arc::clone(&counts), Arc::clone(&start));
        let connect = connect.clone();
        let thread = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || {
                let job = Job {
                    url: &url,
                    row,
                    calls,
                    worker,
                    time,
                };
                work(&job, &connect, &counts, &start)
            })
            .map_err(|e| format!("cannot start worker {worker}: {e}"))?;
        threads.push(thread);
    }
    start.wait();
    let began = Instant::now();
    let sessions = watch_sessions(&url, connect);
    let mut failures = Vec::new();
    for thread in threads {
        match thread.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => failures.push(e),
            Err(_) => failures.push("a worker thread panicked".into()),
        }
    }
    let elapsed = began.elapsed().as_secs_f64();
    let most_sessions = sessions.map(Watch::stop);
    if let Some(first) = failures.first() {
        return Err(format!(
            "{} of {pool} workers failed; the first: {first}",
            failures.len()
        ));
    }
    let committed = counts.committed.load(Ordering::Relaxed);
    let claims = counts.claimed.load(Ordering::Relaxed).max(1) as f64;
    let per_claim = |total: &AtomicU64| total.load(Ordering::Relaxed) as f64 / claims / 1000.0;
    let (done, results) = check(&url, row, calls)?;
    if done != committed || results != committed {
        return Err(format!(
            "{pool} workers committed {committed} results, but {done} calls are done and the \
             log holds {results} results"
        ));
    }
    let (workload, how) = match connect {
        Connect::Own => (format!("FLEET-{pool}-workers"), "through PgBouncer"),
        Connect::Shared(_) => (format!("FLEET-{pool}-workers-one-pool"), "sharing a pool"),
    };
    eprintln!("pg-fleet: {pool} workers {how}: {committed} results in {elapsed:.1} s");
    Ok(json::json!({
        "workload": workload,
        "server_sessions_most": most_sessions,
        "workers": pool,
        "calls": calls,
        "seconds": elapsed,
        "claims_per_second": counts.claimed.load(Ordering::Relaxed) as f64 / elapsed,
        "results_per_second": committed as f64 / elapsed,
        "conflicts": counts.conflicts.load(Ordering::Relaxed),
        "empty_claims": counts.empty.load(Ordering::Relaxed),
        "claim_ms": per_claim(&counts.claiming),
        "commit_ms": per_claim(&counts.committing),
    }))
}

/// What one worker thread does: its plan, its number, for how long.
struct Job<'a> {
    url: &'a str,
    row: u64,
    calls: usize,
    worker: usize,
    time: Duration,
}

/// One worker: claim one call of a random window, commit its result, until
/// `time` has passed since the start.
fn work(job: &Job<'_>, connect: &Connect, counts: &Counts, start: &Barrier) -> Outcome<()> {
    let Job {
        url,
        row,
        calls,
        worker,
        time,
    } = *job;
    // Connected and caught up before the clock starts.
    let opened = match connect {
        Connect::Own => PgStore::open(url).and_then(|store| Ok((store, PgCalls::open(url)?))),
        Connect::Shared(pool) => pool.store_at(url).and_then(|store| {
            let table = pool.calls(store.context_name())?;
            Ok((store, table))
        }),
    }
    .and_then(|(mut store, table)| {
        let context = store.load()?.context;
        Ok((store, table, context))
    });
    start.wait();
    let (mut store, mut table, mut context) = opened.map_err(|e| e.to_string())?;
    let name = format!("w{worker}");
    let deadline = Instant::now() + time;
    // A sequence of the worker's own (never seeded 0: xorshift stays 0).
    let mut rng = Rng(0x5EED_C1A1 + worker as u64);
    while Instant::now() < deadline {
        let spread = calls.saturating_sub(WINDOW).max(1) as u64;
        let from = usize::try_from(rng.below(spread)).unwrap_or(0);
        let window: Vec<usize> = (from..(from + WINDOW).min(calls)).collect();
        let asked = Instant::now();
        let claimed = table
            .claim(&ClaimRequest {
                plan: row,
                candidates: &window,
                worker: &name,
                lease: Duration::from_secs(60),
                max: 1,
            })
            .map_err(|e| e.to_string())?;
        counts.claiming.fetch_add(micros(asked), Ordering::Relaxed);
        if claimed.is_empty() {
            counts.empty.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        for claim in claimed {
            counts.claimed.fetch_add(1, Ordering::Relaxed);
            let result = Message::from_value(json::json!({"type": "state",
                "data": {format!("r{}", claim.call): worker},
                "_outputPath": format!("†state.r{}", claim.call)}))
            .map_err(|e| e.to_string())?;
            let before = context.len();
            let committing = Instant::now();
            let committed = store.commit_call(&mut context, &result, &claim);
            counts
                .committing
                .fetch_add(micros(committing), Ordering::Relaxed);
            match committed {
                Ok(range) => {
                    if range.start > before {
                        counts.conflicts.fetch_add(1, Ordering::Relaxed);
                    }
                    counts.committed.fetch_add(1, Ordering::Relaxed);
                }
                Err(Error::Fenced(_) | Error::AlreadyWritten { .. }) => {}
                Err(e) => return Err(e.to_string()),
            }
        }
    }
    Ok(())
}

fn micros(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// How many calls are done, and how many results the log holds (every
/// message after the plan).
fn check(url: &str, row: u64, calls: usize) -> Outcome<(u64, u64)> {
    let mut table = PgCalls::open(url).map_err(|e| e.to_string())?;
    let rows = table.rows(row).map_err(|e| e.to_string())?;
    if rows.len() != calls {
        return Err(format!(
            "the plan has {} call rows, not {calls}",
            rows.len()
        ));
    }
    let done = rows.iter().filter(|r| r.state == CallState::Done).count() as u64;
    let mut store = PgStore::open(url).map_err(|e| e.to_string())?;
    let length = store.load().map_err(|e| e.to_string())?.context.len() as u64;
    Ok((done, length.saturating_sub(row + 1)))
}

/// Counts the server sessions of a shared pool's application name while
/// the threads run.
struct Watch {
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<u64>,
}

impl Watch {
    fn stop(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or(0)
    }
}

fn watch_sessions(url: &str, connect: &Connect) -> Option<Watch> {
    let Connect::Shared(_) = connect else {
        return None;
    };
    let application = url
        .split(['?', '&'])
        .find_map(|pair| pair.strip_prefix("application_name="))?
        .to_owned();
    let base = url.split('?').next()?.to_owned();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stopped = Arc::clone(&stop);
    let thread = std::thread::spawn(move || {
        let Ok(mut client) = postgres::Client::connect(&base, postgres::NoTls) else {
            return 0;
        };
        let mut most = 0;
        while !stopped.load(Ordering::Relaxed) {
            if let Ok(row) = client.query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
                &[&application],
            ) {
                most = most.max(row.get::<_, i64>(0).max(0) as u64);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        most
    });
    Some(Watch { stop, thread })
}
