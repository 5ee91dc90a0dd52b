//! Every statement the PostgreSQL store sends, in one place. The tables
//! and the functions two of them call (`agentctx_append`,
//! `agentctx_commit_call`) are created by the migrations in `schema.rs`.
//!
//! Each statement with parameters is a [`Sql`]: its text and its
//! parameters' types. On a direct connection it is prepared once and named
//! (those every append runs when the store connects, `session.rs`); through
//! a transaction pooler it is sent unnamed with its types, parsed again
//! each time (D109: behind a pooler). The types are checked against the
//! server's own inference by a test.

use tokio_postgres::types::Type;

/// A statement agentctx sends: its text and its parameters' types, which a
/// pooled connection sends with it instead of naming a prepared statement.
#[derive(Debug)]
pub(crate) struct Sql {
    pub(crate) text: &'static str,
    pub(crate) types: &'static [Type],
}

/// Who the server session is (`pooling.rs`): its process id, the client
/// it sees, and where it listens. Sent as a simple query, which names
/// nothing.
pub(super) const WHO: &str = "SELECT pg_backend_pid(), host(inet_client_addr()), \
     inet_client_port(), current_setting('port'), current_setting('unix_socket_directories')";

// ---- A context and its messages (`session.rs`, `load.rs`, `append.rs`).

/// The context's id, when it exists.
/// With it, how many rows from its start carry their chain digest and how
/// many rows it has (schema version 6): fewer chained than rows means
/// rows older than version 6 to backfill.
pub(super) const FIND: Sql = Sql {
    text: "SELECT id, chained, length FROM agentctx_contexts WHERE name = $1",
    types: &[Type::TEXT],
};

/// One page of the contexts' names: those after `$1`, in order, at most
/// `$2` (a range of the name's unique index).
pub(super) const NAMES: Sql = Sql {
    text: "SELECT name FROM agentctx_contexts WHERE name > $1 ORDER BY name LIMIT $2",
    types: &[Type::TEXT, Type::INT8],
};

/// The compare-and-append (schema version 7): context name, the id read
/// (or NULL), the expected length, the lines, each line's chain digest,
/// the append's key (or NULL) and the index of its first message. With a
/// key already used it appends nothing and returns `o_already` and the
/// rows and first message that key's append wrote.
pub(super) const APPEND: Sql = Sql {
    text: "SELECT o_id, o_length, o_already, o_first, o_end, o_message \
     FROM agentctx_append($1, $2, $3, $4, $5, $6, $7)",
    types: &[
        Type::TEXT,
        Type::INT8,
        Type::INT8,
        Type::TEXT_ARRAY,
        Type::BYTEA_ARRAY,
        Type::TEXT,
        Type::INT8,
    ],
};

/// The compare-and-append as one plain statement, for the common case: the
/// context's id is known, no key, at least one line. The `UPDATE` takes
/// the context's row lock and checks its name, id and length; the rows
/// follow in the same statement. It inserts every line or none: no row
/// means the function ([`APPEND`]) must say why (a conflict, a context
/// deleted or replaced). It skips PL/pgSQL's call (D96: the plain append),
/// and tells the chain trigger that this transaction's rows of the context
/// carry digests agentctx computed from rows it read and checked, so the
/// server does not check them again (schema version 10, D100: the chain
/// checked once).
pub(super) const APPEND_PLAIN: Sql = Sql {
    text: "WITH c AS (UPDATE agentctx_contexts \
       SET length = length + cardinality($4::text[]), \
         chained = CASE WHEN chained = length THEN length + cardinality($4::text[]) \
                        ELSE chained END \
       WHERE id = $2 AND name = $1 AND length = $3 \
         AND cardinality($4::text[]) = cardinality($5::bytea[]) \
       RETURNING id, set_config('agentctx.chain_computed', id::text, true) AS computed) \
     INSERT INTO agentctx_messages (context, seq, line, digest) \
     SELECT c.id, $3 + t.ord - 1, t.line::json, t.digest \
     FROM c, unnest($4::text[], $5::bytea[]) WITH ORDINALITY AS t(line, digest, ord) \
     WHERE c.computed IS NOT NULL",
    types: &[
        Type::TEXT,
        Type::INT8,
        Type::INT8,
        Type::TEXT_ARRAY,
        Type::BYTEA_ARRAY,
    ],
};

