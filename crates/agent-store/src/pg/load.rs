//! Reading a context: its row id, the whole log, and the rows after a
//! length (catching up). Every read is one streamed query of the rows in
//! order; reading from a snapshot is in `snapshot.rs`.

use super::PgStore;
use super::rows::{Lines, ReadFailure, Start};
use super::sql::{DIGEST, FIND, NAMES, TAIL};
use crate::snapshot::Since;
use crate::{Error, Result};
use agent_data::{Context, Digest, Loaded, Position};

/// The most names [`PgStore::context_names`] returns at once.
pub const MAX_NAMES: usize = 10_000;

impl PgStore {
    /// One page of the names of the contexts in this store's database (its
    /// schema, as the URL's `search_path` says), in order: those after
    /// `after` (`""` for the first page), at most `limit` of them (up to
    /// [`MAX_NAMES`]). A page costs the same however many contexts there
    /// are: the next page starts after the last name of this one.
    ///
    /// ```no_run
    /// let mut store = agent_store::PgStore::open("postgres://root@127.0.0.1:5432/test?context=any")?;
    /// let mut after = String::new();
    /// loop {
    ///     let page = store.context_names(&after, 100)?;
    ///     let Some(last) = page.last() else { break };
    ///     after = last.clone();
    ///     println!("{}", page.join("\n"));
    /// }
    /// # Ok::<(), agent_store::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Database`] when it cannot connect or read.
    pub fn context_names(&mut self, after: &str, limit: usize) -> Result<Vec<String>> {
        self.lent(|store| store.names_after(after, limit))
    }

    fn names_after(&mut self, after: &str, limit: usize) -> Result<Vec<String>> {
        let limit = i64::try_from(limit.min(MAX_NAMES)).unwrap_or(0);
        let client = self.client()?;
        let rows = client.query(&NAMES, &[&after, &limit]);
        self.trips += 1;
        let rows = rows.map_err(|e| self.read_error(&e))?;
        rows.iter()
            .map(|row| row.try_get::<_, String>(0))
            .collect::<Result<_, _>>()
            .map_err(|e| self.read_error(&e))
    }

    /// The context's id: `None` while it does not exist. Finding it, rows
    /// older than schema version 6 get their digests (`backfill.rs`).
    pub(super) fn id(&mut self) -> Result<Option<i64>> {
        if self.id.is_none() {
            let name = self.address.context.clone();
            let client = self.client()?;
            let found = client.query_opt(&FIND, &[&name]);
            self.trips += 1;
            let row = found.map_err(|e| self.read_error(&e))?;
            let Some(row) = row else {
                return Ok(None);
            };
            let read = (|| {
                Ok::<_, tokio_postgres::Error>((
                    row.try_get::<_, i64>(0)?,
                    row.try_get::<_, i64>(1)?,
                    row.try_get::<_, i64>(2)?,
                ))
            })();
            let (id, chained, length) = read.map_err(|e| self.read_error(&e))?;
            let (chained, length) = (to_u64(chained), to_u64(length));
            self.counted = length;
            self.chained = if chained < length {
                match self.backfill(id, chained) {
                    Ok(chained) => chained,
                    // A role that may only read, or a standby: the rows
                    // from `chained` on are read without digests, as
                    // before (nothing to check them against).
                    Err(Error::Database { reason, .. })
                        if reason.contains("SQLSTATE 42501")
                            || reason.contains("SQLSTATE 25006") =>
                    {
                        chained
                    }
                    Err(e) => return Err(e),
                }
            } else {
                chained
            };
            self.id = Some(id);
        }
        Ok(self.id)
    }

    /// Fails when fewer rows were read than the context counted when it
    /// was found: rows at its end were deleted.
    pub(super) fn check_counted(&self) -> Result<()> {
        let read = self.rows as u64;
        if read >= self.counted {
            return Ok(());
        }
        Err(Error::Tampered {
            name: self.address.shown.clone(),
            position: read,
            what: format!(
                "rows {read} to {} are missing (the context counts {}): deleted",
                self.counted - 1,
                self.counted
            ),
        })
    }

