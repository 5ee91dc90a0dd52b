//! Which calls' rows changed since a worker last read them (D113:
//! incremental rounds): every row carries the transaction that last wrote
//! it, and a reader keeps the oldest transaction its read could not see.

use super::sql::Sql;
use tokio_postgres::types::Type;

/// Version 11. `changed` is the id (`txid_current()`, 64 bits, never
/// wrapping) of the transaction that last inserted or updated the row,
/// set by a trigger so every writer keeps it — each statement that claims,
/// renews or gives back, and the commit function — without naming it. Indexed with the plan, so a
/// reader's query reads only what changed (each update now changes an
/// indexed column, which rules out HOT updates of these rows: a round
/// reading O(changes) instead of O(calls) is worth the index churn).
/// Each statement may run again over its own result (a database put back
/// to an earlier version by hand keeps what later versions added).
pub(super) const V11: &str = r#"
ALTER TABLE agentctx_calls ADD COLUMN IF NOT EXISTS changed bigint NOT NULL DEFAULT 0;
CREATE OR REPLACE FUNCTION agentctx_calls_changed() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
    NEW.changed := pg_catalog.txid_current();
    RETURN NEW;
END
$body$;
DROP TRIGGER IF EXISTS agentctx_calls_changed ON agentctx_calls;
CREATE TRIGGER agentctx_calls_changed BEFORE INSERT OR UPDATE ON agentctx_calls
    FOR EACH ROW EXECUTE PROCEDURE agentctx_calls_changed();
CREATE INDEX IF NOT EXISTS agentctx_calls_changed ON agentctx_calls (context, plan, changed);
"#;

/// The rows of plan `$2` written by transactions from `$3` on, and the
/// horizon for the next read: the oldest transaction this read's snapshot
/// could not see (`txid_snapshot_xmin`). Every transaction older than it
/// had ended when the read began, so its rows are in this read or an
/// earlier one; a transaction still running then has an id at or past it
/// and is read next time. The horizon comes from a one-row subquery joined
/// on the left, so a read that finds no changed row still returns it
/// (with a NULL call).
pub(super) const ROWS_CHANGED: Sql = Sql {
    text: "SELECT k.call, k.state, k.worker, k.attempts, to_json(k.claimed_at) #>> '{}', \
     extract(epoch FROM k.lease_until - now())::float8, \
     extract(epoch FROM k.not_before - now())::float8, k.error, h.horizon \
     FROM (SELECT txid_snapshot_xmin(txid_current_snapshot()) AS horizon) h \
     LEFT JOIN agentctx_calls k ON k.context = $1 AND k.plan = $2 AND k.changed >= $3 \
     ORDER BY k.call",
    types: &[Type::INT8, Type::INT8, Type::INT8],
};
