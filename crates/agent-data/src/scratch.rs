//! The scratch state validation works on (`prepare.rs`, `stage.rs`): a copy
//! of only the layers a batch writes, as its messages leave them.
//!
//! Each message's write is checked for a type error against the views the
//! earlier ones leave; the checks that look at a whole view — the layer's
//! schema, and that a global write breaks no instance layer (D4: instances unbroken) — run once
//! per layer, at the batch's last write to it (D39: batch judged together), so a batch
//! costs time linear in its size, not in its size times its views.

use crate::identity::IdentityRef;
use crate::layer::Layer;
use crate::log::{Line, serialise};
use crate::schema::Compiled;
use crate::{Context, DataMessage, Diagnostic, Error, Identity, Message, Result};
use agent_core::json::{Map, Value};
use agent_core::{Instance, Kind, Method, Path, check_write, write};
use std::borrow::Cow;
use std::sync::Arc;

/// One validated message, as a check leaves it for landing
/// ([`Context::append_prepared`] and [`Context::commit`] land it).
#[derive(Debug)]
pub(crate) struct Entry<'m> {
    pub(crate) message: Cow<'m, Message>,
    pub(crate) schema: Option<Arc<Compiled>>,
    pub(crate) line: Line,
}

/// The schema `message` declares, compiled (cached, or compiled now without
/// caching it: validation borrows the context; landing caches it). `index`
/// names the message in errors.
pub(crate) fn own_schema(
    context: &Context,
    message: &Message,
    index: usize,
) -> Result<Option<Arc<Compiled>>> {
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

/// For each message of `batch`, whether it is the batch's last write to its
/// layer: the write after which the layer's whole view is checked (D39: batch judged together).
pub(crate) fn closing_writes(batch: &[Message]) -> Vec<bool> {
    if let [message] = batch {
        // A batch of one, the common case: no hashing.
        return vec![message.as_data().is_some()];
    }
    let mut seen = std::collections::HashSet::new();
    let mut closing: Vec<bool> = batch
        .iter()
        .rev()
        .map(|message| {
            message.as_data().is_some_and(|data| {
                seen.insert((data.kind().as_str(), data.instance().map(Instance::as_str)))
            })
        })
        .collect();
    closing.reverse();
    closing
}

/// Where a message stands in its batch, for validating it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Turn {
    /// What errors call the message.
    pub(crate) index: usize,
    /// It is the batch's last write to its layer ([`closing_writes`]).
    pub(crate) closes: bool,
    /// Later messages will read the scratch.
    pub(crate) more: bool,
}

/// The batch's effect on one layer, as validation goes.
#[derive(Debug, Clone, Default)]
pub(crate) struct Pending {
    /// The layer's view — for an instance layer its layered view (R5) — with
    /// the batch's accepted writes applied. `None`: not built; it is the
    /// context's view with `writes` applied.
    view: Option<Option<Value>>,
    /// Instance layers: how many global writes of the kind the batch had
    /// made when `view` was built. A later one makes `view` stale; counting
    /// them, instead of forgetting every layered view at each global write,
    /// keeps a global write's cost independent of how many instance layers
    /// the batch has written.
    over: usize,
    /// Positions (in the scratch's entries) of the batch's accepted writes.
    writes: Vec<usize>,
    /// The newest schema the batch's messages declared for this layer.
    schema: Option<Arc<Compiled>>,
}

/// Validation state for one batch (or, when staging, one instance's items).
pub(crate) struct Scratch<'c, 'm> {
    context: &'c Context,
    pub(crate) layers: crate::identity_map::LayerMap<Pending>,
    pub(crate) entries: Vec<Entry<'m>>,
    /// Staging: layers of the context read, with their lengths then.
    pub(crate) reads: Option<Vec<(Identity, usize)>>,
}

impl<'c, 'm> Scratch<'c, 'm> {
    pub(crate) fn new(context: &'c Context, track_reads: bool) -> Self {
        Scratch {
            context,
            layers: Default::default(),
            entries: Vec::new(),
            reads: track_reads.then(Vec::new),
        }
    }

