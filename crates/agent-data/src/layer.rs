//! [`Layer`]: all data messages of one identity (R4), folded as they arrive.
//!
//! The layer keeps its invariants itself: its own view is always the fold
//! of its messages (R12), the skipped writes of that fold are its
//! diagnostics, the newest schema and description win (R24), and the
//! cached layered view (an instance layer over its global layer, R5) is
//! either absent or equal to that fold. The context only says what arrived.

use crate::identity::Identity;
use crate::log::Log;
use crate::schema::Compiled;
use agent_core::json::Value;
use agent_core::{Method, Path, write, write_checked};
use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, OnceLock};

/// A write the fold skipped because it was a type error (R12).
#[derive(Debug, Clone, PartialEq)]
pub struct Diagnostic {
    /// Context index of the skipped message.
    pub index: usize,
    /// Its layer.
    pub identity: Identity,
    /// The type error, with its path.
    pub error: agent_core::Error,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "message {} (¶{}): {}; write skipped",
            self.index, self.identity, self.error
        )
    }
}

/// One write, as a message makes it: where, how, what (R9, R10).
pub(crate) struct Write<'p> {
    /// The message's index in the context.
    pub(crate) index: usize,
    /// Where in the view (borrowed: an appended message keeps its path).
    pub(crate) destination: &'p Path,
    /// How it combines.
    pub(crate) method: Method,
    /// The value written.
    pub(crate) value: Value,
    /// Validation accepted the write against the view it lands on (an
    /// append's global write), so the fold need not check it again.
    pub(crate) checked: bool,
}

/// All data messages of one identity (R4).
///
/// A context may hold hundreds of thousands of instance layers of one
/// message each, so a layer is small (D38: small layers; D40: short layers refolded): the index of its first
/// message and one pointer, to what most such layers lack once loaded —
/// their other messages' indexes, their views, schema and description.
/// A layer whose messages and view are short does not keep its own view
/// after loading: it is folded again from those messages, which the log
/// holds anyway, on first read.
#[derive(Debug, Clone)]
pub(crate) struct Layer {
    /// The context index of the layer's first held message; [`NONE`] when
    /// it holds none.
    first: usize,
    /// Everything else; empty when there is nothing else (one message or
    /// none, the view dropped by [`Layer::compact`] or never built).
    more: OnceLock<Box<More>>,
}

/// No message: what [`Layer::first`] holds for a layer without one.
const NONE: usize = usize::MAX;

impl Default for Layer {
    fn default() -> Self {
        Layer {
            first: NONE,
            more: OnceLock::new(),
        }
    }
}

/// What a [`Layer`] keeps beyond its first message's index.
#[derive(Debug, Clone, Default)]
struct More {
    /// Context indexes of the held messages, in order, when there are two
    /// or more (else empty: [`Layer::first`] says which, if any).
    messages: Vec<usize>,
    /// The fold of this layer's own writes on an absent value: for a global
    /// layer its view (R12); for an instance layer what the instance wrote,
    /// without the global layer under it, an erase shown as `null` (what
    /// R28 renders). When empty, it is the fold of the held messages (see
    /// [`Layer::view`]).
    own: OnceLock<Option<Value>>,
    /// Instance layers: the global view with this layer folded on top (R5),
    /// built on first read and kept up to date by this layer's writes.
    layered: OnceLock<Option<Value>>,
    /// What most layers lack; absent until one is set.
    rare: Option<Box<Rare>>,
}

impl More {
    /// True when it holds nothing a layer needs to keep.
    fn is_empty(&self) -> bool {
        self.messages.is_empty()
            && self.own.get().is_none()
            && self.layered.get().is_none()
            && self.rare.is_none()
    }
}

/// The fields of a [`Layer`] that most layers lack.
#[derive(Debug, Clone, Default)]
struct Rare {
    /// How many of the layer's first messages a snapshot summarised without
    /// holding them (global layers only: an instance layer holds all).
    summarised: usize,
    /// Global layers: the writes the fold skipped (R12). An instance
    /// layer's come from folding it over the global view (`check`).
    diagnostics: Vec<Diagnostic>,
    /// The newest schema among the layer's messages, compiled (R24).
    schema: Option<Arc<Compiled>>,
    /// The newest description among the layer's messages (R24).
    description: Option<String>,
}

