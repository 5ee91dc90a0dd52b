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
//! writes: each message is checked against the views the earlier ones leave.

use crate::context::{IdentityRef, index_or_insert};
use crate::log::{Line, serialise};
use crate::schema::Compiled;
use crate::{Context, DataMessage, Diagnostic, Error, Identity, Message, Result};
use agent_core::{Instance, Kind, check_write, write};
use indexmap::IndexMap;
use serde_json::Value;
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

/// One validated message.
#[derive(Debug)]
pub(crate) struct Entry<'m> {
    pub(crate) message: Cow<'m, Message>,
    pub(crate) schema: Option<Arc<Compiled>>,
    pub(crate) line: Line,
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
    /// each message is checked against the views the earlier ones leave — a
    /// write that is a type error, a view that breaks its schema (`required`
    /// tolerated), a global write that would make an instance layer's write
    /// fail (decision D4), a message nested too deep (R33) or carrying an
    /// invalid schema is an error naming the index it would have had.
    pub fn prepare<'m>(&self, batch: &'m [Message]) -> Result<Prepared<'m>> {
        let mut scratch = Scratch::new(self, false);
        let last = batch.len().saturating_sub(1);
        for (offset, message) in batch.iter().enumerate() {
            let index = self.len() + offset;
            // Nothing reads the scratch after the last message.
            let entry = scratch.check(Cow::Borrowed(message), index, offset < last)?;
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

    /// Appends one message after validating it (R13, R25); returns its index.
    /// A refused message changes nothing. The context keeps the message as
    /// its JSON text and the value it writes in the view; the caller keeps
    /// `message`.
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
        match Scratch::new(self, false).check_message(message, index, false) {
            Ok(schema) => {
                if let Some(schema) = &schema {
                    self.schemas.insert(schema);
                }
                self.push_written(Cow::Borrowed(message), schema, written);
                Ok(index)
            }
            Err(error) => {
                self.log.discard(written);
                Err(error)
            }
        }
    }

    /// Appends several messages atomically: each is validated against the
    /// views as the earlier ones leave them, and either all are appended or,
    /// on the first error, none is. Returns the new messages' index range.
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
        self.push_written(message, schema, written);
    }
}

/// The schema `message` declares, compiled (cached, or compiled now without
/// caching it: validation borrows the context; landing caches it). `index`
/// names the message in errors.
fn own_schema(context: &Context, message: &Message, index: usize) -> Result<Option<Arc<Compiled>>> {
    message
        .as_data()
        .and_then(DataMessage::schema)
        .map(|schema| context.schemas.compile(schema))
        .transpose()
        .map_err(|fault| Error::Message {
            index,
            line: None,
            fault,
        })
}

/// The batch's effect on one layer, as validation goes.
#[derive(Debug, Clone, Default)]
pub(crate) struct Pending {
    /// The layer's view — for an instance layer its layered view (R5) — with
    /// the batch's accepted writes applied. `None`: not built; it is the
    /// context's view with `writes` applied.
    view: Option<Option<Value>>,
    /// Positions (in the scratch's entries) of the batch's accepted writes.
    writes: Vec<usize>,
    /// The newest schema the batch's messages declared for this layer.
    schema: Option<Arc<Compiled>>,
}

/// Validation state for one batch (or, when staging, one instance's items).
pub(crate) struct Scratch<'c, 'm> {
    context: &'c Context,
    pub(crate) layers: IndexMap<Identity, Pending>,
    pub(crate) entries: Vec<Entry<'m>>,
    /// Staging: layers of the context read, with their lengths then.
    pub(crate) reads: Option<Vec<(Identity, usize)>>,
}

impl<'c, 'm> Scratch<'c, 'm> {
    pub(crate) fn new(context: &'c Context, track_reads: bool) -> Self {
        Scratch {
            context,
            layers: IndexMap::new(),
            entries: Vec::new(),
            reads: track_reads.then(Vec::new),
        }
    }

