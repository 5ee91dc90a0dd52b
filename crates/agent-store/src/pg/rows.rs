//! A context's rows as JSONL, streamed from one query.

use super::client::{Client, RowIter};
use std::io::{self, BufRead, Read};
use tokio_postgres::Statement;

/// The lines of one context from `seq` on, as a [`BufRead`] of JSONL: the
/// rows arrive as the server sends them, one line in memory at a time.
pub(crate) struct Lines<'c> {
    rows: RowIter<'c>,
    line: Vec<u8>,
    at: usize,
    /// Lines read.
    count: usize,
    /// The rows have ended (asking the client again would be an error).
    done: bool,
    /// The error that ended the stream, kept so the caller gets it typed.
    failed: Option<tokio_postgres::Error>,
}

impl<'c> Lines<'c> {
    /// Starts reading the lines of context `id` from `seq` on, in order,
    /// with the prepared `tail` statement.
    pub(crate) fn query(
        client: &'c mut Client,
        tail: &Statement,
        id: i64,
        from: i64,
    ) -> Result<Lines<'c>, tokio_postgres::Error> {
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 2] = [&id, &from];
        let rows = client.query_raw(tail, params)?;
        Ok(Lines {
            rows,
            line: Vec::new(),
            at: 0,
            count: 0,
            done: false,
            failed: None,
        })
    }

    /// Reads every line into `into`; returns how many were read.
    pub(crate) fn read_all(
        client: &mut Client,
        tail: &Statement,
        id: i64,
        from: i64,
        into: &mut Vec<u8>,
    ) -> Result<usize, tokio_postgres::Error> {
        let mut lines = Lines::query(client, tail, id, from)?;
        // Reading rows fails only on a database error, which `finish` returns.
        let _ = lines.read_to_end(into);
        lines.finish()
    }

    /// Ends reading: the database error that stopped it, if any, else the
    /// number of lines read.
    pub(crate) fn finish(self) -> Result<usize, tokio_postgres::Error> {
        match self.failed {
            Some(error) => Err(error),
            None => Ok(self.count),
        }
    }
}

impl BufRead for Lines<'_> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        while self.at >= self.line.len() {
            if self.done {
                return Ok(&[]);
            }
            let row = match self.rows.next() {
                Ok(Some(row)) => row,
                Ok(None) => {
                    self.done = true;
                    return Ok(&[]);
                }
                Err(error) => {
                    self.done = true;
                    self.failed = Some(error);
                    return Err(io::Error::other("reading from the database failed"));
                }
            };
            let text: &str = match row.try_get(0) {
                Ok(text) => text,
                Err(error) => {
                    self.done = true;
                    self.failed = Some(error);
                    return Err(io::Error::other("reading from the database failed"));
                }
            };
            self.line.clear();
            self.at = 0;
            self.count += 1;
            // A `json` value may hold newlines between tokens (never inside
            // a string): as spaces, it stays one JSONL line.
            self.line
                .extend(text.bytes().map(|b| if b == b'\n' { b' ' } else { b }));
            self.line.push(b'\n');
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