    /// The digest stored with row `seq` of context `id`: `None` when the
    /// row is not there or carries none (or not 32 bytes). A failure names
    /// `action`.
    pub(super) fn stored_digest(
        &mut self,
        id: i64,
        seq: i64,
        action: &'static str,
    ) -> Result<Option<Digest>> {
        let client = self.client()?;
        let stored: Option<Vec<u8>> = client
            .query_opt(&DIGEST, &[&id, &seq])
            .inspect(|_| self.trips += 2)
            .and_then(|row| row.map(|row| row.try_get(0)).transpose())
            .map_err(|e| self.database(action, &e))?
            .flatten();
        Ok(stored.as_deref().and_then(Digest::from_slice))
    }

    /// Forgets what this handle read: the next read starts from nothing.
    pub(super) fn forget(&mut self) {
        (self.id, self.rows, self.messages) = (None, 0, 0);
        (self.head, self.counted) = (Digest::GENESIS, 0);
    }

    /// Reads the lines from `from` on into `into`, checking them against
    /// the chain (from `head`, the digest before them, when known): `None`
    /// when the context does not exist, else how many and the digest after
    /// the last.
    pub(super) fn read(
        &mut self,
        from: usize,
        head: Option<Digest>,
        into: &mut Vec<u8>,
    ) -> Result<Option<(usize, Option<Digest>)>> {
        let Some(id) = self.id()? else {
            return Ok(None);
        };
        let from = Start {
            seq: from as u64,
            head,
            chained: self.chained,
        };
        let client = self.client()?;
        let result = Lines::read_all(client, &TAIL, id, from, into);
        self.trips += 1;
        result.map(Some).map_err(|e| self.read_failure(e))
    }

    /// A failed read of rows: the database's error, or rows that do not
    /// chain.
    pub(super) fn read_failure(&self, failure: ReadFailure) -> Error {
        match failure {
            ReadFailure::Database(e) => self.read_error(&e),
            ReadFailure::Chain { position, what } => Error::Tampered {
                name: self.address.shown.clone(),
                position,
                what,
            },
        }
    }

    /// [`Store::load`](crate::Store::load): the whole context, from its
    /// first row.
    pub(super) fn load_all(&mut self) -> Result<Loaded> {
        let shown = self.address.shown.clone();
        self.forget();
        let Some(id) = self.id()? else {
            return Err(Error::Missing { name: shown });
        };
        let from = Start {
            seq: 0,
            head: Some(Digest::GENESIS),
            chained: self.chained,
        };
        let client = self.client()?;
        let (loaded, read) = match Lines::query(client, &TAIL, id, from) {
            Ok(mut lines) => {
                let loaded = Context::load_jsonl_reader(&mut lines, &shown);
                (Some(loaded), lines.finish())
            }
            Err(e) => (None, Err(ReadFailure::Database(e))),
        };
        let (_, head) = read.map_err(|e| self.read_failure(e))?;
        let Some(loaded) = loaded else {
            return Err(Error::Missing { name: shown });
        };
        let loaded = loaded.map_err(|source| Error::Load {
            name: shown,
            source: Box::new(source),
        })?;
        self.rows = loaded.items;
        self.messages = loaded.context.len();
        self.head = head.unwrap_or(Digest::GENESIS);
        self.check_counted()?;
        // No snapshot was read: the whole context is the tail.
        self.since = Since::default();
        self.since.add(self.messages, loaded.end.offset as u64);
        Ok(loaded)
    }

    /// [`Store::catch_up`](crate::Store::catch_up): the rows after those
    /// this handle read or appended.
    pub(super) fn catch_up_rows(&mut self, context: &mut Context) -> Result<()> {
        self.check_position(context.len())?;
        let mut tail = Vec::new();
        let head = match self.read(self.rows, Some(self.head), &mut tail)? {
            Some((_, head)) => head.unwrap_or(self.head),
            // Not created yet: nothing to catch up with.
            None if self.rows == 0 => return Ok(()),
            None => {
                return Err(Error::Replaced {
                    name: self.address.shown.clone(),
                    what: "deleted",
                });
            }
        };
        let at = Position {
            line: self.rows,
            offset: 0,
        };
        let extended = context
            .extend_jsonl(&tail, at)
            .map_err(|source| Error::Load {
                name: self.address.shown.clone(),
                source: Box::new(source),
            })?;
        // The head moves with the rows, once they loaded.
        self.rows += extended.items;
        self.head = head;
        self.since
            .add(context.len() - self.messages, tail.len() as u64);
        self.messages = context.len();
        Ok(())
    }
}

/// A count from the database (never negative: the tables check it).
pub(super) fn to_u64(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}
