//! The chain on PostgreSQL (R34e) against a real server: every read checks
//! the rows it reads and stops at the first that does not chain, naming
//! it; `verify` names each changed row exactly; rows from before the chain
//! are backfilled; a forged snapshot row is not used.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

#[cfg(not(feature = "postgres"))]
#[test]
fn chain_tests_need_the_postgres_feature() {
    panic!("cargo test -p agent-store --features postgres (cargo xtask ci runs them)");
}

#[cfg(feature = "postgres")]
mod pg_chain {
    use crate::support::pg::{fresh_name, open, raw, with_context};
    use agent_core::json;
    use agent_data::{Context, Message};
    use agent_store::SnapshotWhen;
    use agent_store::{Error, Finding, PgStore, Store};
    use proptest::prelude::*;

    /// A fresh context's URL and its name.
    fn fresh(name: &str) -> (String, String) {
        let context = fresh_name(&format!("chain-{name}"));
        (with_context(&context), context)
    }

    /// A context of `n` messages, appended through the store one by one.
    fn written(name: &str, n: usize) -> (String, String) {
        written_from(name, n, 0)
    }

    /// A context of `n` messages `{"n": from}`, `{"n": from + 1}`, ….
    fn written_from(name: &str, n: usize, from: usize) -> (String, String) {
        let (url, context) = fresh(name);
        let mut store = open(&url);
        let mut ctx = Context::new();
        for i in from..from + n {
            let m = Message::from_value(json!({"type": "state", "data": {"n": i}})).unwrap();
            store.commit(&mut ctx, &m).unwrap();
        }
        (url, context)
    }

    fn id(client: &mut postgres::Client, context: &str) -> i64 {
        client
            .query_one(
                "SELECT id FROM agentctx_contexts WHERE name = $1",
                &[&context],
            )
            .unwrap()
            .get(0)
    }

    fn sql(context: &str, statement: &str) {
        let mut client = raw();
        let id = id(&mut client, context);
        client.execute(statement, &[&id]).unwrap();
    }

    fn tampered(url: &str) -> (u64, String) {
        match PgStore::open(url).unwrap().load() {
            Err(Error::Tampered { position, what, .. }) => (position, what),
            other => panic!("not found: {other:?}"),
        }
    }

    #[test]
    fn r34e_an_edited_row_stops_every_read_at_it_and_verify_names_it() {
        let (url, context) = written("edited", 5);
        assert!(PgStore::open(&url).unwrap().verify().unwrap().is_clean());
        sql(
            &context,
            r#"UPDATE agentctx_messages SET line = '{"type":"state","data":{"n":9}}' WHERE context = $1 AND seq = 2"#,
        );
        let (position, what) = tampered(&url);
        assert_eq!(position, 2);
        assert!(
            what.contains("does not chain from the row before"),
            "{what}"
        );
        let error = PgStore::open(&url).unwrap().load().unwrap_err().to_string();
        assert!(
            error.ends_with("row 2: it does not chain from the row before: it or a row before it was edited, or rows were inserted or reordered (agentctx verify lists every finding)"),
            "{error}"
        );
        let verified = PgStore::open(&url).unwrap().verify().unwrap();
        assert_eq!(verified.findings, [Finding::RowEdited { row: 2 }]);
    }

    #[test]
    fn r34e_a_deleted_row_is_named_by_reads_and_verify() {
        let (url, context) = written("deleted", 5);
        sql(
            &context,
            "DELETE FROM agentctx_messages WHERE context = $1 AND seq = 1",
        );
        let (position, what) = tampered(&url);
        assert_eq!(
            (position, what.as_str()),
            (1, "row 1 is missing (the next row is 2): deleted")
        );
        let verified = PgStore::open(&url).unwrap().verify().unwrap();
        assert_eq!(verified.findings, [Finding::RowsMissing { from: 1, to: 1 }]);
        // The last row deleted: the context's length still counts it.
        let (url, context) = written("deleted-last", 3);
        sql(
            &context,
            "DELETE FROM agentctx_messages WHERE context = $1 AND seq = 2",
        );
        let verified = PgStore::open(&url).unwrap().verify().unwrap();
        assert_eq!(verified.findings, [Finding::RowsMissing { from: 2, to: 2 }]);
    }

