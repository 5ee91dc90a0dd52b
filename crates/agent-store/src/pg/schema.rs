//! The tables, created on first use by versioned migrations (docs/store.md
//! shows them). Migrations run in one transaction under an advisory lock,
//! so any number of processes may start at once: the first applies them,
//! the others wait for it and find them applied.

use super::client::Client;
use super::sql::Sql;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::Type;

/// The schema version this build reads and writes.
pub const SCHEMA_VERSION: i32 = 11;

/// Held while migrating (an arbitrary constant: "agentctx" in ASCII).
const MIGRATION_LOCK: i64 = 0x6167_656e_7463_7478;

/// Waits for the migration lock, held to the end of the transaction.
pub(super) const LOCK_MIGRATIONS: Sql = Sql {
    text: "SELECT pg_advisory_xact_lock($1)",
    types: &[Type::INT8],
};

/// The newest migration applied (0 for none).
pub(super) const APPLIED: Sql = Sql {
    text: "SELECT coalesce(max(version), 0) FROM agentctx_migrations",
    types: &[],
};

/// Records migration `$1`, described as `$2`.
pub(super) const RECORD: Sql = Sql {
    text: "INSERT INTO agentctx_migrations (version, description) VALUES ($1, $2)",
    types: &[Type::INT4, Type::TEXT],
};

/// Each migration: its version, what it does, and its SQL.
const MIGRATIONS: [(i32, &str, &str); 11] = [
    (1, "contexts, messages, agentctx_append", V1),
    (
        2,
        "agentctx_append checks the context's id and pins its search_path",
        V2,
    ),
    (3, "snapshots of contexts' folded views", V3),
    (4, "plans run by workers: calls, claims, workers", V4),
    (
        5,
        "agentctx_commit_call takes the claim's token and fences stale claims",
        V5,
    ),
    (6, "each message row carries its chain digest", V6),
    (
        7,
        "idempotent appends: agentctx_append keeps and checks an append key",
        V7,
    ),
    (
        8,
        "the server refuses a row whose digest does not chain",
        V8,
    ),
    (
        9,
        "snapshots in content-defined chunks, rewritten in place where they changed",
        V9,
    ),
    (
        10,
        "the chain trigger skips the rows agentctx's plain append computed",
        V10,
    ),
    (
        11,
        "each call's row names the transaction that last changed it",
        super::changed::V11,
    ),
];

