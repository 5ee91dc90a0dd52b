//! The message log, stored compactly.
//!
//! A long-running agent's context holds hundreds of thousands of messages,
//! and every read goes through the folded views, not the messages. So each
//! normalised message is kept as its compact JSON text (one JSONL line),
//! back to back in one buffer, and parsed again only when asked for. A
//! parsed `serde_json::Map` costs about fifteen times its text.

use crate::{DataMessage, Digest, Message, MessageFault};
use agent_core::json::{Map, Value};
use agent_core::{MAX_DEPTH, TooDeep};

/// Normalised messages as JSONL text, with each one's layer.
///
/// A log opened from a snapshot does not hold every message: the messages
/// before `base` are summarised by the views, except the few kept for
/// reads that need them again (instance layers' writes, which are folded
/// again over a changed global view). The held messages are `kept`, then
/// every message from `base` on.
#[derive(Debug, Clone, Default)]
pub(crate) struct Log {
    /// Every held message's compact JSON followed by `\n`.
    jsonl: String,
    /// For each held message (each *entry*), where its line ends in
    /// `jsonl` (after its `\n`).
    ends: Vec<usize>,
    /// For each entry, the index of its layer in the context's layer map;
    /// `NO_LAYER` for a text or opaque message. Apart from `ends`, so that
    /// an entry takes 12 bytes, not 16 with padding: a long log has one per message.
    layers: Vec<u32>,
    /// Context indexes of the first `kept.len()` entries, ascending, all
    /// before `base`.
    kept: Vec<usize>,
    /// The index of the first message of the unbroken run that ends the
    /// log: 0 unless the log was opened from a snapshot.
    base: usize,
    /// The chain's digest after the last message (per-message digests are
    /// not kept).
    head: Digest,
    /// While a load chains its lines on a thread of its own
    /// ([`Log::chain_apart`]): where in `jsonl` that began, and the head
    /// there. `head` is not advanced meanwhile.
    apart_from: Option<(usize, Digest)>,
}

const NO_LAYER: u32 = u32::MAX;

/// A short line of input, with its newline (`{"type":"s","v":1}` and its
/// newline are 20 bytes):
/// [`Log::reserve`] makes room for one entry per this many bytes.
const SHORTEST_LINE: usize = 20;

impl Log {
    /// Number of messages, held or not.
    pub(crate) fn len(&self) -> usize {
        self.base + self.ends.len() - self.kept.len()
    }

    /// The chain's digest after the last message.
    pub(crate) fn head(&self) -> Digest {
        debug_assert!(self.apart_from.is_none(), "the chain is still apart");
        self.head
    }

    /// A log that starts after `base` messages summarised elsewhere (a
    /// snapshot) and holds some of them: `jsonl`, one compact message per
    /// line, each ending in `\n`, is message `kept[i]` of layer
    /// `layers[i]`. `None` unless the lines are as many as `kept`, `kept`
    /// ascends below `base`, and `jsonl` is UTF-8 ending in a newline.
    pub(crate) fn restored(
        base: usize,
        head: Digest,
        jsonl: Vec<u8>,
        kept: Vec<usize>,
        layers: &[usize],
    ) -> Option<Log> {
        let ends: Vec<usize> = memchr::memchr_iter(b'\n', &jsonl)
            .map(|at| at + 1)
            .collect();
        let ascending = kept.windows(2).all(|pair| pair[0] < pair[1]);
        let fits = ends.len() == kept.len()
            && layers.len() == kept.len()
            && ends.last().copied().unwrap_or(0) == jsonl.len()
            && ascending
            && kept.last().is_none_or(|&last| last < base);
        if !fits {
            return None;
        }
        let jsonl = String::from_utf8(jsonl).ok()?;
        Some(Log {
            jsonl,
            ends,
            layers: layers.iter().map(|&at| layer_code(Some(at))).collect(),
            kept,
            base,
            head,
            apart_from: None,
        })
    }

    /// Makes room for about `bytes` of input's lines at once, so a large
    /// load does not copy its text at every doubling. A line normalises to
    /// more than its input (a shorthand gains `"type":"data"` and
    /// `"data":{…}`: the 200,000 instances of the wide bench 1.46×, a
    /// shorthand with a one-digit value 1.59×), so half as much again is
    /// asked for, and the text grows once more when that falls short.
    /// Memory not written to is not resident; [`Log::give_back_excess`]
    /// returns room far beyond what was used. Nothing is reserved if the
    /// room cannot be had.
    pub(crate) fn reserve(&mut self, bytes: usize) {
        let _ = self.jsonl.try_reserve(bytes.saturating_add(bytes / 2));
        let lines = bytes / SHORTEST_LINE;
        let _ = self.ends.try_reserve(lines);
        let _ = self.layers.try_reserve(lines);
    }

