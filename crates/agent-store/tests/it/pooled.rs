//! The store behind PgBouncer in transaction pooling mode (D109: behind a
//! pooler): each test starts a PgBouncer of its own in front of the test
//! server, with fewer server sessions than clients, so consecutive
//! transactions of one client run in different sessions.

use super::support::pg::{fresh_name, open, push, pushed_log as log};
use agent_data::Context;
use agent_store::{AppendKey, Listener, PgStore, SnapshotWhen, Store};
use std::time::{Duration, Instant};
use test_support::pooler::PgBouncer;

fn pooler(pool_size: u32) -> PgBouncer {
    PgBouncer::start(&test_support::database::direct_url(), pool_size)
        .unwrap_or_else(|e| panic!("{e}"))
}

fn through(pooler: &PgBouncer, name: &str) -> String {
    test_support::database::with_context(&pooler.url(), &fresh_name(name))
}

#[test]
fn d109_a_connection_through_pgbouncer_is_found_pooled_and_a_direct_one_is_not() {
    let pooler = pooler(2);
    let mut pooled = open(&through(&pooler, "found-pooled"));
    assert!(pooled.pooled().unwrap());
    let direct = test_support::database::with_context(
        &test_support::database::direct_url(),
        &fresh_name("found-direct"),
    );
    assert!(!open(&direct).pooled().unwrap());
    // The URL may say so either way.
    assert!(
        !open(&format!("{}&agentctx_pooled=no", through(&pooler, "said")))
            .pooled()
            .unwrap()
    );
    assert!(
        open(&format!("{direct}&agentctx_pooled=yes"))
            .pooled()
            .unwrap()
    );
    let error = PgStore::open(&format!("{direct}&agentctx_pooled=maybe")).unwrap_err();
    assert!(
        error.to_string().ends_with(
            "agentctx_pooled=maybe: say yes (through a transaction pooler such as PgBouncer) \
             or no (straight to the server)"
        ),
        "{error}"
    );
}

#[test]
fn d109_writers_sharing_two_server_sessions_append_read_snapshot_and_verify() {
    // Six writers, two server sessions: a statement prepared in one
    // transaction would be missing from the session the next one gets.
    let pooler = pooler(2);
    let url = through(&pooler, "shared");
    let writers = 6;
    let each = 15;
    std::thread::scope(|scope| {
        for writer in 0..writers {
            let url = url.clone();
            scope.spawn(move || {
                let mut store = open(&url);
                let mut context = Context::new();
                store.catch_up(&mut context).unwrap();
                for n in 0..each {
                    store
                        .commit(&mut context, &push(format!("{writer}.{n}")))
                        .unwrap();
                    if n % 5 == 4 {
                        store.snapshot(&context, SnapshotWhen::Now).unwrap();
                    }
                }
            });
        }
    });
    let mut store = open(&url);
    let written = log(&mut store);
    assert_eq!(written.len(), writers * each);
    for writer in 0..writers {
        let mine: Vec<&String> = written
            .iter()
            .filter(|t| t.starts_with(&format!("{writer}.")))
            .collect();
        let expected: Vec<String> = (0..each).map(|n| format!("{writer}.{n}")).collect();
        assert_eq!(
            mine,
            expected.iter().collect::<Vec<_>>(),
            "writer {writer}'s order"
        );
    }
    let verified = store.verify().unwrap();
    assert!(verified.is_clean(), "{:?}", verified.findings);
    assert_eq!(verified.messages, writers * each);
    // What went through the pooler is what the server holds.
    let direct = url.replace(&pooler.url(), &test_support::database::direct_url());
    assert_eq!(log(&mut open(&direct)), written);
}

#[test]
fn d109_an_append_with_a_key_lands_once_through_a_pooler() {
    let pooler = pooler(2);
    let url = through(&pooler, "keyed");
    let key: AppendKey = "pooled-key".parse().unwrap();
    let mut first = open(&url);
    let mut context = Context::new();
    first
        .commit_once(&mut context, &push("once".into()), &key)
        .unwrap();
    let mut second = open(&url);
    let mut other = Context::new();
    second
        .commit_once(&mut other, &push("once".into()), &key)
        .unwrap();
    assert_eq!(log(&mut open(&url)), ["once"]);
}

#[test]
fn d109_a_listener_behind_a_pooler_polls_and_wakes_its_worker_within_a_second() {
    let pooler = pooler(2);
    let url = through(&pooler, "listen");
    open(&url)
        .commit(&mut Context::new(), &push("exists".into()))
        .unwrap();
    let mut listener = Listener::open(&url).unwrap();
    assert!(listener.polls());
    let started = Instant::now();
    assert!(listener.wait(Duration::from_secs(30)).unwrap());
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(900) && waited < Duration::from_secs(10),
        "{waited:?}"
    );
    // Straight to the server it listens.
    let direct = url.replace(&pooler.url(), &test_support::database::direct_url());
    assert!(!Listener::open(&direct).unwrap().polls());
}

#[test]
fn d114_a_pool_in_front_of_pgbouncer_serves_eight_writers_and_its_listener_polls() {
    // A pool per process in front of the pooler: three client connections
    // to PgBouncer for eight writers, on two server sessions.
    let pooler = pooler(2);
    let pool = agent_store::PgPool::open(&pooler.url(), 3).unwrap();
    let names: Vec<String> = (0..8).map(|i| fresh_name(&format!("pool-{i}"))).collect();
    std::thread::scope(|scope| {
        for name in &names {
            let pool = pool.clone();
            scope.spawn(move || {
                let mut store = pool.store(name).unwrap();
                assert!(store.pooled().unwrap());
                let mut context = Context::new();
                for n in 0..10 {
                    store.commit(&mut context, &push(format!("{n}"))).unwrap();
                }
            });
        }
    });
    for name in &names {
        let mut store = pool.store(name).unwrap();
        let expected: Vec<String> = (0..10).map(|n| n.to_string()).collect();
        assert_eq!(log(&mut store), expected);
    }
    let mut listener = pool.listener().unwrap();
    assert!(listener.polls());
    let asked = Instant::now();
    assert!(listener.wait(Duration::from_secs(5)).unwrap());
    assert!(asked.elapsed() < Duration::from_secs(3));
}