/// A layer whose held messages' JSON text is at most this long in all,
/// and whose own view's compact JSON at most [`SMALL_VIEW`], drops that
/// view when compacted and folds it again from the messages on first read:
/// this bounds what that read parses again.
const REFOLD_BYTES: usize = 4096;

/// See [`REFOLD_BYTES`]. A parsed view costs about fifteen times its text;
/// a larger view is kept, compacted, as reads and rendering of it are
/// faster that way than folded again among other allocations.
const SMALL_VIEW: usize = 256;

impl Layer {
    /// A layer as a snapshot recorded it (`snapshot.rs`): `summarised`
    /// messages not held, then the held `messages`, and the fold's state.
    pub(crate) fn restored(
        summarised: usize,
        messages: Vec<usize>,
        view: Option<Value>,
        diagnostics: Vec<Diagnostic>,
        schema: Option<Arc<Compiled>>,
        description: Option<String>,
    ) -> Layer {
        let rare = (summarised > 0
            || !diagnostics.is_empty()
            || schema.is_some()
            || description.is_some())
        .then(|| {
            Box::new(Rare {
                summarised,
                diagnostics,
                schema,
                description,
            })
        });
        Layer {
            first: messages.first().copied().unwrap_or(NONE),
            more: OnceLock::from(Box::new(More {
                messages: if messages.len() > 1 {
                    messages
                } else {
                    Vec::new()
                },
                own: OnceLock::from(view),
                layered: OnceLock::new(),
                rare,
            })),
        }
    }

    /// Adds message `index` to a layer restored from a snapshot whose
    /// views were not written (they are the fold of the held messages,
    /// folded on first read): its schema and description, when it has
    /// them, become the layer's (R24). Nothing is folded now.
    pub(crate) fn hold(
        &mut self,
        index: usize,
        schema: Option<Arc<Compiled>>,
        description: Option<String>,
    ) {
        if self.first == NONE && schema.is_none() && description.is_none() {
            self.first = index;
            return;
        }
        self.join(index, schema, description);
    }

    /// Makes message `index` the layer's newest, its schema and description
    /// (when it has them) the layer's (R24); what it keeps beyond the
    /// first index, created if need be. Folds nothing.
    fn join(
        &mut self,
        index: usize,
        schema: Option<Arc<Compiled>>,
        description: Option<String>,
    ) -> Option<&mut More> {
        // Changed in place: setting a `OnceLock` goes through its `Once`,
        // which costs as much as a small write (W2).
        if self.more.get().is_none() {
            self.more = OnceLock::from(Box::default());
        }
        let more = self.more.get_mut()?;
        match (self.first, more.messages.is_empty()) {
            (NONE, _) => self.first = index,
            (first, true) => more.messages = vec![first, index],
            (_, false) => more.messages.push(index),
        }
        if let Some(compiled) = schema {
            more.rare().schema = Some(compiled);
        }
        if let Some(description) = description {
            more.rare().description = Some(description);
        }
        Some(more)
    }

    /// True when the layer keeps nothing but its first message's index
    /// (no view, nothing else): compacting it does nothing.
    pub(crate) fn is_bare(&self) -> bool {
        self.more.get().is_none()
    }

    /// Context indexes of the layer's held messages, in order: all of them
    /// unless the context was opened from a snapshot.
    pub(crate) fn messages(&self) -> &[usize] {
        match self.more.get() {
            Some(more) if !more.messages.is_empty() => &more.messages,
            _ if self.first == NONE => &[],
            _ => std::slice::from_ref(&self.first),
        }
    }

    fn rare(&self) -> Option<&Rare> {
        self.more.get()?.rare.as_deref()
    }

    /// How many of the layer's messages were summarised without being held.
    pub(crate) fn summarised(&self) -> usize {
        self.rare().map_or(0, |rare| rare.summarised)
    }

    /// Number of the layer's messages, held or not: its version, since the
    /// log only grows.
    pub(crate) fn len(&self) -> usize {
        self.summarised() + self.messages().len()
    }

    /// The fold of the layer's own writes (see [`More::own`]), folded again
    /// from the held messages in `log` if it was dropped.
    pub(crate) fn view(&self, log: &Log) -> Option<&Value> {
        self.more
            .get_or_init(Box::default)
            .own
            .get_or_init(|| laid_out_together(refold(log, self.messages())))
            .as_ref()
    }

