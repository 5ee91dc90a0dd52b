//! The PostgreSQL store against a real server (R34b, spec §10).
//!
//! The server is `AGENTCTX_TEST_DATABASE_URL`, else
//! `postgres://root@127.0.0.1:5432/test` (what `cargo xtask ci` provides).
//! Without one these tests fail, saying how to provide it: they are never
//! skipped — built without the `postgres` feature, the one test here fails
//! and says so.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

#[cfg(not(feature = "postgres"))]
#[test]
fn postgres_tests_need_the_postgres_feature() {
    panic!(
        "the PostgreSQL store tests need the `postgres` feature: \
         cargo test -p agent-store --features postgres (cargo xtask ci runs them)"
    );
}

#[cfg(feature = "postgres")]
mod postgres_store {
    use crate::support::pg::{fresh, open, raw, raw_with_tables};

    use crate::support::{assert_linearizable, log_of, plans, push, race};
    use agent_core::{json, json::Value};
    use agent_data::{Context, Format, Message};
    use agent_store::{Error, FileStore, PgStore, Store};
    use proptest::prelude::*;
    use std::sync::Barrier;
    use std::time::Instant;

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

    #[test]
    fn spec10_reading_a_missing_postgres_context_is_an_error_and_creates_nothing() {
        let url = fresh("missing");
        let error = open(&url).load().unwrap_err();
        assert!(error.is_missing());
        assert_eq!(error.to_string(), format!("{url}: no such context"));
        // Catching up with a missing context is not an error: nothing yet.
        let mut context = Context::new();
        open(&url).catch_up(&mut context).unwrap();
        assert!(open(&url).load().unwrap_err().is_missing());
    }

    #[test]
    fn r34b_the_first_postgres_append_creates_the_context() {
        let url = fresh("create");
        let mut store = open(&url);
        let mut context = Context::new();
        store.catch_up(&mut context).unwrap();
        store.commit(&mut context, &[push(0, 0, 0)]).unwrap();
        store
            .commit(&mut context, &[push(0, 1, 0), push(0, 1, 1)])
            .unwrap();
        let loaded = open(&url).load().unwrap();
        assert_eq!(loaded.context.len(), 3);
        assert_eq!(log_of(&loaded.context), ["0.0.0", "0.1.0", "0.1.1"]);
    }

