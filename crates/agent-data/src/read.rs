//! The read side of a [`Context`]: views, values at references, schemas and
//! descriptions, layer by layer (R4, R5, R14, R24). Everything here borrows;
//! nothing changes the log (that is `context.rs`, `prepare.rs`, `stage.rs`).

use crate::identity::IdentityRef;
use crate::layer::Layer;
use crate::schema::Compiled;
use crate::{Context, Diagnostic, Identity};
use agent_core::json::Value;
use agent_core::{Instance, Kind, Reference, write};
use std::sync::Arc;

impl Context {
    /// Instance ids in order of first appearance.
    pub fn instances(&self) -> impl ExactSizeIterator<Item = &Instance> {
        self.instances.iter(&self.layers)
    }

    /// Identities of every layer, in order of first appearance.
    pub fn identities(&self) -> impl ExactSizeIterator<Item = &Identity> {
        self.layers.keys()
    }

    /// Context indexes of the held messages of one layer, in order: all of
    /// them when the context [is complete](Context::is_complete).
    pub fn layer_messages(&self, identity: &Identity) -> &[usize] {
        self.layers.get(identity).map_or(&[], Layer::messages)
    }

    /// How many messages one layer has, held or not. The log only grows,
    /// so this is the layer's version.
    pub fn layer_len(&self, identity: &Identity) -> usize {
        self.layers.get(identity).map_or(0, Layer::len)
    }

    /// True when a read of `kind` for `instance` sees at least one message:
    /// the global layer, or (for an instance read) the instance layer (R5).
    pub fn has_messages(&self, kind: &Kind, instance: Option<&Instance>) -> bool {
        self.layer(kind, None).is_some()
            || instance.is_some_and(|_| self.layer(kind, instance).is_some())
    }

    pub(crate) fn layer(&self, kind: &Kind, instance: Option<&Instance>) -> Option<&Layer> {
        self.layers.get(IdentityRef::new(kind, instance))
    }

    /// The view of `kind` as read for `instance` (R5): the global view, with
    /// the instance layer folded on top. `None` when absent.
    pub fn view(&self, kind: &Kind, instance: Option<&Instance>) -> Option<&Value> {
        let global = self.layer(kind, None).and_then(|l| l.view(&self.log));
        let layer = instance.and_then(|x| self.layers.get_full(IdentityRef::new(kind, Some(x))));
        match layer {
            None => global,
            Some((at, _, layer)) => layer.layered(|| {
                self.layered.add(at);
                self.fold_instance(layer, global.cloned(), None)
            }),
        }
    }

    /// The value at a reference, read for `instance` (R5, R14). `None` when
    /// the path is absent.
    pub fn read(&self, reference: &Reference, instance: Option<&Instance>) -> Option<&Value> {
        reference.path.get(self.view(&reference.kind, instance)?)
    }

    /// The fold of one layer's own writes on an absent value — for a global
    /// layer its view; for an instance layer only what that instance wrote,
    /// without the global layer under it, where an erase shows as `null`
    /// (what R28 renders, R10b).
    pub fn layer_view(&self, identity: &Identity) -> Option<&Value> {
        self.layers.get(identity)?.view(&self.log)
    }

    /// The schema declared by the layer's own messages (its newest), without
    /// falling back to the global layer's.
    pub fn layer_schema(&self, identity: &Identity) -> Option<&Value> {
        Some(self.layers.get(identity)?.schema()?.schema())
    }

    /// The description declared by the layer's own messages (its newest).
    pub fn layer_description(&self, identity: &Identity) -> Option<&str> {
        self.layers.get(identity)?.description()
    }

    /// The schema that applies to a layer (R24): its newest, else (for an
    /// instance layer) the global layer's.
    pub fn schema(&self, kind: &Kind, instance: Option<&Instance>) -> Option<&Value> {
        self.effective(kind, instance, |l| l.schema().map(Arc::as_ref))
            .map(Compiled::schema)
    }

    /// The description that applies to a layer, found like its schema (R24).
    pub fn description(&self, kind: &Kind, instance: Option<&Instance>) -> Option<&str> {
        self.effective(kind, instance, Layer::description)
    }

    /// The layer's own value of `pick`, else the global layer's.
    fn effective<'a, T>(
        &'a self,
        kind: &Kind,
        instance: Option<&Instance>,
        pick: impl Fn(&'a Layer) -> Option<T>,
    ) -> Option<T> {
        instance
            .and_then(|x| self.layer(kind, Some(x)))
            .and_then(&pick)
            .or_else(|| self.layer(kind, None).and_then(&pick))
    }

    pub(crate) fn compiled_schema(
        &self,
        kind: &Kind,
        instance: Option<&Instance>,
    ) -> Option<Arc<Compiled>> {
        self.effective(kind, instance, |l| l.schema().cloned())
    }

    /// Folds an instance layer's writes onto `base` (R5, R12), recording
    /// skipped writes in `diagnostics` when given.
    pub(crate) fn fold_instance(
        &self,
        layer: &Layer,
        mut view: Option<Value>,
        mut diagnostics: Option<&mut Vec<Diagnostic>>,
    ) -> Option<Value> {
        for &index in layer.messages() {
            let Some(data) = self.log.data(index) else {
                continue;
            };
            // Needed only to report a skipped write.
            let identity = diagnostics.is_some().then(|| Identity {
                kind: data.kind().clone(),
                instance: data.instance().cloned(),
            });
            let (destination, method, value) = data.into_write();
            if let Err(error) = write(&mut view, &destination, method, value)
                && let (Some(out), Some(identity)) = (diagnostics.as_deref_mut(), identity)
            {
                out.push(Diagnostic {
                    index,
                    identity,
                    error,
                });
            }
        }
        view
    }
}