    /// [`Layer::view`] without keeping a view folded again for it: what
    /// reads every layer once (writing a snapshot) uses.
    pub(crate) fn view_once(&self, log: &Log) -> Cow<'_, Option<Value>> {
        match self.more.get().and_then(|more| more.own.get()) {
            Some(own) => Cow::Borrowed(own),
            None => Cow::Owned(refold(log, self.messages())),
        }
    }

    /// The writes a global layer's fold skipped (R12).
    pub(crate) fn diagnostics(&self) -> &[Diagnostic] {
        self.rare().map_or(&[], |rare| &rare.diagnostics)
    }

    /// The newest schema among the layer's messages (R24).
    pub(crate) fn schema(&self) -> Option<&Arc<Compiled>> {
        self.rare()?.schema.as_ref()
    }

    /// The newest description among the layer's messages (R24).
    pub(crate) fn description(&self) -> Option<&str> {
        self.rare()?.description.as_deref()
    }

    /// The layered view, built by `fold` the first time it is asked for.
    pub(crate) fn layered(&self, fold: impl FnOnce() -> Option<Value>) -> Option<&Value> {
        self.more
            .get_or_init(Box::default)
            .layered
            .get_or_init(fold)
            .as_ref()
    }

    /// Folds one message into the layer: its write applies to the view (a
    /// type error is skipped, and for a global layer recorded, R12) and to
    /// the layered view when one is built; its schema and description, when
    /// it has them, become the layer's (R24). `log` holds the layer's
    /// earlier messages, to fold its view again if it was dropped.
    pub(crate) fn apply(
        &mut self,
        log: &Log,
        identity: &Identity,
        write_: Write<'_>,
        schema: Option<Arc<Compiled>>,
        description: Option<&str>,
    ) {
        let Write {
            index,
            destination,
            method,
            value,
            checked,
        } = write_;
        if self.first == NONE
            && self.more.get().is_none()
            && identity.instance.is_some()
            && schema.is_none()
            && description.is_none()
        {
            // A new instance layer: its view is the fold of this one
            // message, which the log holds, so it is folded on first read
            // (D40: short layers refolded). A context of many instances of one write each builds
            // no view at all while loading. (A global layer folds now: the
            // fold's skipped writes are its diagnostics, R12.)
            self.first = index;
            return;
        }
        // Before `index` joins the messages: a dropped view is their fold.
        let refolded = match self.more.get() {
            Some(more) if more.own.get().is_some() => None,
            _ => Some(refold(log, self.messages())),
        };
        let Some(more) = self.join(index, schema, description.map(str::to_owned)) else {
            return;
        };
        if let Some(view) = refolded {
            more.own = OnceLock::from(view);
        }
        if let Some(layered) = more.layered.get_mut() {
            // Appending to the fold is applying on top; a type error is
            // skipped here exactly as the fold skips it.
            let _ = write(layered, destination, method, value.clone());
        }
        let written = match more.own.get_mut() {
            // A global layer's own view is the view the write was checked
            // against; an instance layer's own write is not the one checked.
            Some(own) if checked && identity.instance.is_none() => {
                write_checked(own, destination, method, value)
            }
            Some(own) => {
                let (method, value) = own_write(identity.instance.is_some(), method, value);
                write(own, destination, method, value)
            }
            None => Ok(()),
        };
        if let (Err(error), None) = (written, &identity.instance) {
            more.rare().diagnostics.push(Diagnostic {
                index,
                identity: identity.clone(),
                error,
            });
        }
    }

    /// Forgets the layered view: the global layer under it changed.
    pub(crate) fn invalidate_layered(&mut self) {
        if let Some(more) = self.more.get_mut() {
            more.layered = OnceLock::new();
        }
    }

    /// True when [`Layer::compact`] will drop the own view rather than copy
    /// it: every message is held, their text in `log` is short and so is
    /// the view's (or it is dropped already).
    pub(crate) fn refolds(&self, log: &Log) -> bool {
        if self.summarised() > 0 {
            return false;
        }
        let short = !self.written_beyond(log, REFOLD_BYTES);
        let own = self.more.get().and_then(|more| more.own.get());
        short && own.is_none_or(|view| view.as_ref().is_none_or(is_small))
    }

    /// Copies of the views that [`Layer::compact`] keeps; `None` for one it
    /// drops or that is not built.
    pub(crate) fn copies(&self, refolds: bool) -> (Option<Option<Value>>, Option<Option<Value>>) {
        let Some(more) = self.more.get() else {
            return (None, None);
        };
        let own = if refolds {
            None
        } else {
            more.own.get().cloned()
        };
        (own, more.layered.get().cloned())
    }

    /// True when the held messages' JSON text is longer than `limit` in
    /// all (counting stops there); a message the log does not hold counts
    /// as longer.
    pub(crate) fn written_beyond(&self, log: &Log, limit: usize) -> bool {
        let mut bytes = 0usize;
        self.messages().iter().any(|&index| {
            let len = log.json(index).map_or(usize::MAX, str::len);
            bytes = bytes.saturating_add(len);
            bytes > limit
        })
    }

    /// [`Layer::copies`] keeping the own view as it is, uncopied.
    pub(crate) fn copies_layered(&mut self) -> (Option<Option<Value>>, Option<Option<Value>>) {
        let Some(more) = self.more.get_mut() else {
            return (None, None);
        };
        let own = more.own.take();
        (own, more.layered.get().cloned())
    }

    /// Takes freshly allocated copies of the views (from [`Layer::copies`]):
    /// same values, laid out together. A view without a copy is dropped:
    /// the own view of a layer that [`refolds`](Layer::refolds), folded
    /// again on first read. What is left empty is freed.
    pub(crate) fn compact(
        &mut self,
        (own, layered): (Option<Option<Value>>, Option<Option<Value>>),
    ) {
        let Some(more) = self.more.get_mut() else {
            return;
        };
        more.own = own.map_or_else(OnceLock::new, OnceLock::from);
        more.layered = layered.map_or_else(OnceLock::new, OnceLock::from);
        if more.is_empty() {
            self.more = OnceLock::new();
        }
    }
}

