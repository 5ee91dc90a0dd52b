//! Validated, atomic appends (R13, R25).

use crate::context::{IdentityRef, Layer};
use crate::schema::Compiled;
use crate::{Context, DataMessage, Error, Identity, Message, Result};
use agent_core::{check_write, write};
use serde_json::Value;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

/// What to restore if a batch of several messages fails part-way. (A batch
/// of one fails before it changes anything, so it needs none.)
struct Undo {
    messages: usize,
    instances: usize,
    /// How many layers there were: layers from here on are new.
    layers: usize,
    /// Earlier layers the batch touched, by index, as they were before it.
    touched: Vec<(usize, Snapshot)>,
}

/// What a layer looked like before a batch touched it. Its message list
/// only grows, so its length is enough to restore it.
struct Snapshot {
    messages: usize,
    view: Option<Value>,
    schema: Option<Arc<Compiled>>,
    description: Option<String>,
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
    ///
    /// The context keeps the message as its JSON text and the value it
    /// writes in the view; the caller keeps `message`.
    pub fn append(&mut self, message: &Message) -> Result<usize> {
        let index = self.len();
        self.append_checked(message, None)?;
        Ok(index)
    }

    /// Appends several messages atomically: each is validated against the
    /// views as the earlier ones leave them, and either all are appended or,
    /// on the first error, none is. Returns the new messages' index range.
    pub fn append_all(&mut self, batch: &[Message]) -> Result<Range<usize>> {
        let start = self.len();
        if let [message] = batch {
            self.append_checked(message, None)?;
            return Ok(start..self.len());
        }
        let mut undo = Undo {
            messages: start,
            instances: self.instances.len(),
            layers: self.layers.len(),
            touched: Vec::new(),
        };
        for message in batch {
            if let Err(error) = self.append_checked(message, Some(&mut undo)) {
                self.rollback(undo);
                return Err(error);
            }
        }
        Ok(start..self.len())
    }

    fn append_checked(&mut self, message: &Message, undo: Option<&mut Undo>) -> Result<()> {
        let index = self.len();
        // Writing it first checks its depth in the same pass, before
        // anything walks it recursively; it becomes a message only if valid.
        let written = self
            .log
            .write(message.fields())
            .map_err(|fault| Error::Message {
                index,
                line: None,
                fault,
            })?;
        let checked = self.check_message(index, message, undo);
        match checked {
            Ok(schema) => {
                self.push_written(std::borrow::Cow::Borrowed(message), schema, written);
                Ok(())
            }
            Err(error) => {
                self.log.discard(written);
                Err(error)
            }
        }
    }

    /// Everything [`Context::append_checked`] checks before it pushes.
    fn check_message(
        &mut self,
        index: usize,
        message: &Message,
        undo: Option<&mut Undo>,
    ) -> Result<Option<Arc<Compiled>>> {
        let schema = self
            .compile_schema(message)
            .map_err(|fault| Error::Message {
                index,
                line: None,
                fault,
            })?;
        if let Message::Data(data) = message {
            self.validate(index, data, schema.as_deref())?;
            let touched = undo.and_then(|undo| {
                let (at, _, layer) = self
                    .layers
                    .get_full(&IdentityRef::new(data.kind(), data.instance()))?;
                Some((undo, at, layer))
            });
            if let Some((undo, at, layer)) = touched {
                if at < undo.layers && !undo.touched.iter().any(|(i, _)| *i == at) {
                    let before = Snapshot {
                        messages: layer.messages.len(),
                        view: layer.view.clone(),
                        schema: layer.schema.clone(),
                        description: layer.description.clone(),
                    };
                    undo.touched.push((at, before));
                }
            }
        }
        Ok(schema)
    }

    /// R13 and R25 for one data message about to become message `index`.
    fn validate(
        &self,
        index: usize,
        data: &DataMessage,
        own_schema: Option<&Compiled>,
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
        // Built only for an error: appends that pass allocate nothing here.
        let identity = || Identity {
            kind: kind.clone(),
            instance: instance.cloned(),
        };
        let type_error = |identity: Identity, source| Error::TypeError {
            index,
            identity,
            source,
        };
        check_write(base, data.destination(), data.method(), data.value())
            .map_err(|e| type_error(identity(), e))?;
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
        .map_err(|e| type_error(identity(), e))?;
        if let (Some(schema), Some(view)) = (schema, &next) {
            let violations = schema.violations(view, false);
            if !violations.is_empty() {
                return Err(Error::Schema {
                    index,
                    identity: identity(),
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
                return Err(type_error(new.identity, new.error));
            }
        }
        Ok(())
    }

    fn rollback(&mut self, undo: Undo) {
        self.log.truncate(undo.messages);
        self.instances.truncate(undo.instances);
        // Validation may have built layered views over messages now removed.
        let mut kinds: Vec<agent_core::Kind> = self.layers[undo.layers..]
            .keys()
            .map(|id| id.kind.clone())
            .collect();
        self.layers.truncate(undo.layers);
        for (at, before) in undo.touched {
            if let Some((id, layer)) = self.layers.get_index_mut(at) {
                kinds.push(id.kind.clone());
                layer.messages.truncate(before.messages);
                layer.view = before.view;
                layer.schema = before.schema;
                layer.description = before.description;
            }
        }
        for (id, layer) in self.layers.iter_mut() {
            if id.instance.is_some() && kinds.contains(&id.kind) {
                layer.layered = OnceLock::new();
            }
        }
    }
}
