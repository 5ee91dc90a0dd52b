//! Server-sent events read from a response body (spec R38, decision D56):
//! `event:` and `data:` fields, events ended by a blank line, comments
//! and other fields ignored. Everything read counts towards the stream's
//! bound, and a line that has not ended towards the line bound, so neither
//! a stream nor a line that never ends grows past them.

use std::io::Read;

/// One event: its `event:` name (empty when none) and its `data:` lines
/// joined by `\n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Event {
    /// The event's name.
    pub(crate) name: String,
    /// Its data.
    pub(crate) data: String,
}

/// Why the events stopped before the body ended.
#[derive(Debug)]
pub(crate) enum Fault {
    /// More than the limit was sent.
    TooLarge,
    /// The body could not be read.
    Io(std::io::Error),
}

/// How much is asked of the body at a time.
const BLOCK: usize = 8 << 10;

/// The events of a body, read as they arrive.
pub(crate) struct Events<R> {
    source: R,
    /// Bytes read and not yet taken as lines, from `start`.
    buf: Vec<u8>,
    start: usize,
    /// How far into `buf` holds no line end: a line arriving in many reads
    /// is searched once, not again from its start after every read.
    scanned: usize,
    /// Bytes looked at for a line end, in all (what the tests bound).
    #[cfg(test)]
    searched: u64,
    /// Bytes read in all.
    read: u64,
    limit: u64,
    /// The longest a line may grow before it ends.
    line_limit: u64,
    eof: bool,
    /// A `\r` ended the last line: a `\n` right after it belongs to it.
    after_cr: bool,
    name: String,
    data: Option<String>,
}

impl<R: Read> Events<R> {
    /// Events of `source`, reading at most `limit` bytes, no line longer
    /// than `line_limit`.
    pub(crate) fn new(source: R, limit: u64, line_limit: u64) -> Events<R> {
        Events {
            source,
            buf: Vec::new(),
            start: 0,
            scanned: 0,
            #[cfg(test)]
            searched: 0,
            read: 0,
            limit,
            line_limit,
            eof: false,
            after_cr: false,
            name: String::new(),
            data: None,
        }
    }

