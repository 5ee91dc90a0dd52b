//! Opening a `StoredContext` costs O(tail) (D37: snapshots; D50: facade opens in O(tail)): it goes
//! through the store's snapshot, holds every view but not every message,
//! and reads the whole log once when something walks the messages —
//! rendering exactly what a whole read renders. A snapshot that does not
//! match the log changes no read. Files and PostgreSQL alike.
//!
//! The PostgreSQL tests use `AGENTCTX_TEST_DATABASE_URL`, else
//! `postgres://root@127.0.0.1:5432/test` (what `cargo xtask ci` provides);
//! without a server they fail and say so, they are never skipped.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use agent_store::SnapshotWhen;

use agent_core::{json, json::Value};
use agentctx::Error;
use agentctx::prelude::*;
use agentctx::store::Store;

/// Messages at the test contexts' addresses: enough that commits leave a
/// snapshot well before the end.
const MESSAGES: usize = 300;

/// Writes `MESSAGES` messages through the facade, ten to a commit: text
/// turns (which a snapshot does not hold), global writes, and writes to
/// two instances. `salt` changes every value.
fn written(address: &str, salt: i64) {
    let mut ctx = StoredContext::open(address).unwrap_or_else(|e| {
        panic!(
            "{e}\nthe PostgreSQL tests need a server: run `cargo xtask ci` (it finds or starts \
             one), or set AGENTCTX_TEST_DATABASE_URL to a server's URL"
        )
    });
    for batch in 0..MESSAGES / 10 {
        let messages: Vec<Value> = (0..10i64)
            .map(|k| {
                let i = batch as i64 * 10 + k + salt;
                match k {
                    0 => json!({"type": "text", "role": "user", "text": format!("turn {i}")}),
                    1 | 2 => {
                        json!({"type": "state", "data": {"log": i}, "_outputPath": "†state.log",
                        "_outputMethod": "push", "_instance": if k == 1 { "①" } else { "②" }})
                    }
                    3 => json!({"type": "text", "role": "assistant", "text": format!("noted {i}")}),
                    _ => json!({"type": "state", "data": {"n": i, "last": k}}),
                }
            })
            .collect();
        ctx.append(Value::Array(messages.into())).unwrap();
    }
}

/// The context as a whole read of the store finds it.
fn whole(address: &str) -> Context {
    let context = agentctx::store::open(address)
        .unwrap()
        .load()
        .unwrap()
        .context;
    assert!(context.is_complete());
    context
}

/// Everything a read sees: length, head, every layer's view for every
/// instance and globally, diagnostics.
fn every_read(context: &Context) -> Value {
    let mut views = Vec::new();
    for id in context.identities() {
        for instance in context.instances().map(Some).chain([None]) {
            views.push(json!([
                id.to_string(),
                instance.map(ToString::to_string),
                context.view(&id.kind, instance)
            ]));
        }
    }
    let diagnostics: Vec<String> = context
        .diagnostics()
        .iter()
        .map(ToString::to_string)
        .collect();
    json!({"len": context.len(), "head": context.head().to_string(),
        "views": views, "diagnostics": diagnostics})
}

fn rendered(context: &Context) -> Value {
    payload(context, PayloadFormat::OpenAi, RenderMode::Merged).unwrap()
}