/// The compare-and-append of a call's result (schema version 5): as
/// [`APPEND`], then the plan's row, the call's index, the worker and the
/// claim's token (its attempt); appends only while that claim is the
/// call's current one and the call is running. Also returns whether the
/// claim was fenced off, and the attempt and worker holding the call now.
/// The lines' chain digests come last (schema version 6).
pub(super) const COMMIT_CALL: Sql = Sql {
    text: "SELECT o_id, o_length, o_state, o_fenced, o_attempts, o_worker \
     FROM agentctx_commit_call($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    types: &[
        Type::TEXT,
        Type::INT8,
        Type::INT8,
        Type::TEXT_ARRAY,
        Type::INT8,
        Type::INT4,
        Type::TEXT,
        Type::INT4,
        Type::BYTEA_ARRAY,
    ],
};

/// The rows and first message the append with key `$2` wrote to context
/// `$1`, while the key is kept (schema version 7: the 7 days
/// `agentctx_append` keeps keys for).
pub(super) const KEY: Sql = Sql {
    text: "SELECT first_seq, end_seq, first_message FROM agentctx_keys \
     WHERE context = $1 AND key = $2 AND at >= now() - interval '7 days'",
    types: &[Type::INT8, Type::TEXT],
};

/// Locks a context's row for the rest of the transaction.
pub(super) const LOCK: Sql = Sql {
    text: "SELECT 1 FROM agentctx_contexts WHERE id = $1 FOR UPDATE",
    types: &[Type::INT8],
};

/// Ends it, appending what was appended under the lock.
pub(super) const COMMIT: &str = "COMMIT";

/// Ends it without appending anything.
pub(super) const ROLLBACK: &str = "ROLLBACK";

/// This connection's server process and its start time (together unique).
pub(super) const BACKEND: Sql = Sql {
    text: "SELECT pid, backend_start::text FROM pg_stat_activity WHERE pid = pg_backend_pid()",
    types: &[],
};

/// A context's rows from a position on, in order: each row's position,
/// line and chain digest (checked as they arrive, `rows.rs`).
pub(super) const TAIL: Sql = Sql {
    text: "SELECT seq, line::text, digest FROM agentctx_messages \
     WHERE context = $1 AND seq >= $2 ORDER BY seq",
    types: &[Type::INT8, Type::INT8],
};

/// The rows of context `$1` from `$2` on, up to `$3` of them, to backfill
/// their digests (`backfill.rs`).
pub(super) const BACKFILL_ROWS: Sql = Sql {
    text: "SELECT seq, line::text FROM agentctx_messages \
     WHERE context = $1 AND seq >= $2 ORDER BY seq LIMIT $3",
    types: &[Type::INT8, Type::INT8, Type::INT8],
};

/// Sets the digests of rows `$2` (positions) to `$3` (schema version 6),
/// then marks the context chained up to `$4` — only from `$5`, where the
/// backfill started, so two clients backfilling at once agree.
pub(super) const BACKFILL: Sql = Sql {
    text: "WITH set AS (UPDATE agentctx_messages m SET digest = t.digest \
       FROM unnest($2::bigint[], $3::bytea[]) AS t(seq, digest) \
       WHERE m.context = $1 AND m.seq = t.seq RETURNING 1) \
     UPDATE agentctx_contexts SET chained = $4 WHERE id = $1 AND chained = $5 \
       AND (SELECT count(*) FROM set) = cardinality($2::bigint[])",
    types: &[
        Type::INT8,
        Type::INT8_ARRAY,
        Type::BYTEA_ARRAY,
        Type::INT8,
        Type::INT8,
    ],
};

