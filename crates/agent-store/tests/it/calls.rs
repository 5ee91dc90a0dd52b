//! The calls of a plan in PostgreSQL (R34d): claims, leases, and a call's
//! result written once. Against a real server, as `postgres.rs`: the URL
//! is `AGENTCTX_TEST_DATABASE_URL`, else `postgres://root@127.0.0.1:5432/test`;
//! without one these tests fail saying how to provide it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

#[cfg(not(feature = "postgres"))]
#[test]
fn r34d_call_tests_need_the_postgres_feature() {
    panic!(
        "these tests need the `postgres` feature: cargo test -p agent-store --features postgres"
    );
}

#[cfg(feature = "postgres")]
mod pg_calls {
    use agent_core::json;
    use agent_data::Message;
    use agent_store::{CallState, Claim, ClaimRequest, Error, Horizon, PgCalls, PgStore, Stored};
    use std::time::Duration;

    fn fresh(name: &str) -> String {
        crate::support::pg::fresh(&format!("calls-{name}"))
    }

    fn store(url: &str) -> PgStore {
        PgStore::open(url).unwrap_or_else(|e| {
            panic!(
                "{e}\nthese tests need PostgreSQL: run `cargo xtask ci`, or set \
                 AGENTCTX_TEST_DATABASE_URL to a server's URL"
            )
        })
    }

    fn message(value: agent_core::json::Value) -> Vec<Message> {
        Message::from_value(value).unwrap()
    }

    /// A context holding a plan of `n` calls, its calls set up: (url, plan row).
    fn planned(name: &str, n: usize) -> (String, u64) {
        let url = fresh(name);
        let mut stored = Stored::create(store(&url));
        let calls: Vec<_> = (0..n)
            .map(|i| json!({"_tool": "t", "_outputPath": format!("†state.c{i}")}))
            .collect();
        agent_store::Append::append_all(
            &mut stored,
            &message(json!({"type": "plan", "calls": calls})),
        )
        .unwrap();
        let mut calls = PgCalls::open(&url).unwrap();
        let (row, _) = calls.newest_plan().unwrap().unwrap();
        calls.set_up(row, n).unwrap();
        (url, row)
    }

    fn result(call: usize, value: i64) -> Vec<Message> {
        message(json!({"type": "state", "data": {format!("c{call}"): value},
                       "_outputPath": format!("†state.c{call}")}))
    }

    #[test]
    fn r34d_a_calls_second_result_is_refused_and_nothing_is_appended() {
        let (url, plan) = planned("once", 1);
        let mut calls = PgCalls::open(&url).unwrap();
        let lease = Duration::from_secs(30);
        let first = calls
            .claim(&ClaimRequest {
                plan,
                candidates: &[0],
                worker: "a",
                lease,
                max: 1,
            })
            .unwrap();
        assert_eq!(first.len(), 1);
        // The claim's result is sent twice (as after a lost connection whose
        // first sending landed): the second is refused as written already.
        let mut a = Stored::open(store(&url)).unwrap();
        let mut again = Stored::open(store(&url)).unwrap();
        a.commit_call(&result(0, 1), &first[0]).unwrap();
        let refused = again.commit_call(&result(0, 2), &first[0]).unwrap_err();
        assert!(
            matches!(refused, Error::AlreadyWritten { call: 0, .. }),
            "{refused}"
        );
        assert!(
            refused.to_string().ends_with(
                "call 0 of the plan at row 0 already has its result; this one was not appended"
            ),
            "{refused}"
        );
        // Any other claim's result is fenced off (D43: fencing): only the current
        // claim of a running call writes.
        let other = Claim {
            worker: "b".into(),
            attempt: 2,
            ..first[0].clone()
        };
        let fenced = again.commit_call(&result(0, 3), &other).unwrap_err();
        assert!(
            matches!(&fenced, Error::Fenced(f) if f.call == 0),
            "{fenced}"
        );
        let after = Stored::open(store(&url)).unwrap();
        assert_eq!(agent_store::Append::context(&after).len(), 2);
        assert_eq!(
            agent_store::Append::context(&after).read(&"†state.c0".parse().unwrap(), None),
            Some(&json!(1))
        );
        let rows = calls.rows(plan).unwrap();
        assert_eq!(rows[0].state, CallState::Done);
        assert_eq!(rows[0].worker.as_deref(), Some("a"));
    }

