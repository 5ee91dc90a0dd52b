//! R34b and spec §10 through the real binary on a real PostgreSQL server:
//! many `agentctx` processes writing one context, the `maxItems` race,
//! every command reading a URL, copies in and out, bad addresses, two
//! processes migrating at once, and a server restarted and its backends
//! terminated under running writers.
//!
//! The server is `AGENTCTX_TEST_DATABASE_URL`, else
//! `postgres://root@127.0.0.1:5432/test` (`cargo xtask ci` provides one).
//! The restart test starts its own throwaway cluster with the machine's
//! `initdb` and `pg_ctl`. Nothing here is skipped when they are missing: it
//! fails and says what to provide.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use crate::support::{PUSH, Run, Stderr, agentctx, fresh, spawn, with_context};

use test_support::cluster as pg_cluster;

use agent_core::json::Value;
use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Drops a test's schema when the test ends, also when it fails.
struct DropSchema(String);

impl Drop for DropSchema {
    fn drop(&mut self) {
        if let Ok(mut client) =
            postgres::Client::connect(&test_support::database::direct_url(), postgres::NoTls)
        {
            let _ = client.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.0));
        }
    }
}

fn raw(url: &str) -> postgres::Client {
    postgres::Client::connect(url, postgres::NoTls).unwrap()
}

fn items(url: &str) -> Vec<Value> {
    let run = agentctx(&["view", url, "state"]);
    assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{run:?}");
    let view: Value = agent_core::json::from_str(&run.stdout).unwrap();
    view["items"].as_array().cloned().unwrap_or_default()
}

fn assert_check_ok(url: &str) {
    let run = agentctx(&["check", url]);
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (0, "ok\n", "")
    );
}

fn append(url: &str, messages: &str) {
    let run = agentctx(&["append", url, messages]);
    assert_eq!(
        (run.code, run.stderr_without_count().as_str()),
        (0, ""),
        "{run:?}"
    );
}

