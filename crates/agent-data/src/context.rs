//! The [`Context`]: the message log, its layers, and scoped reads (R4, R5, R14).

use crate::schema::{Compiled, SchemaCache};
use crate::{Diagnostic, Message, MessageFault};
use agent_core::{Instance, Kind, Reference, write};
use indexmap::{IndexMap, IndexSet};
use serde_json::Value;
use std::fmt;
use std::sync::{Arc, OnceLock};

/// The identity of a data message: `(kind, instance)` (R4). `instance` is
/// `None` for the global layer.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Identity {
    /// The kind.
    pub kind: Kind,
    /// The instance; `None` is global.
    pub instance: Option<Instance>,
}

impl Identity {
    /// The global identity of `kind`.
    pub fn global(kind: Kind) -> Self {
        Identity {
            kind,
            instance: None,
        }
    }
}

impl fmt::Display for Identity {
    /// `kind` for a global layer, `kind@instance` for an instance layer.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.instance {
            None => write!(f, "{}", self.kind),
            Some(instance) => write!(f, "{}@{instance}", self.kind),
        }
    }
}

/// All data messages of one identity (R4).
#[derive(Debug, Clone, Default)]
pub(crate) struct Layer {
    /// Context indexes of the layer's messages, in order.
    pub(crate) messages: Vec<usize>,
    /// The fold of this layer's own writes on an absent value, kept up to
    /// date on every append: for a global layer its view (R12); for an
    /// instance layer what the instance wrote, without the global layer
    /// under it (what R28 renders; instance reads fold over the global view).
    pub(crate) view: Option<Value>,
    /// Global layers: writes the fold skipped (R12).
    pub(crate) diagnostics: Vec<Diagnostic>,
    /// Newest message carrying a schema, and its compiled form (R24).
    pub(crate) schema: Option<(usize, Arc<Compiled>)>,
    /// Newest message carrying a description (R24).
    pub(crate) description: Option<usize>,
    /// Instance layers: the layered view (global view with this layer
    /// folded on top, R5), built on first read, updated in place by this
    /// layer's appends and reset when the global layer of its kind grows.
    pub(crate) layered: OnceLock<Option<Value>>,
}

/// An append-only log of messages and the views it defines.
///
/// Every read is the fold of the log (R12, R14); global views are kept
/// folded as messages arrive, so reading one borrows it. Appends are
/// validated first (R13, R25) and either all land or none do.
///
/// ```
/// use agent_core::{Instance, Kind};
/// use agent_data::{Context, DataMessage};
/// use serde_json::json;
///
/// let mut ctx = Context::from_json(r#"[
///   {"type": "state", "data": {"user": {"name": "Ada"}}},
///   {"type": "state", "data": {"user": {"age": 36}}, "_instance": "①"}
/// ]"#)?;
/// let state = Kind::new("state")?;
/// let one = Instance::new("①")?;
/// assert_eq!(ctx.view(&state, None), Some(&json!({"user": {"name": "Ada"}})));
/// assert_eq!(
///     ctx.view(&state, Some(&one)),
///     Some(&json!({"user": {"name": "Ada", "age": 36}}))
/// );
///
/// ctx.append(DataMessage::new(state.clone(), json!({"plan": "tea"})))?;
/// assert_eq!(ctx.read(&"†state.plan".parse()?, Some(&one)), Some(&json!("tea")));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct Context {
    pub(crate) messages: Vec<Message>,
    pub(crate) layers: IndexMap<Identity, Layer>,
    pub(crate) instances: IndexSet<Instance>,
    pub(crate) schemas: SchemaCache,
}

impl Context {
    /// An empty context.
    pub fn new() -> Self {
        Self::default()
    }

    /// The messages, normalised, in order.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// Number of messages.
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// True when there are no messages.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// Instance ids in order of first appearance.
    pub fn instances(&self) -> impl ExactSizeIterator<Item = &Instance> {
        self.instances.iter()
    }

    /// Identities of every layer, in order of first appearance.
    pub fn identities(&self) -> impl ExactSizeIterator<Item = &Identity> {
        self.layers.keys()
    }

    /// Context indexes of the messages of one layer, in order.
    pub fn layer_messages(&self, identity: &Identity) -> &[usize] {
        self.layers.get(identity).map_or(&[], |l| &l.messages)
    }

    /// True when a read of `kind` for `instance` sees at least one message:
    /// the global layer, or (for an instance read) the instance layer (R5).
    pub fn has_messages(&self, kind: &Kind, instance: Option<&Instance>) -> bool {
        self.layer(kind, None).is_some()
            || instance.is_some_and(|_| self.layer(kind, instance).is_some())
    }

    pub(crate) fn layer(&self, kind: &Kind, instance: Option<&Instance>) -> Option<&Layer> {
        // Borrowed lookup without building an owned Identity would need a
        // custom Equivalent impl; identities are small, so build one.
        self.layers.get(&Identity {
            kind: kind.clone(),
            instance: instance.cloned(),
        })
    }

    /// The view of `kind` as read for `instance` (R5): the global view, with
    /// the instance layer folded on top. `None` when absent.
    pub fn view(&self, kind: &Kind, instance: Option<&Instance>) -> Option<&Value> {
        let global = self.layer(kind, None).and_then(|l| l.view.as_ref());
        match instance.and_then(|x| self.layer(kind, Some(x))) {
            None => global,
            Some(layer) => layer
                .layered
                .get_or_init(|| self.fold_instance(layer, global.cloned(), None))
                .as_ref(),
        }
    }