    /// Claims call 0 for `a` with a lease that runs out, then for `b`:
    /// (calls, a's stale claim, b's current one).
    fn taken_over(url: &str, plan: u64) -> (PgCalls, Claim, Claim) {
        let mut calls = PgCalls::open(url).unwrap();
        let stale = calls
            .claim(&ClaimRequest {
                plan,
                candidates: &[0],
                worker: "a",
                lease: Duration::from_millis(100),
                max: 1,
            })
            .unwrap()
            .remove(0);
        std::thread::sleep(Duration::from_millis(150));
        let current = calls
            .claim(&ClaimRequest {
                plan,
                candidates: &[0],
                worker: "b",
                lease: Duration::from_secs(30),
                max: 1,
            })
            .unwrap()
            .remove(0);
        assert_eq!((stale.attempt, current.attempt), (1, 2));
        (calls, stale, current)
    }

    /// The context's length and call 0's row, to compare before and after.
    fn as_it_is(url: &str, calls: &mut PgCalls, plan: u64) -> (usize, agent_store::CallRow) {
        let stored = Stored::open(store(url)).unwrap();
        let mut row = calls.rows(plan).unwrap().remove(0);
        // Lease and back-off count down as time passes; the rest must not move.
        row.lease_left = row.lease_left.map(|_| 0.0);
        row.retry_in = row.retry_in.map(|_| 0.0);
        (agent_store::Append::context(&stored).len(), row)
    }

    #[test]
    fn r34d_fenced_a_stale_claim_cannot_commit_once_the_call_is_claimed_again() {
        let (url, plan) = planned("fenced-reclaimed", 1);
        let (mut calls, stale, current) = taken_over(&url, plan);
        let before = as_it_is(&url, &mut calls, plan);
        let mut a = Stored::open(store(&url)).unwrap();
        let refused = a.commit_call(&result(0, 1), &stale).unwrap_err();
        match &refused {
            Error::Fenced(f)
                if matches!(
                    **f,
                    agent_store::Fenced {
                        call: 0,
                        attempt: 1,
                        attempts: 2,
                        ..
                    }
                ) =>
            {
                let agent_store::Fenced {
                    plan: p,
                    worker,
                    state,
                    holder,
                    ..
                } = &**f;
                assert_eq!(*p, plan);
                assert_eq!(worker, "a");
                assert_eq!(state, "running");
                assert_eq!(holder.as_deref(), Some("b"));
            }
            other => panic!("not fenced: {other}"),
        }
        assert!(
            refused.to_string().ends_with(
                "call 0 of the plan at row 0 is running, held by attempt 2 of worker b; the \
                 result of attempt 1 by worker a was fenced off and not appended"
            ),
            "{refused}"
        );
        assert_eq!(as_it_is(&url, &mut calls, plan), before);
        // The current claim still writes.
        let mut b = Stored::open(store(&url)).unwrap();
        b.commit_call(&result(0, 2), &current).unwrap();
        let rows = calls.rows(plan).unwrap();
        assert_eq!(
            (rows[0].state, rows[0].worker.as_deref()),
            (CallState::Done, Some("b"))
        );
        let after = Stored::open(store(&url)).unwrap();
        assert_eq!(
            agent_store::Append::context(&after).read(&"†state.c0".parse().unwrap(), None),
            Some(&json!(2))
        );
    }

    #[test]
    fn r34d_fenced_a_stale_claim_cannot_turn_a_failed_call_done() {
        let (url, plan) = planned("fenced-failed", 1);
        let (mut calls, stale, current) = taken_over(&url, plan);
        assert!(calls.release(&current, "gave up", None).unwrap());
        let before = as_it_is(&url, &mut calls, plan);
        let mut a = Stored::open(store(&url)).unwrap();
        let refused = a.commit_call(&result(0, 1), &stale).unwrap_err();
        assert!(
            matches!(&refused, Error::Fenced(f) if f.state == "failed" && f.attempts == 2),
            "{refused}"
        );
        assert_eq!(as_it_is(&url, &mut calls, plan), before);
        assert_eq!(before.1.state, CallState::Failed);
        // Nor can the claim that gave it up take it back.
        let refused = a.commit_call(&result(0, 2), &current).unwrap_err();
        assert!(matches!(refused, Error::Fenced(_)), "{refused}");
        assert_eq!(as_it_is(&url, &mut calls, plan), before);
    }

