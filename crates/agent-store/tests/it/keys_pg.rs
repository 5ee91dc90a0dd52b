//! Idempotent appends in PostgreSQL (R34b): an append made with a key lands
//! at most once, however often it is sent — after a success, after a lost
//! connection, from many writers at once.
//!
//! The server is `AGENTCTX_TEST_DATABASE_URL`, else
//! `postgres://root@127.0.0.1:5432/test`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

#[cfg(feature = "postgres")]
mod keys {
    use crate::support::pg::{fresh, fresh_name, open, raw, raw_with_tables};
    use agent_core::json;
    use agent_data::{Context, Message};
    use agent_store::{AppendKey, Error, KeyedOutcome, Store};
    use std::io::{Read, Write};
    use std::sync::atomic::Ordering;
    use std::sync::{Arc, Barrier, Mutex};

    fn push(tag: &str) -> Vec<Message> {
        Message::from_value(json!({"type": "state", "data": {"log": tag},
            "_outputPath": "†state.log", "_outputMethod": "push"}))
        .unwrap()
    }

    fn key(text: &str) -> AppendKey {
        text.parse().unwrap()
    }

    fn log(url: &str) -> Vec<String> {
        crate::support::pg::pushed_log(&mut open(url))
    }

    #[test]
    fn r34b_the_same_key_twice_appends_once_and_names_the_first_range() {
        let url = fresh("twice");
        let mut store = open(&url);
        let mut context = Context::new();
        store.commit(&mut context, &push("a")).unwrap();
        let first = store
            .commit_once(&mut context, &push("b"), &key("job-1"))
            .unwrap();
        assert_eq!(first, KeyedOutcome::Appended(1..2));
        // Again through the same handle, and through a fresh one that has
        // read nothing: nothing is appended, the first range is named.
        let again = store
            .commit_once(&mut context, &push("b"), &key("job-1"))
            .unwrap();
        assert_eq!(again, KeyedOutcome::Already(1..2));
        let mut other = open(&url);
        let mut empty = Context::new();
        let from_other = other
            .commit_once(&mut empty, &push("b again"), &key("job-1"))
            .unwrap();
        assert_eq!(from_other, KeyedOutcome::Already(1..2));
        assert_eq!(empty.len(), 2, "the context was caught up to hold it");
        assert_eq!(log(&url), ["a", "b"]);
        // Another key appends; an append without a key always does.
        store
            .commit_once(&mut context, &push("c"), &key("job-2"))
            .unwrap();
        store.commit(&mut context, &push("b")).unwrap();
        assert_eq!(log(&url), ["a", "b", "c", "b"]);
    }

    #[test]
    fn r34b_a_retry_its_own_landing_made_invalid_is_already_not_refused() {
        // The log may hold one item: the batch is valid once, and its retry
        // against the context it made is not — the key decides first.
        let url = fresh("max-items");
        let mut store = open(&url);
        let mut context = Context::new();
        let schema = Message::from_value(json!({"type": "state", "data": {"log": []},
            "schema": {"properties": {"log": {"maxItems": 1}}}}))
        .unwrap();
        store.commit(&mut context, &schema).unwrap();
        let k = key("only-once");
        let first = store.commit_once(&mut context, &push("a"), &k).unwrap();
        assert_eq!(first, KeyedOutcome::Appended(1..2));
        let mut fresh_handle = open(&url);
        let mut loaded = fresh_handle.load().unwrap().context;
        let again = fresh_handle
            .commit_once(&mut loaded, &push("a"), &k)
            .unwrap();
        assert_eq!(again, KeyedOutcome::Already(1..2));
        // Without the key it is refused, as before.
        let refused = fresh_handle.commit(&mut loaded, &push("a")).unwrap_err();
        assert!(matches!(refused, Error::Refused(_)), "{refused:?}");
        assert_eq!(log(&url), ["a"]);
    }

    #[test]
    fn r34b_the_range_counts_messages_not_rows() {
        // Another program appends one row holding two messages (R1).
        let url = fresh("several");
        let name = url.rsplit_once("context=").unwrap().1.to_owned();
        let line = r#"{"role":"user","content":[{"type":"state","data":{"log":["x"]}},{"type":"state","data":{"n":2}}]}"#;
        raw_with_tables()
            .execute(
                "SELECT agentctx_append($1, NULL, 0, $2, \
                 ARRAY[sha256(decode(repeat('00', 32), 'hex') || convert_to($3, 'UTF8'))])",
                &[&name, &vec![line], &line],
            )
            .unwrap();
        let mut store = open(&url);
        let mut context = store.load().unwrap().context;
        assert_eq!(context.len(), 2);
        let k = key("after-two");
        let first = store.commit_once(&mut context, &push("y"), &k).unwrap();
        assert_eq!(first, KeyedOutcome::Appended(2..3));
        let again = open(&url)
            .commit_once(&mut Context::new(), &push("y"), &k)
            .unwrap();
        assert_eq!(again, KeyedOutcome::Already(2..3));
        assert_eq!(log(&url), ["x", "y"]);
    }

