//! Snapshots of a context in PostgreSQL (schema version 3): resuming from
//! the newest one and the rows after it, and writing one. A snapshot is a
//! cache: it is used only when its row count and the checksum of the last
//! row it summarises match the rows, else the whole context is read.

use super::PgStore;
use super::sql::{LINE, SAVE_SNAPSHOT, SNAPSHOT};
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
        let last = anchor
            .get("last")
            .and_then(serde_json::Value::as_str)
            .and_then(|hex| u64::from_str_radix(hex, 16).ok());
        let (Some(last), Ok(count)) = (last, usize::try_from(rows)) else {
            return Ok(None);
        };
        if count == 0 || anchor.get("rows").and_then(serde_json::Value::as_i64) != Some(rows) {
            return Ok(None);
        }
        // The last row the snapshot summarises, then the tail.
        let mut tail = Vec::new();
        self.read(count - 1, &mut tail)?;
        let Some(newline) = tail.iter().position(|&b| b == b'\n') else {
            return Ok(None);
        };
        if snapshot::checksum(&tail[..newline]) != last {
            return Ok(None);
        }
        let after = &tail[newline + 1..];
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
        let (Some(id), Some(last)) = (self.id, self.rows.checked_sub(1)) else {
            return Ok(());
        };
        let rows = i64::try_from(self.rows).unwrap_or(i64::MAX);
        let last = i64::try_from(last).unwrap_or(i64::MAX);
        let (client, _) = self.session()?;
        let line: String = client
            .query_one(LINE, &[&id, &last])
            .inspect(|_| self.trips += 2)
            .and_then(|row| row.try_get(0))
            .map_err(|e| self.read_error(&e))?;
        let anchor = serde_json::json!({
            "rows": rows,
            "last": format!("{:016x}", snapshot::checksum(line.as_bytes())),
        });
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
