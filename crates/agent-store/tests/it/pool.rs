//! The stores, call tables and listeners of one [`PgPool`] share its
//! connections (D114: a pool per process), never more than its size (and
//! one to listen), each store holding one only during a call.

use super::support::pg::{fresh_name, push, raw};
use agent_data::Context;
use agent_store::{PgPool, Store};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The test server straight (so its sessions can be counted by the
/// application name this pool's URL gives them), and that name.
fn direct_pool(size: usize, tag: &str) -> (PgPool, String) {
    let application = fresh_name(tag);
    let url = format!(
        "{}?application_name={application}",
        test_support::database::direct_url()
    );
    let pool = PgPool::open(&url, size)
        .unwrap_or_else(|e| panic!("{e}\n{}", test_support::database::HOW_TO_PROVIDE));
    (pool, application)
}

/// The server sessions whose application name is `application`.
fn sessions(client: &mut postgres::Client, application: &str) -> usize {
    let row = client
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
            &[&application],
        )
        .unwrap();
    usize::try_from(row.get::<_, i64>(0)).unwrap()
}

/// The server sessions of `application` waiting for a lock.
fn sessions_waiting_for_a_lock(client: &mut postgres::Client, application: &str) -> usize {
    let row = client
        .query_one(
            "SELECT count(*) FROM pg_stat_activity \
             WHERE application_name = $1 AND wait_event_type = 'Lock'",
            &[&application],
        )
        .unwrap();
    usize::try_from(row.get::<_, i64>(0)).unwrap()
}

#[test]
fn d114_twelve_threads_sharing_a_pool_of_two_hold_at_most_two_server_sessions() {
    let (pool, application) = direct_pool(2, "pool-bound");
    let names: Vec<String> = (0..12).map(|i| fresh_name(&format!("pool-{i}"))).collect();
    let done = AtomicBool::new(false);
    let most = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let mut watcher = raw();
            while !done.load(Ordering::Relaxed) {
                let now = sessions(&mut watcher, &application);
                most.fetch_max(now, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(2));
            }
        });
        let writers: Vec<_> = names
            .iter()
            .map(|name| {
                let pool = pool.clone();
                scope.spawn(move || {
                    let mut store = pool.store(name).unwrap();
                    let mut context = Context::new();
                    for n in 0..10 {
                        store.commit(&mut context, &push(format!("{n}"))).unwrap();
                    }
                })
            })
            .collect();
        for writer in writers {
            writer.join().unwrap();
        }
        done.store(true, Ordering::Relaxed);
    });
    let most = most.load(Ordering::Relaxed);
    assert!((1..=2).contains(&most), "{most} server sessions at once");
    assert_eq!(pool.connections(), 2);
    // Every append landed, read back through the pool.
    for name in &names {
        let loaded = pool.store(name).unwrap().load().unwrap();
        assert_eq!(loaded.context.len(), 10, "{name}");
    }
}

#[test]
fn d114_a_pool_of_one_serves_stores_of_two_contexts_taking_turns() {
    // Each call gives the connection back: with one connection and a short
    // wait, the second store's calls would fail if the first kept it.
    let (pool, application) = direct_pool(1, "pool-turns");
    let pool = pool.with_wait(Duration::from_secs(2));
    let (a, b) = (fresh_name("turns-a"), fresh_name("turns-b"));
    let mut first = pool.store(&a).unwrap();
    let mut second = pool.store(&b).unwrap();
    let (mut ca, mut cb) = (Context::new(), Context::new());
    for n in 0..5 {
        first.commit(&mut ca, &push(format!("a{n}"))).unwrap();
        second.commit(&mut cb, &push(format!("b{n}"))).unwrap();
    }
    assert_eq!(first.load().unwrap().context.len(), 5);
    assert_eq!(second.load().unwrap().context.len(), 5);
    assert_eq!(pool.connections(), 1);
    assert_eq!(sessions(&mut raw(), &application), 1);
}