impl More {
    fn rare(&mut self) -> &mut Rare {
        self.rare.get_or_insert_with(Box::default)
    }
}

/// True when the compact JSON of `value` is at most [`SMALL_VIEW`] bytes
/// (serialising stops as soon as it is longer).
fn is_small(value: &Value) -> bool {
    serde_json::to_writer(&mut Bounded(0), value).is_ok()
}

/// A writer that counts what it is given and refuses to pass
/// [`SMALL_VIEW`] bytes.
struct Bounded(usize);

impl std::io::Write for Bounded {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0 += bytes.len();
        if self.0 > SMALL_VIEW {
            return Err(std::io::ErrorKind::FileTooLarge.into());
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The fold of the messages at `indexes` in `log` on an absent value,
/// skipping what does not apply (R12) as the fold did when they arrived.
/// Stored messages are normalised, so each parses back to what was folded.
pub(crate) fn refold(log: &Log, indexes: &[usize]) -> Option<Value> {
    let mut view = None;
    for &index in indexes {
        if let Some(data) = log.data(index) {
            let instance = data.instance().is_some();
            let (destination, method, value) = data.into_write();
            let (method, value) = own_write(instance, method, value);
            let _ = write(&mut view, &destination, method, value);
        }
    }
    view
}

/// `view` copied into fresh memory, the parsed messages it was folded from
/// gone: a view folded again sits among the allocations of that parsing,
/// and is read and rendered faster from a copy of itself (as
/// [`Layer::compact`] lays views out). Only short views are folded again,
/// so the copy is cheap.
fn laid_out_together(view: Option<Value>) -> Option<Value> {
    match view {
        Some(fold @ (Value::Object(_) | Value::Array(_))) => Some(fold.clone()),
        other => other,
    }
}

/// The write an instance layer's own view takes for a message (R28): an
/// erase there is shown as `null` — "no value here" — since that view is
/// rendered below the global one and an absent key would read as the
/// global value showing through, which reads do not see (R10b). Global
/// layers, and layered views, take every write as it is.
fn own_write(instance: bool, method: Method, value: Value) -> (Method, Value) {
    match method {
        Method::Erase if instance => (Method::Set, Value::Null),
        _ => (method, value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_layer_is_three_words_or_less() {
        // A context may hold hundreds of thousands of them.
        assert!(size_of::<Layer>() <= 24, "{}", size_of::<Layer>());
    }
}