    #[test]
    fn r34d_fenced_a_stale_claim_cannot_commit_after_another_wrote_the_result() {
        let (url, plan) = planned("fenced-done", 1);
        let (mut calls, stale, current) = taken_over(&url, plan);
        let mut b = Stored::open(store(&url)).unwrap();
        b.commit_call(&result(0, 2), &current).unwrap();
        let before = as_it_is(&url, &mut calls, plan);
        let mut a = Stored::open(store(&url)).unwrap();
        let refused = a.commit_call(&result(0, 1), &stale).unwrap_err();
        assert!(
            matches!(&refused, Error::Fenced(f)
                if f.state == "done" && f.holder.as_deref() == Some("b")),
            "{refused}"
        );
        assert_eq!(as_it_is(&url, &mut calls, plan), before);
        assert_eq!(before.0, 2, "the plan and b's result");
    }

    #[test]
    fn r34d_fenced_a_claim_given_back_cannot_commit_but_an_expired_unclaimed_one_can() {
        let (url, plan) = planned("fenced-lease", 2);
        let mut calls = PgCalls::open(&url).unwrap();
        let short = Duration::from_millis(100);
        let claims = calls
            .claim(&ClaimRequest {
                plan,
                candidates: &[0, 1],
                worker: "a",
                lease: short,
                max: 2,
            })
            .unwrap();
        // Call 0 is given back to be tried again: its claim is over.
        assert!(
            calls
                .release(
                    &claims[0],
                    "attempt 1 failed",
                    Some(Duration::from_secs(60))
                )
                .unwrap()
        );
        std::thread::sleep(Duration::from_millis(150));
        let mut a = Stored::open(store(&url)).unwrap();
        let refused = a.commit_call(&result(0, 1), &claims[0]).unwrap_err();
        assert!(
            matches!(&refused, Error::Fenced(f) if f.state == "waiting"),
            "{refused}"
        );
        // Call 1's lease ran out, but nobody claimed it since: its claim is
        // still the current one, and its result is the only one coming.
        assert!(calls.rows(plan).unwrap()[1].claimable());
        a.commit_call(&result(1, 1), &claims[1]).unwrap();
        let rows = calls.rows(plan).unwrap();
        assert_eq!(
            (rows[0].state, rows[1].state),
            (CallState::Waiting, CallState::Done)
        );
        assert_eq!(agent_store::Append::context(&a).len(), 2);
    }