    /// Validates one message where `turn` says it stands. On error the
    /// scratch is as it was.
    pub(crate) fn check(&mut self, message: Cow<'m, Message>, turn: Turn) -> Result<Entry<'m>> {
        let fault = |fault| Error::Message {
            index: turn.index,
            line: None,
            fault,
        };
        // Serialising enforces the depth limit (R33) before anything below
        // walks the value recursively.
        let line = serialise(message.fields()).map_err(fault)?;
        let schema = self.check_message(message.as_ref(), turn)?;
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
        turn: Turn,
    ) -> Result<Option<Arc<Compiled>>> {
        let schema = own_schema(self.context, message, turn.index)?;
        if let Message::Data(data) = message {
            self.validate(data, schema.as_ref(), turn)?;
        }
        Ok(schema)
    }

    /// R13 for one data message and, at the batch's last write to its layer,
    /// R25 and D4 for the view it leaves (D39: batch judged together); on success records its write.
    fn validate(
        &mut self,
        data: &DataMessage,
        own_schema: Option<&Arc<Compiled>>,
        turn: Turn,
    ) -> Result<()> {
        let (kind, instance) = (data.kind(), data.instance());
        self.track(kind, None);
        if instance.is_some() {
            self.track(kind, instance);
        }
        let index = turn.index;
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
        if !turn.closes {
            // The write applies (just checked); the layer's view is judged
            // after the batch's last write to it.
            self.accept(data, own_schema, None);
            return Ok(());
        }
        let schema = own_schema
            .cloned()
            .or_else(|| instance.and_then(|_| self.layer_schema(kind, instance)))
            .or_else(|| self.layer_schema(kind, None));
        let dependents = match instance {
            None => self.instance_layers(kind),
            Some(_) => Vec::new(),
        };
        // Checks that can fail after the write work on a copy, so a refused
        // message leaves the scratch as it was. A copy per layer and batch,
        // as the checks themselves read the whole view once.
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
                let Some(violations) = schema.violations(view, false) else {
                    return Err(Error::SchemaUnchecked {
                        index,
                        identity: identity(),
                    });
                };
                if !violations.is_empty() {
                    return Err(Error::Schema {
                        index,
                        identity: identity(),
                        violations,
                    });
                }
            }
            for x in &dependents {
                if let Some(broken) = self.breaks(kind, x, next.as_ref()) {
                    return Err(type_error(broken.identity, broken.error));
                }
            }
            Some(next)
        } else {
            None
        };
        if turn.more || self.reads.is_some() {
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
        // Counted, a global write makes the layered views of its kind built
        // before it stale (`Pending::over`).
        pending.writes.push(position);
        if let Some(schema) = own_schema {
            pending.schema = Some(Arc::clone(schema));
        }
    }

    fn pending_mut(&mut self, kind: &Kind, instance: Option<&Instance>) -> &mut Pending {
        self.layers.value_or_default(kind, instance)
    }

    fn pending(&self, kind: &Kind, instance: Option<&Instance>) -> Option<&Pending> {
        if self.layers.is_empty() {
            // The common case, a batch of one: no hashing.
            return None;
        }
        self.layers.get(IdentityRef::new(kind, instance))
    }

    /// True when the batch wrote to the layer.
    fn written(&self, kind: &Kind, instance: Option<&Instance>) -> bool {
        self.pending(kind, instance)
            .is_some_and(|p| !p.writes.is_empty())
    }

    /// The batch's global writes of `kind` so far.
    fn global_writes(&self, kind: &Kind) -> usize {
        self.pending(kind, None).map_or(0, |p| p.writes.len())
    }

    /// Builds the layer's scratch view if the batch changed what it reads
    /// and it is not built (or, for an instance layer, built over an older
    /// global view).
    fn build(&mut self, kind: &Kind, instance: Option<&Instance>) {
        let over = match instance {
            Some(_) => self.global_writes(kind),
            None => 0,
        };
        let global_changed = over > 0;
        let built = self
            .pending(kind, instance)
            .is_some_and(|p| p.view.is_some() && p.over == over);
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
        let pending = self.pending_mut(kind, instance);
        pending.view = Some(view);
        pending.over = over;
    }

