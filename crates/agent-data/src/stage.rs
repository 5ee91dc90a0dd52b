//! Validating one instance's writes against a shared, unchanged context,
//! then committing them: the two halves of a parallel batch append.
//!
//! Writes for instance X read only global layers and X's own (R5) and
//! write only X's layers (R6), so writes for different instances can be
//! validated concurrently against `&Context` — by the same engine as every
//! other append (`prepare.rs`, `scratch.rs`). Because the log is append-only, the length
//! of a layer is its version: `commit` checks that every layer a validation
//! read is still as long as it was, and refuses (changing nothing) if not.

use crate::scratch::{Entry, Scratch, Turn, closing_writes};
use crate::{Context, Error, Identity, Message, MessageFault, Result};
use agent_core::Instance;
use std::borrow::Cow;
use std::ops::Range;

/// One committed item of staged writes: where its messages landed, and the
/// messages.
#[derive(Debug, Clone, PartialEq)]
pub struct Committed {
    /// Context indexes of the item's messages.
    pub range: Range<usize>,
    /// The messages, in order.
    pub messages: Vec<Message>,
}

/// One instance's writes, validated by [`Context::stage`], waiting for
/// [`Context::commit`].
#[derive(Debug)]
pub struct Staged {
    instance: Instance,
    /// Layers read during validation, with their lengths then.
    reads: Vec<(Identity, usize)>,
    items: Vec<(usize, ItemOutcome)>,
}

/// An item's validated messages, or the offset of its refused message and why.
type ItemOutcome = std::result::Result<Vec<Entry<'static>>, (usize, Error)>;

impl Context {
    /// Validates items of writes for `instance` without changing the
    /// context. Each item (keyed by the caller, e.g. a call's position in a
    /// batch) is a group of data messages of that instance that must land
    /// together; items are validated in order, each against the views the
    /// accepted earlier ones leave, and each item's messages as
    /// [`Context::prepare`] validates a batch (R13, R25, decision D39). A
    /// refused item is reported by [`Context::commit`] and the rest go on.
    pub fn stage(&self, instance: &Instance, items: Vec<(usize, Vec<Message>)>) -> Staged {
        let mut scratch = Scratch::new(self, true);
        let mut ranges = Vec::with_capacity(items.len());
        for (key, messages) in items {
            let start = scratch.entries.len();
            // A refused message leaves the scratch as it was, so only items
            // of several messages need a copy to fall back to.
            let saved = (messages.len() > 1).then(|| scratch.layers.clone());
            let mut refused = None;
            let closing = closing_writes(&messages);
            for (offset, (message, closes)) in messages.into_iter().zip(closing).enumerate() {
                if message.as_data().and_then(|d| d.instance()) != Some(instance) {
                    let fault = MessageFault::WrongInstance {
                        expected: instance.to_string(),
                    };
                    let error = Error::Message {
                        index: offset,
                        line: None,
                        fault,
                    };
                    refused = Some((offset, error));
                    break;
                }
                let turn = Turn {
                    index: offset,
                    closes,
                    more: true,
                };
                match scratch.check(Cow::Owned(message), turn) {
                    Ok(entry) => scratch.entries.push(entry),
                    Err(error) => {
                        refused = Some((offset, error));
                        break;
                    }
                }
            }
            match refused {
                None => ranges.push((key, Ok(start..scratch.entries.len()))),
                Some(refusal) => {
                    scratch.entries.truncate(start);
                    if let Some(saved) = saved {
                        scratch.layers = saved;
                    }
                    ranges.push((key, Err(refusal)));
                }
            }
        }
        let reads = scratch.reads.take().unwrap_or_default();
        // Accepted items' entries are consecutive, in item order.
        let mut entries = scratch.entries.into_iter();
        let items = ranges
            .into_iter()
            .map(|(key, range)| {
                let outcome = range.map(|r| entries.by_ref().take(r.len()).collect());
                (key, outcome)
            })
            .collect();
        Staged {
            instance: instance.clone(),
            reads,
            items,
        }
    }

    /// Appends staged writes, all items of all batches in the order of their
    /// keys, and returns each item's result by key: the range of its
    /// messages and the messages themselves (handed back, so the caller
    /// need not read them out of the context again), or why it was refused
    /// (with the index its message would have had, as if the items had been
    /// appended one by one).
    ///
    /// Fails with [`Error::Stale`], changing nothing, when a layer read
    /// during staging has grown since, or two batches stage the same instance.
    ///
    /// # Errors
    /// [`Error::Stale`], changing nothing, when a layer read during staging has grown since or
    /// two batches stage the same instance. A refused item is not an error of the call: it is
    /// that item's result.
    pub fn commit(&mut self, staged: Vec<Staged>) -> Result<Vec<(usize, Result<Committed>)>> {
        for (i, batch) in staged.iter().enumerate() {
            let fresh = batch
                .reads
                .iter()
                .all(|(id, len)| self.layers.get(id).map_or(0, |l| l.len()) == *len);
            let unique = staged[..i]
                .iter()
                .all(|other| other.instance != batch.instance);
            if !fresh || !unique {
                return Err(Error::Stale {
                    instance: batch.instance.to_string(),
                });
            }
        }
        let mut items: Vec<(usize, ItemOutcome)> =
            staged.into_iter().flat_map(|b| b.items).collect();
        items.sort_by_key(|(key, _)| *key);
        let mut results = Vec::with_capacity(items.len());
        for (key, outcome) in items {
            let start = self.len();
            match outcome {
                Ok(entries) => {
                    for entry in &entries {
                        self.land_one(
                            Cow::Borrowed(entry.message.as_ref()),
                            entry.schema.clone(),
                            &entry.line,
                        );
                    }
                    let messages = entries
                        .into_iter()
                        .map(|e| e.message.into_owned())
                        .collect();
                    let committed = Committed {
                        range: start..self.len(),
                        messages,
                    };
                    results.push((key, Ok(committed)));
                }
                Err((offset, error)) => results.push((key, Err(error.at_index(start + offset)))),
            }
        }
        Ok(results)
    }
}