/// The rule, at `address` (written by [`written`]): a cold open holds the
/// tail, reads as a whole read does, and renders exactly what a whole
/// read renders, reading the whole log once to do so.
fn opens_through_the_snapshot(address: &str) {
    let full = whole(address);
    for open in [StoredContext::open, StoredContext::open_existing] {
        let ctx = open(address).unwrap();
        let held = ctx.context();
        assert!(!held.is_complete(), "{address}: the snapshot was not used");
        assert!(
            held.held_from() > 0
                && held.len() - held.held_from() <= 2 * agentctx::store::SNAPSHOT_AFTER,
            "{address}: holds from {} of {}",
            held.held_from(),
            held.len()
        );
        assert_eq!(every_read(held), every_read(&full));
        assert_eq!(ctx.get("†state.n").unwrap(), json!(MESSAGES as i64 - 1));
    }

    let mut ctx = StoredContext::open_existing(address).unwrap();
    // The first message is a text turn: not held until the whole log is read.
    assert_eq!(ctx.context().message_json(0), None);
    // The last one is held: reading it reads nothing more.
    let last = full.len() - 1;
    assert_eq!(ctx.message(last).unwrap(), full.message(last));
    assert!(!ctx.context().is_complete());
    assert_eq!(ctx.message(full.len()).unwrap(), None);
    assert!(!ctx.context().is_complete(), "past the end read the log");

    assert_eq!(
        ctx.render(PayloadFormat::OpenAi, RenderMode::Merged)
            .unwrap(),
        rendered(&full)
    );
    assert!(ctx.context().is_complete());
    assert_eq!(ctx.context().held_from(), 0);
    assert_eq!(ctx.context().message_json(0), full.message_json(0));
    assert_eq!(every_read(ctx.context()), every_read(&full));

    // `message` before the snapshot's end reads the whole log too.
    let mut other = StoredContext::open_existing(address).unwrap();
    assert_eq!(other.message(0).unwrap(), full.message(0));
    assert!(other.context().is_complete());
    assert_eq!(other.whole().unwrap().to_jsonl(), full.to_jsonl());

    // Appends go on through the handle that read the whole log.
    ctx.append(json!({"type": "state", "data": {"n": "after"}}))
        .unwrap();
    let after = whole(address);
    assert_eq!(every_read(ctx.context()), every_read(&after));
    assert_eq!(
        ctx.render(PayloadFormat::OpenAi, RenderMode::Merged)
            .unwrap(),
        rendered(&after)
    );
}

/// The rule, at `address` whose snapshot was just damaged or replaced:
/// every read, and the render, are a whole read's.
fn reads_as_the_whole_log(address: &str, what: &str) {
    let full = whole(address);
    let mut ctx = StoredContext::open_existing(address).unwrap();
    assert!(
        ctx.context().is_complete(),
        "{address}: a {what} snapshot was used"
    );
    assert_eq!(every_read(ctx.context()), every_read(&full), "{what}");
    assert_eq!(
        ctx.render(PayloadFormat::OpenAi, RenderMode::Merged)
            .unwrap(),
        rendered(&full),
        "{what}"
    );
}

/// Writes a snapshot of another context of the same length, `other`,
/// beside the one at `address`, through its store, as if it were its own.
fn plant(address: &str, other: &str) {
    let mut store = agentctx::store::open(address).unwrap();
    let own = store.load().unwrap().context;
    let foreign = whole(other);
    assert_eq!(own.len(), foreign.len());
    assert_ne!(every_read(&own), every_read(&foreign));
    assert!(store.snapshot(&foreign, SnapshotWhen::Now).unwrap());
}

#[test]
fn d50_a_cold_open_of_a_file_context_goes_through_the_snapshot_and_renders_the_whole_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    let address = path.to_str().unwrap();
    written(address, 0);
    opens_through_the_snapshot(address);
}

#[test]
fn d50_a_damaged_or_planted_snapshot_changes_no_read_of_a_file_context() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    let other = dir.path().join("other.jsonl");
    let (address, other) = (path.to_str().unwrap(), other.to_str().unwrap());
    written(address, 0);
    written(other, 1000);
    let snapshot = dir.path().join(".c.jsonl.snapshot");
    let mut damaged = std::fs::read(&snapshot).unwrap();
    let at = damaged.len() / 2;
    damaged[at] ^= 1;
    std::fs::write(&snapshot, &damaged).unwrap();
    reads_as_the_whole_log(address, "damaged");
    plant(address, other);
    reads_as_the_whole_log(address, "planted");
}

#[test]
fn d50_a_whole_read_that_fails_is_a_store_error_and_leaves_the_handle_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    let address = path.to_str().unwrap();
    written(address, 0);
    let mut ctx = StoredContext::open_existing(address).unwrap();
    assert!(!ctx.context().is_complete());
    let held = every_read(ctx.context());
    // The first line broken in place, under the snapshot: only a whole
    // read sees it.
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[0] = b'[';
    std::fs::write(&path, &bytes).unwrap();

    let error = ctx
        .render(PayloadFormat::OpenAi, RenderMode::Merged)
        .unwrap_err();
    assert!(matches!(error, Error::Store(_)), "{error:?}");
    let text = format!(
        "{address}: invalid JSON at line 1 column 8: expected `,` or `]` at line 1 column 8"
    );
    assert_eq!(error.to_string(), text);
    let error = ctx.message(0).unwrap_err();
    assert_eq!(error.to_string(), text);
    assert!(matches!(ctx.whole(), Err(Error::Store(_))));
    // The handle holds what it held, and reads as before.
    assert!(!ctx.context().is_complete());
    assert_eq!(every_read(ctx.context()), held);
    assert_eq!(ctx.get("†state.n").unwrap(), json!(MESSAGES as i64 - 1));
}