/// Ends the session `$1` started at `$2` (its process id alone could be
/// another session's by now), if it still runs.
pub(super) const TERMINATE: Sql = Sql {
    text: "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
     WHERE pid = $1 AND backend_start::text = $2",
    types: &[Type::INT4, Type::TEXT],
};

/// Whether the session `$1` started at `$2` still runs.
pub(super) const ALIVE: Sql = Sql {
    text: "SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND backend_start::text = $2",
    types: &[Type::INT4, Type::TEXT],
};

/// Every row of context `$1`: position, line, stored digest (`verify.rs`).
pub(super) const CHAIN_ROWS: Sql = Sql {
    text: "SELECT seq, line::text, digest FROM agentctx_messages \
     WHERE context = $1 ORDER BY seq",
    types: &[Type::INT8],
};

/// The length and chained count context `$1`'s row records.
pub(super) const COUNTS: Sql = Sql {
    text: "SELECT length, chained FROM agentctx_contexts WHERE id = $1",
    types: &[Type::INT8],
};

// ---- Snapshots (`snapshot.rs`).

/// A context's snapshot (schema version 9): the rows it summarises, the
/// whole body when an earlier version wrote it, and its chunks in order,
/// one result row each — one statement, so the chunks are those of the
/// snapshot row it read even while another writer replaces them.
pub(super) const SNAPSHOT: Sql = Sql {
    text: "SELECT s.rows, s.body, s.chunks, c.slot, c.body \
     FROM agentctx_snapshots s LEFT JOIN agentctx_snapshot_chunks c \
       ON c.context = s.context AND c.slot < s.chunks \
     WHERE s.context = $1 ORDER BY c.slot",
    types: &[Type::INT8],
};

/// Stores a snapshot unless one at least as long is there (schema version
/// 9): the rows it summarises, each chunk's hash, and each chunk's bytes
/// or NULL where the writer believes the stored chunk is the same.
/// Answers `saved`, `kept` (a longer one is there) or `stale` (a chunk
/// sent without its bytes is not stored with that hash: send them all).
pub(super) const SAVE_SNAPSHOT: Sql = Sql {
    text: "SELECT agentctx_save_snapshot($1, $2, $3, $4)",
    types: &[Type::INT8, Type::INT8, Type::BYTEA_ARRAY, Type::BYTEA_ARRAY],
};

/// One row's chain digest (the one a snapshot's anchor names).
pub(super) const DIGEST: Sql = Sql {
    text: "SELECT digest FROM agentctx_messages WHERE context = $1 AND seq = $2",
    types: &[Type::INT8, Type::INT8],
};

// ---- The calls of a plan and its workers (`calls.rs`, `listen.rs`).

/// The channel workers listen on: `agentctx_commit_call` and every change
/// of a call's state notify it, with the context's id as payload.
pub(super) const CHANNEL: &str = "agentctx_calls";

/// Lines that may be plan messages, newest first (the pattern also finds
/// a line that holds `"type":"plan"` deeper inside: those are passed over).
pub(super) const PLANS: Sql = Sql {
    text: "SELECT seq, line::text FROM agentctx_messages \
     WHERE context = $1 AND line::text LIKE '%\"type\":\"plan\"%' \
     AND seq < $2 ORDER BY seq DESC LIMIT 16",
    types: &[Type::INT8, Type::INT8],
};

/// The `LIMIT` of [`PLANS`].
pub(super) const PLANS_AT_ONCE: usize = 16;

/// Every call's row of a plan, with its lease and back-off as seconds
/// from now (the server's clock decides, not the worker's).
pub(super) const ROWS: Sql = Sql {
    text: "SELECT call, state, worker, attempts, to_json(claimed_at) #>> '{}', \
     extract(epoch FROM lease_until - now())::float8, \
     extract(epoch FROM not_before - now())::float8, error \
     FROM agentctx_calls WHERE context = $1 AND plan = $2 ORDER BY call",
    types: &[Type::INT8, Type::INT8],
};

