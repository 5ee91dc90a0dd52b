//! The one validation engine behind every append (R13, R25).
//!
//! A batch is checked against the context *without changing it*
//! ([`Context::prepare`], `&self`), giving a [`Prepared`] batch: the
//! messages, their compiled schemas and their JSONL lines. Landing it
//! ([`Context::append_prepared`]) only copies bytes and folds values; it
//! cannot fail validation. Splitting the two is what lets a store write the
//! lines durably *between* them — under its lock, against the context as it
//! is when the append lands (R34b) — and lets staging validate instances in
//! parallel (`stage.rs`) with the same rules.
//!
//! Validation of a batch works on a scratch copy of only the layers the batch
//! writes (`scratch.rs`).

use crate::log::{Line, serialise};
use crate::schema::Compiled;
use crate::scratch::{Entry, Scratch, Turn, closing_writes, own_schema};
use crate::{Context, Error, Message, Result};
use std::borrow::Cow;
use std::ops::Range;
use std::sync::Arc;

/// A batch validated against a context by [`Context::prepare`], ready to be
/// written to a store ([`Prepared::lines`]) and landed
/// ([`Context::append_prepared`]).
#[derive(Debug)]
pub struct Prepared<'m> {
    pub(crate) entries: Vec<Entry<'m>>,
    /// The context's length when the batch was validated.
    base: usize,
}

impl<'m> Prepared<'m> {
    /// Number of messages.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True for an empty batch.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The length of the context the batch was validated against: it lands
    /// at that position.
    pub fn base(&self) -> usize {
        self.base
    }

    /// Each message as its compact JSON line (without a newline), exactly
    /// as the context will store it.
    pub fn lines(&self) -> impl ExactSizeIterator<Item = &str> {
        self.entries.iter().map(|e| e.line.as_str())
    }

    /// The messages, in order.
    pub fn messages(&self) -> impl ExactSizeIterator<Item = &Message> {
        self.entries.iter().map(|e| e.message.as_ref())
    }
}

