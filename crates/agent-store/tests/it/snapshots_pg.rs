//! Snapshots on PostgreSQL stored as content-defined chunks (schema
//! version 9, decision D49), against a real server: a rewrite writes only
//! the chunks that changed; a chunk missing, damaged, planted or out of
//! order makes the open read the log, never changes what it returns, and
//! the next snapshot written repairs it; a snapshot kept whole in its row
//! by an earlier version is read, and survives the migration in place.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

#[cfg(not(feature = "postgres"))]
#[test]
fn snapshot_tests_need_the_postgres_feature() {
    panic!("cargo test -p agent-store --features postgres (cargo xtask ci runs them)");
}

#[cfg(feature = "postgres")]
mod pg_snapshots {
    use crate::support::pg::{fresh_name, open, raw, with_context};
    use agent_core::{json, json::Value};
    use agent_data::{Context, Message};
    use agent_store::SnapshotWhen;
    use agent_store::{PgStore, Store};

    /// A context of `n` pushes onto `†state.log` (its snapshot grows with
    /// every one), through `store`.
    fn pushed(store: &mut PgStore, context: &mut Context, from: usize, n: usize) {
        for i in from..from + n {
            let entry = format!("entry {i:05}: something the agent noted on the way");
            let m = Message::from_value(json!({"type": "state", "data": {"log": entry},
                "_outputPath": "†state.log", "_outputMethod": "push"}))
            .unwrap();
            store.commit(context, &m).unwrap();
        }
    }

    fn state(context: &Context) -> Option<Value> {
        context.view(&"state".parse().unwrap(), None).cloned()
    }

    fn id(client: &mut postgres::Client, name: &str) -> i64 {
        client
            .query_one("SELECT id FROM agentctx_contexts WHERE name = $1", &[&name])
            .unwrap()
            .get(0)
    }

    /// Each chunk row's slot and the transaction that wrote its version.
    fn versions(client: &mut postgres::Client, id: i64) -> Vec<(i32, String)> {
        client
            .query(
                "SELECT slot, xmin::text FROM agentctx_snapshot_chunks WHERE context = $1 ORDER BY slot",
                &[&id],
            )
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect()
    }

    /// A context of 2,000 pushes with a snapshot written now.
    fn long(name: &str) -> (String, String, PgStore, Context) {
        let name = fresh_name(name);
        let url = with_context(&name);
        let mut store = open(&url);
        let mut context = Context::new();
        pushed(&mut store, &mut context, 0, 2000);
        assert!(store.snapshot(&context, SnapshotWhen::Now).unwrap());
        (url, name, store, context)
    }

    /// How many chunk rows the context's snapshot has.
    fn chunks(client: &mut postgres::Client, id: i64) -> usize {
        versions(client, id).len()
    }

    #[test]
    fn d106_a_snapshot_is_written_when_due_only_where_it_spares_half_the_log() {
        let name = fresh_name("pays");
        let url = with_context(&name);
        let mut store = open(&url);
        let mut context = Context::new();
        for i in 0..200 {
            let write =
                Message::from_value(json!({"type": "state", "v": i, "_instance": format!("i{i}")}))
                    .unwrap();
            store.commit(&mut context, &write).unwrap();
        }
        let mut client = raw();
        let id = id(&mut client, &name);
        assert_eq!(
            chunks(&mut client, id),
            0,
            "a snapshot of instance writes only"
        );
        pushed(&mut store, &mut context, 0, 200);
        assert!(
            chunks(&mut client, id) > 0,
            "no snapshot once global writes were half the log"
        );
        let resumed = open(&url).load_tail().unwrap().context;
        assert!(!resumed.is_complete());
        assert_eq!(state(&resumed), state(&context));
    }

    #[test]
    fn r34c_a_snapshot_rewrite_writes_only_the_chunks_that_changed() {
        let (url, name, mut store, mut context) = long("chunks");
        let mut client = raw();
        let id = id(&mut client, &name);
        let before = versions(&mut client, id);
        assert!(before.len() >= 50, "{} chunks", before.len());
        pushed(&mut store, &mut context, 2000, 3);
        assert!(store.snapshot(&context, SnapshotWhen::Now).unwrap());
        let after = versions(&mut client, id);
        let rewritten = after.iter().filter(|v| !before.contains(v)).count();
        assert!(
            rewritten <= 4,
            "{rewritten} of {} chunks rewritten for three pushes",
            after.len()
        );
        // What the chunks hold is the snapshot: an open goes through it.
        let resumed = open(&url).load_tail().unwrap().context;
        assert!(!resumed.is_complete(), "the snapshot was not used");
        assert_eq!(state(&resumed), state(&context));
        assert_eq!(resumed.head(), context.head());
    }

    #[test]
    fn r34c_r10b_an_erased_view_round_trips_through_a_postgres_snapshot() {
        let url = with_context(&fresh_name("erased"));
        let mut store = open(&url);
        let mut context = Context::new();
        for m in [
            json!({"type": "state", "data": {"step": "global", "keep": 1}}),
            json!({"type": "data", "kind": "gone", "data": {"a": 1}}),
            json!({"type": "data", "kind": "gone", "data": null, "_outputMethod": "erase"}),
            json!({"type": "state", "data": {"step": null}, "_outputPath": "†state.step",
                "_outputMethod": "erase", "_instance": "x"}),
        ] {
            store
                .commit(&mut context, &Message::from_value(m).unwrap())
                .unwrap();
        }
        assert!(store.snapshot(&context, SnapshotWhen::Now).unwrap());
        let resumed = open(&url).load_tail().unwrap().context;
        assert!(!resumed.is_complete(), "the snapshot was not used");
        assert_eq!(resumed.view(&"gone".parse().unwrap(), None), None);
        let x = "x".parse().unwrap();
        assert_eq!(
            resumed.view(&"state".parse().unwrap(), Some(&x)),
            Some(&json!({"keep": 1}))
        );
        assert_eq!(state(&resumed), Some(json!({"step": "global", "keep": 1})));
        assert_eq!(resumed.head(), context.head());
    }

