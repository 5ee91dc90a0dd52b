//! [`Layer`]: all data messages of one identity (R4), folded as they arrive.
//!
//! The layer keeps its invariants itself: its own view is always the fold
//! of its messages (R12), the skipped writes of that fold are its
//! diagnostics, the newest schema and description win (R24), and the
//! cached layered view (an instance layer over its global layer, R5) is
//! either absent or equal to that fold. The context only says what arrived.

use crate::Diagnostic;
use crate::context::Identity;
use crate::schema::Compiled;
use agent_core::{Method, Path, write};
use serde_json::Value;
use std::sync::{Arc, OnceLock};

/// One write, as a message makes it: where, how, what (R9, R10).
pub(crate) struct Write {
    /// The message's index in the context.
    pub(crate) index: usize,
    /// Where in the view.
    pub(crate) destination: Path,
    /// How it combines.
    pub(crate) method: Method,
    /// The value written.
    pub(crate) value: Value,
}

/// All data messages of one identity (R4).
///
/// A context may hold hundreds of thousands of instance layers of one or
/// two messages each, so a layer is small (D38): what most layers lack is
/// boxed behind one pointer (`rare`), the views are boxed, and a small view
/// is kept as its compact JSON text after loading, parsed on first read.
#[derive(Debug, Clone, Default)]
pub(crate) struct Layer {
    /// How many of the layer's first messages a snapshot summarised without
    /// holding them (global layers only: an instance layer holds all).
    summarised: usize,
    /// Context indexes of the layer's held messages, in order.
    messages: Indexes,
    /// The fold of this layer's own writes on an absent value: for a global
    /// layer its view (R12); for an instance layer what the instance wrote,
    /// without the global layer under it (what R28 renders). Empty while
    /// `text` holds it (and for a layer with no message yet).
    view: OnceLock<Box<Option<Value>>>,
    /// A small view as its compact JSON text ([`Layer::compact`]), parsed
    /// into `view` on first read and dropped by the next write.
    text: Option<Box<str>>,
    /// Instance layers: the global view with this layer folded on top (R5),
    /// built on first read and kept up to date by this layer's writes.
    layered: OnceLock<Box<Option<Value>>>,
    /// Diagnostics, schema and description, which most instance layers
    /// lack; absent until one is set.
    rare: Option<Box<Rare>>,
}

/// The fields of a [`Layer`] that most layers lack.
#[derive(Debug, Clone, Default)]
struct Rare {
    /// Global layers: the writes the fold skipped (R12). An instance
    /// layer's come from folding it over the global view (`check`).
    diagnostics: Vec<Diagnostic>,
    /// The newest schema among the layer's messages, compiled (R24).
    schema: Option<Arc<Compiled>>,
    /// The newest description among the layer's messages (R24).
    description: Option<String>,
}

/// Context indexes of a layer's messages: most instance layers have one,
/// kept without allocating.
#[derive(Debug, Clone)]
enum Indexes {
    One(usize),
    Many(Vec<usize>),
}

impl Default for Indexes {
    fn default() -> Self {
        Indexes::Many(Vec::new())
    }
}

impl Indexes {
    fn as_slice(&self) -> &[usize] {
        match self {
            Indexes::One(index) => std::slice::from_ref(index),
            Indexes::Many(indexes) => indexes,
        }
    }

    fn push(&mut self, index: usize) {
        match self {
            Indexes::Many(indexes) if indexes.is_empty() => *self = Indexes::One(index),
            Indexes::Many(indexes) => indexes.push(index),
            Indexes::One(first) => *self = Indexes::Many(vec![*first, index]),
        }
    }
}