    /// Validates one message; `index` is what errors call it, and `more`
    /// says whether later messages will read the scratch. On error the
    /// scratch is as it was.
    pub(crate) fn check(
        &mut self,
        message: Cow<'m, Message>,
        index: usize,
        more: bool,
    ) -> Result<Entry<'m>> {
        let fault = |fault| Error::Message {
            index,
            line: None,
            fault,
        };
        // Serialising enforces the depth limit (R33) before anything below
        // walks the value recursively.
        let line = serialise(message.fields()).map_err(fault)?;
        let schema = self.check_message(message.as_ref(), index, more)?;
        Ok(Entry {
            message,
            schema,
            line,
        })
    }

    /// [`Scratch::check`] for a message already serialised (so within the
    /// depth limit): compiles its schema and validates its write.
    pub(crate) fn check_message(
        &mut self,
        message: &Message,
        index: usize,
        more: bool,
    ) -> Result<Option<Arc<Compiled>>> {
        let schema = own_schema(self.context, message, index)?;
        if let Message::Data(data) = message {
            self.validate(data, schema.as_ref(), index, more)?;
        }
        Ok(schema)
    }

    /// R13, R25 and D4 for one data message; on success records its write.
    fn validate(
        &mut self,
        data: &DataMessage,
        own_schema: Option<&Arc<Compiled>>,
        index: usize,
        more: bool,
    ) -> Result<()> {
        let (kind, instance) = (data.kind(), data.instance());
        self.track(kind, None);
        if instance.is_some() {
            self.track(kind, instance);
        }
        let identity = || Identity {
            kind: kind.clone(),
            instance: instance.cloned(),
        };
        let type_error = |identity, source| Error::TypeError {
            index,
            identity,
            source,
        };
        self.build(kind, instance);
        let base = self.view(kind, instance);
        check_write(base, data.destination(), data.method(), data.value())
            .map_err(|e| type_error(identity(), e))?;
        let schema = own_schema
            .cloned()
            .or_else(|| instance.and_then(|_| self.layer_schema(kind, instance)))
            .or_else(|| self.layer_schema(kind, None));
        let dependents = match instance {
            None => self.instance_layers(kind),
            Some(_) => Vec::new(),
        };
        // Checks that can fail after the write work on a copy, so a refused
        // message leaves the scratch as it was.
        let next = if schema.is_some() || !dependents.is_empty() {
            let mut next = base.cloned();
            write(
                &mut next,
                data.destination(),
                data.method(),
                data.value().clone(),
            )
            .map_err(|e| type_error(identity(), e))?;
            if let (Some(schema), Some(view)) = (&schema, &next) {
                let violations = schema.violations(view, false);
                if !violations.is_empty() {
                    return Err(Error::Schema {
                        index,
                        identity: identity(),
                        violations,
                    });
                }
            }
            for x in &dependents {
                if let Some(broken) = self.breaks(kind, x, base, next.as_ref()) {
                    return Err(type_error(broken.identity, broken.error));
                }
            }
            Some(next)
        } else {
            None
        };
        if more || self.reads.is_some() {
            self.accept(data, own_schema, next);
        }
        Ok(())
    }

    /// Records an accepted write of the next entry.
    fn accept(
        &mut self,
        data: &DataMessage,
        own_schema: Option<&Arc<Compiled>>,
        next: Option<Option<Value>>,
    ) {
        let position = self.entries.len();
        let (kind, instance) = (data.kind(), data.instance());
        let pending = self.pending_mut(kind, instance);
        match (next, &mut pending.view) {
            (Some(next), view) => *view = Some(next),
            (None, Some(view)) => {
                // Checked by `check_write`, so it applies.
                let _ = write(
                    view,
                    data.destination(),
                    data.method(),
                    data.value().clone(),
                );
            }
            (None, None) => {}
        }
        pending.writes.push(position);
        if let Some(schema) = own_schema {
            pending.schema = Some(Arc::clone(schema));
        }
        if instance.is_none() {
            // Layered views of this kind were built over the old global view.
            for (id, pending) in self.layers.iter_mut() {
                if &id.kind == kind && id.instance.is_some() {
                    pending.view = None;
                }
            }
        }
    }

    fn pending_mut(&mut self, kind: &Kind, instance: Option<&Instance>) -> &mut Pending {
        let at = index_or_insert(&mut self.layers, kind, instance);
        &mut self.layers[at]
    }

    fn pending(&self, kind: &Kind, instance: Option<&Instance>) -> Option<&Pending> {
        if self.layers.is_empty() {
            // The common case, a batch of one: no hashing.
            return None;
        }
        self.layers.get(&IdentityRef::new(kind, instance))
    }

    /// True when the batch wrote to the layer.
    fn written(&self, kind: &Kind, instance: Option<&Instance>) -> bool {
        self.pending(kind, instance)
            .is_some_and(|p| !p.writes.is_empty())
    }

    /// Builds the layer's scratch view if the batch changed what it reads.
    fn build(&mut self, kind: &Kind, instance: Option<&Instance>) {
        let built = self
            .pending(kind, instance)
            .is_some_and(|p| p.view.is_some());
        let global_changed = instance.is_some() && self.written(kind, None);
        if built || !(self.written(kind, instance) || global_changed) {
            return;
        }
        let context = self.context;
        let mut view = match instance {
            None => context.view(kind, None).cloned(),
            Some(_) if global_changed => {
                self.build(kind, None);
                let global = self.view(kind, None).cloned();
                match context.layer(kind, instance) {
                    Some(layer) => context.fold_instance(layer, global, None),
                    None => global,
                }
            }
            Some(_) => context.view(kind, instance).cloned(),
        };
        if let Some(pending) = self.pending(kind, instance) {
            for &position in &pending.writes {
                if let Some(Message::Data(data)) =
                    self.entries.get(position).map(|e| e.message.as_ref())
                {
                    // Validated when accepted, against this same sequence.
                    let _ = write(
                        &mut view,
                        data.destination(),
                        data.method(),
                        data.value().clone(),
                    );
                }
            }
        }
        self.pending_mut(kind, instance).view = Some(view);
    }

    /// The layer's current view: the scratch's if built, else the context's.
    fn view(&self, kind: &Kind, instance: Option<&Instance>) -> Option<&Value> {
        match self.pending(kind, instance).and_then(|p| p.view.as_ref()) {
            Some(view) => view.as_ref(),
            None => self.context.view(kind, instance),
        }
    }

    /// The newest schema of a layer's own messages, the batch's included.
    fn layer_schema(&self, kind: &Kind, instance: Option<&Instance>) -> Option<Arc<Compiled>> {
        self.pending(kind, instance)
            .and_then(|p| p.schema.clone())
            .or_else(|| self.context.layer(kind, instance)?.schema().cloned())
    }

    /// Instance layers of `kind`: the context's and those the batch created.
    fn instance_layers(&self, kind: &Kind) -> Vec<Instance> {
        let ids = self.context.layers.keys().chain(self.layers.keys());
        let found: indexmap::IndexSet<&Instance> = ids
            .filter(|id| &id.kind == kind)
            .filter_map(|id| id.instance.as_ref())
            .collect();
        found.into_iter().cloned().collect()
    }

    /// A write of instance `x` that folds over `before` but fails over
    /// `after` (the global view after a global write), if any (D4).
    fn breaks(
        &self,
        kind: &Kind,
        x: &Instance,
        before: Option<&Value>,
        after: Option<&Value>,
    ) -> Option<Diagnostic> {
        let old = self.fold_diagnostics(kind, x, before.cloned());
        let new = self.fold_diagnostics(kind, x, after.cloned());
        new.into_iter()
            .find(|d| !old.iter().any(|b| b.index == d.index))
    }

    /// Diagnostics of folding instance layer `(kind, x)` — the context's
    /// messages, then the batch's — over `global`.
    fn fold_diagnostics(
        &self,
        kind: &Kind,
        x: &Instance,
        global: Option<Value>,
    ) -> Vec<Diagnostic> {
        let mut diagnostics = Vec::new();
        let mut view = match self.context.layer(kind, Some(x)) {
            Some(layer) => self
                .context
                .fold_instance(layer, global, Some(&mut diagnostics)),
            None => global,
        };
        let base = self.context.len();
        for &position in self.pending(kind, Some(x)).map_or(&[][..], |p| &p.writes) {
            let Some(Message::Data(data)) = self.entries.get(position).map(|e| e.message.as_ref())
            else {
                continue;
            };
            if let Err(error) = write(
                &mut view,
                data.destination(),
                data.method(),
                data.value().clone(),
            ) {
                diagnostics.push(Diagnostic {
                    index: base + position,
                    identity: Identity {
                        kind: kind.clone(),
                        instance: Some(x.clone()),
                    },
                    error,
                });
            }
        }
        diagnostics
    }

    /// Staging: remembers the length of a layer validation reads.
    fn track(&mut self, kind: &Kind, instance: Option<&Instance>) {
        let context = self.context;
        if let Some(reads) = &mut self.reads {
            let id = IdentityRef::new(kind, instance);
            if !reads.iter().any(|(seen, _)| id.equivalent_to(seen)) {
                let len = context.layer(kind, instance).map_or(0, |l| l.len());
                reads.push((
                    Identity {
                        kind: kind.clone(),
                        instance: instance.cloned(),
                    },
                    len,
                ));
            }
        }
    }
}
