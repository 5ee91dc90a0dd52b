//! Snapshots of a context in PostgreSQL (schema version 3): resuming from
//! the newest one and the rows after it, and writing one. A snapshot is a
//! cache: it is used only when the chain digest it carries is the digest
//! stored with the last row it summarises (R34e), else the whole context
//! is read. The rows after it are checked against the chain from there.

use super::PgStore;
use super::sql::{SAVE_SNAPSHOT, SNAPSHOT};
use crate::snapshot::{self, Since};
use crate::{Error, Result};
use agent_data::{Context, Loaded, Position};

impl PgStore {
    /// Opens the context `id` from its snapshot and the rows after it;
    /// `None` when there is none or it does not match the rows (then the
    /// whole context is read).
    pub(super) fn resume(&mut self, id: i64) -> Result<Option<Loaded>> {
        let (client, _) = self.session()?;
        let found = client
            .query_opt(SNAPSHOT, &[&id])
            .inspect(|_| self.trips += 2)
            .and_then(|row| {
                row.map(|row| Ok((row.try_get::<_, i64>(0)?, row.try_get::<_, Vec<u8>>(1)?)))
                    .transpose()
            })
            .map_err(|e| self.read_error(&e))?;
        let Some((rows, sealed)) = found else {
            return Ok(None);
        };
        let Some((mut context, anchor)) =
            snapshot::unseal(&sealed).and_then(|body| Context::from_snapshot(body).ok())
        else {
            return Ok(None);
        };
        let Ok(count) = usize::try_from(rows) else {
            return Ok(None);
        };
        if count == 0 || anchor.get("rows").and_then(serde_json::Value::as_i64) != Some(rows) {
            return Ok(None);
        }
        // The digest stored with the last row it summarises, then the tail
        // checked against the chain from there.
        let stored = self.stored_digest(id, rows - 1, "read")?;
        if stored != Some(context.head()) {
            return Ok(None);
        }
        let mut after = Vec::new();
        let Some((_, head)) = self.read(count, Some(context.head()), &mut after)? else {
            return Ok(None);
        };
        let after = after.as_slice();
        let extended = context
            .extend_jsonl(
                after,
                Position {
                    line: count,
                    offset: 0,
                },
            )
            .map_err(|source| Error::Load {
                name: self.address.shown.clone(),
                source: Box::new(source),
            })?;
        let summarised = context.len();
        self.rows = count + extended.items;
        self.head = head.unwrap_or(context.head());
        self.check_counted()?;
        self.messages = context.len();
        self.since = Since::taken(sealed.len());
        self.since
            .add(self.messages - summarised, after.len() as u64);
        Ok(Some(Loaded {
            context,
            warnings: extended.warnings,
            end: Position {
                line: self.rows,
                offset: 0,
            },
            items: self.rows,
            unterminated: false,
        }))
    }

    /// Stores a snapshot of `context`, which holds every row read or
    /// appended through this handle.
    pub(super) fn write_snapshot(&mut self, context: &Context) -> Result<()> {
        self.check_position(context.len())?;
        let Some(id) = self.id.filter(|_| self.rows > 0) else {
            return Ok(());
        };
        let rows = i64::try_from(self.rows).unwrap_or(i64::MAX);
        // The body carries the chain digest after the last row: a reader
        // checks it against that row's.
        let anchor = serde_json::json!({"rows": rows});
        let body = context.snapshot(&anchor).map_err(|source| Error::Load {
            name: self.address.shown.clone(),
            source: Box::new(source),
        })?;
        let sealed = snapshot::seal(body);
        let (client, _) = self.session()?;
        client
            .execute(SAVE_SNAPSHOT, &[&id, &rows, &sealed])
            .inspect(|_| self.trips += 2)
            .map_err(|e| self.database("write a snapshot of", &e))?;
        self.since = Since::taken(sealed.len());
        Ok(())
    }
}