    #[test]
    fn r34e_rows_written_before_the_chain_are_backfilled_once() {
        let (url, context) = written("backfill", 4);
        let head = PgStore::open(&url).unwrap().load().unwrap().context.head();
        sql(
            &context,
            "UPDATE agentctx_messages SET digest = NULL WHERE context = $1",
        );
        sql(
            &context,
            "UPDATE agentctx_contexts SET chained = 0 WHERE id = $1",
        );
        let mut store = PgStore::open(&url).unwrap();
        let loaded = store.load().unwrap();
        assert_eq!(loaded.context.head(), head);
        let mut client = raw();
        let id = id(&mut client, &context);
        let (chained, unchained): (i64, i64) = {
            let row = client
                .query_one(
                    "SELECT c.chained, (SELECT count(*) FROM agentctx_messages m \
                     WHERE m.context = c.id AND m.digest IS NULL) FROM agentctx_contexts c WHERE c.id = $1",
                    &[&id],
                )
                .unwrap();
            (row.get(0), row.get(1))
        };
        assert_eq!((chained, unchained), (4, 0));
        assert!(PgStore::open(&url).unwrap().verify().unwrap().is_clean());
        // A digest removed after the backfill is a finding, not a backfill.
        sql(
            &context,
            "UPDATE agentctx_messages SET digest = NULL WHERE context = $1 AND seq = 3",
        );
        assert_eq!(tampered(&url).0, 3);
        assert_eq!(
            PgStore::open(&url).unwrap().verify().unwrap().findings,
            [Finding::RowUnchained { row: 3 }]
        );
    }

    #[test]
    fn r34e_a_snapshot_row_of_another_context_is_not_used_and_verify_finds_it() {
        let (url, context) = written("snap", 6);
        let (other_url, other) = written_from("snap-other", 6, 50);
        for u in [&url, &other_url] {
            let mut store = PgStore::open(u).unwrap();
            let ctx = store.load().unwrap().context;
            assert!(store.snapshot(&ctx, SnapshotWhen::Now).unwrap());
        }
        // The other context's snapshot, which also summarises 6 rows, planted.
        let mut client = raw();
        let (id, other_id) = (id(&mut client, &context), id(&mut client, &other));
        for plant in [
            "DELETE FROM agentctx_snapshot_chunks WHERE context = $1 AND context <> $2",
            "INSERT INTO agentctx_snapshot_chunks SELECT $1, slot, hash, body FROM agentctx_snapshot_chunks WHERE context = $2",
            "UPDATE agentctx_snapshots SET chunks = (SELECT chunks FROM agentctx_snapshots WHERE context = $2) WHERE context = $1",
        ] {
            client.execute(plant, &[&id, &other_id]).unwrap();
        }
        let mut store = PgStore::open(&url).unwrap();
        let resumed = store.load_tail().unwrap().context;
        let full = PgStore::open(&url).unwrap().load().unwrap().context;
        assert_eq!(resumed.head(), full.head());
        assert_eq!(
            resumed.view(&"state".parse().unwrap(), None),
            full.view(&"state".parse().unwrap(), None)
        );
        let findings = PgStore::open(&url).unwrap().verify().unwrap().findings;
        assert!(
            matches!(
                findings[..],
                [Finding::SnapshotChain { summarises: 6, .. }] | [Finding::SnapshotViews { .. }]
            ),
            "{findings:?}"
        );
    }

    #[test]
    fn r34e_the_server_refuses_a_row_whose_digest_does_not_chain() {
        let (_, context) = written("server-check", 2);
        let mut client = raw();
        let id = id(&mut client, &context);
        let line = r#"{"type":"state","data":{"n":9}}"#;
        for digest in [None, Some(vec![7u8; 32])] {
            let refused = client
                .execute(
                    "INSERT INTO agentctx_messages (context, seq, line, digest) VALUES ($1, 2, $2::text::json, $3)",
                    &[&id, &line, &digest],
                )
                .unwrap_err();
            let message = refused.as_db_error().unwrap().message().to_owned();
            assert!(message.starts_with("agentctx: "), "{message}");
            assert!(message.contains("row 2 of context"), "{message}");
        }
        // The right digest, computed as docs/store.md says, is accepted.
        client
            .execute(
                "INSERT INTO agentctx_messages (context, seq, line, digest) \
                 SELECT $1, 2, $2::text::json, sha256(m.digest || convert_to($2, 'UTF8')) \
                 FROM agentctx_messages m WHERE m.context = $1 AND m.seq = 1",
                &[&id, &line],
            )
            .unwrap();
    }