    #[test]
    fn r34b_keys_of_different_contexts_are_independent() {
        let (one, two) = (fresh("one"), fresh("two"));
        let k = key("shared");
        for url in [&one, &two] {
            let once = open(url)
                .commit_once(&mut Context::new(), &push("a"), &k)
                .unwrap();
            assert_eq!(once, KeyedOutcome::Appended(0..1), "{url}");
        }
        assert_eq!(log(&one), ["a"]);
        assert_eq!(log(&two), ["a"]);
    }

    #[test]
    fn r34b_a_bad_key_is_refused_with_what_is_wrong() {
        for (bad, says) in [
            ("", "it is empty"),
            ("two words", "byte 3 is ' '"),
            ("naïve", "byte 2 is 'ï'"),
        ] {
            let error = bad.parse::<AppendKey>().unwrap_err();
            assert!(
                matches!(error, agent_store::AppendError::InvalidKey { .. }),
                "{error:?}"
            );
            let text = error.to_string();
            assert!(
                text.starts_with(&format!("bad append key {bad:?}: ")),
                "{text}"
            );
            assert!(text.contains(says), "{text}");
        }
        let long = "k".repeat(129);
        let text = long.parse::<AppendKey>().unwrap_err().to_string();
        assert!(text.contains("it has 129 bytes, more than 128"), "{text}");
        assert!(key(&"k".repeat(128)).as_str().len() == 128);
    }

    #[test]
    fn r34b_a_key_older_than_the_window_is_forgotten() {
        let url = fresh("window");
        let name = url.rsplit_once("context=").unwrap().1.to_owned();
        let mut store = open(&url);
        let mut context = Context::new();
        let k = key("old");
        store.commit_once(&mut context, &push("a"), &k).unwrap();
        raw()
            .execute(
                "UPDATE agentctx_keys SET at = now() - interval '7 days 1 minute' \
                 WHERE context = (SELECT id FROM agentctx_contexts WHERE name = $1)",
                &[&name],
            )
            .unwrap();
        let again = store.commit_once(&mut context, &push("a"), &k).unwrap();
        assert_eq!(again, KeyedOutcome::Appended(1..2));
        let kept: i64 = raw()
            .query_one(
                "SELECT count(*) FROM agentctx_keys \
                 WHERE context = (SELECT id FROM agentctx_contexts WHERE name = $1)",
                &[&name],
            )
            .unwrap()
            .get(0);
        assert_eq!(kept, 1, "the old key was pruned, the new one kept");
    }