    /// The next event, or `None` once the body has ended (an event the
    /// body ends in without a blank line is still given).
    pub(crate) fn next_event(&mut self) -> Result<Option<Event>, Fault> {
        loop {
            let Some(line) = self.line()? else {
                return Ok(self.dispatch());
            };
            if line.is_empty() {
                if let Some(event) = self.dispatch() {
                    return Ok(Some(event));
                }
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = match line.split_once(':') {
                Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
                None => (line.as_str(), ""),
            };
            match field {
                "event" => value.clone_into(&mut self.name),
                "data" => match &mut self.data {
                    Some(data) => {
                        data.push('\n');
                        data.push_str(value);
                    }
                    None => self.data = Some(value.to_owned()),
                },
                _ => {}
            }
        }
    }

    /// The event gathered so far, if it has data; the fields are reset.
    fn dispatch(&mut self) -> Option<Event> {
        let name = std::mem::take(&mut self.name);
        self.data.take().map(|data| Event { name, data })
    }

    /// The next line without its end, or `None` at the end of the body.
    fn line(&mut self) -> Result<Option<String>, Fault> {
        loop {
            if self.after_cr && self.start < self.buf.len() {
                if self.buf[self.start] == b'\n' {
                    self.start += 1;
                }
                self.after_cr = false;
            }
            let from = self.scanned.max(self.start);
            #[cfg(test)]
            {
                self.searched += (self.buf.len() - from) as u64;
            }
            if let Some(at) = memchr::memchr2(b'\n', b'\r', &self.buf[from..]) {
                let end = from + at;
                let line = String::from_utf8_lossy(&self.buf[self.start..end]).into_owned();
                self.after_cr = self.buf[end] == b'\r';
                self.start = end + 1;
                return Ok(Some(line));
            }
            self.scanned = self.buf.len();
            let pending = &self.buf[self.start..];
            if pending.len() as u64 > self.line_limit {
                return Err(Fault::TooLarge);
            }
            if self.eof {
                if pending.is_empty() {
                    return Ok(None);
                }
                let line = String::from_utf8_lossy(pending).into_owned();
                self.start = self.buf.len();
                return Ok(Some(line));
            }
            self.fill()?;
        }
    }

    /// Reads one more block, dropping the lines already taken.
    fn fill(&mut self) -> Result<(), Fault> {
        self.buf.drain(..self.start);
        self.scanned = self.scanned.saturating_sub(self.start);
        self.start = 0;
        let old = self.buf.len();
        self.buf.resize(old + BLOCK, 0);
        let n = loop {
            match self.source.read(&mut self.buf[old..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.buf.truncate(old);
                    return Err(Fault::Io(e));
                }
            }
        };
        self.buf.truncate(old + n);
        self.read = self.read.saturating_add(n as u64);
        if self.read > self.limit {
            return Err(Fault::TooLarge);
        }
        self.eof = n == 0;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that gives `step` bytes at a time.
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.1.min(self.0.len()).min(buf.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    fn all(body: &str, step: usize) -> Vec<Event> {
        let mut events = Events::new(Trickle(body.as_bytes(), step), 1 << 20, 1 << 20);
        let mut out = Vec::new();
        while let Some(event) = events.next_event().unwrap() {
            out.push(event);
        }
        out
    }

    fn event(name: &str, data: &str) -> Event {
        Event {
            name: name.into(),
            data: data.into(),
        }
    }

    #[test]
    fn r38_events_are_read_whatever_the_line_ends_and_the_pieces() {
        let body = ": comment\nevent: ping\ndata: {\"type\": \"ping\"}\n\ndata: a\r\ndata:b\r\nid: 3\r\n\r\ndata: [DONE]\r\rdata: last";
        for step in [1, 2, 3, 7, 100] {
            assert_eq!(
                all(body, step),
                vec![
                    event("ping", "{\"type\": \"ping\"}"),
                    event("", "a\nb"),
                    event("", "[DONE]"),
                    event("", "last"),
                ],
                "step {step}"
            );
        }
        assert!(all("event: x\n\n\n", 1).is_empty());
    }

    #[test]
    fn r41_a_line_that_never_ends_stops_at_the_limit() {
        let endless = std::io::repeat(b'x');
        let mut events = Events::new(endless, 100_000, 100_000);
        assert!(matches!(events.next_event(), Err(Fault::TooLarge)));
        assert!(events.buf.len() < 100_000 + BLOCK);
    }

    #[test]
    fn r41_many_short_lines_pass_the_line_bound_and_stop_at_the_stream_bound() {
        let body = "data: x\n\n".repeat(10_000);
        let mut events = Events::new(Trickle(body.as_bytes(), 4096), 1 << 20, 100);
        let mut n = 0;
        while let Some(event) = events.next_event().unwrap() {
            assert_eq!(event.data, "x");
            n += 1;
        }
        assert_eq!(n, 10_000);
        let mut events = Events::new(Trickle(body.as_bytes(), 4096), 50_000, 100);
        let stopped = std::iter::from_fn(|| events.next_event().transpose()).find_map(Result::err);
        assert!(matches!(stopped, Some(Fault::TooLarge)));
    }

    #[test]
    fn r41_a_line_arriving_in_many_reads_is_searched_once() {
        // Searched again from its start after every read, a line that never
        // ends cost time quadratic in the limit (17.6 s of CPU at 16 MiB).
        let limit = 4 << 20;
        let body = vec![b'x'; limit + BLOCK];
        let mut events = Events::new(Trickle(&body, 1000), limit as u64, limit as u64);
        assert!(matches!(events.next_event(), Err(Fault::TooLarge)));
        assert!(
            events.searched <= events.read,
            "{} bytes searched for {} read",
            events.searched,
            events.read
        );
    }
}
