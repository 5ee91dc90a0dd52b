//! Reading JSONL line by line (R1, R34): each line is offered as text
//! first (a loader may take it unread, D81: unread instance lines), then parsed and handed over;
//! a torn last line is told apart from a bad one.

use crate::chain::thread::{BATCH, CHAINED_APART_FROM, ChainThread};
use crate::load::{Checked, Extended, Position, Warning, parse_compact, too_deep};
use crate::{Context, Error, Message, Result};
use agent_core::json::Value;
use agent_core::{MAX_DEPTH, TooDeep};
use std::io::BufRead;

/// A line buffer larger than this is freed after its line is parsed
/// rather than kept for the next line.
const KEPT_LINE_BUFFER: usize = 1 << 20;

/// Where [`read_jsonl`] hands each line.
pub(crate) trait Lines {
    /// A line's text, before it is parsed: true when this took it as it
    /// is (adding the message without the line being read here). None is
    /// taken unless a loader says so.
    fn take(&mut self, _text: &str) -> bool {
        false
    }

    /// A line parsed: the value, its message index (from 0), its 1-based
    /// file line and, when the line is exactly the value's compact text,
    /// that text.
    fn parsed(&mut self, value: Value, index: usize, line: usize, text: Option<&str>)
    -> Result<()>;
}

/// A whole JSONL context being loaded.
pub(crate) struct Loading {
    pub(crate) context: Context,
    /// Layers compacted so far ([`Context::compact_behind`]).
    pub(crate) compacted: usize,
    /// Reused from line to line for normalising.
    pub(crate) scratch: Vec<Message>,
    /// Reused from line to line for lines taken unread.
    pub(crate) unread: crate::unread::Unread,
    /// The thread chaining the log's lines, for a large load.
    pub(crate) chain: Option<ChainThread>,
    /// Where the log's lines not yet given to `chain` start.
    pub(crate) chained_to: usize,
    /// Message lines before the first read here, for errors' numbers.
    pub(crate) items_before: usize,
}

impl Loading {
    /// A load of `context`, its chain on a thread of its own when the
    /// input is `size_hint` bytes or more.
    pub(crate) fn new(mut context: Context, size_hint: usize) -> Loading {
        let mut chained_to = 0;
        let chain = if size_hint >= CHAINED_APART_FROM {
            ChainThread::start(context.log.head()).inspect(|_| {
                chained_to = context.log.chain_apart();
            })
        } else {
            None
        };
        Loading {
            context,
            compacted: 0,
            scratch: Vec::with_capacity(1),
            unread: crate::unread::Unread::default(),
            chain,
            chained_to,
            items_before: 0,
        }
    }

    /// The loaded context, its chain joined again.
    pub(crate) fn finish(mut self) -> Context {
        self.give_chain(0);
        let mut context = self.context;
        let head = self.chain.and_then(ChainThread::finish);
        context.log.rejoin_chain(head);
        context
    }

    /// Gives the chain's thread the lines sealed since they were last
    /// given, if there are `at_least` bytes of them (and any): while
    /// loading, a batch ([`BATCH`]), so a line costs no call of its own;
    /// at the end, the rest. If the thread is gone, the log is chained
    /// when the load finishes.
    fn give_chain(&mut self, at_least: usize) {
        let lines = self.context.log.jsonl();
        let fresh = lines.get(self.chained_to..).unwrap_or_default();
        if fresh.is_empty() || fresh.len() < at_least {
            return;
        }
        let Some(chain) = self.chain.take() else {
            return;
        };
        self.chained_to = lines.len();
        self.chain = chain.give(fresh);
    }
}

impl Lines for Loading {
    fn take(&mut self, text: &str) -> bool {
        let taken = self.context.push_unread(text, &mut self.unread);
        if taken {
            self.context.compact_behind(&mut self.compacted);
            self.give_chain(BATCH);
        }
        taken
    }