/// Version 1. A context is a row holding its length; its messages are rows
/// keyed by (context, seq), each one compact JSON line stored as `json`
/// (kept byte for byte: key order and big numbers survive, unlike `jsonb`).
/// `agentctx_append` is the compare-and-append: under the context row's
/// lock, it appends only if the context still has the expected length.
const V1: &str = r#"
CREATE TABLE agentctx_contexts (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name text NOT NULL UNIQUE CHECK (octet_length(name) BETWEEN 1 AND 256),
    length bigint NOT NULL DEFAULT 0 CHECK (length >= 0),
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE agentctx_messages (
    context bigint NOT NULL REFERENCES agentctx_contexts (id),
    seq bigint NOT NULL CHECK (seq >= 0),
    line json NOT NULL,
    PRIMARY KEY (context, seq)
);
CREATE FUNCTION agentctx_append(p_name text, p_expected bigint, p_lines text[])
RETURNS bigint LANGUAGE plpgsql AS $body$
DECLARE
    v_id bigint;
    v_length bigint;
BEGIN
    SELECT c.id, c.length INTO v_id, v_length
        FROM agentctx_contexts c WHERE c.name = p_name FOR UPDATE;
    IF NOT FOUND THEN
        IF p_expected <> 0 THEN
            RETURN -1;
        END IF;
        INSERT INTO agentctx_contexts (name) VALUES (p_name) ON CONFLICT (name) DO NOTHING;
        SELECT c.id, c.length INTO v_id, v_length
            FROM agentctx_contexts c WHERE c.name = p_name FOR UPDATE;
    END IF;
    IF v_length <> p_expected THEN
        RETURN v_length;
    END IF;
    INSERT INTO agentctx_messages (context, seq, line)
        SELECT v_id, p_expected + t.ord - 1, t.line::json
        FROM unnest(p_lines) WITH ORDINALITY AS t(line, ord);
    UPDATE agentctx_contexts SET length = p_expected + cardinality(p_lines) WHERE id = v_id;
    RETURN p_expected;
END
$body$;
"#;

/// Version 2: `agentctx_append` also takes the id of the context the
/// caller read (NULL if none) and returns the context's id with its
/// length, so a context deleted and created again under the same name is
/// never appended to as if it were the one read; it runs with the
/// `search_path` it was created with, whatever the caller's; and a context
/// deleted while it is being created reports -1 instead of NULL.
const V2: &str = r#"
DROP FUNCTION agentctx_append(text, bigint, text[]);
CREATE FUNCTION agentctx_append(p_name text, p_id bigint, p_expected bigint, p_lines text[],
                                OUT o_id bigint, OUT o_length bigint)
LANGUAGE plpgsql SET search_path FROM CURRENT AS $body$
BEGIN
    SELECT c.id, c.length INTO o_id, o_length
        FROM agentctx_contexts c WHERE c.name = p_name FOR UPDATE;
    IF NOT FOUND THEN
        o_id := NULL;
        o_length := -1;
        IF p_expected <> 0 OR p_id IS NOT NULL THEN
            RETURN;
        END IF;
        INSERT INTO agentctx_contexts (name) VALUES (p_name) ON CONFLICT (name) DO NOTHING;
        SELECT c.id, c.length INTO o_id, o_length
            FROM agentctx_contexts c WHERE c.name = p_name FOR UPDATE;
        IF NOT FOUND THEN
            o_id := NULL;
            o_length := -1;
            RETURN;
        END IF;
    END IF;
    IF o_length <> p_expected OR o_id IS DISTINCT FROM coalesce(p_id, o_id) THEN
        RETURN;
    END IF;
    INSERT INTO agentctx_messages (context, seq, line)
        SELECT o_id, p_expected + t.ord - 1, t.line::json
        FROM unnest(p_lines) WITH ORDINALITY AS t(line, ord);
    UPDATE agentctx_contexts SET length = p_expected + cardinality(p_lines) WHERE id = o_id;
END
$body$;
"#;

/// Version 3: one snapshot per context (D37: snapshots) — the folded views
/// after its first `rows` rows, sealed with a checksum; a cache that
/// readers verify against the log and ignore when it does not match, so
/// writing one needs no lock. Deleting a context deletes its snapshot.
const V3: &str = r#"
CREATE TABLE agentctx_snapshots (
    context bigint PRIMARY KEY REFERENCES agentctx_contexts (id) ON DELETE CASCADE,
    rows bigint NOT NULL CHECK (rows >= 0),
    body bytea NOT NULL,
    written_at timestamptz NOT NULL DEFAULT now()
);
"#;

/// Version 4: plans run by many workers (`agentctx worker`, decision
/// D41). Plan messages are found by a partial index on their text (not
/// `line->>'type'`, which fails on a line holding `\u0000`; a line the
/// pattern finds that is not a plan is passed over); each call of a plan
/// (keyed by the plan message's row) has a row saying whether it waits, is
/// claimed (by which worker, until when) or finished, and how often it was
/// tried; each worker has a row naming its tools while it is alive.
/// `agentctx_commit_call` is `agentctx_append` for a call's result: under
/// the context's row lock, then the call's, it appends only if the call
/// has no result yet, and marks it done in the same transaction — so a
/// call's result is written exactly once, however often its activity ran.
const V4: &str = r#"
CREATE INDEX agentctx_messages_plans ON agentctx_messages (context, seq)
    WHERE line::text LIKE '%"type":"plan"%';
CREATE TABLE agentctx_calls (
    context bigint NOT NULL REFERENCES agentctx_contexts (id) ON DELETE CASCADE,
    plan bigint NOT NULL CHECK (plan >= 0),
    call integer NOT NULL CHECK (call >= 0),
    state text NOT NULL DEFAULT 'waiting'
        CHECK (state IN ('waiting', 'running', 'done', 'failed')),
    worker text,
    attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    claimed_at timestamptz,
    lease_until timestamptz,
    not_before timestamptz,
    error text,
    result_seq bigint,
    finished_at timestamptz,
    PRIMARY KEY (context, plan, call)
);
CREATE TABLE agentctx_workers (
    context bigint NOT NULL REFERENCES agentctx_contexts (id) ON DELETE CASCADE,
    worker text NOT NULL,
    tools text[] NOT NULL,
    started_at timestamptz NOT NULL DEFAULT now(),
    alive_until timestamptz NOT NULL,
    PRIMARY KEY (context, worker)
);
CREATE FUNCTION agentctx_commit_call(p_name text, p_id bigint, p_expected bigint, p_lines text[],
                                     p_plan bigint, p_call integer, p_worker text,
                                     OUT o_id bigint, OUT o_length bigint, OUT o_state text)
LANGUAGE plpgsql SET search_path FROM CURRENT AS $body$
BEGIN
    SELECT c.id, c.length INTO o_id, o_length
        FROM agentctx_contexts c WHERE c.name = p_name FOR UPDATE;
    IF NOT FOUND THEN
        o_id := NULL;
        o_length := -1;
        o_state := 'missing';
        RETURN;
    END IF;
    IF o_id IS DISTINCT FROM p_id THEN
        o_state := 'missing';
        RETURN;
    END IF;
    SELECT k.state INTO o_state FROM agentctx_calls k
        WHERE k.context = o_id AND k.plan = p_plan AND k.call = p_call FOR UPDATE;
    IF NOT FOUND THEN
        o_state := 'unknown';
        RETURN;
    END IF;
    IF o_state = 'done' OR o_length <> p_expected THEN
        RETURN;
    END IF;
    INSERT INTO agentctx_messages (context, seq, line)
        SELECT o_id, p_expected + t.ord - 1, t.line::json
        FROM unnest(p_lines) WITH ORDINALITY AS t(line, ord);
    UPDATE agentctx_contexts SET length = p_expected + cardinality(p_lines) WHERE id = o_id;
    UPDATE agentctx_calls
        SET state = 'done', worker = p_worker, lease_until = NULL, not_before = NULL,
            error = NULL, finished_at = now(),
            result_seq = CASE WHEN cardinality(p_lines) > 0 THEN p_expected END
        WHERE context = o_id AND plan = p_plan AND call = p_call;
    PERFORM pg_notify('agentctx_calls', o_id::text);
    o_state := 'written';
END
$body$;
"#;

/// Version 5: workers are fenced (D43: fencing). `agentctx_commit_call`
/// takes the claim's token — its attempt number, which every claim
/// increments under the call row's lock, so it grows with each claim and
/// names exactly one — and appends only while the call is `running` under
/// that very claim (same attempt, same worker). A lease that ran out still
/// commits while nobody claimed the call since: the token, not the clock,
/// says whose the call is, and no other result can be on its way. A call
/// claimed again, given back, failed or done is left as it is, and the
/// commit says so (`o_fenced`) with the claim that holds the call now
/// (`o_attempts`, `o_worker`). The one exception is a commit resent after
/// a lost connection whose first sending landed: the call is done by this
/// very claim, `o_fenced` is false and the caller reports it written
/// already. Rows of version 4 need no change: their `attempts` is the
/// token. The function of version 4 is dropped, not kept beside it: a
/// worker of the older build still running would commit through it
/// unfenced, and now fails instead (it stops, its calls are taken over).
const V5: &str = r#"
DROP FUNCTION agentctx_commit_call(text, bigint, bigint, text[], bigint, integer, text);
CREATE FUNCTION agentctx_commit_call(p_name text, p_id bigint, p_expected bigint, p_lines text[],
                                     p_plan bigint, p_call integer, p_worker text,
                                     p_attempt integer,
                                     OUT o_id bigint, OUT o_length bigint, OUT o_state text,
                                     OUT o_fenced boolean, OUT o_attempts integer,
                                     OUT o_worker text)
LANGUAGE plpgsql SET search_path FROM CURRENT AS $body$
BEGIN
    o_fenced := false;
    SELECT c.id, c.length INTO o_id, o_length
        FROM agentctx_contexts c WHERE c.name = p_name FOR UPDATE;
    IF NOT FOUND THEN
        o_id := NULL;
        o_length := -1;
        o_state := 'missing';
        RETURN;
    END IF;
    IF o_id IS DISTINCT FROM p_id THEN
        o_state := 'missing';
        RETURN;
    END IF;
    SELECT k.state, k.attempts, k.worker INTO o_state, o_attempts, o_worker
        FROM agentctx_calls k
        WHERE k.context = o_id AND k.plan = p_plan AND k.call = p_call FOR UPDATE;
    IF NOT FOUND THEN
        o_state := 'unknown';
        RETURN;
    END IF;
    IF o_attempts IS DISTINCT FROM p_attempt OR o_worker IS DISTINCT FROM p_worker
       OR o_state NOT IN ('running', 'done') THEN
        o_fenced := true;
        RETURN;
    END IF;
    IF o_state = 'done' OR o_length <> p_expected THEN
        RETURN;
    END IF;
    INSERT INTO agentctx_messages (context, seq, line)
        SELECT o_id, p_expected + t.ord - 1, t.line::json
        FROM unnest(p_lines) WITH ORDINALITY AS t(line, ord);
    UPDATE agentctx_contexts SET length = p_expected + cardinality(p_lines) WHERE id = o_id;
    UPDATE agentctx_calls
        SET state = 'done', lease_until = NULL, not_before = NULL,
            error = NULL, finished_at = now(),
            result_seq = CASE WHEN cardinality(p_lines) > 0 THEN p_expected END
        WHERE context = o_id AND plan = p_plan AND call = p_call;
    PERFORM pg_notify('agentctx_calls', o_id::text);
    o_state := 'written';
END
$body$;
"#;

/// Version 6: the chain (R34e, decision D46). Each message row carries the
/// digest after it, computed by the client and sent with the line; a
/// context's `chained` counts the rows from its start whose digests are
/// set (rows older than this version get theirs from the first client
/// that reads them, `backfill.rs`). Both append functions take the digests
/// beside the lines and keep `chained` at the length when it was there.
const V6: &str = r#"
ALTER TABLE agentctx_messages ADD COLUMN digest bytea
    CHECK (digest IS NULL OR octet_length(digest) = 32);
ALTER TABLE agentctx_contexts ADD COLUMN chained bigint NOT NULL DEFAULT 0
    CHECK (chained >= 0);
DROP FUNCTION agentctx_append(text, bigint, bigint, text[]);
CREATE FUNCTION agentctx_append(p_name text, p_id bigint, p_expected bigint, p_lines text[],
                                p_digests bytea[], OUT o_id bigint, OUT o_length bigint)
LANGUAGE plpgsql SET search_path FROM CURRENT AS $body$
BEGIN
    IF cardinality(p_lines) <> cardinality(p_digests) THEN
        RAISE EXCEPTION 'agentctx_append: % lines but % digests',
            cardinality(p_lines), cardinality(p_digests);
    END IF;
    SELECT c.id, c.length INTO o_id, o_length
        FROM agentctx_contexts c WHERE c.name = p_name FOR UPDATE;
    IF NOT FOUND THEN
        o_id := NULL;
        o_length := -1;
        IF p_expected <> 0 OR p_id IS NOT NULL THEN
            RETURN;
        END IF;
        INSERT INTO agentctx_contexts (name) VALUES (p_name) ON CONFLICT (name) DO NOTHING;
        SELECT c.id, c.length INTO o_id, o_length
            FROM agentctx_contexts c WHERE c.name = p_name FOR UPDATE;
        IF NOT FOUND THEN
            o_id := NULL;
            o_length := -1;
            RETURN;
        END IF;
    END IF;
    IF o_length <> p_expected OR o_id IS DISTINCT FROM coalesce(p_id, o_id) THEN
        RETURN;
    END IF;
    INSERT INTO agentctx_messages (context, seq, line, digest)
        SELECT o_id, p_expected + t.ord - 1, t.line::json, t.digest
        FROM unnest(p_lines, p_digests) WITH ORDINALITY AS t(line, digest, ord);
    UPDATE agentctx_contexts SET length = p_expected + cardinality(p_lines),
        chained = CASE WHEN chained = p_expected THEN p_expected + cardinality(p_lines)
                       ELSE chained END
        WHERE id = o_id;
END
$body$;
DROP FUNCTION agentctx_commit_call(text, bigint, bigint, text[], bigint, integer, text, integer);
CREATE FUNCTION agentctx_commit_call(p_name text, p_id bigint, p_expected bigint, p_lines text[],
                                     p_plan bigint, p_call integer, p_worker text,
                                     p_attempt integer, p_digests bytea[],
                                     OUT o_id bigint, OUT o_length bigint, OUT o_state text,
                                     OUT o_fenced boolean, OUT o_attempts integer,
                                     OUT o_worker text)
LANGUAGE plpgsql SET search_path FROM CURRENT AS $body$
BEGIN
    IF cardinality(p_lines) <> cardinality(p_digests) THEN
        RAISE EXCEPTION 'agentctx_commit_call: % lines but % digests',
            cardinality(p_lines), cardinality(p_digests);
    END IF;
    o_fenced := false;
    SELECT c.id, c.length INTO o_id, o_length
        FROM agentctx_contexts c WHERE c.name = p_name FOR UPDATE;
    IF NOT FOUND THEN
        o_id := NULL;
        o_length := -1;
        o_state := 'missing';
        RETURN;
    END IF;
    IF o_id IS DISTINCT FROM p_id THEN
        o_state := 'missing';
        RETURN;
    END IF;
    SELECT k.state, k.attempts, k.worker INTO o_state, o_attempts, o_worker
        FROM agentctx_calls k
        WHERE k.context = o_id AND k.plan = p_plan AND k.call = p_call FOR UPDATE;
    IF NOT FOUND THEN
        o_state := 'unknown';
        RETURN;
    END IF;
    IF o_attempts IS DISTINCT FROM p_attempt OR o_worker IS DISTINCT FROM p_worker
       OR o_state NOT IN ('running', 'done') THEN
        o_fenced := true;
        RETURN;
    END IF;
    IF o_state = 'done' OR o_length <> p_expected THEN
        RETURN;
    END IF;
    INSERT INTO agentctx_messages (context, seq, line, digest)
        SELECT o_id, p_expected + t.ord - 1, t.line::json, t.digest
        FROM unnest(p_lines, p_digests) WITH ORDINALITY AS t(line, digest, ord);
    UPDATE agentctx_contexts SET length = p_expected + cardinality(p_lines),
        chained = CASE WHEN chained = p_expected THEN p_expected + cardinality(p_lines)
                       ELSE chained END
        WHERE id = o_id;
    UPDATE agentctx_calls
        SET state = 'done', lease_until = NULL, not_before = NULL,
            error = NULL, finished_at = now(),
            result_seq = CASE WHEN cardinality(p_lines) > 0 THEN p_expected END
        WHERE context = o_id AND plan = p_plan AND call = p_call;
    PERFORM pg_notify('agentctx_calls', o_id::text);
    o_state := 'written';
END
$body$;
"#;

/// Version 7: idempotent appends (D47: append keys). `agentctx_keys` holds,
/// per context, each key an append was made with and the rows it wrote
/// (and the index of its first message, which the client counts: a stored
/// line may hold several messages, R1). `agentctx_append` takes the key
/// (NULL: none) and the index of the batch's first message; under the
/// context's row lock it first forgets the context's keys older than 7
/// days, then, if the key is there, appends nothing and returns that
/// append's range with `o_already`; otherwise it appends and records the
/// key in the same transaction — so a key is there exactly when its
/// append landed. The digests parameter is as in version 6, and the two
/// new ones default to NULL, so another program's call of version 6 still
/// works (without a message index, the row's is taken). A worker's
/// commit needs no key (its claim makes it exactly-once), so
/// `agentctx_commit_call` is unchanged.
const V7: &str = r#"
CREATE TABLE agentctx_keys (
    context bigint NOT NULL REFERENCES agentctx_contexts (id) ON DELETE CASCADE,
    key text NOT NULL CHECK (octet_length(key) BETWEEN 1 AND 128),
    first_seq bigint NOT NULL CHECK (first_seq >= 0),
    end_seq bigint NOT NULL CHECK (end_seq >= first_seq),
    first_message bigint NOT NULL CHECK (first_message >= 0),
    at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (context, key)
);
CREATE INDEX agentctx_keys_at ON agentctx_keys (context, at);
DROP FUNCTION agentctx_append(text, bigint, bigint, text[], bytea[]);
CREATE FUNCTION agentctx_append(p_name text, p_id bigint, p_expected bigint, p_lines text[],
                                p_digests bytea[], p_key text DEFAULT NULL,
                                p_message bigint DEFAULT NULL,
                                OUT o_id bigint, OUT o_length bigint, OUT o_already boolean,
                                OUT o_first bigint, OUT o_end bigint, OUT o_message bigint)
LANGUAGE plpgsql SET search_path FROM CURRENT AS $body$
BEGIN
    IF cardinality(p_lines) <> cardinality(p_digests) THEN
        RAISE EXCEPTION 'agentctx_append: % lines but % digests',
            cardinality(p_lines), cardinality(p_digests);
    END IF;
    o_already := false;
    SELECT c.id, c.length INTO o_id, o_length
        FROM agentctx_contexts c WHERE c.name = p_name FOR UPDATE;
    IF NOT FOUND THEN
        o_id := NULL;
        o_length := -1;
        IF p_expected <> 0 OR p_id IS NOT NULL THEN
            RETURN;
        END IF;
        INSERT INTO agentctx_contexts (name) VALUES (p_name) ON CONFLICT (name) DO NOTHING;
        SELECT c.id, c.length INTO o_id, o_length
            FROM agentctx_contexts c WHERE c.name = p_name FOR UPDATE;
        IF NOT FOUND THEN
            o_id := NULL;
            o_length := -1;
            RETURN;
        END IF;
    END IF;
    IF o_id IS DISTINCT FROM coalesce(p_id, o_id) THEN
        RETURN;
    END IF;
    IF p_key IS NOT NULL THEN
        DELETE FROM agentctx_keys WHERE context = o_id AND at < now() - interval '7 days';
        SELECT k.first_seq, k.end_seq, k.first_message INTO o_first, o_end, o_message
            FROM agentctx_keys k WHERE k.context = o_id AND k.key = p_key;
        IF FOUND THEN
            o_already := true;
            RETURN;
        END IF;
    END IF;
    IF o_length <> p_expected THEN
        RETURN;
    END IF;
    INSERT INTO agentctx_messages (context, seq, line, digest)
        SELECT o_id, p_expected + t.ord - 1, t.line::json, t.digest
        FROM unnest(p_lines, p_digests) WITH ORDINALITY AS t(line, digest, ord);
    UPDATE agentctx_contexts SET length = p_expected + cardinality(p_lines),
        chained = CASE WHEN chained = p_expected THEN p_expected + cardinality(p_lines)
                       ELSE chained END
        WHERE id = o_id;
    IF p_key IS NOT NULL THEN
        INSERT INTO agentctx_keys (context, key, first_seq, end_seq, first_message)
            VALUES (o_id, p_key, p_expected, p_expected + cardinality(p_lines),
                    coalesce(p_message, p_expected));
    END IF;
END
$body$;
"#;

/// Version 8: the server checks the chain too. A row is inserted only with
/// its digest, and — when the row before it carries one — only when the
/// digest is SHA-256 of that digest and the line (`sha256`, PostgreSQL 11
/// and later): another program's append with a missing or wrong digest is
/// refused at once, naming the row, instead of making every later read of
/// the context fail. A row-level trigger sees the rows its own statement
/// inserted before, so a batch is checked row by row.
const V8: &str = r#"
CREATE FUNCTION agentctx_chain_check() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $body$
DECLARE
    v_before bytea;
    v_found boolean;
BEGIN
    IF NEW.digest IS NULL THEN
        RAISE EXCEPTION 'agentctx: row % of context % has no chain digest', NEW.seq, NEW.context
            USING ERRCODE = '23514';
    END IF;
    IF NEW.seq = 0 THEN
        v_before := decode(repeat('00', 32), 'hex');
        v_found := true;
    ELSE
        SELECT m.digest INTO v_before FROM agentctx_messages m
            WHERE m.context = NEW.context AND m.seq = NEW.seq - 1;
        v_found := v_before IS NOT NULL;
    END IF;
    IF v_found AND NEW.digest <> sha256(v_before || convert_to(NEW.line::text, 'UTF8')) THEN
        RAISE EXCEPTION 'agentctx: the digest of row % of context % is not SHA-256 of the row before''s digest and its line', NEW.seq, NEW.context
            USING ERRCODE = '23514';
    END IF;
    RETURN NEW;
END
$body$;
CREATE TRIGGER agentctx_messages_chain BEFORE INSERT ON agentctx_messages
    FOR EACH ROW EXECUTE PROCEDURE agentctx_chain_check();
"#;

/// Version 10: the chain trigger skips the rows of the context named by
/// `agentctx.chain_computed`, a setting agentctx's plain append (D96: the plain append) makes
/// for its own transaction: their digests were computed by agentctx from
/// rows it read and checked, and checking them again was a PL/pgSQL call
/// and an index lookup per row, a sixth of a durable append (D100: the
/// chain checked once). Every other row is checked as before. A program
/// that makes the setting has chosen to skip the check, as one that may
/// turn triggers off has; the next read still checks every row.
const V10: &str = r#"
DROP TRIGGER agentctx_messages_chain ON agentctx_messages;
CREATE TRIGGER agentctx_messages_chain BEFORE INSERT ON agentctx_messages
    FOR EACH ROW
    WHEN (pg_catalog.current_setting('agentctx.chain_computed', true)
          IS DISTINCT FROM NEW.context::text)
    EXECUTE PROCEDURE agentctx_chain_check();
"#;

/// Version 9: a snapshot's bytes are content-defined chunks, one row each
/// in `agentctx_snapshot_chunks` by position (D49: chunked snapshots), so a rewrite
/// writes only the chunks that changed. Their rows never reach TOAST
/// (`STORAGE PLAIN`, at most 2,048 bytes a chunk: `snapshot::CHUNK_MAX`), and a page is
/// filled only half by inserts: a changed chunk is updated in its page
/// (HOT), where the next access of the page prunes the old version without
/// waiting for a vacuum. `agentctx_snapshots` keeps the anchor's row count
/// and how many chunks make the snapshot; a row of an earlier version keeps
/// its `body` and is read as before until the next snapshot replaces it.
/// `agentctx_save_snapshot` writes one under the snapshot row's lock,
/// only if it is longer than the one there; a chunk sent without its bytes
/// (the writer believes it unchanged) must be stored with that hash, else
/// nothing is written and it answers `stale` (the stored bytes are hashed
/// again, so a chunk edited under its old hash is repaired, not kept).
const V9: &str = r#"
ALTER TABLE agentctx_snapshots ALTER COLUMN body DROP NOT NULL;
ALTER TABLE agentctx_snapshots ADD COLUMN chunks integer NOT NULL DEFAULT 0 CHECK (chunks >= 0);
CREATE TABLE agentctx_snapshot_chunks (
    context bigint NOT NULL REFERENCES agentctx_snapshots (context) ON DELETE CASCADE,
    slot integer NOT NULL CHECK (slot >= 0),
    hash bytea NOT NULL,
    body bytea NOT NULL,
    PRIMARY KEY (context, slot)
) WITH (fillfactor = 50, autovacuum_vacuum_scale_factor = 0.05);
ALTER TABLE agentctx_snapshot_chunks ALTER COLUMN body SET STORAGE PLAIN;
CREATE FUNCTION agentctx_save_snapshot(p_context bigint, p_rows bigint, p_hashes bytea[],
                                       p_bodies bytea[])
RETURNS text LANGUAGE plpgsql SET search_path FROM CURRENT AS $body$
DECLARE
    v_rows bigint;
    v_count integer := coalesce(cardinality(p_hashes), 0);
BEGIN
    INSERT INTO agentctx_snapshots (context, rows, body, chunks) VALUES (p_context, 0, NULL, 0)
        ON CONFLICT (context) DO NOTHING;
    SELECT s.rows INTO v_rows FROM agentctx_snapshots s WHERE s.context = p_context FOR UPDATE;
    IF v_rows >= p_rows THEN
        RETURN 'kept';
    END IF;
    IF EXISTS (SELECT 1 FROM unnest(p_hashes, p_bodies) WITH ORDINALITY AS n(hash, body, slot)
               LEFT JOIN agentctx_snapshot_chunks c
                   ON c.context = p_context AND c.slot = n.slot - 1
               WHERE n.body IS NULL AND (c.hash IS DISTINCT FROM n.hash
                   OR sha256(decode(repeat('00', 32), 'hex') || c.body) <> n.hash)) THEN
        RETURN 'stale';
    END IF;
    INSERT INTO agentctx_snapshot_chunks AS c (context, slot, hash, body)
        SELECT p_context, n.slot - 1, n.hash, n.body
        FROM unnest(p_hashes, p_bodies) WITH ORDINALITY AS n(hash, body, slot)
        WHERE n.body IS NOT NULL
        ON CONFLICT (context, slot) DO UPDATE SET hash = EXCLUDED.hash, body = EXCLUDED.body
        WHERE c.hash <> EXCLUDED.hash OR c.body <> EXCLUDED.body;
    DELETE FROM agentctx_snapshot_chunks c WHERE c.context = p_context AND c.slot >= v_count;
    UPDATE agentctx_snapshots SET rows = p_rows, body = NULL, chunks = v_count,
        written_at = now() WHERE context = p_context;
    RETURN 'saved';
END
$body$;
"#;

/// Why the schema cannot be used.
pub(crate) enum SchemaError {
    /// The server refused (or the connection failed).
    Database(tokio_postgres::Error),
    /// The database was migrated by a newer agentctx.
    Newer(i32),
}

impl From<tokio_postgres::Error> for SchemaError {
    fn from(error: tokio_postgres::Error) -> Self {
        SchemaError::Database(error)
    }
}

/// Brings the database to [`SCHEMA_VERSION`]: one query when it is there.
pub(crate) fn migrate(client: &mut Client) -> Result<(), SchemaError> {
    match applied(client) {
        Ok(version) if version == SCHEMA_VERSION => return Ok(()),
        Ok(version) if version > SCHEMA_VERSION => return Err(SchemaError::Newer(version)),
        Ok(_) => {}
        Err(e) if e.code() == Some(&SqlState::UNDEFINED_TABLE) => {}
        Err(e) => return Err(e.into()),
    }
    client.begin()?;
    let migrated = (|| -> Result<(), SchemaError> {
        client.execute(&LOCK_MIGRATIONS, &[&MIGRATION_LOCK])?;
        client.batch_execute(
            "CREATE TABLE IF NOT EXISTS agentctx_migrations (
                version integer PRIMARY KEY,
                description text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            )",
        )?;
        let version: i32 = client.query_one(&APPLIED, &[])?.try_get(0)?;
        if version > SCHEMA_VERSION {
            return Err(SchemaError::Newer(version));
        }
        for (number, description, sql) in MIGRATIONS {
            if number > version {
                client.batch_execute(sql)?;
                client.execute(&RECORD, &[&number, &description])?;
            }
        }
        client.batch_execute("COMMIT")?;
        Ok(())
    })();
    if migrated.is_err() {
        // Not committed, so nothing applied; the connection may be gone.
        let _ = client.batch_execute("ROLLBACK");
    }
    migrated
}

fn applied(client: &mut Client) -> Result<i32, tokio_postgres::Error> {
    client.query_one(&APPLIED, &[])?.try_get(0)
}
