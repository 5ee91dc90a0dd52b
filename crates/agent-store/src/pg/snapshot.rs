//! Snapshots of a context in PostgreSQL (schema versions 3 and 9):
//! resuming from the newest one and the rows after it, and writing one. A
//! snapshot is a cache: it is used only when its checksum holds and the
//! chain digest it carries is the digest stored with the last row it
//! summarises (R34e), else the whole context is read. The rows after it
//! are checked against the chain from there.
//!
//! Its sealed bytes are stored as content-defined chunks (D49: chunked snapshots):
//! cut where the bytes themselves say (`fastcdc`), so a change in one place
//! moves no cut far from it, and a rewrite sends and writes only the chunks
//! that changed — the dead versions it leaves are about the size of what
//! changed, not of the snapshot. The chunks are opaque bytes; whatever
//! shape the snapshot's format takes, a missing, damaged or planted chunk
//! only fails the checksum or the digest, and the log is read instead.

use super::PgStore;
use super::sql::{SAVE_SNAPSHOT, SNAPSHOT};
use crate::snapshot::{self, Since};
use crate::{Error, Result};
use agent_data::{Context, Digest, Loaded, Position};

/// The smallest chunk, but for a snapshot's last.
const CHUNK_MIN: usize = 256;

/// The size chunks are cut at on average: small enough that a change
/// rewrites little, large enough that a row's overhead (about 70 bytes
/// with its index entry) stays small beside it.
const CHUNK_AVERAGE: usize = 1024;

/// The largest chunk: its row stays under the 2 kB at which PostgreSQL
/// would compress it or move it to TOAST (schema version 9 also forbids
/// that), so a changed chunk can be updated in its page.
pub(super) const CHUNK_MAX: usize = 2048;

/// The chunks of `sealed`, in order.
fn chunks(sealed: &[u8]) -> impl Iterator<Item = &[u8]> {
    fastcdc::v2020::FastCDC::new(sealed, CHUNK_MIN, CHUNK_AVERAGE, CHUNK_MAX)
        .map(move |chunk| &sealed[chunk.offset..chunk.offset + chunk.length])
}

/// What a chunk is known by: SHA-256 of 32 zero bytes and the chunk.
fn chunk_hash(chunk: &[u8]) -> Digest {
    Digest::GENESIS.next(chunk)
}

/// A snapshot as stored: the rows it says it summarises, its sealed bytes.
pub(super) struct Stored {
    pub(super) rows: i64,
    pub(super) sealed: Vec<u8>,
}

impl PgStore {
    /// The snapshot of context `id`, if there is one whose chunks are all
    /// there; remembers the hashes of the chunks read, so the next write
    /// sends only those that differ.
    pub(super) fn read_snapshot(&mut self, id: i64) -> Result<Option<Stored>> {
        let client = self.client()?;
        let rows = client
            .query(&SNAPSHOT, &[&id])
            .inspect(|_| self.trips += 2)
            .map_err(|e| self.read_error(&e))?;
        self.chunks.clear();
        let Some(first) = rows.first() else {
            return Ok(None);
        };
        let head = (|| {
            let rows: i64 = first.try_get(0)?;
            let body: Option<Vec<u8>> = first.try_get(1)?;
            let count: i32 = first.try_get(2)?;
            Ok::<_, tokio_postgres::Error>((rows, body, count))
        })();
        let (summarised, body, count) = head.map_err(|e| self.read_error(&e))?;
        if let Some(sealed) = body {
            // Written before schema version 9: the whole body in its row.
            return Ok(Some(Stored {
                rows: summarised,
                sealed,
            }));
        }
        let mut sealed = Vec::new();
        let mut hashes = Vec::new();
        for (expected, row) in rows.iter().enumerate() {
            let chunk = (|| {
                let slot: Option<i32> = row.try_get(3)?;
                let body: Option<Vec<u8>> = row.try_get(4)?;
                Ok::<_, tokio_postgres::Error>(slot.zip(body))
            })();
            let Some((slot, body)) = chunk.map_err(|e| self.read_error(&e))? else {
                return Ok(None);
            };
            if usize::try_from(slot).ok() != Some(expected) {
                return Ok(None);
            }
            hashes.push(chunk_hash(&body));
            sealed.extend_from_slice(&body);
        }
        if usize::try_from(count).ok() != Some(hashes.len()) || hashes.is_empty() {
            return Ok(None);
        }
        self.chunks = hashes;
        Ok(Some(Stored {
            rows: summarised,
            sealed,
        }))
    }

    /// Opens the context `id` from its snapshot and the rows after it;
    /// `None` when there is none or it does not match the rows (then the
    /// whole context is read).
    pub(super) fn resume(&mut self, id: i64) -> Result<Option<Loaded>> {
        let Some(Stored { rows, sealed }) = self.read_snapshot(id)? else {
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
        if count == 0 || anchor.get("rows").and_then(agent_core::json::Value::as_i64) != Some(rows)
        {
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
        let anchor = agent_core::json!({"rows": rows});
        let body = context.snapshot(&anchor).map_err(|source| Error::Load {
            name: self.address.shown.clone(),
            source: Box::new(source),
        })?;
        let sealed = snapshot::seal(body);
        let pieces: Vec<&[u8]> = chunks(&sealed).collect();
        let hashes: Vec<Digest> = pieces.iter().map(|chunk| chunk_hash(chunk)).collect();
        let hash_bytes: Vec<&[u8]> = hashes.iter().map(|h| &h.as_bytes()[..]).collect();
        // Only the chunks that differ from what this handle last read or
        // wrote; when another writer changed them since, the server says
        // so (`stale`) and every chunk is sent.
        let mut known = std::mem::take(&mut self.chunks);
        let outcome = loop {
            let bodies: Vec<Option<&[u8]>> = pieces
                .iter()
                .zip(&hashes)
                .enumerate()
                .map(|(i, (chunk, hash))| (known.get(i) != Some(hash)).then_some(*chunk))
                .collect();
            let client = self.client()?;
            let outcome: String = client
                .query_one(&SAVE_SNAPSHOT, &[&id, &rows, &hash_bytes, &bodies])
                .inspect(|_| self.trips += 2)
                .and_then(|row| row.try_get(0))
                .map_err(|e| self.database("write a snapshot of", &e))?;
            if outcome != "stale" || known.is_empty() {
                break outcome;
            }
            known.clear();
        };
        // After `kept` the chunks stored are another writer's.
        if outcome == "saved" {
            self.chunks = hashes;
        }
        self.since = Since::taken(sealed.len());
        Ok(())
    }
}