    /// Gives back the room [`Log::reserve`] made when more than half of it
    /// went unused (a size hint far over the lines): room a doubling would
    /// have left too is kept for the appends to come.
    pub(crate) fn give_back_excess(&mut self) {
        if self.jsonl.capacity() / 2 > self.jsonl.len() {
            self.jsonl.shrink_to_fit();
        }
        if self.ends.capacity() / 2 > self.ends.len() {
            self.ends.shrink_to_fit();
            self.layers.shrink_to_fit();
        }
    }

    /// Adds the entry of the line that ends `jsonl`.
    fn push_entry(&mut self, layer: Option<usize>) {
        self.ends.push(self.jsonl.len());
        self.layers.push(layer_code(layer));
    }

    /// True when every message is held (the log was not opened from a
    /// snapshot, or the snapshot kept everything before it).
    pub(crate) fn is_complete(&self) -> bool {
        self.kept.len() == self.base
    }

    /// The index of the first message from which every message is held.
    pub(crate) fn held_from(&self) -> usize {
        if self.is_complete() { 0 } else { self.base }
    }

    /// Where message `index` is among the entries, if it is held.
    fn position(&self, index: usize) -> Option<usize> {
        if index >= self.base {
            let position = self.kept.len() + (index - self.base);
            (position < self.ends.len()).then_some(position)
        } else {
            self.kept.binary_search(&index).ok()
        }
    }

    /// Writes a message's fields after the last message, not yet part of
    /// the log: [`Log::seal`] makes it the next message. Refuses (writing nothing) a message nested deeper than
    /// [`MAX_DEPTH`], counting the message object as one level — checked
    /// while serialising, so a message is walked once.
    pub(crate) fn write(&mut self, fields: &Map) -> Result<Written, MessageFault> {
        let start = self.jsonl.len();
        if let Err(fault) = serialise_into(&mut self.jsonl, fields) {
            self.jsonl.truncate(start);
            return Err(fault);
        }
        self.jsonl.push('\n');
        Ok(Written { start })
    }

    /// [`Log::write`] for a message whose compact JSON is `text`, read
    /// within [`MAX_DEPTH`] (so not too deep to write).
    pub(crate) fn write_text(&mut self, text: &str) -> Written {
        let start = self.jsonl.len();
        self.jsonl.push_str(text);
        self.jsonl.push('\n');
        Written { start }
    }

    /// [`Log::write`] for a message serialised beforehand by [`serialise`].
    pub(crate) fn write_serialised(&mut self, line: &Line) -> Written {
        self.write_text(&line.0)
    }

    /// Makes the written message the next one; `layer` is its layer's
    /// index, for a data message.
    pub(crate) fn seal(&mut self, written: Written, layer: Option<usize>) {
        debug_assert_eq!(written.start, self.start(self.ends.len()));
        // While the chain is apart, another thread chains this line.
        if self.apart_from.is_none() {
            // The line without its newline: the message's compact JSON.
            let end = self.jsonl.len().saturating_sub(1);
            let json = self.jsonl.as_bytes().get(written.start..end);
            self.head = self.head.next(json.unwrap_or_default());
        }
        self.push_entry(layer);
    }

    /// Stops advancing the chain as messages are sealed: the caller chains
    /// the lines from here ([`crate::chained`]) and hands the head back
    /// with [`Log::rejoin_chain`]. Returns where the lines to chain start.
    pub(crate) fn chain_apart(&mut self) -> usize {
        let from = self.jsonl.len();
        self.apart_from = Some((from, self.head));
        from
    }

    /// Ends [`Log::chain_apart`]: `head` is the digest after the last
    /// message; `None` (the other thread failed) chains the lines here.
    pub(crate) fn rejoin_chain(&mut self, head: Option<Digest>) {
        let Some((from, before)) = self.apart_from.take() else {
            return;
        };
        self.head = head.unwrap_or_else(|| {
            let lines = self.jsonl.as_bytes().get(from..).unwrap_or_default();
            crate::chain::thread::chain_lines(before, lines)
        });
    }