    /// The value at a reference, read for `instance` (R5, R14). `None` when
    /// the path is absent.
    pub fn read(&self, reference: &Reference, instance: Option<&Instance>) -> Option<&Value> {
        reference.path.get(self.view(&reference.kind, instance)?)
    }

    /// The fold of one layer's own writes on an absent value — for a global
    /// layer its view; for an instance layer only what that instance wrote,
    /// without the global layer under it (what R28 renders).
    pub fn layer_view(&self, identity: &Identity) -> Option<&Value> {
        self.layers.get(identity)?.view.as_ref()
    }

    /// The schema declared by the layer's own messages (its newest), without
    /// falling back to the global layer's.
    pub fn layer_schema(&self, identity: &Identity) -> Option<&Value> {
        let (index, _) = self.layers.get(identity)?.schema.as_ref()?;
        self.messages[*index].as_data()?.schema()
    }

    /// The description declared by the layer's own messages (its newest).
    pub fn layer_description(&self, identity: &Identity) -> Option<&str> {
        let index = self.layers.get(identity)?.description?;
        self.messages[index].as_data()?.description()
    }

    /// The schema that applies to a layer (R24): its newest, else (for an
    /// instance layer) the global layer's.
    pub fn schema(&self, kind: &Kind, instance: Option<&Instance>) -> Option<&Value> {
        self.effective(kind, instance, |l| l.schema.as_ref().map(|(i, _)| *i))
            .and_then(|i| self.messages[i].as_data())
            .and_then(|d| d.schema())
    }

    /// The description that applies to a layer, found like its schema (R24).
    pub fn description(&self, kind: &Kind, instance: Option<&Instance>) -> Option<&str> {
        self.effective(kind, instance, |l| l.description)
            .and_then(|i| self.messages[i].as_data())
            .and_then(|d| d.description())
    }

    /// The layer's own value of `pick`, else the global layer's.
    fn effective<T>(
        &self,
        kind: &Kind,
        instance: Option<&Instance>,
        pick: impl Fn(&Layer) -> Option<T>,
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
        self.effective(kind, instance, |l| {
            l.schema.as_ref().map(|(_, c)| Arc::clone(c))
        })
    }

    /// Folds an instance layer's writes onto `base` (R5, R12), recording
    /// skipped writes in `diagnostics` when given.
    pub(crate) fn fold_instance(
        &self,
        layer: &Layer,
        mut view: Option<Value>,
        mut diagnostics: Option<&mut Vec<Diagnostic>>,
    ) -> Option<Value> {
        for &index in &layer.messages {
            let Some(data) = self.messages[index].as_data() else {
                continue;
            };
            if let Err(error) = write(
                &mut view,
                data.destination(),
                data.method(),
                data.value().clone(),
            ) {
                if let Some(out) = diagnostics.as_deref_mut() {
                    out.push(Diagnostic {
                        index,
                        identity: Identity {
                            kind: data.kind().clone(),
                            instance: data.instance().cloned(),
                        },
                        error,
                    });
                }
            }
        }
        view
    }

    /// Adds a message without validating its write: a type error is skipped
    /// and recorded as a diagnostic (R12). Loading uses this; appends use it
    /// after validation. The schema was compiled by the caller.
    pub(crate) fn push_unchecked(&mut self, message: Message, schema: Option<Arc<Compiled>>) {
        let index = self.messages.len();
        if let Message::Data(data) = &message {
            let identity = Identity {
                kind: data.kind().clone(),
                instance: data.instance().cloned(),
            };
            if let Some(x) = &identity.instance {
                self.instances.insert(x.clone());
            }
            if identity.instance.is_none() {
                // Every layered view of this kind folded over the old global view.
                for (id, layer) in self.layers.iter_mut() {
                    if id.kind == identity.kind && id.instance.is_some() {
                        layer.layered = OnceLock::new();
                    }
                }
            }
            let layer = self.layers.entry(identity.clone()).or_default();
            if let Some(layered) = layer.layered.get_mut() {
                // Appending to the fold is applying on top; a type error is
                // skipped here exactly as the fold skips it.
                let _ = write(
                    layered,
                    data.destination(),
                    data.method(),
                    data.value().clone(),
                );
            }
            let written = write(
                &mut layer.view,
                data.destination(),
                data.method(),
                data.value().clone(),
            );
            // An instance layer's own fold is only what it renders; its R12
            // diagnostics come from folding over the global view (`check`).
            if let (Err(error), None) = (written, &identity.instance) {
                layer.diagnostics.push(Diagnostic {
                    index,
                    identity,
                    error,
                });
            }
            layer.messages.push(index);
            if let Some(compiled) = schema {
                layer.schema = Some((index, compiled));
            }
            if data.description().is_some() {
                layer.description = Some(index);
            }
        }
        self.messages.push(message);
    }

    /// Compiles the message's own schema, if it has one (R25).
    pub(crate) fn compile_schema(
        &mut self,
        message: &Message,
    ) -> Result<Option<Arc<Compiled>>, MessageFault> {
        match message.as_data().and_then(|d| d.schema()) {
            Some(schema) => self.schemas.get(schema).map(Some),
            None => Ok(None),
        }
    }

    /// The whole context as a JSON array of normalised messages (R3).
    pub fn to_json(&self) -> Value {
        Value::Array(self.messages.iter().map(Message::to_value).collect())
    }

    /// The whole context as JSONL: one compact message per line (R3).
    pub fn to_jsonl(&self) -> String {
        let mut out = String::new();
        for message in &self.messages {
            out.push_str(&message.to_value().to_string());
            out.push('\n');
        }
        out
    }
}
