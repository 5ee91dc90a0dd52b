//! The [`Context`]: the message log, its layers, and scoped reads (R4, R5, R14).

use crate::log::{Log, Written};
use crate::schema::{Compiled, SchemaCache};
use crate::{Diagnostic, Message, MessageFault};
use agent_core::{Instance, Kind, Reference, write};
use indexmap::{Equivalent, IndexMap, IndexSet};
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, OnceLock};

/// The identity of a data message: `(kind, instance)` (R4). `instance` is
/// `None` for the global layer.
#[derive(Debug, Clone, PartialEq, Eq)]
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

impl Hash for Identity {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // Must agree with `IdentityRef`, which finds layers without cloning.
        IdentityRef::new(&self.kind, self.instance.as_ref()).hash(state);
    }
}

/// A borrowed [`Identity`], for looking layers up without allocating.
#[derive(Hash)]
pub(crate) struct IdentityRef<'a> {
    kind: &'a str,
    instance: Option<&'a str>,
}

impl<'a> IdentityRef<'a> {
    pub(crate) fn new(kind: &'a Kind, instance: Option<&'a Instance>) -> Self {
        IdentityRef {
            kind: kind.as_str(),
            instance: instance.map(Instance::as_str),
        }
    }
}

impl IdentityRef<'_> {
    /// True when this names `identity`.
    pub(crate) fn equivalent_to(&self, identity: &Identity) -> bool {
        self.equivalent(identity)
    }
}