/// Views whose compact JSON is at most this long are kept as text after
/// loading. A parsed view costs about fifteen times its text; this bound
/// also bounds the nesting the parse on first read recurses through.
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
        let mut indexes = Indexes::default();
        for index in messages {
            indexes.push(index);
        }
        let rare =
            (!diagnostics.is_empty() || schema.is_some() || description.is_some()).then(|| {
                Box::new(Rare {
                    diagnostics,
                    schema,
                    description,
                })
            });
        Layer {
            summarised,
            messages: indexes,
            view: OnceLock::from(Box::new(view)),
            text: None,
            layered: OnceLock::new(),
            rare,
        }
    }

    /// Context indexes of the layer's held messages, in order: all of them
    /// unless the context was opened from a snapshot.
    pub(crate) fn messages(&self) -> &[usize] {
        self.messages.as_slice()
    }

    /// How many of the layer's messages were summarised without being held.
    pub(crate) fn summarised(&self) -> usize {
        self.summarised
    }

    /// Number of the layer's messages, held or not: its version, since the
    /// log only grows.
    pub(crate) fn len(&self) -> usize {
        self.summarised + self.messages.as_slice().len()
    }

    /// The fold of the layer's own writes (see the field).
    pub(crate) fn view(&self) -> Option<&Value> {
        self.view
            .get_or_init(|| Box::new(self.text.as_deref().and_then(parse_small)))
            .as_ref()
            .as_ref()
    }

    /// The writes a global layer's fold skipped (R12).
    pub(crate) fn diagnostics(&self) -> &[Diagnostic] {
        self.rare.as_ref().map_or(&[], |rare| &rare.diagnostics)
    }

    /// The newest schema among the layer's messages (R24).
    pub(crate) fn schema(&self) -> Option<&Arc<Compiled>> {
        self.rare.as_ref()?.schema.as_ref()
    }

    /// The newest description among the layer's messages (R24).
    pub(crate) fn description(&self) -> Option<&str> {
        self.rare.as_ref()?.description.as_deref()
    }

    /// The layered view, built by `fold` the first time it is asked for.
    pub(crate) fn layered(&self, fold: impl FnOnce() -> Option<Value>) -> Option<&Value> {
        self.layered
            .get_or_init(|| Box::new(fold()))
            .as_ref()
            .as_ref()
    }

    /// Folds one message into the layer: its write applies to the view (a
    /// type error is skipped, and for a global layer recorded, R12) and to
    /// the layered view when one is built; its schema and description, when
    /// it has them, become the layer's (R24).
    pub(crate) fn apply(
        &mut self,
        identity: &Identity,
        write_: Write,
        schema: Option<Arc<Compiled>>,
        description: Option<&str>,
    ) {
        let Write {
            index,
            destination,
            method,
            value,
        } = write_;
        self.messages.push(index);
        if let Some(compiled) = schema {
            self.rare().schema = Some(compiled);
        }
        if let Some(description) = description {
            self.rare().description = Some(description.to_owned());
        }
        if let Some(layered) = self.layered.get_mut() {
            // Appending to the fold is applying on top; a type error is
            // skipped here exactly as the fold skips it.
            let _ = write(layered, &destination, method, value.clone());
        }
        // The text, if any, no longer matches the view once written.
        let text = self.text.take();
        let mut view = self
            .view
            .take()
            .unwrap_or_else(|| Box::new(text.as_deref().and_then(parse_small)));
        let written = write(&mut view, &destination, method, value);
        self.view = OnceLock::from(view);
        if let (Err(error), None) = (written, &identity.instance) {
            self.rare().diagnostics.push(Diagnostic {
                index,
                identity: identity.clone(),
                error,
            });
        }
    }

    fn rare(&mut self) -> &mut Rare {
        self.rare.get_or_insert_with(Box::default)
    }

    /// Forgets the layered view: the global layer under it changed.
    pub(crate) fn invalidate_layered(&mut self) {
        self.layered = OnceLock::new();
    }

    /// True when the view is kept as text and has not been read since.
    pub(crate) fn is_text(&self) -> bool {
        self.text.is_some() && self.view.get().is_none()
    }

    /// Copies of the views, for [`Layer::compact`].
    pub(crate) fn copies(&self) -> (Option<Value>, Option<Option<Value>>) {
        (
            self.view().cloned(),
            self.layered.get().map(|layered| (**layered).clone()),
        )
    }

    /// Takes freshly allocated copies of the views (from [`Layer::copies`]):
    /// same values, laid out together. A view whose compact JSON is at most
    /// [`SMALL_VIEW`] bytes is kept as that text instead, and parsed again
    /// on first read.
    pub(crate) fn compact(&mut self, (view, layered): (Option<Value>, Option<Option<Value>>)) {
        self.text = view.as_ref().and_then(small_text);
        self.view = match self.text {
            Some(_) => OnceLock::new(),
            None => OnceLock::from(Box::new(view)),
        };
        self.layered =
            layered.map_or_else(OnceLock::new, |layered| OnceLock::from(Box::new(layered)));
    }
}

/// The compact JSON of `value` if it is at most [`SMALL_VIEW`] bytes long
/// (serialising stops as soon as it is longer).
fn small_text(value: &Value) -> Option<Box<str>> {
    let mut out = Bounded(Vec::new());
    serde_json::to_writer(&mut out, value).ok()?;
    String::from_utf8(out.0).ok().map(String::into_boxed_str)
}

/// Parses a view kept by [`small_text`]. It was serialised from a value, so
/// it parses; its length bounds its nesting.
fn parse_small(text: &str) -> Option<Value> {
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    serde::Deserialize::deserialize(&mut de).ok()
}

/// A writer that refuses to grow past [`SMALL_VIEW`] bytes.
struct Bounded(Vec<u8>);

impl std::io::Write for Bounded {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if self.0.len() + bytes.len() > SMALL_VIEW {
            return Err(std::io::ErrorKind::FileTooLarge.into());
        }
        self.0.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
