//! Reading a context: its row id, the whole log, and the rows after a
//! length (catching up). Every read is one streamed query of the rows in
//! order; reading from a snapshot is in `snapshot.rs`.

use super::PgStore;
use super::rows::Lines;
use crate::snapshot::Since;
use crate::{Error, Result};
use agent_data::{Context, Loaded, Position};

impl PgStore {
    /// The context's id: `None` while it does not exist.
    pub(super) fn id(&mut self) -> Result<Option<i64>> {
        if self.id.is_none() {
            let name = self.address.context.clone();
            let (client, statements) = self.session()?;
            let found = client.query_opt(&statements.find, &[&name]);
            self.trips += 1;
            let row = found.map_err(|e| self.read_error(&e))?;
            self.id = match row {
                Some(row) => Some(row.try_get(0).map_err(|e| self.read_error(&e))?),
                None => None,
            };
        }
        Ok(self.id)
    }

    /// Reads the lines from `from` on into `into`: `None` when the context
    /// does not exist, else how many.
    pub(super) fn read(&mut self, from: usize, into: &mut Vec<u8>) -> Result<Option<usize>> {
        let Some(id) = self.id()? else {
            return Ok(None);
        };
        let from = i64::try_from(from).unwrap_or(i64::MAX);
        let (client, statements) = self.session()?;
        let result = Lines::read_all(client, &statements.tail, id, from, into);
        self.trips += 1;
        result.map(Some).map_err(|e| self.read_error(&e))
    }

    /// [`Store::load`](crate::Store::load): the whole context, from its
    /// first row.
    pub(super) fn load_all(&mut self) -> Result<Loaded> {
        let shown = self.address.shown.clone();
        (self.id, self.rows, self.messages) = (None, 0, 0);
        let Some(id) = self.id()? else {
            return Err(Error::Missing { name: shown });
        };
        let (client, statements) = self.session()?;
        let (loaded, read) = match Lines::query(client, &statements.tail, id, 0) {
            Ok(mut lines) => {
                let loaded = Context::load_jsonl_reader(&mut lines, &shown);
                (Some(loaded), lines.finish())
            }
            Err(e) => (None, Err(e)),
        };
        read.map_err(|e| self.read_error(&e))?;
        let Some(loaded) = loaded else {
            return Err(Error::Missing { name: shown });
        };
        let loaded = loaded.map_err(|source| Error::Load {
            name: shown,
            source: Box::new(source),
        })?;
        self.rows = loaded.items;
        self.messages = loaded.context.len();
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
        match self.read(self.rows, &mut tail)? {
            Some(_) => {}
            // Not created yet: nothing to catch up with.
            None if self.rows == 0 => return Ok(()),
            None => {
                return Err(Error::Replaced {
                    name: self.address.shown.clone(),
                    what: "deleted",
                });
            }
        }
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
        self.rows += extended.items;
        self.since
            .add(context.len() - self.messages, tail.len() as u64);
        self.messages = context.len();
        Ok(())
    }
}