    /// The layer's current view: the scratch's if built, else the context's.
    /// Call [`Scratch::build`] first: an instance layer's may be stale.
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
        let context = self.context;
        let mut found: Vec<Instance> = context
            .layers
            .keys()
            .filter_map(|id| instance_of(id, kind))
            .cloned()
            .collect();
        // The batch's new layers after the context's: no set (and no hasher
        // seeded) for a kind without instances, the common case.
        for x in self.layers.keys().filter_map(|id| instance_of(id, kind)) {
            if !context.layers.contains_key(IdentityRef::new(kind, Some(x))) {
                found.push(x.clone());
            }
        }
        found
    }

    /// A write of instance `x` — the context's or the batch's so far — that
    /// fails over `after` (the global view the batch's last global write of
    /// `kind` leaves) and is not one of the context's writes that already
    /// failed over the context's global view, if any (D4: instances unbroken; D39: batch judged together).
    fn breaks(&self, kind: &Kind, x: &Instance, after: Option<&Value>) -> Option<Diagnostic> {
        let new = self.fold_diagnostics(kind, x, after, true);
        if new.is_empty() {
            // The common case: one fold.
            return None;
        }
        let old = self.fold_diagnostics(kind, x, self.context.view(kind, None), false);
        new.into_iter()
            .find(|d| !old.iter().any(|b| b.index == d.index))
    }

    /// Diagnostics of folding instance layer `(kind, x)` — the context's
    /// messages, then (if `batch`) the batch's — over `global`.
    fn fold_diagnostics(
        &self,
        kind: &Kind,
        x: &Instance,
        global: Option<&Value>,
        batch: bool,
    ) -> Vec<Diagnostic> {
        let context = self.context;
        let held = context
            .layer(kind, Some(x))
            .map_or(&[][..], Layer::messages);
        let mut writes: Vec<(usize, Path, Method, Value)> = held
            .iter()
            .filter_map(|&index| match context.log.message(index) {
                Some(Message::Data(data)) => {
                    let (destination, method, value) = data.into_write();
                    Some((index, destination, method, value))
                }
                _ => None,
            })
            .collect();
        if batch {
            let positions = self.pending(kind, Some(x)).map_or(&[][..], |p| &p.writes);
            writes.extend(positions.iter().filter_map(|&position| {
                let Some(Message::Data(data)) =
                    self.entries.get(position).map(|e| e.message.as_ref())
                else {
                    return None;
                };
                let (destination, value) = (data.destination().clone(), data.value().clone());
                Some((context.len() + position, destination, data.method(), value))
            }));
        }
        let mut view = reachable(global, writes.iter().map(|(_, path, _, _)| path));
        let mut diagnostics = Vec::new();
        for (index, destination, method, value) in writes {
            if let Err(error) = write(&mut view, &destination, method, value) {
                diagnostics.push(Diagnostic {
                    index,
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

/// The instance of `id` if it is an instance layer of `kind`.
fn instance_of<'i>(id: &'i Identity, kind: &Kind) -> Option<&'i Instance> {
    match &id.instance {
        Some(x) if &id.kind == kind => Some(x),
        _ => None,
    }
}

/// A copy of the part of `global` that writes at `paths` can read, for
/// folding them over it: when `global` is an object and no path is the
/// root, only its entries the paths' first segments name. Such a write
/// reads and changes only the entry its path starts at, and the root stays
/// an object, so the fold skips exactly the writes it would skip over the
/// whole view. Copying the whole global view for each instance layer made
/// the D4 check of a global write cost that view's size times the instance
/// layers.
fn reachable<'p>(global: Option<&Value>, paths: impl Iterator<Item = &'p Path>) -> Option<Value> {
    let Some(Value::Object(map)) = global else {
        return global.cloned();
    };
    let mut part = Map::new();
    for path in paths {
        let Some(first) = path.segments().first() else {
            return global.cloned();
        };
        let key = first.as_key();
        if !part.contains_key(key.as_ref())
            && let Some(entry) = map.get(key.as_ref())
        {
            part.insert(key.into_owned(), entry.clone());
        }
    }
    Some(Value::Object(part))
}