    fn parsed(
        &mut self,
        value: Value,
        index: usize,
        line: usize,
        text: Option<&str>,
    ) -> Result<()> {
        let index = self.items_before + index;
        self.context
            .push_value(value, (index, Some(line)), text, &mut self.scratch)?;
        self.context.compact_behind(&mut self.compacted);
        self.give_chain(BATCH);
        Ok(())
    }
}

/// A tail being checked before it joins a context, all or nothing.
pub(crate) struct Extending<'c> {
    pub(crate) context: &'c mut Context,
    /// Messages in the context before the tail.
    pub(crate) base: usize,
    pub(crate) checked: &'c mut Vec<Checked>,
}

impl Lines for Extending<'_> {
    fn parsed(
        &mut self,
        value: Value,
        index: usize,
        line: usize,
        _text: Option<&str>,
    ) -> Result<()> {
        self.context
            .check_value(value, self.base + index, Some(line), self.checked)
    }
}

/// Reads JSONL lines, offering each to `lines` as text first and handing
/// it over parsed when not taken.
pub(crate) fn read_jsonl(
    mut reader: impl BufRead,
    source: &str,
    at: Position,
    lines: &mut dyn Lines,
) -> Result<Extended> {
    let mut warnings = Vec::new();
    let (mut index, mut offset, mut line) = (0, at.offset, at.line);
    let mut end = at;
    let (mut unterminated, mut torn) = (false, false);
    let mut buffer = Vec::new();
    loop {
        buffer.clear();
        let read = reader
            .read_until(b'\n', &mut buffer)
            .map_err(|source_error| Error::Io {
                path: source.to_owned(),
                source: source_error,
            })?;
        if read == 0 {
            break;
        }
        line += 1;
        let start = offset;
        offset += read;
        let terminated = buffer.last() == Some(&b'\n');
        let raw_len = if terminated { read - 1 } else { read };
        let raw = &buffer[..raw_len];
        if raw.iter().all(u8::is_ascii_whitespace) {
            // Blank, even without its newline: read past it; the next
            // append starts on a new line.
            end = Position { line, offset };
            unterminated = !terminated;
            continue;
        }
        if let Ok(text) = std::str::from_utf8(raw)
            && lines.take(text)
        {
            if buffer.capacity() > KEPT_LINE_BUFFER {
                // As for a huge line read below: not kept for the next.
                buffer = Vec::new();
            }
            end = Position { line, offset };
            unterminated = !terminated;
            index += 1;
            continue;
        }
        // The reader holds the same limit, so a line that parses is never
        // too deep: the pre-scan, which places the fault, runs only on
        // failure, and a too-deep line is reported as such whatever else
        // is wrong with it.
        let parsed = match parse_compact(raw, line - 1, MAX_DEPTH) {
            Err(error) => match too_deep(raw, MAX_DEPTH) {
                Some(at) => Err(Error::TooDeep {
                    depth: TooDeep { limit: MAX_DEPTH },
                    offset: start + at,
                    line: Some(line),
                }),
                None => Err(error),
            },
            parsed => parsed,
        };
        let huge = buffer.capacity() > KEPT_LINE_BUFFER;
        if huge {
            // A huge line's text is not needed once parsed: freed before
            // the message is written into the log, not held beside it.
            buffer = Vec::new();
        }
        match parsed {
            Ok((value, compact)) => {
                // Parsed, so UTF-8; a huge line's text is gone.
                let text = buffer.get(..raw_len).filter(|_| compact && !huge);
                let text = text.and_then(|text| std::str::from_utf8(text).ok());
                lines.parsed(value, index, line, text)?;
                end = Position { line, offset };
                unterminated = !terminated;
            }
            // Only the last line can lack its newline.
            Err(Error::Json { .. }) if !terminated => {
                torn = true;
                warnings.push(Warning::TornLastLine {
                    line,
                    offset: start,
                });
            }
            Err(error) => return Err(error),
        }
        index += 1;
    }
    Ok(Extended {
        end,
        warnings,
        unterminated,
        items: index - usize::from(torn),
    })
}