    #[test]
    fn r3_copy_file_to_postgres_to_file_keeps_every_byte_of_every_message() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("in.jsonl");
        let lines = [
            r#"{"type":"state","data":{"z":1,"a":{"y":2,"b":3},"big":123456789012345678901234567890,"f":1.50},"schema":{"type":"object"}}"#,
            r#"{"type":"state","data":{"big":-98765432109876543210987654321},"_outputPath":"†state.big"}"#,
            r#"{"type":"note","data":{"text":"line\nbreak \u0000 † ☃"},"_instance":"i-1"}"#,
        ];
        std::fs::write(&source, lines.join("\n") + "\n").unwrap();
        let url = fresh("copy");
        let copied =
            agent_store::copy(&mut FileStore::open(&source).unwrap(), &mut open(&url)).unwrap();
        assert_eq!(copied, 3);
        let back = dir.path().join("out.jsonl");
        agent_store::copy(&mut open(&url), &mut FileStore::open(&back).unwrap()).unwrap();
        let original = FileStore::open(&source).unwrap().load().unwrap().context;
        let round_trip = FileStore::open(&back).unwrap().load().unwrap().context;
        let as_lines = |c: &Context| -> Vec<String> {
            c.messages()
                .map(|m| serde_json::to_string(&m.to_value()).unwrap())
                .collect()
        };
        assert_eq!(as_lines(&round_trip), as_lines(&original));
        // Byte for byte what copying the file straight to a file writes.
        let direct = dir.path().join("direct.jsonl");
        agent_store::copy(
            &mut FileStore::open(&source).unwrap(),
            &mut FileStore::open(&direct).unwrap(),
        )
        .unwrap();
        assert_eq!(
            std::fs::read(&back).unwrap(),
            std::fs::read(&direct).unwrap()
        );
        assert!(
            std::fs::read_to_string(&back)
                .unwrap()
                .contains("123456789012345678901234567890,\"f\":1.50")
        );
        // Copying into a context that has messages is refused.
        let error =
            agent_store::copy(&mut FileStore::open(&source).unwrap(), &mut open(&url)).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("{url} is not empty (3 messages): copy only into a missing or empty context")
        );
        assert_eq!(FileStore::open(&back).unwrap().format(), Format::Jsonl);
    }

    #[test]
    fn r34b_postgres_append_at_a_stale_length_is_a_conflict_and_changes_nothing() {
        let url = fresh("conflict");
        let mut first = open(&url);
        let mut mine = Context::new();
        first.commit(&mut mine, &[push(0, 0, 0)]).unwrap();
        let mut second = open(&url);
        let mut theirs = second.load().unwrap().context;
        let batch = [push(1, 0, 0)];
        let stale = theirs.prepare(&batch).unwrap();
        first.commit(&mut mine, &[push(0, 1, 0)]).unwrap();
        let error = second.append_at(&stale).unwrap_err();
        assert!(
            matches!(
                error,
                Error::Conflict {
                    expected: 1,
                    current: 2,
                    ..
                }
            ),
            "{error}"
        );
        assert_eq!(
            error.to_string(),
            format!("{url}: another writer appended first (expected 1 messages, found 2)")
        );
        assert_eq!(open(&url).load().unwrap().context.len(), 2);
        second.commit(&mut theirs, &batch).unwrap();
        assert_eq!(
            log_of(&open(&url).load().unwrap().context),
            ["0.0.0", "0.1.0", "1.0.0"]
        );
    }

    #[test]
    fn r34b_an_uncontended_postgres_append_is_one_round_trip_and_a_stale_one_two() {
        let url = fresh("trips");
        let mut store = open(&url);
        let mut mine = Context::new();
        store.commit(&mut mine, &[push(0, 0, 0)]).unwrap();
        let before = store.round_trips();
        store.commit(&mut mine, &[push(0, 1, 0)]).unwrap();
        assert_eq!(store.round_trips() - before, 1, "the plain statement alone");
        let mut other = open(&url);
        let theirs = other.load().unwrap().context;
        store.commit(&mut mine, &[push(0, 2, 0)]).unwrap();
        let batch = [push(1, 0, 0)];
        let stale = theirs.prepare(&batch).unwrap();
        let before = other.round_trips();
        let error = other.append_at(&stale).unwrap_err();
        assert!(
            matches!(
                error,
                Error::Conflict {
                    expected: 2,
                    current: 3,
                    ..
                }
            ),
            "{error}"
        );
        assert_eq!(
            other.round_trips() - before,
            2,
            "the plain statement, then the function saying why it appended nothing"
        );
        assert_eq!(open(&url).load().unwrap().context.len(), 3);
    }

    #[test]
    fn r34b_postgres_commit_validates_against_the_context_as_it_is_when_the_append_lands() {
        let url = fresh("validate");
        let schema = Message::from_value(json!({"type": "state", "data": {"log": []},
        "schema": {"properties": {"log": {"maxItems": 1}}}}))
        .unwrap();
        let mut first = open(&url);
        let mut mine = Context::new();
        first.commit(&mut mine, &schema).unwrap();
        let mut second = open(&url);
        let mut theirs = second.load().unwrap().context;
        first.commit(&mut mine, &[push(0, 0, 0)]).unwrap();
        assert!(theirs.prepare(&[push(1, 0, 0)]).is_ok());
        let error = second.commit(&mut theirs, &[push(1, 0, 0)]).unwrap_err();
        assert!(matches!(error, Error::Refused(_)), "{error}");
        assert!(error.to_string().contains("schema violated"), "{error}");
        assert_eq!(log_of(&open(&url).load().unwrap().context), ["0.0.0"]);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

        #[test]
        fn r34b_concurrent_postgres_appends_equal_a_serial_order(
            plan in plans()
        ) {
            let url = fresh("linearizable");
            let acked = race(&|| open(&url), &plan);
            let context = open(&url).load().unwrap().context;
            assert_linearizable(&log_of(&context), &acked);
            // The stored rows are numbered 0.. with no gap, and the length agrees.
            let name = url.rsplit_once("context=").unwrap().1;
            let row = raw()
                .query_one(
                    "SELECT c.length, count(m.seq), coalesce(max(m.seq), -1) FROM agentctx_contexts c \
                     LEFT JOIN agentctx_messages m ON m.context = c.id WHERE c.name = $1 GROUP BY c.length",
                    &[&name],
                )
                .unwrap();
            let (length, count, last): (i64, i64, i64) = (row.get(0), row.get(1), row.get(2));
            prop_assert_eq!(length, count);
            prop_assert_eq!(last + 1, count);
        }
    }

    #[test]
    fn r34b_postgres_migration_run_by_many_connections_at_once_succeeds_once() {
        let mut admin = raw();
        let schema = format!("agentctx_migrate_{}", std::process::id());
        admin
            .batch_execute(&format!(
                "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
            ))
            .unwrap();
        let _dropped = DropSchema(schema.clone());
        // A schema of its own is a session option, which a pooler refuses.
        let base = test_support::database::direct_url();
        let sep = if base.contains('?') { '&' } else { '?' };
        let url = format!("{base}{sep}options=-c%20search_path%3D{schema}&context=migrated");
        let barrier = Barrier::new(8);
        std::thread::scope(|scope| {
            for _ in 0..8 {
                scope.spawn(|| {
                    barrier.wait();
                    open(&url);
                });
            }
        });
        let versions: Vec<i32> = admin
            .query(
                &format!("SELECT version FROM {schema}.agentctx_migrations"),
                &[],
            )
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        // Every migration applied exactly once, in order, and the function the
        // last one defines is the only one.
        assert_eq!(
            versions,
            (1..=agent_store::SCHEMA_VERSION).collect::<Vec<_>>()
        );
        let functions: Vec<i16> = admin
            .query(
                "SELECT p.pronargs FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace \
             WHERE n.nspname = $1 AND p.proname = 'agentctx_append'",
                &[&schema],
            )
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert_eq!(functions, [7]);
        let mut context = Context::new();
        open(&url).commit(&mut context, &[push(0, 0, 0)]).unwrap();
        let rows: i64 = admin
            .query_one(
                &format!("SELECT count(*) FROM {schema}.agentctx_messages"),
                &[],
            )
            .unwrap()
            .get(0);
        assert_eq!(rows, 1);
    }

    #[test]
    fn r34b_postgres_tables_of_the_wrong_shape_are_a_clear_error() {
        let mut admin = raw();
        let schema = format!("agentctx_shape_{}", std::process::id());
        admin
            .batch_execute(&format!(
                "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}; \
             CREATE TABLE {schema}.agentctx_messages (id int)"
            ))
            .unwrap();
        let _dropped = DropSchema(schema.clone());
        // A schema of its own is a session option, which a pooler refuses.
        let base = test_support::database::direct_url();
        let sep = if base.contains('?') { '&' } else { '?' };
        let url = format!("{base}{sep}options=-c%20search_path%3D{schema}&context=c");
        let error = PgStore::open(&url).unwrap_err().to_string();
        assert!(
        error.starts_with(&format!("cannot set up the tables of {url}: relation \"agentctx_messages\" already exists (SQLSTATE 42P07)")),
        "{error}"
    );
        assert!(
            error.contains(&format!(
                "do not have the shape of schema version {}",
                agent_store::SCHEMA_VERSION
            )),
            "{error}"
        );
    }

    #[test]
    fn spec10_a_server_that_does_not_answer_is_an_error_within_the_connect_timeout() {
        // Accepts connections but never says a word.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let url = format!("postgres://me:secret@127.0.0.1:{port}/db?connect_timeout=1&context=c");
        let started = Instant::now();
        let error = PgStore::open(&url).unwrap_err().to_string();
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        assert_eq!(
            error,
            format!(
                "cannot connect to postgres://me@127.0.0.1:{port}/db?connect_timeout=1&context=c: timeout waiting for server (1 s; set connect_timeout=SECONDS in the URL)"
            )
        );
        drop(listener);
        // Nobody listening at all.
        let error = PgStore::open(&format!(
            "postgres://me:secret@127.0.0.1:{port}/db?context=c"
        ))
        .unwrap_err()
        .to_string();
        assert!(
        error.starts_with(&format!("cannot connect to postgres://me@127.0.0.1:{port}/db?context=c: error connecting to server")),
        "{error}"
    );
        assert!(!error.contains("secret"));
    }

    #[test]
    fn r1_a_stored_line_holding_several_messages_keeps_rows_and_messages_apart() {
        let url = fresh("several");
        let name = url.rsplit_once("context=").unwrap().1.to_owned();
        // Another program appends one row whose chat wrapper holds two
        // messages, with the row's chain digest computed as docs/store.md
        // says: SHA-256 of the digest before (32 zero bytes) and the line.
        let line = r#"{"role":"user","content":[{"type":"state","data":{"a":1}},{"type":"state","data":{"b":2}}]}"#;
        let mut other = raw_with_tables();
        other
            .execute(
                "SELECT agentctx_append($1, NULL, 0, $2, \
                 ARRAY[sha256(decode(repeat('00', 32), 'hex') || convert_to($3, 'UTF8'))])",
                &[&name, &vec![line], &line],
            )
            .unwrap();
        let mut first = open(&url);
        let mut mine = first.load().unwrap().context;
        assert_eq!(mine.len(), 2);
        let mut second = open(&url);
        let mut theirs = second.load().unwrap().context;
        let set = |key: &str, n: i64| {
            Message::from_value(json!({"type": "state", "data": {key: n}})).unwrap()
        };
        first.commit(&mut mine, &set("c", 3)).unwrap();
        // The second handle catches up one row (one message) and lands after it.
        second.commit(&mut theirs, &set("d", 4)).unwrap();
        let stored: i64 = other
            .query_one(
                "SELECT length FROM agentctx_contexts WHERE name = $1",
                &[&name],
            )
            .unwrap()
            .get(0);
        assert_eq!(stored, 3, "rows: the wrapper, then one per commit");
        let context = open(&url).load().unwrap().context;
        assert_eq!(context.len(), 4);
        assert_eq!(
            context.read(&"†state".parse().unwrap(), None),
            Some(&json!({"a": 1, "b": 2, "c": 3, "d": 4}))
        );
    }

    #[test]
    fn r34b_a_postgres_context_deleted_under_a_writer_is_refused() {
        let url = fresh("deleted");
        let name = url.rsplit_once("context=").unwrap().1.to_owned();
        let mut store = open(&url);
        let mut context = Context::new();
        store.commit(&mut context, &[push(0, 0, 0)]).unwrap();
        raw()
        .batch_execute(&format!(
            "DELETE FROM agentctx_messages WHERE context = (SELECT id FROM agentctx_contexts WHERE name = '{name}'); \
             DELETE FROM agentctx_contexts WHERE name = '{name}'"
        ))
        .unwrap();
        let error = store.commit(&mut context, &[push(0, 1, 0)]).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("{url} was deleted since it was read; load it again")
        );
        assert!(
            open(&url).load().unwrap_err().is_missing(),
            "nothing was written"
        );
    }

    #[test]
    fn r34b_a_postgres_context_deleted_and_created_again_is_not_the_one_read() {
        let url = fresh("recreated");
        let name = url.rsplit_once("context=").unwrap().1.to_owned();
        let mut store = open(&url);
        let mut context = Context::new();
        store.commit(&mut context, &[push(0, 0, 0)]).unwrap();
        let mut admin = raw();
        admin
        .execute(
            "DELETE FROM agentctx_messages WHERE context = (SELECT id FROM agentctx_contexts WHERE name = $1)",
            &[&name],
        )
        .unwrap();
        admin
            .execute("DELETE FROM agentctx_contexts WHERE name = $1", &[&name])
            .unwrap();
        // Someone else creates a context of the same name, as long as the old one.
        open(&url)
            .commit(&mut Context::new(), &[push(9, 0, 0)])
            .unwrap();
        let error = store.commit(&mut context, &[push(0, 1, 0)]).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("{url} was deleted and created again since it was read; load it again")
        );
        assert_eq!(log_of(&open(&url).load().unwrap().context), ["9.0.0"]);
    }

    /// Where a [`Proxy`] cuts the next connection that appends.
    #[derive(Clone, Copy, PartialEq, Debug)]
    enum Cut {
        Never,
        /// Drop the append's request: it never reaches the server.
        BeforeAppend,
        /// Forward the append, then cut the client off — keeping the server's
        /// side open, so its session lives on as behind a dead proxy or NAT.
        AfterAppend,
    }

    /// A TCP proxy in front of the test server.
    struct Proxy {
        port: u16,
        /// The cut to make, and the bytes of the request to make it at.
        cut: std::sync::Arc<std::sync::Mutex<(Cut, Vec<u8>)>>,
    }

    impl Proxy {
        fn start() -> Proxy {
            use std::io::{Read, Write};
            let config: postgres::Config = test_support::database::direct_url().parse().unwrap();
            let host = match config.get_hosts().first() {
                Some(postgres::config::Host::Tcp(host)) => host.clone(),
                _ => "127.0.0.1".to_owned(),
            };
            let upstream = (host, config.get_ports().first().copied().unwrap_or(5432));
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let port = listener.local_addr().unwrap().port();
            let cut = std::sync::Arc::new(std::sync::Mutex::new((Cut::Never, Vec::new())));
            let shared = cut.clone();
            std::thread::spawn(move || {
                for client in listener.incoming() {
                    let (Ok(mut client), Ok(mut server)) =
                        (client, std::net::TcpStream::connect(upstream.clone()))
                    else {
                        continue;
                    };
                    let (mut client_out, mut server_in) =
                        (client.try_clone().unwrap(), server.try_clone().unwrap());
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut server_in, &mut client_out);
                    });
                    let cut = shared.clone();
                    std::thread::spawn(move || {
                        let mut buffer = vec![0; 64 * 1024];
                        loop {
                            let n = match client.read(&mut buffer) {
                                Ok(0) | Err(_) => break,
                                Ok(n) => n,
                            };
                            let chunk = &buffer[..n];
                            // The append's request carries its lines: the marker.
                            let (mode, marker) = cut.lock().unwrap().clone();
                            let hit = mode != Cut::Never
                                && chunk.windows(marker.len()).any(|w| w == marker.as_slice());
                            if hit {
                                *cut.lock().unwrap() = (Cut::Never, Vec::new());
                            }
                            if hit && mode == Cut::BeforeAppend {
                                let _ = client.shutdown(std::net::Shutdown::Both);
                                let _ = server.shutdown(std::net::Shutdown::Both);
                                return;
                            }
                            if server.write_all(chunk).is_err() {
                                break;
                            }
                            if hit {
                                let _ = client.shutdown(std::net::Shutdown::Both);
                                // The server's side stays open until it is ended.
                                let mut rest = Vec::new();
                                let _ = server.read_to_end(&mut rest);
                                return;
                            }
                        }
                        let _ = server.shutdown(std::net::Shutdown::Both);
                    });
                }
            });
            Proxy { port, cut }
        }

        fn url(&self, name: &str) -> String {
            let config: postgres::Config = test_support::database::direct_url().parse().unwrap();
            let user = config.get_user().unwrap_or("root");
            let db = config.get_dbname().unwrap_or("test");
            with_fresh_context(
                &format!("postgres://{user}@127.0.0.1:{}/{db}", self.port),
                name,
            )
        }

        /// Cuts the next request that contains `marker` (an appended
        /// line's text travels in the append's request).
        fn arm(&self, cut: Cut, marker: &str) {
            *self.cut.lock().unwrap() = (cut, marker.as_bytes().to_vec());
        }
    }

    fn with_fresh_context(base: &str, name: &str) -> String {
        let fresh = fresh(name);
        let context = fresh.rsplit_once("context=").unwrap().1;
        // A plain TCP proxy: the server sees it as its client, as it would
        // a pooler, so the URL says there is none.
        format!("{base}?agentctx_pooled=no&context={context}")
    }

    #[test]
    fn r34b_a_connection_lost_before_the_append_reached_the_server_is_retried() {
        let proxy = Proxy::start();
        let url = proxy.url("cut-before");
        let mut store = open(&url);
        let mut context = Context::new();
        store.commit(&mut context, &[push(0, 0, 0)]).unwrap();
        proxy.arm(Cut::BeforeAppend, "\"0.1.0\"");
        store.commit(&mut context, &[push(0, 1, 0)]).unwrap();
        assert_eq!(proxy.cut.lock().unwrap().0, Cut::Never, "the cut happened");
        assert_eq!(
            log_of(&open(&url).load().unwrap().context),
            ["0.0.0", "0.1.0"]
        );
    }

    #[test]
    fn r34b_a_connection_lost_after_the_append_committed_is_in_doubt_not_repeated() {
        let proxy = Proxy::start();
        let url = proxy.url("cut-after");
        let mut store = open(&url);
        let mut context = Context::new();
        store.commit(&mut context, &[push(0, 0, 0)]).unwrap();
        proxy.arm(Cut::AfterAppend, "\"0.1.0\"");
        let error = store.commit(&mut context, &[push(0, 1, 0)]).unwrap_err();
        assert!(matches!(error, Error::InDoubt { .. }), "{error}");
        let message = error.to_string();
        assert!(
            message.starts_with(&format!("{url}: the connection was lost while appending (")),
            "{message}"
        );
        assert!(message.ends_with("the context now has 1 more rows, beginning with exactly these); the append may have landed"), "{message}");
        assert_eq!(
            log_of(&open(&url).load().unwrap().context),
            ["0.0.0", "0.1.0"]
        );
    }

    #[test]
    fn r34b_a_lost_append_still_running_on_the_server_is_ended_before_it_is_retried() {
        // The append's session waits for a row lock another transaction holds;
        // its client's connection is cut. Retrying while that session lives
        // would append the batch twice once the lock is released.
        let proxy = Proxy::start();
        let url = proxy.url("cut-waiting");
        let name = url.rsplit_once("context=").unwrap().1.to_owned();
        let mut store = open(&url);
        let mut context = Context::new();
        store.commit(&mut context, &[push(0, 0, 0)]).unwrap();
        let mut admin = raw();
        let mut holder = admin.transaction().unwrap();
        holder
            .execute(
                "SELECT 1 FROM agentctx_contexts WHERE name = $1 FOR UPDATE",
                &[&name],
            )
            .unwrap();
        proxy.arm(Cut::AfterAppend, "\"0.1.0\"");
        let result = std::thread::scope(|scope| {
            let writer = scope.spawn(|| store.commit(&mut context, &[push(0, 1, 0)]));
            std::thread::sleep(std::time::Duration::from_millis(1500));
            holder.commit().unwrap();
            writer.join().unwrap()
        });
        result.unwrap();
        assert_eq!(
            log_of(&open(&url).load().unwrap().context),
            ["0.0.0", "0.1.0"]
        );
    }

    #[test]
    fn r34b_a_postgres_commit_refused_against_a_stale_context_is_decided_against_the_current_one() {
        let url = fresh("stale-refusal");
        let set = |value: Value| {
            Message::from_value(json!({"type": "state", "data": {"log": value},
                "_outputPath": "†state.log"}))
            .unwrap()
        };
        let mut first = open(&url);
        let mut mine = Context::new();
        first.commit(&mut mine, &set(json!("not a list"))).unwrap();
        let mut second = open(&url);
        let mut theirs = second.load().unwrap().context;
        first.commit(&mut mine, &set(json!([]))).unwrap();
        // Against `theirs` the push is a type error (R13); against the
        // stored context it is fine, and that is what decides.
        assert!(theirs.prepare(&[push(1, 0, 0)]).is_err());
        second.commit(&mut theirs, &[push(1, 0, 0)]).unwrap();
        assert_eq!(log_of(&open(&url).load().unwrap().context), ["1.0.0"]);
        // A push that is wrong against the stored context too is refused.
        first.commit(&mut mine, &set(json!("text again"))).unwrap();
        let error = second.commit(&mut theirs, &[push(1, 1, 0)]).unwrap_err();
        assert!(matches!(error, Error::Refused(_)), "{error}");
    }

    // -------------------------------------------------------- snapshots (D37: snapshots)

    fn every_view(context: &Context) -> Vec<Value> {
        let mut out = vec![json!(context.len())];
        for id in context.identities() {
            for x in context.instances().map(Some).chain([None]) {
                out.push(json!([id.to_string(), context.view(&id.kind, x)]));
            }
        }
        out
    }

    #[test]
    fn r34c_a_long_postgres_context_opens_from_its_snapshot_and_reads_as_the_full_fold() {
        let url = fresh("snapshot");
        let mut store = open(&url);
        let mut context = Context::new();
        for i in 0..150 {
            let instance = if i % 3 == 0 { "a" } else { "b" };
            let m = Message::from_value(json!({"type": "state", "data": {"log": i},
                "_outputPath": "†state.log", "_outputMethod": "push", "_instance": instance}))
            .unwrap();
            store.commit(&mut context, &m).unwrap();
            let g = Message::from_value(json!({"type": "state", "data": {"n": i}})).unwrap();
            store.commit(&mut context, &g).unwrap();
        }
        let full = open(&url).load().unwrap().context;
        let mut reader = open(&url);
        let mut resumed = reader.load_tail().unwrap().context;
        assert!(!resumed.is_complete(), "no snapshot was used");
        assert!(full.len() - resumed.held_from() <= 2 * agent_store::SNAPSHOT_AFTER);
        assert_eq!(every_view(&resumed), every_view(&full));
        // Appends through it land as through the full context.
        let m = Message::from_value(json!({"type": "state", "data": {"n": "last"}})).unwrap();
        reader.commit(&mut resumed, &m).unwrap();
        assert_eq!(
            every_view(&resumed),
            every_view(&open(&url).load().unwrap().context)
        );

        // A damaged snapshot, or one that names other rows, is ignored (as a
        // body in its row, the way schema versions 3 to 8 kept one).
        let name = url.rsplit("context=").next().unwrap().to_owned();
        let mut admin = raw();
        let id: i64 = admin
            .query_one("SELECT id FROM agentctx_contexts WHERE name = $1", &[&name])
            .unwrap()
            .get(0);
        let (rows, body): (i64, Vec<u8>) = admin
            .query_one(
                "SELECT s.rows, string_agg(c.body, ''::bytea ORDER BY c.slot) FROM agentctx_snapshots s JOIN agentctx_snapshot_chunks c ON c.context = s.context WHERE s.context = $1 GROUP BY s.rows",
                &[&id],
            )
            .map(|r| (r.get(0), r.get(1)))
            .unwrap();
        let mut damaged = body.clone();
        let at = damaged.len() / 2;
        damaged[at] ^= 1;
        for (rows, body) in [(rows, damaged), (rows - 1, body)] {
            admin
                .execute(
                    "UPDATE agentctx_snapshots SET rows = $2, body = $3, chunks = 0 WHERE context = $1",
                    &[&id, &rows, &body],
                )
                .unwrap();
            let read = open(&url).load_tail().unwrap().context;
            assert!(
                read.is_complete(),
                "a snapshot that does not match was used"
            );
            assert_eq!(
                every_view(&read),
                every_view(&open(&url).load().unwrap().context)
            );
        }
    }
}