    #[test]
    fn r34d_a_views_values_do_not_depend_on_the_commit_order_but_its_key_order_does() {
        // D43: calls 0 and 1 write different top-level keys of one layer
        // and are not ordered, so their keys appear in commit order.
        let views: Vec<agent_core::json::Value> = [[0, 1], [1, 0]]
            .iter()
            .map(|order| {
                let (url, plan) = planned("key-order", 2);
                let mut calls = PgCalls::open(&url).unwrap();
                let claims = calls
                    .claim(&ClaimRequest {
                        plan,
                        candidates: &[0, 1],
                        worker: "w",
                        lease: Duration::from_secs(30),
                        max: 2,
                    })
                    .unwrap();
                let mut stored = Stored::open(store(&url)).unwrap();
                for &call in order {
                    stored.commit_call(&result(call, 7), &claims[call]).unwrap();
                }
                let after = Stored::open(store(&url)).unwrap();
                agent_store::Append::context(&after)
                    .read(&"†state".parse().unwrap(), None)
                    .cloned()
                    .unwrap()
            })
            .collect();
        assert_eq!(views[0], views[1], "the same values");
        let keys = |v: &agent_core::json::Value| {
            v.as_object()
                .unwrap()
                .keys()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        assert_eq!(keys(&views[0]), ["c0", "c1"]);
        assert_eq!(keys(&views[1]), ["c1", "c0"]);
    }

    #[test]
    fn r34d_a_result_without_messages_still_marks_its_call_done_once() {
        let (url, plan) = planned("empty", 1);
        let mut calls = PgCalls::open(&url).unwrap();
        let claim = calls
            .claim(&ClaimRequest {
                plan,
                candidates: &[0],
                worker: "a",
                lease: Duration::from_secs(30),
                max: 1,
            })
            .unwrap();
        let mut stored = Stored::open(store(&url)).unwrap();
        stored.commit_call(&[], &claim[0]).unwrap();
        assert_eq!(calls.rows(plan).unwrap()[0].state, CallState::Done);
        let again = stored.commit_call(&[], &claim[0]).unwrap_err();
        assert!(matches!(again, Error::AlreadyWritten { .. }), "{again}");
    }

    #[test]
    fn r34d_concurrent_commits_of_one_call_land_once() {
        let (url, plan) = planned("race", 1);
        let claim = PgCalls::open(&url)
            .unwrap()
            .claim(&ClaimRequest {
                plan,
                candidates: &[0],
                worker: "w",
                lease: Duration::from_secs(30),
                max: 1,
            })
            .unwrap()
            .remove(0);
        let outcomes: Vec<Result<(), String>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..8)
                .map(|i| {
                    let (url, claim) = (url.clone(), claim.clone());
                    scope.spawn(move || {
                        let mut stored = Stored::open(store(&url)).unwrap();
                        stored
                            .commit_call(&result(0, i), &claim)
                            .map(|_| ())
                            .map_err(|e| e.to_string())
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let landed = outcomes.iter().filter(|o| o.is_ok()).count();
        assert_eq!(landed, 1, "{outcomes:?}");
        for refused in outcomes.iter().filter_map(|o| o.as_ref().err()) {
            assert!(refused.contains("already has its result"), "{refused}");
        }
        let after = Stored::open(store(&url)).unwrap();
        assert_eq!(agent_store::Append::context(&after).len(), 2);
    }

    #[test]
    fn r34d_a_claim_is_held_until_its_lease_runs_out_then_taken_over() {
        let (url, plan) = planned("lease", 3);
        let mut a = PgCalls::open(&url).unwrap();
        let mut b = PgCalls::open(&url).unwrap();
        let short = Duration::from_millis(300);
        let held = a
            .claim(&ClaimRequest {
                plan,
                candidates: &[0, 1, 2],
                worker: "a",
                lease: short,
                max: 2,
            })
            .unwrap();
        assert_eq!(held.iter().map(|c| c.call).collect::<Vec<_>>(), [0, 1]);
        // Only the call nobody holds is left for b.
        let other = b
            .claim(&ClaimRequest {
                plan,
                candidates: &[0, 1, 2],
                worker: "b",
                lease: short,
                max: 3,
            })
            .unwrap();
        assert_eq!(other.iter().map(|c| c.call).collect::<Vec<_>>(), [2]);
        assert!(a.renew(&held[0], Duration::from_secs(30)).unwrap());
        std::thread::sleep(Duration::from_millis(400));
        // Call 1's lease ran out; call 0's was renewed.
        let taken = b
            .claim(&ClaimRequest {
                plan,
                candidates: &[0, 1],
                worker: "b",
                lease: short,
                max: 2,
            })
            .unwrap();
        assert_eq!(taken.len(), 1);
        assert_eq!((taken[0].call, taken[0].attempt), (1, 2));
        assert!(!a.renew(&held[1], short).unwrap(), "the claim is b's now");
        let rows = a.rows(plan).unwrap();
        assert_eq!(rows[1].worker.as_deref(), Some("b"));
        assert_eq!(rows[1].attempts, 2);
    }

    #[test]
    fn r34d_a_released_claim_waits_out_its_backoff_and_a_given_up_one_stays_failed() {
        let (url, plan) = planned("release", 2);
        let mut calls = PgCalls::open(&url).unwrap();
        let lease = Duration::from_secs(30);
        let claims = calls
            .claim(&ClaimRequest {
                plan,
                candidates: &[0, 1],
                worker: "a",
                lease,
                max: 2,
            })
            .unwrap();
        assert!(
            calls
                .release(
                    &claims[0],
                    "attempt 1 failed",
                    Some(Duration::from_millis(300))
                )
                .unwrap()
        );
        assert!(calls.release(&claims[1], "bad result", None).unwrap());
        assert!(
            calls
                .claim(&ClaimRequest {
                    plan,
                    candidates: &[0, 1],
                    worker: "a",
                    lease,
                    max: 2
                })
                .unwrap()
                .is_empty()
        );
        let rows = calls.rows(plan).unwrap();
        assert_eq!(
            (rows[0].state, rows[1].state),
            (CallState::Waiting, CallState::Failed)
        );
        assert_eq!(rows[1].error.as_deref(), Some("bad result"));
        assert!(rows[0].retry_in.is_some_and(|s| s > 0.0), "{:?}", rows[0]);
        std::thread::sleep(Duration::from_millis(350));
        let again = calls
            .claim(&ClaimRequest {
                plan,
                candidates: &[0, 1],
                worker: "a",
                lease,
                max: 2,
            })
            .unwrap();
        assert_eq!(
            again
                .iter()
                .map(|c| (c.call, c.attempt))
                .collect::<Vec<_>>(),
            [(0, 2)]
        );
    }

    #[test]
    fn r34d_the_newest_plan_message_is_found_and_look_alikes_are_passed_over() {
        let url = fresh("newest");
        let mut stored = Stored::create(store(&url));
        for value in [
            json!({"type": "plan", "calls": []}),
            json!({"type": "plan", "calls": [{"_tool": "x"}]}),
            // Holds the pattern, but is not a plan.
            json!({"type": "note", "data": {"type": "plan"}}),
            json!({"type": "note", "data": {"text": "\u{0}"}}),
            // A loop's plan (D69: loop and worker plans): never a worker's.
            json!({"type": "plan", "plan": [{"_tool": "y"}], "_pending": [0]}),
        ] {
            agent_store::Append::append_all(&mut stored, &message(value)).unwrap();
        }
        let (row, line) = PgCalls::open(&url).unwrap().newest_plan().unwrap().unwrap();
        assert_eq!(row, 1);
        assert_eq!(line, r#"{"type":"plan","calls":[{"_tool":"x"}]}"#);
    }

    #[test]
    fn r34d_live_workers_tools_are_known_until_they_stop() {
        let (url, _) = planned("workers", 1);
        let mut calls = PgCalls::open(&url).unwrap();
        calls
            .register(
                "a",
                &["fetch".into(), "sum".into()],
                Duration::from_secs(30),
            )
            .unwrap();
        calls
            .register("b", &["fetch".into()], Duration::from_millis(1))
            .unwrap();
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(calls.live_tools().unwrap(), ["fetch", "sum"]);
        calls.unregister("a").unwrap();
        assert!(calls.live_tools().unwrap().is_empty());
    }

    #[test]
    fn d113_a_row_committed_after_a_read_began_is_in_the_next_read_of_changes() {
        let (url, plan) = planned("changed", 4);
        let mut calls = PgCalls::open(&url).unwrap();
        let (all, horizon) = calls.rows_changed(plan, Horizon::START).unwrap();
        let numbers: Vec<usize> = all.iter().map(|r| r.call).collect();
        assert_eq!(numbers, [0, 1, 2, 3]);
        // Another session changes call 1 and has not committed; then call 2
        // is claimed (a later transaction, committed first).
        let mut raw = crate::support::pg::raw();
        let mut late = raw.transaction().unwrap();
        let name = url.rsplit("context=").next().unwrap().to_owned();
        late.execute(
            "UPDATE agentctx_calls SET error = 'late' WHERE plan = $2 AND call = 1 \
             AND context = (SELECT id FROM agentctx_contexts WHERE name = $1)",
            &[&name, &i64::try_from(plan).unwrap()],
        )
        .unwrap();
        let claims = calls
            .claim(&ClaimRequest {
                plan,
                candidates: &[2],
                worker: "w",
                lease: Duration::from_secs(30),
                max: 1,
            })
            .unwrap();
        assert_eq!(claims.len(), 1);
        let (seen, horizon) = calls.rows_changed(plan, horizon).unwrap();
        let two = seen.iter().find(|r| r.call == 2).expect("the claimed row");
        assert_eq!(two.state, CallState::Running);
        assert!(seen.iter().all(|r| r.error.is_none()), "{seen:?}");
        late.commit().unwrap();
        // Committed after that read began, by a transaction older than the
        // claim's: the next read still has it.
        let (next, _) = calls.rows_changed(plan, horizon).unwrap();
        let one = next.iter().find(|r| r.call == 1).expect("the late row");
        assert_eq!(one.error.as_deref(), Some("late"));
    }

    #[test]
    fn r34d_setting_up_a_large_plan_counts_its_rows_so_a_claim_reads_only_its_candidates() {
        // Planned on statistics from before the rows, a claim scanned the
        // whole plan (55 ms a claim at 100,000 calls).
        let mut raw = crate::support::pg::raw();
        let before: Option<std::time::SystemTime> = raw
            .query_one("SELECT now()::timestamptz", &[])
            .unwrap()
            .get(0);
        let (url, row) = planned("large", 10_000);
        let analyzed: Option<std::time::SystemTime> = raw
            .query_one(
                "SELECT last_analyze FROM pg_stat_user_tables WHERE relname = 'agentctx_calls' \
                 AND schemaname = current_schema()",
                &[],
            )
            .unwrap()
            .get(0);
        assert!(analyzed >= before, "{analyzed:?} < {before:?}");
        let mut calls = PgCalls::open(&url).unwrap();
        let claims = calls
            .claim(&ClaimRequest {
                plan: row,
                candidates: &[9_998, 9_999],
                worker: "w",
                lease: Duration::from_secs(30),
                max: 1,
            })
            .unwrap();
        assert_eq!(claims.len(), 1);
        assert_eq!(claims[0].call, 9_998);
    }
}
