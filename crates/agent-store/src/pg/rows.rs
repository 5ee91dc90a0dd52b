//! A context's rows as JSONL, streamed from one query.

use postgres::fallible_iterator::FallibleIterator;
use postgres::{Client, RowIter};
use std::io::{self, BufRead, Read};

/// The lines of one context from `seq` on, as a [`BufRead`] of JSONL: the
/// rows arrive as the server sends them, one line in memory at a time.
pub(crate) struct Lines<'c> {
    rows: RowIter<'c>,
    line: Vec<u8>,
    at: usize,
    /// Whether any row came: none means the context does not exist.
    exists: bool,
    /// Lines read (rows with a line; an empty context sends one NULL).
    count: usize,
    /// The error that ended the stream, kept so the caller gets it typed.
    failed: Option<postgres::Error>,
}

impl<'c> Lines<'c> {
    /// Starts the query `sql` (parameters: the context's name, the first
    /// seq) on `client`.
    pub(crate) fn query(
        client: &'c mut Client,
        sql: &str,
        name: &str,
        from: i64,
    ) -> Result<Lines<'c>, postgres::Error> {
        let params: [&(dyn postgres::types::ToSql + Sync); 2] = [&name, &from];
        let rows = client.query_raw(sql, params)?;
        Ok(Lines {
            rows,
            line: Vec::new(),
            at: 0,
            exists: false,
            count: 0,
            failed: None,
        })
    }

    /// Reads every line into `into`. Returns `None` when the context does
    /// not exist, else how many lines were read.
    pub(crate) fn read_all(
        client: &mut Client,
        sql: &str,
        name: &str,
        from: i64,
        into: &mut Vec<u8>,
    ) -> Result<Option<usize>, postgres::Error> {
        let mut lines = Lines::query(client, sql, name, from)?;
        // Reading rows fails only on a database error, which `finish` returns.
        let _ = lines.read_to_end(into);
        lines.finish()
    }

    /// Ends reading: the database error that stopped it, if any, else
    /// `None` when the context does not exist, else the number of lines.
    pub(crate) fn finish(self) -> Result<Option<usize>, postgres::Error> {
        match self.failed {
            Some(error) => Err(error),
            None => Ok(self.exists.then_some(self.count)),
        }
    }
}

impl BufRead for Lines<'_> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        while self.at >= self.line.len() {
            let row = match self.rows.next() {
                Ok(Some(row)) => row,
                Ok(None) => return Ok(&[]),
                Err(error) => {
                    self.failed = Some(error);
                    return Err(io::Error::other("reading from the database failed"));
                }
            };
            self.exists = true;
            let text: Option<&str> = match row.try_get(0) {
                Ok(text) => text,
                Err(error) => {
                    self.failed = Some(error);
                    return Err(io::Error::other("reading from the database failed"));
                }
            };
            self.line.clear();
            self.at = 0;
            if let Some(text) = text {
                self.count += 1;
                // A `json` value may hold newlines between tokens (never
                // inside a string): as spaces, it stays one JSONL line.
                self.line
                    .extend(text.bytes().map(|b| if b == b'\n' { b' ' } else { b }));
                self.line.push(b'\n');
            }
        }
        Ok(&self.line[self.at..])
    }

    fn consume(&mut self, amount: usize) {
        self.at += amount;
    }
}

impl Read for Lines<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(out.len());
        out[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}
