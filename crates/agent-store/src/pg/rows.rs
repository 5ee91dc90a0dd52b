//! A context's rows as JSONL, streamed from one query, each row checked
//! against the chain (R34e) as it arrives: rows must follow each other
//! without a gap, and each row's digest must be SHA-256 of the digest
//! before it and its line. A row that breaks either ends the read.

use super::client::{Client, RowIter};
use super::sql::Sql;
use agent_data::Digest;
use std::io::{self, BufRead, Read};

/// Why reading rows stopped before their end.
#[derive(Debug)]
pub(crate) enum ReadFailure {
    /// The database failed.
    Database(tokio_postgres::Error),
    /// The rows do not chain: `what` happened at row `position`.
    Chain {
        /// The first row that does not match.
        position: u64,
        /// What is wrong there.
        what: String,
    },
}

impl From<tokio_postgres::Error> for ReadFailure {
    fn from(error: tokio_postgres::Error) -> Self {
        ReadFailure::Database(error)
    }
}

/// Where reading starts: the first row's position, and the digest before
/// it when known (reading from row 0 it is the genesis; a snapshot's
/// anchor row is read to learn it).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Start {
    /// The first row wanted.
    pub(crate) seq: u64,
    /// The chain digest before it, if known: then the first row is
    /// checked too.
    pub(crate) head: Option<Digest>,
    /// Rows before this position must carry a digest (`chained`).
    pub(crate) chained: u64,
}

/// The lines of one context from a position on, as a [`BufRead`] of JSONL:
/// the rows arrive as the server sends them, one line in memory at a time.
pub(crate) struct Lines<'c> {
    rows: RowIter<'c>,
    line: Vec<u8>,
    at: usize,
    /// Lines read.
    count: usize,
    /// The row expected next, and the digest after the last row read.
    next: u64,
    head: Option<Digest>,
    chained: u64,
    /// The rows have ended (asking the client again would be an error).
    done: bool,
    /// What ended the stream, kept so the caller gets it typed.
    failed: Option<ReadFailure>,
}

impl<'c> Lines<'c> {
    /// Starts reading the lines of context `id` from `from` on, in order,
    /// with the `tail` statement.
    pub(crate) fn query(
        client: &'c mut Client,
        tail: &Sql,
        id: i64,
        from: Start,
    ) -> Result<Lines<'c>, tokio_postgres::Error> {
        let seq = i64::try_from(from.seq).unwrap_or(i64::MAX);
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 2] = [&id, &seq];
        let rows = client.query_raw(tail, params)?;
        Ok(Lines {
            rows,
            line: Vec::new(),
            at: 0,
            count: 0,
            next: from.seq,
            head: from.head,
            chained: from.chained,
            done: false,
            failed: None,
        })
    }

    /// Reads every line into `into`; returns how many were read and the
    /// digest after the last.
    pub(crate) fn read_all(
        client: &mut Client,
        tail: &Sql,
        id: i64,
        from: Start,
        into: &mut Vec<u8>,
    ) -> Result<(usize, Option<Digest>), ReadFailure> {
        let mut lines = Lines::query(client, tail, id, from)?;
        // Reading rows fails only as `finish` says.
        let _ = lines.read_to_end(into);
        lines.finish()
    }

    /// Ends reading: what stopped it, if anything, else the number of lines
    /// read and the digest after the last.
    pub(crate) fn finish(self) -> Result<(usize, Option<Digest>), ReadFailure> {
        match self.failed {
            Some(failure) => Err(failure),
            None => Ok((self.count, self.head)),
        }
    }

    fn fail(&mut self, failure: ReadFailure) -> io::Error {
        self.done = true;
        self.failed = Some(failure);
        io::Error::other("reading the rows failed")
    }

    /// Checks one row against the chain; the digest after it.
    fn chain(&mut self, seq: i64, text: &str, stored: Option<&[u8]>) -> Result<(), ReadFailure> {
        let position = u64::try_from(seq).unwrap_or(0);
        if position != self.next {
            return Err(ReadFailure::Chain {
                position: self.next,
                what: format!(
                    "row {} is missing (the next row is {position}): deleted",
                    self.next
                ),
            });
        }
        let stored = match stored.map(Digest::from_slice) {
            Some(Some(digest)) => Some(digest),
            Some(None) => {
                return Err(ReadFailure::Chain {
                    position,
                    what: "its digest is not 32 bytes".into(),
                });
            }
            None if position < self.chained => {
                return Err(ReadFailure::Chain {
                    position,
                    what: "its digest was removed".into(),
                });
            }
            None => None,
        };
        let computed = self.head.map(|head| head.next(text.as_bytes()));
        if let (Some(computed), Some(stored)) = (computed, stored)
            && computed != stored
        {
            return Err(ReadFailure::Chain {
                position,
                what: "it does not chain from the row before: it or a row before it was \
                       edited, or rows were inserted or reordered"
                    .into(),
            });
        }
        self.head = computed.or(stored);
        self.next = position + 1;
        Ok(())
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
                Err(error) => return Err(self.fail(error.into())),
            };
            let read = (|| {
                Ok::<_, tokio_postgres::Error>((
                    row.try_get::<_, i64>(0)?,
                    row.try_get::<_, &str>(1)?,
                    row.try_get::<_, Option<&[u8]>>(2)?,
                ))
            })();
            let (seq, text, stored) = match read {
                Ok(read) => read,
                Err(error) => return Err(self.fail(error.into())),
            };
            if let Err(failure) = self.chain(seq, text, stored) {
                return Err(self.fail(failure));
            }
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
