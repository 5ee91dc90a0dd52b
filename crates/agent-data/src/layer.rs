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
#[derive(Debug, Clone, Default)]
pub(crate) struct Layer {
    /// How many of the layer's first messages a snapshot summarised without
    /// holding them (global layers only: an instance layer holds all).
    summarised: usize,
    /// Context indexes of the layer's held messages, in order.
    messages: Vec<usize>,
    /// The fold of this layer's own writes on an absent value: for a global
    /// layer its view (R12); for an instance layer what the instance wrote,
    /// without the global layer under it (what R28 renders).
    view: Option<Value>,
    /// Global layers: the writes the fold skipped (R12). An instance
    /// layer's come from folding it over the global view (`check`).
    diagnostics: Vec<Diagnostic>,
    /// The newest schema among the layer's messages, compiled (R24).
    schema: Option<Arc<Compiled>>,
    /// The newest description among the layer's messages (R24).
    description: Option<String>,
    /// Instance layers: the global view with this layer folded on top (R5),
    /// built on first read and kept up to date by this layer's writes.
    layered: OnceLock<Option<Value>>,
}

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
        Layer {
            summarised,
            messages,
            view,
            diagnostics,
            schema,
            description,
            layered: OnceLock::new(),
        }
    }

    /// Context indexes of the layer's held messages, in order: all of them
    /// unless the context was opened from a snapshot.
    pub(crate) fn messages(&self) -> &[usize] {
        &self.messages
    }

    /// How many of the layer's messages were summarised without being held.
    pub(crate) fn summarised(&self) -> usize {
        self.summarised
    }

    /// Number of the layer's messages, held or not: its version, since the
    /// log only grows.
    pub(crate) fn len(&self) -> usize {
        self.summarised + self.messages.len()
    }

    /// The fold of the layer's own writes (see the field).
    pub(crate) fn view(&self) -> Option<&Value> {
        self.view.as_ref()
    }

    /// The writes a global layer's fold skipped (R12).
    pub(crate) fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    /// The newest schema among the layer's messages (R24).
    pub(crate) fn schema(&self) -> Option<&Arc<Compiled>> {
        self.schema.as_ref()
    }

    /// The newest description among the layer's messages (R24).
    pub(crate) fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// The layered view, built by `fold` the first time it is asked for.
    pub(crate) fn layered(&self, fold: impl FnOnce() -> Option<Value>) -> Option<&Value> {
        self.layered.get_or_init(fold).as_ref()
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
            self.schema = Some(compiled);
        }
        if let Some(description) = description {
            self.description = Some(description.to_owned());
        }
        if let Some(layered) = self.layered.get_mut() {
            // Appending to the fold is applying on top; a type error is
            // skipped here exactly as the fold skips it.
            let _ = write(layered, &destination, method, value.clone());
        }
        let written = write(&mut self.view, &destination, method, value);
        if let (Err(error), None) = (written, &identity.instance) {
            self.diagnostics.push(Diagnostic {
                index,
                identity: identity.clone(),
                error,
            });
        }
    }

    /// Forgets the layered view: the global layer under it changed.
    pub(crate) fn invalidate_layered(&mut self) {
        self.layered = OnceLock::new();
    }

    /// Copies of the views, for [`Layer::compact`].
    pub(crate) fn copies(&self) -> (Option<Value>, Option<Option<Value>>) {
        (self.view.clone(), self.layered.get().cloned())
    }

    /// Takes freshly allocated copies of the views (from [`Layer::copies`]):
    /// same values, laid out together.
    pub(crate) fn compact(&mut self, (view, layered): (Option<Value>, Option<Option<Value>>)) {
        self.view = view;
        self.layered = layered.map_or_else(OnceLock::new, OnceLock::from);
    }
}