/// Claims up to `$6` of the candidate calls `$3` that nobody holds,
/// skipping rows another worker is claiming this instant. The pick is a
/// materialised CTE: as a subquery joined in `FROM` the planner may run it
/// again per row, and each run can pick other rows (it did: three claims
/// for a limit of two). Without the `MATERIALIZED` keyword, which
/// PostgreSQL 10 and 11 do not know: a CTE with `FOR UPDATE` is never
/// inlined (PostgreSQL 12 inlines only CTEs free of row locks and DML),
/// and before 12 no CTE was.
pub(super) const CLAIM: Sql = Sql {
    text: "WITH pick AS ( \
       SELECT call FROM agentctx_calls \
       WHERE context = $1 AND plan = $2 AND call = ANY($3) \
         AND ((state = 'waiting' AND (not_before IS NULL OR not_before <= now())) \
              OR (state = 'running' AND lease_until <= now())) \
       ORDER BY call LIMIT $6 FOR UPDATE SKIP LOCKED) \
     UPDATE agentctx_calls k SET state = 'running', worker = $4, \
       attempts = k.attempts + 1, claimed_at = now(), not_before = NULL, \
       lease_until = now() + make_interval(secs => $5) \
     FROM pick WHERE k.context = $1 AND k.plan = $2 AND k.call = pick.call \
     RETURNING k.call, k.attempts",
    types: &[
        Type::INT8,
        Type::INT8,
        Type::INT4_ARRAY,
        Type::TEXT,
        Type::FLOAT8,
        Type::INT8,
    ],
};

/// Extends a claim's lease, only while the claim (worker and attempt)
/// still holds the call.
pub(super) const RENEW: Sql = Sql {
    text: "UPDATE agentctx_calls SET lease_until = now() + make_interval(secs => $5) \
     WHERE context = $1 AND plan = $2 AND call = $3 AND attempts = $4 AND worker = $6 \
       AND state = 'running'",
    types: &[
        Type::INT8,
        Type::INT8,
        Type::INT4,
        Type::INT4,
        Type::FLOAT8,
        Type::TEXT,
    ],
};

/// Gives a claim back: waiting again after `$5` seconds, or failed when
/// `$5` is NULL; `$7` is the error.
pub(super) const RELEASE: Sql = Sql {
    text: "WITH r AS (UPDATE agentctx_calls SET \
       state = CASE WHEN $5::float8 IS NULL THEN 'failed' ELSE 'waiting' END, \
       not_before = now() + make_interval(secs => coalesce($5, 0)), \
       lease_until = NULL, error = $7, \
       finished_at = CASE WHEN $5::float8 IS NULL THEN now() END \
       WHERE context = $1 AND plan = $2 AND call = $3 AND attempts = $4 AND worker = $6 \
         AND state = 'running' RETURNING 1) \
     SELECT count(*), pg_notify('agentctx_calls', $1::text) FROM r",
    types: &[
        Type::INT8,
        Type::INT8,
        Type::INT4,
        Type::INT4,
        Type::FLOAT8,
        Type::TEXT,
        Type::TEXT,
    ],
};

/// A row for each of a plan's `$3` calls; rows already there (another
/// worker set the plan up first) are kept.
pub(super) const SET_UP: Sql = Sql {
    text: "INSERT INTO agentctx_calls (context, plan, call) \
     SELECT $1, $2, g FROM generate_series(0, $3 - 1) g ON CONFLICT DO NOTHING",
    types: &[Type::INT8, Type::INT8, Type::INT4],
};

/// Statistics of the calls' table, taken after a plan added at least
/// [`ANALYZE_AFTER`] rows: planned on older ones, a claim scans the whole
/// plan rather than its candidates.
pub(super) const ANALYZE_CALLS: &str = "ANALYZE agentctx_calls";

