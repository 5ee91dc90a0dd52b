//! Nothing waits forever: a server that keeps the connection open and stops
//! answering ends a query with a clear error within the idle deadline,
//! while a slow answer that keeps arriving is never cut.
//!
//! The stalled peer is a TCP proxy in the test, in front of the test
//! server (`AGENTCTX_TEST_DATABASE_URL`, else
//! `postgres://root@127.0.0.1:5432/test`): it forwards, and on command
//! keeps reading the server's answers without passing them on, the socket
//! open. Every test runs under a watchdog, so a hang fails instead of
//! blocking the run.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

#[cfg(feature = "postgres")]
mod timeouts {
    use agent_core::json;
    use agent_data::{Context, Message};
    use agent_store::{Error, PgStore, Store};
    use std::io::{Read, Write};
    use std::net::{Shutdown, TcpListener, TcpStream};
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    /// `host:port` of the test server, from its URL.
    fn upstream() -> String {
        let url = test_support::database::direct_url();
        let rest = url.split_once("://").unwrap().1;
        let rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
        let host = rest.split(['/', '?']).next().unwrap();
        if host.contains(':') {
            host.to_owned()
        } else {
            format!("{host}:5432")
        }
    }

    /// The test server's URL with its host and port replaced by `port` on
    /// 127.0.0.1, and `parameters` and a fresh context added.
    fn through(port: u16, parameters: &str, name: &str) -> String {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let url = test_support::database::direct_url().replacen(
            &upstream(),
            &format!("127.0.0.1:{port}"),
            1,
        );
        let sep = if url.contains('?') { '&' } else { '?' };
        // A plain TCP proxy: the server sees it as its client, as it would
        // a pooler, so the URL says there is none.
        format!(
            "{url}{sep}{parameters}&agentctx_pooled=no&context=test-timeouts-{name}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        )
    }

    /// A proxy to the test server whose connections can be told to stop
    /// passing the server's answers on (keeping the socket open), or to
    /// pass them on slowly.
    struct Proxy {
        port: u16,
        /// One flag per connection so far: mute its answers.
        muted: Arc<Mutex<Vec<Arc<AtomicBool>>>>,
        slow: Arc<AtomicBool>,
    }

    impl Proxy {
        fn start() -> Proxy {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let port = listener.local_addr().unwrap().port();
            let muted: Arc<Mutex<Vec<Arc<AtomicBool>>>> = Arc::default();
            let slow = Arc::new(AtomicBool::new(false));
            let (all, slow_too) = (Arc::clone(&muted), Arc::clone(&slow));
            std::thread::spawn(move || {
                for client in listener.incoming() {
                    let Ok(client) = client else { return };
                    let server = TcpStream::connect(upstream()).unwrap();
                    let mute = Arc::new(AtomicBool::new(false));
                    all.lock().unwrap().push(Arc::clone(&mute));
                    let (mut c_in, mut s_out) =
                        (client.try_clone().unwrap(), server.try_clone().unwrap());
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut c_in, &mut s_out);
                        let _ = s_out.shutdown(Shutdown::Write);
                    });
                    let (mut s_in, mut c_out) = (server, client);
                    let slow = Arc::clone(&slow_too);
                    std::thread::spawn(move || {
                        let mut buf = [0u8; 512];
                        loop {
                            let n = match s_in.read(&mut buf) {
                                Ok(0) | Err(_) => break,
                                Ok(n) => n,
                            };
                            if mute.load(Ordering::SeqCst) {
                                continue; // read, and never passed on
                            }
                            if c_out.write_all(&buf[..n]).is_err() {
                                break;
                            }
                            if slow.load(Ordering::SeqCst) {
                                std::thread::sleep(Duration::from_millis(150));
                            }
                        }
                        let _ = c_out.shutdown(Shutdown::Write);
                    });
                }
            });
            Proxy { port, muted, slow }
        }

        /// The connections open so far stop passing answers on; later ones
        /// work.
        fn mute_existing(&self) {
            for flag in self.muted.lock().unwrap().iter() {
                flag.store(true, Ordering::SeqCst);
            }
        }
    }

    /// Runs `test` on a thread and fails if it has not finished within
    /// `limit`: a hang is a failure, not a stuck run.
    fn watchdog(limit: Duration, test: impl FnOnce() + Send + 'static) {
        let (done, finished) = std::sync::mpsc::channel();
        let runner = std::thread::spawn(move || {
            test();
            let _ = done.send(());
        });
        match finished.recv_timeout(limit) {
            Ok(()) => runner.join().unwrap(),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                std::panic::resume_unwind(runner.join().unwrap_err())
            }
            Err(_) => panic!("the test hung for {} s", limit.as_secs()),
        }
    }

    fn open(url: &str) -> PgStore {
        PgStore::open(url).unwrap_or_else(|e| {
            panic!(
                "{e}\nthese tests need PostgreSQL: run `cargo xtask ci`, or set \
                 AGENTCTX_TEST_DATABASE_URL to a server's URL"
            )
        })
    }

    fn state(value: agent_core::json::Value) -> Vec<Message> {
        Message::from_value(json!({"type": "state", "data": {"log": value},
            "_outputPath": "†state.log", "_outputMethod": "push"}))
        .unwrap()
    }

    #[test]
    fn a_server_that_stops_answering_ends_a_load_with_a_clear_error_within_the_deadline() {
        watchdog(Duration::from_secs(60), || {
            let proxy = Proxy::start();
            let url = through(proxy.port, "agentctx_idle_timeout=2", "load");
            let mut store = open(&url);
            store.commit(&mut Context::new(), &state(json!(1))).unwrap();
            proxy.mute_existing();
            let started = Instant::now();
            let error = store.load().unwrap_err();
            let took = started.elapsed();
            eprintln!("a stalled load failed after {took:?}: {error}");
            assert!(matches!(error, Error::Database { .. }), "{error:?}");
            let text = error.to_string();
            assert!(
                text.contains("the server sent nothing for 2 s while a query waited"),
                "{text}"
            );
            assert!(text.contains("agentctx_idle_timeout=SECONDS"), "{text}");
            assert!(took >= Duration::from_secs(2), "{took:?}");
            assert!(took < Duration::from_secs(5), "{took:?}");
        });
    }

    #[test]
    fn an_append_whose_answer_never_comes_is_in_doubt_within_the_deadline() {
        watchdog(Duration::from_secs(60), || {
            let proxy = Proxy::start();
            let url = through(proxy.port, "agentctx_idle_timeout=2", "append");
            let mut store = open(&url);
            let mut context = Context::new();
            store.commit(&mut context, &state(json!(1))).unwrap();
            // The append reaches the server and commits; its answer is lost.
            proxy.mute_existing();
            let started = Instant::now();
            let error = store.commit(&mut context, &state(json!(2))).unwrap_err();
            let took = started.elapsed();
            eprintln!("a stalled append was settled after {took:?}");
            assert!(matches!(error, Error::InDoubt { .. }), "{error:?}");
            let text = error.to_string();
            assert!(text.contains("the server sent nothing for 2 s"), "{text}");
            assert!(text.contains("beginning with exactly these"), "{text}");
            assert!(took < Duration::from_secs(8), "{took:?}");
            // It did land, once.
            let loaded = open(&url).load().unwrap();
            assert_eq!(loaded.context.len(), 2);
        });
    }

    #[test]
    fn a_slow_answer_that_keeps_arriving_is_not_cut() {
        watchdog(Duration::from_secs(60), || {
            let proxy = Proxy::start();
            let url = through(proxy.port, "agentctx_idle_timeout=1", "slow");
            let mut store = open(&url);
            let mut context = Context::new();
            let batch: Vec<Message> = (0..40)
                .flat_map(|i| state(json!({"i": i, "pad": "x".repeat(200)})))
                .collect();
            store.commit(&mut context, &batch).unwrap();
            // About 10 kB at 512 bytes per 150 ms: well over the deadline
            // in all, never silent for long.
            proxy.slow.store(true, Ordering::SeqCst);
            let started = Instant::now();
            let loaded = store.load().unwrap();
            let took = started.elapsed();
            eprintln!("a slow load took {took:?} with a deadline of 1 s");
            assert_eq!(loaded.context.len(), 40);
            assert!(took > Duration::from_millis(1500), "{took:?}");
        });
    }
}
