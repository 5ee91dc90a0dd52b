//! Validated, atomic appends (R13, R25).

use crate::context::Layer;
use crate::{Context, DataMessage, Error, Identity, Message, Result};
use agent_core::{check_write, write};
use serde_json::Value;
use std::ops::Range;

/// What to restore if a batch fails part-way.
struct Undo {
    messages: usize,
    instances: usize,
    /// Layers touched by the batch, with their state before it (`None`: new).
    layers: Vec<(Identity, Option<Snapshot>)>,
}

/// What a layer looked like before a batch touched it. Its message list
/// only grows, so its length is enough to restore it.
struct Snapshot {
    messages: usize,
    /// Taken only for batches of several messages: a batch of one fails
    /// before it changes anything.
    view: Option<Option<Value>>,
    schema: Option<(usize, std::sync::Arc<crate::schema::Compiled>)>,
    description: Option<usize>,
}

impl Context {
    /// Appends one message after validating it (R13, R25); returns its index.
    ///
    /// A data message whose write is a type error against the view it would
    /// be applied to, or whose resulting view breaks the layer's schema
    /// (`required` tolerated), is refused and nothing changes. A global
    /// write is also refused when it would make a write of an instance
    /// layer of the same kind fail, so a context built only through
    /// `append` always folds without diagnostics.
    pub fn append(&mut self, message: impl Into<Message>) -> Result<usize> {
        let index = self.messages.len();
        self.append_all(vec![message.into()])?;
        Ok(index)
    }

    /// Appends several messages atomically: each is validated against the
    /// views as the earlier ones leave them, and either all are appended or,
    /// on the first error, none is. Returns the new messages' index range.
    pub fn append_all(&mut self, batch: Vec<Message>) -> Result<Range<usize>> {
        let start = self.messages.len();
        let mut undo = Undo {
            messages: start,
            instances: self.instances.len(),
            layers: Vec::new(),
        };
        let snapshot_views = batch.len() > 1;
        for message in batch {
            if let Err(error) = self.append_checked(message, &mut undo, snapshot_views) {
                self.rollback(undo);
                return Err(error);
            }
        }
        Ok(start..self.messages.len())
    }

    fn append_checked(
        &mut self,
        message: Message,
        undo: &mut Undo,
        snapshot_views: bool,
    ) -> Result<()> {
        let index = self.messages.len();
        let schema = self
            .compile_schema(&message)
            .map_err(|fault| Error::Message {
                index,
                line: None,
                fault,
            })?;
        if let Message::Data(data) = &message {
            let identity = Identity {
                kind: data.kind().clone(),
                instance: data.instance().cloned(),
            };
            self.validate(index, data, &identity, schema.as_deref())?;
            // Recorded only after validation passed: a batch of one that fails
            // has changed nothing and needs no view snapshot.
            if !undo.layers.iter().any(|(id, _)| id == &identity) {
                let before = self.layers.get(&identity).map(|layer| Snapshot {
                    messages: layer.messages.len(),
                    view: snapshot_views.then(|| layer.view.clone()),
                    schema: layer.schema.clone(),
                    description: layer.description,
                });
                undo.layers.push((identity, before));
            }
        }
        self.push_unchecked(message, schema);
        Ok(())
    }

    /// R13 and R25 for one data message about to become message `index`.
    fn validate(
        &self,
        index: usize,
        data: &DataMessage,
        identity: &Identity,
        own_schema: Option<&crate::schema::Compiled>,
    ) -> Result<()> {
        let kind = data.kind();
        let instance = data.instance();
        let global = self.layer(kind, None).and_then(|l| l.view.as_ref());
        // The view this write applies to: global, or the instance's cached
        // layered view (R5). Borrowed: checking a write changes nothing.
        let base = match instance {
            None => global,
            Some(_) => self.view(kind, instance),
        };
        let type_error = |identity: &Identity, source| Error::TypeError {
            index,
            identity: identity.clone(),
            source,
        };
        check_write(base, data.destination(), data.method(), data.value())
            .map_err(|e| type_error(identity, e))?;
        let inherited = self.compiled_schema(kind, instance);
        let schema = own_schema.or(inherited.as_deref());
        let instance_layers: Vec<&Layer> = match instance {
            Some(_) => Vec::new(),
            None => self
                .layers
                .iter()
                .filter(|(id, _)| &id.kind == kind && id.instance.is_some())
                .map(|(_, layer)| layer)
                .collect(),
        };
        if schema.is_none() && instance_layers.is_empty() {
            return Ok(());
        }
        let mut next = base.cloned();
        write(
            &mut next,
            data.destination(),
            data.method(),
            data.value().clone(),
        )
        .map_err(|e| type_error(identity, e))?;
        if let (Some(schema), Some(view)) = (schema, &next) {
            let violations = schema.violations(view, false);
            if !violations.is_empty() {
                return Err(Error::Schema {
                    index,
                    identity: identity.clone(),
                    violations,
                });
            }
        }
        // A global write must not break the fold of an instance layer (R12, R13).
        for layer in instance_layers {
            let mut before = Vec::new();
            self.fold_instance(layer, global.cloned(), Some(&mut before));
            let mut after = Vec::new();
            self.fold_instance(layer, next.clone(), Some(&mut after));
            if let Some(new) = after
                .into_iter()
                .find(|d| !before.iter().any(|b| b.index == d.index))
            {
                return Err(type_error(&new.identity, new.error));
            }
        }
        Ok(())
    }

    fn rollback(&mut self, undo: Undo) {
        self.messages.truncate(undo.messages);
        self.instances.truncate(undo.instances);
        // Validation may have built layered views over messages now removed.
        let kinds: Vec<agent_core::Kind> =
            undo.layers.iter().map(|(id, _)| id.kind.clone()).collect();
        for (id, layer) in self.layers.iter_mut() {
            if id.instance.is_some() && kinds.contains(&id.kind) {
                layer.layered = std::sync::OnceLock::new();
            }
        }
        for (identity, before) in undo.layers.into_iter().rev() {
            match before {
                None => {
                    self.layers.shift_remove(&identity);
                }
                Some(before) => {
                    if let Some(layer) = self.layers.get_mut(&identity) {
                        layer.messages.truncate(before.messages);
                        layer.schema = before.schema;
                        layer.description = before.description;
                        if let Some(view) = before.view {
                            layer.view = view;
                        }
                        // Built over the batch's writes: rebuild on next read.
                        layer.layered = std::sync::OnceLock::new();
                    }
                }
            }
        }
    }
}