impl Equivalent<Identity> for IdentityRef<'_> {
    fn equivalent(&self, key: &Identity) -> bool {
        self.kind == key.kind.as_str()
            && self.instance == key.instance.as_ref().map(Instance::as_str)
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

/// The index of `(kind, instance)` in `map`, inserted with a default value
/// if it is new; the identity is cloned only then.
pub(crate) fn index_or_insert<T: Default>(
    map: &mut IndexMap<Identity, T>,
    kind: &Kind,
    instance: Option<&Instance>,
) -> usize {
    match map.get_index_of(&IdentityRef::new(kind, instance)) {
        Some(at) => at,
        None => {
            let identity = Identity {
                kind: kind.clone(),
                instance: instance.cloned(),
            };
            map.insert_full(identity, T::default()).0
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
    /// The newest schema among the layer's messages, compiled (R24).
    pub(crate) schema: Option<Arc<Compiled>>,
    /// The newest description among the layer's messages (R24).
    pub(crate) description: Option<String>,
    /// Instance layers: the layered view (global view with this layer
    /// folded on top, R5), built on first read, updated in place by this
    /// layer's appends and reset when the global layer of its kind grows.
    pub(crate) layered: OnceLock<Option<Value>>,
}

/// An append-only log of messages and the views it defines.
///
/// Every read is the fold of the log (R12, R14); views are kept folded as
/// messages arrive, so reading one borrows it. Appends are validated first
/// (R13, R25) and either all land or none do. The messages themselves are
/// stored compactly, as their JSON text, and parsed again when asked for
/// ([`Context::message`]).
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
/// ctx.append(&DataMessage::new(state.clone(), json!({"plan": "tea"})).into())?;
/// assert_eq!(ctx.read(&"†state.plan".parse()?, Some(&one)), Some(&json!("tea")));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct Context {
    pub(crate) log: Log,
    pub(crate) layers: IndexMap<Identity, Layer>,
    pub(crate) instances: IndexSet<Instance>,
    pub(crate) schemas: SchemaCache,
}

impl Context {
    /// An empty context.
    pub fn new() -> Self {
        Self::default()
    }

    /// Message `index`, normalised. Messages are stored as text, so this
    /// parses it: reads of values go through [`Context::view`] and
    /// [`Context::read`], which borrow.
    pub fn message(&self, index: usize) -> Option<Message> {
        self.log.message(index)
    }

    /// Every message, normalised, in order (each parsed as it is reached).
    pub fn messages(&self) -> impl DoubleEndedIterator<Item = Message> + '_ {
        (0..self.len()).filter_map(|index| self.message(index))
    }

    /// Message `index` as compact JSON text (its JSONL line), without
    /// parsing it.
    pub fn message_json(&self, index: usize) -> Option<&str> {
        self.log.json(index)
    }

    /// The layer of message `index`; `None` for a text or opaque message
    /// (or past the end).
    pub fn message_identity(&self, index: usize) -> Option<&Identity> {
        self.layers
            .get_index(self.log.layer(index)?)
            .map(|(id, _)| id)
    }

    /// Number of messages.
    pub fn len(&self) -> usize {
        self.log.len()
    }

    /// True when there are no messages.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
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
        self.layers.get(&IdentityRef::new(kind, instance))
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
        Some(self.layers.get(identity)?.schema.as_ref()?.schema())
    }

    /// The description declared by the layer's own messages (its newest).
    pub fn layer_description(&self, identity: &Identity) -> Option<&str> {
        self.layers.get(identity)?.description.as_deref()
    }

    /// The schema that applies to a layer (R24): its newest, else (for an
    /// instance layer) the global layer's.
    pub fn schema(&self, kind: &Kind, instance: Option<&Instance>) -> Option<&Value> {
        self.effective(kind, instance, |l| l.schema.as_deref())
            .map(Compiled::schema)
    }

    /// The description that applies to a layer, found like its schema (R24).
    pub fn description(&self, kind: &Kind, instance: Option<&Instance>) -> Option<&str> {
        self.effective(kind, instance, |l| l.description.as_deref())
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
        self.effective(kind, instance, |l| l.schema.clone())
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
            let Some(Message::Data(data)) = self.log.message(index) else {
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

    /// Adds a message without validating its write: a type error is skipped
    /// and recorded as a diagnostic (R12). Loading uses this; appends use it
    /// after validation. The schema was compiled by the caller.
    pub(crate) fn push_unchecked(
        &mut self,
        message: Message,
        schema: Option<Arc<Compiled>>,
    ) -> Result<(), MessageFault> {
        let written = self.log.write(message.fields())?;
        self.push_written(Cow::Owned(message), schema, written);
        Ok(())
    }

    /// [`Context::push_unchecked`] for a message already written to the log.
    pub(crate) fn push_written(
        &mut self,
        message: Cow<'_, Message>,
        schema: Option<Arc<Compiled>>,
        written: Written,
    ) {
        let Message::Data(data) = message.as_ref() else {
            return self.log.seal(written, None);
        };
        let index = self.log.len();
        let global = data.instance().is_none();
        match data.instance() {
            Some(x) if !self.instances.contains(x) => {
                self.instances.insert(x.clone());
            }
            Some(_) => {}
            None => {
                // Every layered view of this kind folded over the old global view.
                for (id, layer) in self.layers.iter_mut() {
                    if &id.kind == data.kind() && id.instance.is_some() {
                        layer.layered = OnceLock::new();
                    }
                }
            }
        }
        let at = self.layer_index(data.kind(), data.instance());
        self.log.seal(written, Some(at));
        let Some((identity, layer)) = self.layers.get_index_mut(at) else {
            return;
        };
        layer.messages.push(index);
        if let Some(compiled) = schema {
            layer.schema = Some(compiled);
        }
        if let Some(description) = data.description() {
            layer.description = Some(description.to_owned());
        }
        // The message is stored as text now: an owned one's value moves
        // into the view.
        let (destination, method, value) = match message {
            Cow::Owned(Message::Data(data)) => data.into_write(),
            Cow::Borrowed(Message::Data(data)) => (
                data.destination().clone(),
                data.method(),
                data.value().clone(),
            ),
            _ => return,
        };
        if let Some(layered) = layer.layered.get_mut() {
            // Appending to the fold is applying on top; a type error is
            // skipped here exactly as the fold skips it.
            let _ = write(layered, &destination, method, value.clone());
        }
        let written = write(&mut layer.view, &destination, method, value);
        // An instance layer's own fold is only what it renders; its R12
        // diagnostics come from folding over the global view (`check`).
        if let (Err(error), true) = (written, global) {
            layer.diagnostics.push(Diagnostic {
                index,
                identity: identity.clone(),
                error,
            });
        }
    }

    /// Copies every view into freshly allocated memory, without spare
    /// capacity. A view built by many small writes is scattered through the
    /// heap, among the allocations of everything built alongside it; a
    /// compacted one reads and serialises markedly faster (rendering the W3
    /// benchmark context takes about half the time). Loading compacts once
    /// at the end. Views and reads are unchanged.
    pub fn compact(&mut self) {
        // Copy every view before dropping any, so the copies are laid out
        // together instead of filling the holes the old ones leave.
        let copies: Vec<(Option<Value>, Option<Option<Value>>)> = self
            .layers
            .values()
            .map(|layer| (layer.view.clone(), layer.layered.get().cloned()))
            .collect();
        for (layer, (view, layered)) in self.layers.values_mut().zip(copies) {
            layer.view = view;
            layer.layered = layered.map_or_else(OnceLock::new, OnceLock::from);
        }
    }

    /// The index of a layer, created empty if it is new.
    fn layer_index(&mut self, kind: &Kind, instance: Option<&Instance>) -> usize {
        index_or_insert(&mut self.layers, kind, instance)
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
        Value::Array((0..self.len()).filter_map(|i| self.log.value(i)).collect())
    }

    /// The whole context as JSONL: one compact message per line (R3).
    pub fn to_jsonl(&self) -> String {
        // The log is UTF-8 JSONL already.
        String::from_utf8_lossy(self.log.jsonl()).into_owned()
    }
}