#[cfg(feature = "postgres")]
mod postgres {
    use super::*;

    fn database() -> String {
        std::env::var("AGENTCTX_TEST_DATABASE_URL")
            .unwrap_or_else(|_| "postgres://root@127.0.0.1:5432/test".to_owned())
    }

    /// A URL for a context no other test (or earlier run) uses.
    fn fresh(name: &str) -> String {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let base = database();
        let sep = if base.contains('?') { '&' } else { '?' };
        format!(
            "{base}{sep}context=facade-open-{name}-{}-{nanos}",
            std::process::id()
        )
    }

    /// Runs `sql` with the context's id as `$1`.
    fn sql(url: &str, sql: &str) {
        let name = url.rsplit("context=").next().unwrap();
        let mut client =
            ::postgres::Client::connect(&test_support::database::direct_url(), ::postgres::NoTls)
                .unwrap();
        let id: i64 = client
            .query_one("SELECT id FROM agentctx_contexts WHERE name = $1", &[&name])
            .unwrap()
            .get(0);
        assert_eq!(client.execute(sql, &[&id]).unwrap(), 1, "{sql}");
    }

    #[test]
    fn d50_a_cold_open_of_a_postgres_context_goes_through_the_snapshot_and_renders_the_whole_log() {
        let url = fresh("cold");
        written(&url, 0);
        opens_through_the_snapshot(&url);
    }

    #[test]
    fn d50_a_damaged_or_planted_snapshot_changes_no_read_of_a_postgres_context() {
        let (url, other) = (fresh("damaged"), fresh("other"));
        written(&url, 0);
        written(&other, 1000);
        sql(
            &url,
            "UPDATE agentctx_snapshot_chunks SET body = set_byte(body, 7, get_byte(body, 7) # 1) \
             WHERE context = $1 AND slot = (SELECT chunks / 2 FROM agentctx_snapshots \
             WHERE context = $1)",
        );
        reads_as_the_whole_log(&url, "damaged");
        // The store keeps the longer of two snapshots: the one the read
        // above rebuilt goes first.
        sql(&url, "DELETE FROM agentctx_snapshots WHERE context = $1");
        plant(&url, &other);
        reads_as_the_whole_log(&url, "planted");
    }

    #[test]
    fn d50_a_whole_read_of_a_postgres_context_that_fails_is_a_store_error() {
        let url = fresh("fails");
        written(&url, 0);
        let mut ctx = StoredContext::open_existing(&url).unwrap();
        assert!(!ctx.context().is_complete());
        let held = every_read(ctx.context());
        sql(
            &url,
            r#"UPDATE agentctx_messages SET line = '{"type":"text","text":"edited"}' WHERE context = $1 AND seq = 0"#,
        );
        let error = ctx
            .render(PayloadFormat::OpenAi, RenderMode::Merged)
            .unwrap_err();
        assert!(
            matches!(
                error,
                Error::Store(agentctx::store::Error::Tampered { position: 0, .. })
            ),
            "{error:?}"
        );
        let shown = agentctx::store::without_password(&url);
        assert_eq!(
            error.to_string(),
            format!(
                "{shown}: row 0: it does not chain from the row before: it or a row before it \
                 was edited, or rows were inserted or reordered (agentctx verify lists every \
                 finding)"
            )
        );
        assert!(!ctx.context().is_complete());
        assert_eq!(every_read(ctx.context()), held);
        // The handle's own store was not disturbed: appends go on.
        ctx.append(json!({"type": "state", "data": {"n": "after"}}))
            .unwrap();
        assert_eq!(ctx.get("†state.n").unwrap(), json!("after"));
    }
}