    #[test]
    fn r34e_the_server_skips_its_check_only_for_the_context_a_transaction_names() {
        // agentctx's plain append names its context in
        // `agentctx.chain_computed` for its own transaction (D100: the chain checked once): those
        // rows are not checked again; any other context's rows are, and
        // the setting ends with the transaction.
        let (named_url, named) = written("named-skip", 2);
        let (_, other) = written("other-checked", 2);
        let mut client = raw();
        let (named_id, other_id) = (id(&mut client, &named), id(&mut client, &other));
        let line = r#"{"type":"state","data":{"n":9}}"#;
        let wrong = vec![7u8; 32];
        let insert = "INSERT INTO agentctx_messages (context, seq, line, digest) \
                      VALUES ($1, 2, $2::text::json, $3)";
        let mut transaction = client.transaction().unwrap();
        name_in_setting(&mut transaction, named_id);
        let refused = transaction
            .execute(insert, &[&other_id, &line, &wrong])
            .unwrap_err();
        let message = refused.as_db_error().unwrap().message().to_owned();
        assert!(message.contains("row 2 of context"), "{message}");
        transaction.rollback().unwrap();

        let mut transaction = client.transaction().unwrap();
        name_in_setting(&mut transaction, named_id);
        transaction
            .execute(insert, &[&named_id, &line, &wrong])
            .unwrap();
        transaction
            .execute(
                "UPDATE agentctx_contexts SET length = 3, chained = 3 WHERE id = $1",
                &[&named_id],
            )
            .unwrap();
        transaction.commit().unwrap();
        // What the server let through, every read still refuses.
        assert_eq!(tampered(&named_url).0, 2);

        // The setting ended with its transaction.
        let refused = client
            .execute(
                "INSERT INTO agentctx_messages (context, seq, line, digest) \
                 VALUES ($1, 3, $2::text::json, $3)",
                &[&named_id, &line, &wrong],
            )
            .unwrap_err();
        let message = refused.as_db_error().unwrap().message().to_owned();
        assert!(message.contains("row 3 of context"), "{message}");
    }

    /// What agentctx's plain append does for its transaction (D100: the chain checked once).
    fn name_in_setting(transaction: &mut postgres::Transaction<'_>, id: i64) {
        transaction
            .execute(
                "SELECT set_config('agentctx.chain_computed', $1, true)",
                &[&id.to_string()],
            )
            .unwrap();
    }

    /// How a row is changed behind agentctx's back.
    #[derive(Debug, Clone)]
    enum Change {
        Edit(usize),
        Delete(usize),
        Insert(usize),
        Swap(usize, usize),
        /// Two rows exchanged, line and digest together.
        Move(usize, usize),
    }

