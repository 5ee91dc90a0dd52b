//! Workers of one process sharing a [`PgPool`] (D114: a pool per
//! process): between them they hold at most the pool's size of server
//! sessions, and one more to listen, and still run each call once.

use agent_core::{Kind, json, json::Value};
use agent_data::{Context, Message};
use agent_plan::Activities;
use agent_store::{PgPool, Store};
use agent_worker::{Worker, WorkerOptions};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use test_support::database;

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

#[test]
fn d114_workers_sharing_a_pool_of_two_run_each_call_once_within_three_sessions_and_free_the_listening_one()
 {
    const CALLS: usize = 40;
    let application = database::unique_name("worker", "pool");
    let url = format!("{}?application_name={application}", database::direct_url());
    let pool =
        PgPool::open(&url, 2).unwrap_or_else(|e| panic!("{e}\n{}", database::HOW_TO_PROVIDE));
    let context = database::unique_name("worker", "pooled-plan");
    let calls: Vec<Value> = (0..CALLS)
        .map(|i| json!({"_tool": "square", "n": i, "_outputPath": format!("†state.r{i}")}))
        .collect();
    let plan = Message::from_value(json!({"type": "plan", "calls": calls})).unwrap();
    let mut store = pool.store(&context).unwrap();
    store.commit(&mut Context::new(), &plan).unwrap();
    let ran: Arc<Mutex<BTreeMap<i64, usize>>> = Arc::default();
    let (done, most) = (AtomicBool::new(false), AtomicUsize::new(0));
    let written: usize = std::thread::scope(|scope| {
        scope.spawn(|| {
            let mut watcher =
                postgres::Client::connect(&database::direct_url(), postgres::NoTls).unwrap();
            while !done.load(Ordering::Relaxed) {
                most.fetch_max(sessions(&mut watcher, &application), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(2));
            }
        });
        let workers: Vec<_> = (0..8)
            .map(|w| {
                let (pool, context, ran) = (pool.clone(), context.clone(), ran.clone());
                scope.spawn(move || {
                    let activities = super::workers::squaring(ran);
                    let options = WorkerOptions::new(format!("w{w}"))
                        .with_concurrency(2)
                        .with_until_idle(true);
                    let clock = Box::new(agent_output::SystemClock);
                    Worker::in_pool(pool, context, activities, clock, options)
                        .run()
                        .unwrap()
                })
            })
            .collect();
        let written = workers.into_iter().map(|w| w.join().unwrap().written).sum();
        done.store(true, Ordering::Relaxed);
        written
    });
    let ran = ran.lock().unwrap().clone();
    assert_eq!(ran.len(), CALLS, "every call ran: {ran:?}");
    assert!(ran.values().all(|&n| n == 1), "none ran twice: {ran:?}");
    assert_eq!(written, CALLS);
    let most = most.load(Ordering::Relaxed);
    assert!((2..=3).contains(&most), "{most} server sessions at once");
    // A worker started on the finished plan stops at once, with no news
    // after it to wake its listening thread: it lets its listener go all
    // the same, and the pool's listening connection closes.
    let late = Worker::in_pool(
        pool.clone(),
        context.clone(),
        Activities::new(),
        Box::new(agent_output::SystemClock),
        WorkerOptions::new("late").with_until_idle(true),
    );
    assert_eq!(late.run().unwrap().ran, 0);
    let mut watcher = postgres::Client::connect(&database::direct_url(), postgres::NoTls).unwrap();
    // A second for the listening thread to look, one for the pool's.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        if sessions(&mut watcher, &application) <= pool.connections() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the listening connection stays open"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let loaded = pool.store(&context).unwrap().load().unwrap().context;
    let state = loaded.view(&Kind::new("state").unwrap(), None).unwrap();
    for i in 0..CALLS as i64 {
        assert_eq!(state[format!("r{i}").as_str()], json!(i * i));
    }
}