#[test]
fn d114_a_call_finding_every_connection_in_use_waits_then_says_so() {
    let (pool, application) = direct_pool(1, "pool-wait");
    let name = fresh_name("pool-wait");
    let mut context = Context::new();
    let mut store = pool.store(&name).unwrap();
    store.commit(&mut context, &push("first".into())).unwrap();
    // Another program holds the context's row: an append waits for it,
    // holding the pool's only connection.
    let mut holder = raw();
    let mut held = holder.transaction().unwrap();
    held.execute(
        "SELECT 1 FROM agentctx_contexts WHERE name = $1 FOR UPDATE",
        &[&name],
    )
    .unwrap();
    std::thread::scope(|scope| {
        let waiting = scope.spawn(|| {
            store.commit(&mut context, &push("second".into())).unwrap();
        });
        // Wait until the append holds the connection, waiting for the row.
        let mut watcher = raw();
        let started = Instant::now();
        while sessions_waiting_for_a_lock(&mut watcher, &application) == 0 {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "the append never waited"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(pool.idle(), 0);
        let short = pool.clone().with_wait(Duration::from_millis(300));
        let mut other = short.store(&fresh_name("pool-wait-other")).unwrap();
        let asked = Instant::now();
        let error = other.catch_up(&mut Context::new()).unwrap_err().to_string();
        assert!(asked.elapsed() >= Duration::from_millis(300));
        assert!(
            error.contains(
                "all 1 connections of this process's pool were in use for 0.3 s \
                 (PgPool::open's size bounds them; a store holds one only during a call)"
            ),
            "{error}"
        );
        assert!(error.contains("cannot get a connection to"), "{error}");
        // Once the row is let go the append lands, and the connection
        // serves the other store again.
        held.rollback().unwrap();
        waiting.join().unwrap();
        other.catch_up(&mut Context::new()).unwrap();
    });
    assert_eq!(pool.store(&name).unwrap().load().unwrap().context.len(), 2);
}

#[test]
fn d114_the_listeners_of_a_pool_share_one_connection_and_each_is_woken() {
    let (pool, application) = direct_pool(2, "pool-listen");
    let mut watcher = raw();
    assert_eq!(sessions(&mut watcher, &application), 1, "the pool's first");
    let mut first = pool.listener().unwrap();
    let mut second = pool.listener().unwrap();
    assert!(!first.polls());
    assert_eq!(
        sessions(&mut watcher, &application),
        2,
        "one more, to listen"
    );
    watcher.batch_execute("NOTIFY agentctx_calls").unwrap();
    assert!(first.wait(Duration::from_secs(5)).unwrap());
    assert!(second.wait(Duration::from_secs(5)).unwrap());
    // Nothing new since each looked.
    assert!(!first.wait(Duration::from_millis(200)).unwrap());
    assert!(!second.wait(Duration::from_millis(200)).unwrap());
    // With every listener gone, the listening connection closes.
    drop((first, second));
    let deadline = Instant::now() + Duration::from_secs(10);
    while sessions(&mut watcher, &application) > 1 {
        assert!(
            Instant::now() < deadline,
            "the listening connection stays open"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // A new listener opens it again.
    let mut again = pool.listener().unwrap();
    assert_eq!(sessions(&mut watcher, &application), 2);
    watcher.batch_execute("NOTIFY agentctx_calls").unwrap();
    assert!(again.wait(Duration::from_secs(5)).unwrap());
}

#[test]
fn d114_a_pool_dropped_with_its_stores_and_listeners_closes_every_connection() {
    let (pool, application) = direct_pool(3, "pool-drop");
    let mut watcher = raw();
    let mut stores: Vec<_> = (0..3)
        .map(|i| pool.store(&fresh_name(&format!("drop-{i}"))).unwrap())
        .collect();
    std::thread::scope(|scope| {
        for store in &mut stores {
            scope.spawn(move || {
                let mut context = Context::new();
                for n in 0..5 {
                    store.commit(&mut context, &push(format!("{n}"))).unwrap();
                }
            });
        }
    });
    let listener = pool.listener().unwrap();
    assert!(sessions(&mut watcher, &application) >= 2);
    drop((pool, stores, listener));
    let deadline = Instant::now() + Duration::from_secs(10);
    while sessions(&mut watcher, &application) > 0 {
        assert!(
            Instant::now() < deadline,
            "{} connections outlived their pool",
            sessions(&mut watcher, &application)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn d114_connections_the_server_ended_while_idle_are_opened_again_in_their_place() {
    let (pool, application) = direct_pool(2, "pool-ended");
    let name = fresh_name("pool-ended");
    let mut store = pool.store(&name).unwrap();
    let mut context = Context::new();
    store.commit(&mut context, &push("before".into())).unwrap();
    let mut watcher = raw();
    let ended = watcher
        .query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
            &[&application],
        )
        .unwrap();
    assert!(!ended.is_empty());
    let deadline = Instant::now() + Duration::from_secs(10);
    while sessions(&mut watcher, &application) > 0 {
        assert!(Instant::now() < deadline, "the sessions were not ended");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The pool still counts the dead connections as its own until a call
    // finds them closed and opens another in their place, before it sends
    // anything: never more than its size, and no call fails for it.
    let read = pool.store(&name).unwrap().load().unwrap().context;
    assert_eq!(read.len(), 1);
    for n in 0..5 {
        store
            .commit(&mut context, &push(format!("after {n}")))
            .unwrap();
        assert!(sessions(&mut watcher, &application) <= 2);
    }
    assert!(pool.connections() <= 2);
    let loaded = pool.store(&name).unwrap().load().unwrap().context;
    assert_eq!(loaded.len(), 6);
}

#[test]
fn d114_a_pool_names_its_stores_contexts_and_refuses_a_bad_name() {
    let url = test_support::database::with_context(&test_support::database::url(), "ignored");
    let pool = PgPool::open(&url, 3).unwrap();
    assert_eq!(pool.size(), 3);
    let name = fresh_name("pool-named");
    let store = pool.store(&name).unwrap();
    assert_eq!(store.context_name(), name);
    assert!(
        store.name().ends_with(&format!("context={name}")),
        "{}",
        store.name()
    );
    assert!(!store.name().contains("ignored"), "{}", store.name());
    let error = pool.store("").unwrap_err().to_string();
    assert!(error.ends_with("the context name is empty"), "{error}");
    // A context that does not exist has no calls.
    let missing = pool.calls(&fresh_name("pool-missing")).unwrap_err();
    assert!(missing.is_missing(), "{missing}");
    let error = PgPool::open("mysql://h/db", 1).unwrap_err().to_string();
    assert!(
        error.ends_with("a PostgreSQL address starts with postgres:// or postgresql://"),
        "{error}"
    );
}