impl Context {
    /// Validates `batch` as if appended now, changing nothing (R13, R25):
    /// a message nested too deep (R33) or carrying an invalid schema, or a
    /// write that is a type error against the view the earlier messages
    /// leave, is an error naming the index it would have had. The batch's
    /// writes to one layer are judged together (D39: batch judged together): the view its
    /// last write there leaves must satisfy the layer's schema (`required`
    /// tolerated), and, for a global layer, must make no instance layer's
    /// write fail (D4: instances unbroken); if not, the error names that last write.
    /// A view between two writes of the batch is never checked: no reader
    /// can see it.
    ///
    /// # Errors
    /// [`Error::Message`] for a message nested past R33's limit or whose `schema` is invalid
    /// (R25); [`Error::TypeError`] for a write that is a type error against its view (R13) or,
    /// to a global layer, breaks an instance layer's write (D4: instances unbroken); [`Error::Schema`] when the
    /// view a layer's last write leaves breaks its schema (R25); [`Error::SchemaUnchecked`]
    /// when that schema cannot be checked, in a build without the `schema` feature (D61: features cut). Each
    /// names the index the message would have had.
    pub fn prepare<'m>(&self, batch: &'m [Message]) -> Result<Prepared<'m>> {
        let mut scratch = Scratch::new(self, false);
        let last = batch.len().saturating_sub(1);
        let closing = closing_writes(batch);
        for (offset, (message, closes)) in batch.iter().zip(closing).enumerate() {
            let index = self.len() + offset;
            // Nothing reads the scratch after the last message.
            let turn = Turn {
                index,
                closes,
                more: offset < last,
            };
            let entry = scratch.check(Cow::Borrowed(message), turn)?;
            scratch.entries.push(entry);
        }
        Ok(Prepared {
            entries: scratch.entries,
            base: self.len(),
        })
    }

    /// Prepares `batch` for landing as loading would take it, without the
    /// append-time checks (R13, R25): only the depth limit (R33) and valid
    /// schemas are required, and a write that is a type error is skipped by
    /// the fold and reported as a diagnostic (R12), as when the messages
    /// were first loaded. For copying a context from one store to another,
    /// where every message must arrive as it was (R3) — not for new writes.
    ///
    /// # Errors
    /// [`Error::Message`] for a message nested past R33's limit or whose `schema` is invalid
    /// (R25), naming the index it would have had.
    pub fn prepare_copy<'m>(&self, batch: &'m [Message]) -> Result<Prepared<'m>> {
        let entries = batch
            .iter()
            .enumerate()
            .map(|(offset, message)| {
                let index = self.len() + offset;
                let line = serialise(message.fields()).map_err(|fault| Error::Message {
                    index,
                    line: None,
                    fault,
                })?;
                let schema = own_schema(self, message, index)?;
                Ok(Entry {
                    message: Cow::Borrowed(message),
                    schema,
                    line,
                })
            })
            .collect::<Result<_>>()?;
        Ok(Prepared {
            entries,
            base: self.len(),
        })
    }

    /// Lands a batch prepared against this context; returns its index range.
    /// Fails with [`Error::Changed`], changing nothing, when the context has
    /// grown since the batch was prepared (prepare it again).
    ///
    /// # Errors
    /// [`Error::Changed`] when the context has grown since `prepared` was validated; nothing is
    /// appended.
    pub fn append_prepared(&mut self, prepared: Prepared<'_>) -> Result<Range<usize>> {
        if prepared.base != self.len() {
            return Err(Error::Changed {
                validated: prepared.base,
                now: self.len(),
            });
        }
        let start = self.len();
        self.land(prepared.entries);
        Ok(start..self.len())
    }

    /// Appends one message after validating it (R13, R25, D4: instances unbroken); returns its
    /// index. A refused message changes nothing. The context keeps the message as
    /// its JSON text and the value it writes in the view; the caller keeps
    /// `message`.
    ///
    /// # Errors
    /// As [`Context::prepare`] for one message: [`Error::Message`], [`Error::TypeError`],
    /// [`Error::Schema`] or [`Error::SchemaUnchecked`]; the context is unchanged.
    pub fn append(&mut self, message: &Message) -> Result<usize> {
        let index = self.len();
        // The same checks as `prepare`, but the message is serialised straight
        // into the log (unsealed, so it is not part of the context yet).
        let written = self
            .log
            .write(message.fields())
            .map_err(|fault| Error::Message {
                index,
                line: None,
                fault,
            })?;
        let turn = Turn {
            index,
            closes: true,
            more: false,
        };
        match Scratch::new(self, false).check_message(message, turn) {
            Ok(schema) => {
                if let Some(schema) = &schema {
                    self.schemas.insert(schema);
                }
                self.push_written(Cow::Borrowed(message), schema, written, true);
                Ok(index)
            }
            Err(error) => {
                self.log.discard(written);
                Err(error)
            }
        }
    }

    /// Appends several messages atomically, validated as
    /// [`Context::prepare`] validates them: a type error is judged against
    /// the views the earlier messages leave, a layer's schema and D4 on the
    /// view the batch's last write to it leaves (D39: batch judged together). Either all
    /// are appended or, on the first error, none is. Returns the new
    /// messages' index range.
    ///
    /// # Errors
    /// As [`Context::prepare`]: [`Error::Message`], [`Error::TypeError`], [`Error::Schema`] or
    /// [`Error::SchemaUnchecked`] for the first refused message; none is appended.
    pub fn append_all(&mut self, batch: &[Message]) -> Result<Range<usize>> {
        let prepared = self.prepare(batch)?;
        self.append_prepared(prepared)
    }

    /// Adds validated entries to the log and the views.
    pub(crate) fn land(&mut self, entries: Vec<Entry<'_>>) {
        for Entry {
            message,
            schema,
            line,
        } in entries
        {
            // An owned message's value moves into its view.
            self.land_one(message, schema, &line);
        }
    }

    /// Adds one validated message, with its schema and line, to the log and
    /// its view.
    pub(crate) fn land_one(
        &mut self,
        message: Cow<'_, Message>,
        schema: Option<Arc<Compiled>>,
        line: &Line,
    ) {
        if let Some(schema) = &schema {
            self.schemas.insert(schema);
        }
        let written = self.log.write_serialised(line);
        self.push_written(message, schema, written, false);
    }
}