    /// Forgets a written message that will not be sealed.
    pub(crate) fn discard(&mut self, written: Written) {
        self.jsonl.truncate(written.start);
    }

    /// Where the entry at `position` starts in `jsonl`.
    fn start(&self, position: usize) -> usize {
        match position.checked_sub(1) {
            Some(previous) => self.ends.get(previous).copied().unwrap_or(0),
            None => 0,
        }
    }

    /// The compact JSON text of message `index`: a slice of the log's
    /// text between newlines, so already UTF-8 (slicing only checks that
    /// its ends fall between characters).
    pub(crate) fn json(&self, index: usize) -> Option<&str> {
        let position = self.position(index)?;
        let end = *self.ends.get(position)?;
        self.jsonl.get(self.start(position)..end.checked_sub(1)?)
    }

    /// The layer index of message `index`, if it is a data message.
    pub(crate) fn layer(&self, index: usize) -> Option<usize> {
        let layer = *self.layers.get(self.position(index)?)?;
        (layer != NO_LAYER).then_some(layer as usize)
    }

    /// Message `index` as a JSON value.
    pub(crate) fn value(&self, index: usize) -> Option<Value> {
        // Stored messages were depth-checked before they were stored.
        let text = self.json(index)?;
        agent_core::json::from_str_within(text, MAX_DEPTH).ok()
    }

    /// Message `index`, parsed and normalised again (stored messages are
    /// normalised, so this reproduces the message that was stored).
    pub(crate) fn message(&self, index: usize) -> Option<Message> {
        let mut messages = Message::from_value(self.value(index)?).ok()?;
        (messages.len() == 1).then(|| messages.pop()).flatten()
    }

    /// Message `index` if it is a data message, parsed again: what folding
    /// a layer again needs, without normalising (it was normalised before
    /// it was stored, so its fields are those of a data message already).
    pub(crate) fn data(&self, index: usize) -> Option<DataMessage> {
        match self.value(index)? {
            Value::Object(fields) if fields.get("type")?.as_str() == Some("data") => {
                DataMessage::from_fields(fields).ok()
            }
            _ => None,
        }
    }

    /// The context index and layer index of every held message, ascending.
    pub(crate) fn held(&self) -> impl Iterator<Item = (usize, Option<usize>)> + '_ {
        let indexes = self.kept.iter().copied().chain(self.base..);
        let layers = self
            .layers
            .iter()
            .map(|&layer| (layer != NO_LAYER).then_some(layer as usize));
        indexes.zip(layers)
    }

    /// The first `k` messages as JSONL text; `None` unless every one of
    /// them is held (the log is complete) and `k` is at most its length.
    pub(crate) fn prefix_jsonl(&self, k: usize) -> Option<&[u8]> {
        if !self.is_complete() || k > self.len() {
            return None;
        }
        // A complete log holds message `i` as entry `i`.
        self.jsonl.as_bytes().get(..self.start(k))
    }

    /// Every held message as JSONL text: the whole log when it is complete.
    pub(crate) fn jsonl(&self) -> &[u8] {
        self.jsonl.as_bytes()
    }
}

/// A layer index as an entry stores it.
fn layer_code(layer: Option<usize>) -> u32 {
    // A context with four billion layers is out of reach of memory.
    layer
        .and_then(|l| u32::try_from(l).ok())
        .unwrap_or(NO_LAYER)
}

/// A message's compact JSON, serialised ahead of appending it (staging
/// serialises in parallel; the commit only copies bytes).
#[derive(Debug, Clone)]
pub(crate) struct Line(String);

impl Line {
    /// The line as text.
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

/// Serialises a message's fields as [`Log::write`] would.
pub(crate) fn serialise(fields: &Map) -> Result<Line, MessageFault> {
    let mut text = String::with_capacity(128);
    serialise_into(&mut text, fields)?;
    Ok(Line(text))
}

/// Refuses ([`MessageFault::TooDeep`]) a message nested deeper than
/// [`MAX_DEPTH`]; what was written before the refusal stays in `out`.
fn serialise_into(out: &mut String, fields: &Map) -> Result<(), MessageFault> {
    if agent_core::json::write_object_within(out, fields, MAX_DEPTH) {
        Ok(())
    } else {
        Err(MessageFault::TooDeep(TooDeep { limit: MAX_DEPTH }))
    }
}

/// A message written after the log's end, waiting for [`Log::seal`].
#[derive(Debug)]
#[must_use]
pub(crate) struct Written {
    start: usize,
}