    #[test]
    fn r34c_a_chunk_missing_damaged_planted_or_moved_makes_the_open_read_the_log() {
        let (url, name, mut store, context) = long("damaged");
        let mut client = raw();
        let id = id(&mut client, &name);
        let full = state(&context);
        for (what, statement) in [
            (
                "a chunk deleted",
                "DELETE FROM agentctx_snapshot_chunks WHERE context = $1 AND slot = 1",
            ),
            (
                "a byte of a chunk changed, its hash kept",
                "UPDATE agentctx_snapshot_chunks SET body = set_byte(body, 7, get_byte(body, 7) # 1) WHERE context = $1 AND slot = 2",
            ),
            (
                "two chunks swapped",
                "UPDATE agentctx_snapshot_chunks c SET body = o.body, hash = o.hash FROM agentctx_snapshot_chunks o WHERE c.context = $1 AND o.context = $1 AND (c.slot, o.slot) IN ((1, 3), (3, 1))",
            ),
            (
                "a chunk planted in place of another",
                "UPDATE agentctx_snapshot_chunks SET body = '\\x7b7d'::bytea, hash = sha256('\\x7b7d'::bytea) WHERE context = $1 AND slot = 0",
            ),
            (
                "the count of chunks lowered",
                "UPDATE agentctx_snapshots SET chunks = chunks - 1 WHERE context = $1",
            ),
        ] {
            client.execute(statement, &[&id]).unwrap();
            let mut reader = open(&url);
            let read = reader.load_tail().unwrap().context;
            assert!(read.is_complete(), "{what}: the snapshot was used");
            assert_eq!(state(&read), full, "{what}");
            // The writer that knew the chunks repairs them with its next
            // snapshot: the server tells it they are not what it wrote.
            client
                .execute(
                    "UPDATE agentctx_snapshots SET rows = rows - 1 WHERE context = $1",
                    &[&id],
                )
                .unwrap();
            assert!(store.snapshot(&context, SnapshotWhen::Now).unwrap());
            let resumed = open(&url).load_tail().unwrap().context;
            assert!(!resumed.is_complete(), "{what}: not repaired");
            assert_eq!(state(&resumed), full, "{what}");
        }
        // A chunk past the count is not read.
        client
            .execute(
                "INSERT INTO agentctx_snapshot_chunks SELECT context, chunks, '\\x00'::bytea, '\\x00'::bytea FROM agentctx_snapshots WHERE context = $1",
                &[&id],
            )
            .unwrap();
        let resumed = open(&url).load_tail().unwrap().context;
        assert!(!resumed.is_complete());
        assert_eq!(state(&resumed), full);
    }

    /// The schema as version 8 left it, in a schema of its own: the
    /// snapshot whole in its row.
    #[test]
    fn r34c_a_snapshot_kept_whole_by_version_8_is_read_after_the_migration_and_replaced() {
        let schema = format!("agentctx_v8_{}", std::process::id());
        let mut client = raw();
        client
            .batch_execute(&format!(
                "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
            ))
            .unwrap();
        // A schema of its own is a session option, which a pooler refuses.
        let base = test_support::database::direct_url();
        let sep = if base.contains('?') { '&' } else { '?' };
        let url = format!("{base}{sep}options=-c%20search_path%3D{schema}&context=old");
        let (mut store, mut context) = (open(&url), Context::new());
        pushed(&mut store, &mut context, 0, 300);
        assert!(store.snapshot(&context, SnapshotWhen::Now).unwrap());
        // Back to version 8, the snapshot's chunks joined into its body.
        client
            .batch_execute(&format!(
                "SET search_path = {schema};
                 UPDATE agentctx_snapshots s SET body = (SELECT string_agg(c.body, ''::bytea ORDER BY c.slot)
                     FROM agentctx_snapshot_chunks c WHERE c.context = s.context);
                 DROP FUNCTION agentctx_save_snapshot(bigint, bigint, bytea[], bytea[]);
                 DROP TABLE agentctx_snapshot_chunks;
                 ALTER TABLE agentctx_snapshots DROP COLUMN chunks, ALTER COLUMN body SET NOT NULL;
                 DELETE FROM agentctx_migrations WHERE version >= 9;
                 SET search_path = DEFAULT"
            ))
            .unwrap();
        let mut reader = open(&url);
        let resumed = reader.load_tail().unwrap().context;
        assert!(!resumed.is_complete(), "the old snapshot was not used");
        assert_eq!(state(&resumed), state(&context));
        pushed(&mut store, &mut context, 300, 1);
        assert!(store.snapshot(&context, SnapshotWhen::Now).unwrap());
        let row = client
            .query_one(
                &format!(
                    "SELECT body IS NULL, chunks, (SELECT count(*) FROM {schema}.agentctx_snapshot_chunks)::int \
                     FROM {schema}.agentctx_snapshots"
                ),
                &[],
            )
            .unwrap();
        let (body_gone, chunks, rows): (bool, i32, i32) = (row.get(0), row.get(1), row.get(2));
        assert!(
            body_gone && chunks > 0 && chunks == rows,
            "{body_gone} {chunks} {rows}"
        );
        let resumed = open(&url).load_tail().unwrap().context;
        assert!(!resumed.is_complete());
        assert_eq!(state(&resumed), state(&context));
        client
            .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
            .unwrap();
    }
}