#[test]
fn r34b_eight_processes_writing_one_postgres_context_lose_nothing() {
    const WRITERS: i64 = 8;
    const PUSHES: i64 = 100;
    let url = fresh("eight");
    append(&url, r#"{"type":"state","data":{"items":[]}}"#);
    let started = Instant::now();
    let runs: Vec<(i64, Run)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let url = &url;
                scope.spawn(move || {
                    (0..PUSHES)
                        .map(|i| {
                            let value = w * 1000 + i;
                            let run = agentctx(&[
                                "apply",
                                url,
                                PUSH,
                                "--result",
                                &value.to_string(),
                                "--write",
                            ]);
                            (value, run)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    eprintln!("800 applies to PostgreSQL in {:?}", started.elapsed());
    for (value, run) in &runs {
        assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{run:?}");
        let message: Value = agent_core::json::from_str(run.stdout.trim()).unwrap();
        assert_eq!(message["data"]["items"], *value);
    }
    let landed: Vec<i64> = items(&url).iter().map(|v| v.as_i64().unwrap()).collect();
    let mut sorted = landed.clone();
    sorted.sort_unstable();
    let mut want: Vec<i64> = runs.iter().map(|(v, _)| *v).collect();
    want.sort_unstable();
    assert_eq!(sorted, want, "every acknowledged value exactly once");
    for w in 0..WRITERS {
        let mine: Vec<i64> = landed.iter().copied().filter(|v| v / 1000 == w).collect();
        assert_eq!(mine, (0..PUSHES).map(|i| w * 1000 + i).collect::<Vec<_>>());
    }
    assert_check_ok(&url);
}

#[test]
fn r34b_postgres_max_items_race_admits_exactly_n() {
    const N: usize = 10;
    let url = fresh("max-items");
    append(
        &url,
        r#"{"type":"state","data":{"items":[]},"schema":{"properties":{"items":{"maxItems":10}}}}"#,
    );
    let children: Vec<(Value, Child)> = (0..2 * N)
        .map(|i| {
            let value = Value::from(format!("v{i}"));
            let child = spawn(&[
                "apply",
                &url,
                PUSH,
                "--result",
                &value.to_string(),
                "--write",
            ]);
            (value, child)
        })
        .collect();
    let runs: Vec<(Value, Run)> = children
        .into_iter()
        .map(|(v, c)| (v, c.wait_with_output().unwrap().into()))
        .collect();
    let (accepted, refused): (Vec<_>, Vec<_>) = runs.iter().partition(|(_, run)| run.code == 0);
    assert_eq!((accepted.len(), refused.len()), (N, N), "{runs:#?}");
    let items = items(&url);
    let mut landed: Vec<String> = items.iter().map(ToString::to_string).collect();
    let mut acknowledged: Vec<String> = accepted.iter().map(|(v, _)| v.to_string()).collect();
    landed.sort();
    acknowledged.sort();
    assert_eq!(landed, acknowledged);
    for (value, run) in &refused {
        let mut over = items.clone();
        over.push(value.clone());
        assert_eq!(
            run.stderr,
            format!(
                "error: message {} (¶state) refused: schema violated: at /items: {} has more than {N} items (rule `maxItems` at /properties/items/maxItems)\n",
                N + 1,
                Value::Array(over.into())
            )
        );
    }
    assert_check_ok(&url);
}

#[test]
fn spec10_every_command_reads_a_postgres_context_as_it_reads_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.jsonl");
    std::fs::write(
        &file,
        concat!(
            "{\"type\":\"state\",\"data\":{\"user\":{\"name\":\"Ada\"},\"n\":12345678901234567890123}}\n",
            "{\"type\":\"comment\",\"data\":{\"text\":\"hi\"},\"_instance\":\"c1\"}\n",
            "{\"role\":\"user\",\"content\":\"Summarise.\"}\n",
        ),
    )
    .unwrap();
    let file = file.to_str().unwrap();
    let url = fresh("commands");
    let copy = agentctx(&["copy", file, &url]);
    assert_eq!((copy.code, copy.stderr.as_str()), (0, ""), "{copy:?}");
    let commands: [&[&str]; 6] = [
        &["view", "CONTEXT", "state"],
        &["resolve", "CONTEXT", "†state.user.name"],
        &["resolve", "CONTEXT", "†state.n"],
        &["instances", "CONTEXT"],
        &["check", "CONTEXT"],
        &["render", "CONTEXT"],
    ];
    for command in commands {
        let on = |context: &str| {
            let args: Vec<&str> = command
                .iter()
                .map(|a| if *a == "CONTEXT" { context } else { a })
                .collect();
            agentctx(&args)
        };
        let (from_file, from_db) = (on(file), on(&url));
        assert_eq!(from_db.code, 0, "{command:?}: {from_db:?}");
        assert_eq!(
            (from_db.stdout, from_db.stderr),
            (from_file.stdout, from_file.stderr),
            "{command:?}"
        );
    }
    // Out again: byte for byte what a file-to-file copy writes.
    let (back, direct) = (
        dir.path().join("back.jsonl"),
        dir.path().join("direct.jsonl"),
    );
    assert_eq!(agentctx(&["copy", &url, back.to_str().unwrap()]).code, 0);
    assert_eq!(agentctx(&["copy", file, direct.to_str().unwrap()]).code, 0);
    assert_eq!(
        std::fs::read(&back).unwrap(),
        std::fs::read(&direct).unwrap()
    );
    // Into a context that has messages: refused, nothing written.
    let again = agentctx(&["copy", file, &url]);
    assert_eq!(again.code, 1);
    assert_eq!(
        again.stderr,
        format!(
            "error: {url} is not empty (3 messages): copy only into a missing or empty context\n"
        )
    );
}

#[test]
fn spec10_a_missing_postgres_context_is_an_error_and_the_first_append_creates_it() {
    let url = fresh("missing");
    for args in [
        &["view", &url, "state"][..],
        &["check", &url],
        &["render", &url],
    ] {
        let run = agentctx(args);
        assert_eq!(run.code, 1, "{args:?}");
        assert_eq!(run.stderr, format!("error: {url}: no such context\n"));
    }
    let write = agentctx(&["apply", &url, PUSH, "--result", "1", "--write"]);
    assert_eq!(write.code, 1);
    assert_eq!(write.stderr, format!("error: {url}: no such context\n"));
    append(&url, r#"{"type":"state","data":{"items":[7]}}"#);
    assert_eq!(items(&url), [Value::from(7)]);
}

#[test]
fn spec10_bad_postgres_addresses_are_clear_errors_without_the_password() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent = listener.local_addr().unwrap().port();
    let long = "x".repeat(257);
    let cases: Vec<(String, String)> = vec![
        (
            "postgres://u:hunter2@127.0.0.1:5432/test".into(),
            "error: postgres://u@127.0.0.1:5432/test: no context parameter: name the context with ?context=NAME\n".into(),
        ),
        (
            "postgres://u:hunter2@127.0.0.1:5432/test?context=".into(),
            "error: postgres://u@127.0.0.1:5432/test?context=: the context name is empty\n".into(),
        ),
        (
            format!("postgres://u:hunter2@127.0.0.1:5432/test?context={long}"),
            format!("error: postgres://u@127.0.0.1:5432/test?context={long}: the context name is 257 bytes long; at most 256 are allowed\n"),
        ),
        (
            "postgres://u:hunter2@127.0.0.1:5432/test?sslmode=sometimes&context=c".into(),
            "error: postgres://u@127.0.0.1:5432/test?sslmode=sometimes&context=c: not a valid connection URL: invalid connection string: invalid value for option `sslmode`\n".into(),
        ),
        (
            format!("postgres://u:hunter2@127.0.0.1:{silent}/test?connect_timeout=1&context=c"),
            format!("error: cannot connect to postgres://u@127.0.0.1:{silent}/test?connect_timeout=1&context=c: timeout waiting for server (1 s; set connect_timeout=SECONDS in the URL)\n"),
        ),
    ];
    for (url, want) in &cases {
        for args in [
            &["check", url.as_str()][..],
            &["append", url, "{\"type\":\"s\",\"data\":{}}"],
        ] {
            let started = Instant::now();
            let run = agentctx(args);
            assert!(
                started.elapsed() < Duration::from_secs(8),
                "{args:?} took too long"
            );
            assert_eq!((run.code, run.stdout.as_str()), (1, ""), "{args:?}");
            assert_eq!(run.stderr, *want, "{args:?}");
            assert!(!run.stderr.contains("hunter2"));
        }
    }
    drop(listener);
}

#[test]
fn r34b_two_processes_migrating_one_database_at_once_both_succeed() {
    // A schema of its own is a session option, which a pooler refuses.
    let base = test_support::database::direct_url();
    let mut admin = raw(&base);
    let schema = format!("agentctx_cli_migrate_{}", std::process::id());
    admin
        .batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
        ))
        .unwrap();
    let _dropped = DropSchema(schema.clone());
    let sep = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{sep}options=-c%20search_path%3D{schema}&context=c");
    let children: Vec<Child> = (0..2)
        .map(|i| {
            spawn(&[
                "append",
                &url,
                &format!("{{\"type\":\"state\",\"data\":{{\"p{i}\":1}}}}"),
            ])
        })
        .collect();
    for child in children {
        let run: Run = child.wait_with_output().unwrap().into();
        assert_eq!(
            (run.code, run.stderr_without_count().as_str()),
            (0, ""),
            "{run:?}"
        );
    }
    let versions = admin
        .query(
            &format!("SELECT version FROM {schema}.agentctx_migrations"),
            &[],
        )
        .unwrap()
        .len();
    assert_eq!(
        versions,
        agent_store::SCHEMA_VERSION as usize,
        "each migration once"
    );
    let run = agentctx(&["view", &url, "state"]);
    let view: Value = agent_core::json::from_str(&run.stdout).unwrap();
    assert_eq!(view.as_object().unwrap().len(), 2, "{view}");
}

/// One writer process's try: the values it pushed and how it ended.
struct Attempt {
    values: Vec<String>,
    run: Run,
}

#[test]
fn r34b_a_restarted_server_and_terminated_backends_lose_nothing_acknowledged() {
    const PASSWORD: &str = "s3cret-pw";
    let cluster = pg_cluster::Cluster::start("agentctx-pg-restart-", Some(PASSWORD))
        .unwrap_or_else(|e| {
            panic!("this test starts its own PostgreSQL cluster and needs initdb and pg_ctl: {e}")
        });
    let base = cluster.url();
    let url = with_context(&base, "restart");

    // A password is checked; a wrong one is a clear error that does not show it.
    let port = cluster.port;
    let agent = format!("postgres://agent:{PASSWORD}@127.0.0.1:{port}/postgres?context=c");
    let run = agentctx(&["append", &agent, "{\"type\":\"s\",\"data\":{}}"]);
    assert_eq!((run.code, run.stderr_without_count().as_str()), (0, ""));
    assert!(!run.stderr.contains(PASSWORD), "{run:?}");
    let run = agentctx(&["check", &agent.replace(PASSWORD, "wrong-pw")]);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stderr,
        format!(
            "error: cannot connect to postgres://agent@127.0.0.1:{port}/postgres?context=c: \
             password authentication failed for user \"agent\" (SQLSTATE 28P01)\n"
        )
    );

    append(&url, r#"{"type":"state","data":{"items":[]}}"#);
    let stop = AtomicBool::new(false);
    let attempts: Vec<Attempt> = std::thread::scope(|scope| {
        let writers: Vec<_> = (0..4)
            .map(|w| {
                let (url, stop) = (&url, &stop);
                scope.spawn(move || {
                    let mut attempts = Vec::new();
                    let mut i = 0;
                    while !stop.load(Ordering::Relaxed) {
                        // Odd writers append two-message batches: both or neither.
                        let values: Vec<String> = if w % 2 == 0 {
                            vec![format!("w{w}-{i}")]
                        } else {
                            vec![format!("w{w}-{i}a"), format!("w{w}-{i}b")]
                        };
                        let run = if values.len() == 1 {
                            let result = Value::from(values[0].clone()).to_string();
                            agentctx(&["apply", url, PUSH, "--result", &result, "--write"])
                        } else {
                            let batch: Vec<Value> = values
                                .iter()
                                .map(|v| {
                                    agent_core::json!({"type": "state", "data": {"items": v},
                                    "_outputPath": "†state.items", "_outputMethod": "push"})
                                })
                                .collect();
                            agentctx(&["append", url, &Value::Array(batch.into()).to_string()])
                        };
                        attempts.push(Attempt { values, run });
                        i += 1;
                    }
                    attempts
                })
            })
            .collect();
        // Let them write, restart the server under them, let them write,
        // terminate their backends a few times, let them write.
        std::thread::sleep(Duration::from_millis(1500));
        cluster.pg_ctl(&["restart", "-m", "immediate"]).unwrap();
        std::thread::sleep(Duration::from_millis(1500));
        let mut admin = raw(&base);
        for _ in 0..10 {
            admin
                .execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                     WHERE application_name = 'agentctx' AND pid <> pg_backend_pid()",
                    &[],
                )
                .unwrap();
            std::thread::sleep(Duration::from_millis(100));
        }
        std::thread::sleep(Duration::from_millis(1000));
        stop.store(true, Ordering::Relaxed);
        writers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });

    let landed: Vec<String> = items(&url)
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    let count = |v: &str| landed.iter().filter(|l| *l == v).count();
    let (mut acked, mut failed) = (0, 0);
    for attempt in &attempts {
        let counts: Vec<usize> = attempt.values.iter().map(|v| count(v)).collect();
        if attempt.run.code == 0 {
            acked += 1;
            assert!(
                counts.iter().all(|&c| c == 1),
                "acknowledged {:?} landed {counts:?}",
                attempt.values
            );
        } else {
            failed += 1;
            let stderr = &attempt.run.stderr;
            assert_eq!(attempt.run.code, 1, "{:?}", attempt.run);
            assert!(
                stderr.starts_with("error: ") && stderr.lines().count() == 1,
                "{stderr}"
            );
            assert!(!stderr.contains(PASSWORD), "{stderr}");
            let clear = [
                "cannot connect to",
                "cannot read",
                "cannot append to",
                "the connection was lost while appending",
            ];
            assert!(
                clear.iter().any(|c| stderr.contains(c)),
                "unclear error: {stderr}"
            );
            // Not acknowledged: landed whole or not at all, never twice.
            assert!(
                counts.iter().all(|&c| c == counts[0] && c <= 1),
                "{:?} landed {counts:?}",
                attempt.values
            );
            if counts[0] == 1 {
                assert!(
                    stderr.contains("may have landed"),
                    "landed but reported as failed: {stderr}"
                );
            }
        }
    }
    eprintln!("{acked} acknowledged, {failed} failed across the restart and terminations");
    assert!(
        acked > 20,
        "too few writes succeeded to mean anything: {acked}"
    );
    assert!(
        failed > 0,
        "the restart and terminations interrupted no writer"
    );
    assert_eq!(
        landed.len(),
        attempts
            .iter()
            .filter(|a| a.run.code == 0 || count(&a.values[0]) == 1)
            .map(|a| a.values.len())
            .sum::<usize>()
    );
    assert_check_ok(&url);
}

#[test]
fn r6_concurrent_assign_write_on_postgresql_gives_every_input_its_own_instance() {
    let url = fresh("assign");
    crate::support::assigners_never_share_an_instance(&url);
}