/// See [`ANALYZE_CALLS`].
pub(super) const ANALYZE_AFTER: u64 = 10_000;

/// Removes a worker's row, and wakes the listeners: its calls' tools may
/// have no live worker now.
pub(super) const UNREGISTER: Sql = Sql {
    text: "WITH gone AS (DELETE FROM agentctx_workers \
     WHERE context = $1 AND worker = $2 RETURNING 1) \
     SELECT count(*), pg_notify('agentctx_calls', $1::text) FROM gone",
    types: &[Type::INT8, Type::TEXT],
};

/// Records a worker alive, with its tools, until `$4` seconds from now.
pub(super) const REGISTER: Sql = Sql {
    text: "INSERT INTO agentctx_workers (context, worker, tools, alive_until) \
     VALUES ($1, $2, $3, now() + make_interval(secs => $4)) \
     ON CONFLICT (context, worker) DO UPDATE SET tools = EXCLUDED.tools, \
     alive_until = EXCLUDED.alive_until",
    types: &[Type::INT8, Type::TEXT, Type::TEXT_ARRAY, Type::FLOAT8],
};

/// The tools of the workers alive now.
pub(super) const LIVE_TOOLS: Sql = Sql {
    text: "SELECT DISTINCT unnest(tools) FROM agentctx_workers \
     WHERE context = $1 AND alive_until > now()",
    types: &[Type::INT8],
};

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::super::schema::{APPLIED, LOCK_MIGRATIONS, RECORD};
    use super::*;

    /// Every statement with parameters, by name.
    const STATEMENTS: [(&str, &Sql); 30] = [
        ("FIND", &FIND),
        ("NAMES", &NAMES),
        ("APPEND", &APPEND),
        ("APPEND_PLAIN", &APPEND_PLAIN),
        ("COMMIT_CALL", &COMMIT_CALL),
        ("KEY", &KEY),
        ("LOCK", &LOCK),
        ("BACKEND", &BACKEND),
        ("TAIL", &TAIL),
        ("BACKFILL_ROWS", &BACKFILL_ROWS),
        ("BACKFILL", &BACKFILL),
        ("TERMINATE", &TERMINATE),
        ("ALIVE", &ALIVE),
        ("CHAIN_ROWS", &CHAIN_ROWS),
        ("COUNTS", &COUNTS),
        ("SNAPSHOT", &SNAPSHOT),
        ("SAVE_SNAPSHOT", &SAVE_SNAPSHOT),
        ("DIGEST", &DIGEST),
        ("PLANS", &PLANS),
        ("ROWS", &ROWS),
        ("CLAIM", &CLAIM),
        ("RENEW", &RENEW),
        ("RELEASE", &RELEASE),
        ("SET_UP", &SET_UP),
        ("UNREGISTER", &UNREGISTER),
        ("REGISTER", &REGISTER),
        ("LIVE_TOOLS", &LIVE_TOOLS),
        ("LOCK_MIGRATIONS", &LOCK_MIGRATIONS),
        ("APPLIED", &APPLIED),
        ("RECORD", &RECORD),
    ];

    #[test]
    fn d109_each_statement_declares_the_parameter_types_the_server_infers() {
        // Through a pooler a statement is sent with these types instead of
        // being prepared: a wrong one would fail there alone.
        let url = test_support::database::with_context(
            &test_support::database::url(),
            &test_support::database::unique_name("sql", "types"),
        );
        let mut store = crate::PgStore::open(&url).expect(test_support::database::HOW_TO_PROVIDE);
        let client = store.client().unwrap();
        for (name, sql) in STATEMENTS {
            let inferred = client
                .inferred_types(sql.text)
                .unwrap_or_else(|e| panic!("{name}: {}", crate::pg::session::describe(&e)));
            assert_eq!(inferred, sql.types, "{name}: the server infers other types");
        }
    }
}