    fn change(n: usize) -> impl Strategy<Value = Change> {
        prop_oneof![
            (0..n).prop_map(Change::Edit),
            (0..n).prop_map(Change::Delete),
            (0..n).prop_map(Change::Insert),
            (0..n, 0..n)
                .prop_filter("two rows", |(a, b)| a != b)
                .prop_map(|(a, b)| Change::Swap(a.min(b), a.max(b))),
            (0..n, 0..n)
                .prop_filter("two rows", |(a, b)| a != b)
                .prop_map(|(a, b)| Change::Move(a.min(b), a.max(b))),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// Any edit, deletion, insertion or reordering of rows is found,
        /// and the first finding names the first changed row exactly.
        #[test]
        fn r34e_verify_places_the_first_changed_row_exactly(
            (n, change) in (2usize..9).prop_flat_map(|n| (Just(n), change(n)))
        ) {
            let (url, context) = written("property", n);
            let mut client = raw();
            let id = id(&mut client, &context);
            let line = |k: usize| format!(r#"{{"type":"state","data":{{"n":{k}}}}}"#);
            let first = match change {
                Change::Edit(k) => {
                    client.execute(
                        "UPDATE agentctx_messages SET line = $3::text::json WHERE context = $1 AND seq = $2",
                        &[&id, &(k as i64), &line(100 + k)],
                    ).unwrap();
                    k
                }
                Change::Delete(k) => {
                    client.execute("DELETE FROM agentctx_messages WHERE context = $1 AND seq = $2",
                        &[&id, &(k as i64)]).unwrap();
                    k
                }
                Change::Insert(k) => {
                    client.batch_execute(&format!(
                        "UPDATE agentctx_messages SET seq = seq + 1000000 WHERE context = {id} AND seq >= {k};
                         UPDATE agentctx_messages SET seq = seq - 999999 WHERE context = {id} AND seq >= 1000000;
                         UPDATE agentctx_contexts SET length = length + 1, chained = chained + 1 WHERE id = {id};"
                    )).unwrap();
                    // A line with a digest of its own, copied from its
                    // neighbour, by a role that bypasses the server's check
                    // (a superuser turning triggers off).
                    client.batch_execute("SET session_replication_role = replica").unwrap();
                    client.execute(
                        "INSERT INTO agentctx_messages (context, seq, line, digest) \
                         SELECT $1, $2::bigint, $3::text::json, digest FROM agentctx_messages \
                         WHERE context = $1 AND seq = $2::bigint + 1",
                        &[&id, &(k as i64), &line(200)],
                    ).unwrap();
                    client.batch_execute("SET session_replication_role = DEFAULT").unwrap();
                    k
                }
                Change::Move(a, b) => {
                    // Lines and digests together, by a role that bypasses
                    // the server's check.
                    client.batch_execute("SET session_replication_role = replica").unwrap();
                    client.execute(
                        "UPDATE agentctx_messages m SET line = o.line, digest = o.digest \
                         FROM agentctx_messages o \
                         WHERE m.context = $1 AND o.context = $1 AND \
                         ((m.seq = $2 AND o.seq = $3) OR (m.seq = $3 AND o.seq = $2))",
                        &[&id, &(a as i64), &(b as i64)],
                    ).unwrap();
                    client.batch_execute("SET session_replication_role = DEFAULT").unwrap();
                    a
                }
                Change::Swap(a, b) => {
                    client.execute(
                        "UPDATE agentctx_messages m SET line = o.line FROM agentctx_messages o \
                         WHERE m.context = $1 AND o.context = $1 AND \
                         ((m.seq = $2 AND o.seq = $3) OR (m.seq = $3 AND o.seq = $2))",
                        &[&id, &(a as i64), &(b as i64)],
                    ).unwrap();
                    a
                }
            };
            let findings = PgStore::open(&url).unwrap().verify().unwrap().findings;
            prop_assert!(!findings.is_empty(), "{change:?} not found");
            prop_assert_eq!(findings[0].position(), first as u64, "{:?}: {:?}", change, findings);
            let expected_kind = match change {
                Change::Edit(_) => matches!(findings[0], Finding::RowEdited { .. }),
                Change::Delete(_) => matches!(findings[0], Finding::RowsMissing { .. }),
                Change::Insert(k) => k == 0 || matches!(findings[0], Finding::RowInserted { .. }),
                Change::Swap(..) => matches!(findings[0], Finding::RowsReordered { .. }),
                // Each moved row is named with where it was written, and
                // nothing else is.
                Change::Move(a, b) => findings == [
                    Finding::RowMoved { row: a as u64, from: b as u64 },
                    Finding::RowMoved { row: b as u64, from: a as u64 },
                ],
            };
            prop_assert!(expected_kind, "{:?}: {:?}", change, findings);
            // Reads stop there too.
            match PgStore::open(&url).unwrap().load() {
                Err(Error::Tampered { position, .. }) => prop_assert_eq!(position, first as u64),
                other => prop_assert!(false, "{:?}: read {:?}", change, other.map(|l| l.context.len())),
            }
        }
    }
}