    #[test]
    fn r34b_concurrent_writers_with_one_key_append_once() {
        const WRITERS: usize = 8;
        let url = fresh("race");
        // Half start on an existing context, half race to create it too.
        for round in 0..2 {
            let url = if round == 0 {
                url.clone()
            } else {
                fresh("race-new")
            };
            if round == 0 {
                open(&url).commit(&mut Context::new(), &push("0")).unwrap();
            }
            let barrier = Barrier::new(WRITERS);
            let results: Vec<KeyedOutcome> = std::thread::scope(|scope| {
                let handles: Vec<_> = (0..WRITERS)
                    .map(|w| {
                        let (url, barrier) = (&url, &barrier);
                        scope.spawn(move || {
                            let mut store = open(url);
                            let mut context = Context::new();
                            store.catch_up(&mut context).unwrap();
                            barrier.wait();
                            store
                                .commit_once(&mut context, &push(&format!("w{w}")), &key("one"))
                                .unwrap()
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            let appended: Vec<_> = results.iter().filter(|o| !o.is_already()).collect();
            assert_eq!(appended.len(), 1, "{results:?}");
            let range = appended[0].range();
            assert!(results.iter().all(|o| o.range() == range), "{results:?}");
            let landed = log(&url);
            let writers = landed.iter().filter(|t| t.starts_with('w')).count();
            assert_eq!(writers, 1, "{landed:?}");
        }
    }

    /// A TCP proxy in front of the test server that, once armed, forwards
    /// the next request holding a marker and then cuts the client off,
    /// keeping the server's side open: the append commits, its answer is
    /// lost.
    struct Proxy {
        port: u16,
        marker: Arc<Mutex<Option<Vec<u8>>>>,
    }

    impl Proxy {
        fn start() -> Proxy {
            let config: postgres::Config = test_support::database::direct_url().parse().unwrap();
            let host = match config.get_hosts().first() {
                Some(postgres::config::Host::Tcp(host)) => host.clone(),
                _ => "127.0.0.1".to_owned(),
            };
            let upstream = (host, config.get_ports().first().copied().unwrap_or(5432));
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let port = listener.local_addr().unwrap().port();
            let marker: Arc<Mutex<Option<Vec<u8>>>> = Arc::default();
            let shared = Arc::clone(&marker);
            std::thread::spawn(move || {
                for client in listener.incoming() {
                    let (Ok(mut client), Ok(mut server)) =
                        (client, std::net::TcpStream::connect(upstream.clone()))
                    else {
                        continue;
                    };
                    let (mut client_out, mut server_in) =
                        (client.try_clone().unwrap(), server.try_clone().unwrap());
                    // Muted before the marked request is forwarded, so its
                    // answer can never reach the client first.
                    let muted = Arc::new(std::sync::atomic::AtomicBool::new(false));
                    let mute = Arc::clone(&muted);
                    std::thread::spawn(move || {
                        let mut buffer = vec![0; 64 * 1024];
                        loop {
                            let n = match server_in.read(&mut buffer) {
                                Ok(0) | Err(_) => break,
                                Ok(n) => n,
                            };
                            if mute.load(Ordering::SeqCst) {
                                continue;
                            }
                            if client_out.write_all(&buffer[..n]).is_err() {
                                break;
                            }
                        }
                    });
                    let marker = Arc::clone(&shared);
                    std::thread::spawn(move || {
                        let mut buffer = vec![0; 64 * 1024];
                        loop {
                            let n = match client.read(&mut buffer) {
                                Ok(0) | Err(_) => break,
                                Ok(n) => n,
                            };
                            let chunk = &buffer[..n];
                            let hit = {
                                let mut armed = marker.lock().unwrap();
                                let hit = armed.as_ref().is_some_and(|m| {
                                    chunk.windows(m.len()).any(|w| w == m.as_slice())
                                });
                                if hit {
                                    *armed = None;
                                }
                                hit
                            };
                            if hit {
                                muted.store(true, Ordering::SeqCst);
                            }
                            if server.write_all(chunk).is_err() {
                                break;
                            }
                            if hit {
                                let _ = client.shutdown(std::net::Shutdown::Both);
                                let mut rest = Vec::new();
                                let _ = server.read_to_end(&mut rest);
                                return;
                            }
                        }
                        let _ = server.shutdown(std::net::Shutdown::Both);
                    });
                }
            });
            Proxy { port, marker }
        }

        fn url(&self, name: &str) -> String {
            let config: postgres::Config = test_support::database::direct_url().parse().unwrap();
            let user = config.get_user().unwrap_or("root");
            let db = config.get_dbname().unwrap_or("test");
            // A plain TCP proxy: the server sees it as its client, as it
            // would a pooler, so the URL says there is none.
            format!(
                "postgres://{user}@127.0.0.1:{}/{db}?agentctx_pooled=no&context={}",
                self.port,
                fresh_name(name)
            )
        }

        fn arm(&self, marker: &str) {
            *self.marker.lock().unwrap() = Some(marker.as_bytes().to_vec());
        }
    }

    #[test]
    fn r34b_an_in_doubt_append_retried_with_its_key_lands_once() {
        let proxy = Proxy::start();
        let url = proxy.url("in-doubt");
        let mut store = open(&url);
        let mut context = Context::new();
        store.commit(&mut context, &push("a")).unwrap();
        let k = key("in-doubt/1");
        proxy.arm("\"b-in-doubt\"");
        let error = store
            .commit_once(&mut context, &push("b-in-doubt"), &k)
            .unwrap_err();
        assert!(matches!(error, Error::InDoubt { .. }), "{error:?}");
        let text = error.to_string();
        assert!(
            text.ends_with(
                "the append may have landed; retry with the same key (in-doubt/1) to be sure it lands once"
            ),
            "{text}"
        );
        // The retry, through the same handle (it reconnects) and through
        // another, appends nothing: the first sending landed.
        let retried = store
            .commit_once(&mut context, &push("b-in-doubt"), &k)
            .unwrap();
        assert_eq!(retried, KeyedOutcome::Already(1..2));
        assert_eq!(context.len(), 2);
        let again = open(&url)
            .commit_once(&mut Context::new(), &push("b-in-doubt"), &k)
            .unwrap();
        assert_eq!(again, KeyedOutcome::Already(1..2));
        assert_eq!(log(&url), ["a", "b-in-doubt"]);
    }
}
