//! The [`Context`]: the message log and its layers, and how messages join
//! them (R4, R12). Reads are in `read.rs`; validated appends in `prepare.rs`
//! and `stage.rs`.

use crate::identity::{Identity, IdentityRef};
use crate::instances::Instances;
use crate::layer::{Layer, Write};
use crate::log::{Log, Written};
use crate::schema::{Compiled, SchemaCache};
use crate::{Message, MessageFault};
use agent_core::json::Value;
use agent_core::{Instance, Kind};
use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::Arc;

/// Layers compacted at once by [`Context::compact`]: what compaction holds
/// twice.
const COMPACT_BATCH: usize = 1024;

/// Compaction copies a layer's view only when its held messages' text is
/// at most this long in all (see [`Context::compact`]).
const COPY_LIMIT: usize = 1 << 20;

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
/// use agent_core::json;
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
    pub(crate) layers: crate::identity_map::LayerMap<Layer>,
    /// Instance ids in order of first appearance, found through the layers.
    pub(crate) instances: Instances,
    /// Every kind of a layer: layer keys share these, so a context of many
    /// instances holds each kind's text once.
    pub(crate) kinds: HashSet<Kind, crate::identity::Hasher>,
    pub(crate) schemas: SchemaCache,
    /// Positions of the instance layers whose layered view was built since
    /// a global write of their kind last forgot it: what that write must
    /// forget, found without visiting every layer.
    pub(crate) layered: Built,
    /// Messages written to instance layers: those a snapshot holds as
    /// they are, to be folded again on restore (D106: snapshots that pay).
    pub(crate) instance_writes: usize,
}

/// Positions of layers with a built layered view. Views are built by
/// reads, which borrow the context, hence the lock.
#[derive(Debug, Default)]
pub(crate) struct Built(std::sync::Mutex<Vec<u32>>);

impl Built {
    /// Records that the layer at `position` built its layered view.
    pub(crate) fn add(&self, position: usize) {
        let mut built = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        built.push(u32::try_from(position).unwrap_or(u32::MAX));
    }

    /// Takes the recorded positions out.
    fn take(&mut self) -> Vec<u32> {
        let built = self
            .0
            .get_mut()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        std::mem::take(built)
    }

    /// Puts positions back.
    fn put(&mut self, positions: Vec<u32>) {
        *self
            .0
            .get_mut()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = positions;
    }
}

impl Clone for Built {
    fn clone(&self) -> Self {
        let built = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        Built(std::sync::Mutex::new(built.clone()))
    }
}

impl Context {
    /// An empty context.
    pub fn new() -> Self {
        Self::default()
    }

    /// Message `index`, normalised. Messages are stored as text, so this
    /// parses it: reads of values go through [`Context::view`] and
    /// [`Context::read`], which borrow. `None` past the end, and for a
    /// message a snapshot summarised without holding it
    /// ([`Context::is_complete`]).
    pub fn message(&self, index: usize) -> Option<Message> {
        self.log.message(index)
    }

    /// Every held message, normalised, in order (each parsed as it is
    /// reached): all of them when the context [is complete](Context::is_complete).
    pub fn messages(&self) -> impl DoubleEndedIterator<Item = Message> + '_ {
        (0..self.len()).filter_map(|index| self.message(index))
    }

    /// Message `index` as compact JSON text (its JSONL line), without
    /// parsing it; `None` as for [`Context::message`].
    pub fn message_json(&self, index: usize) -> Option<&str> {
        self.log.json(index)
    }

    /// The chain's digest after the last message ([`Digest`]): the same
    /// for every copy of this log, wherever it is stored.
    ///
    /// [`Digest`]: crate::Digest
    pub fn head(&self) -> crate::Digest {
        self.log.head()
    }

    /// True when the context holds every message: always, unless it was
    /// opened from a snapshot ([`Context::from_snapshot`]), which holds the
    /// views and only the messages reads and appends need again. Views,
    /// reads, schemas, diagnostics and appends are the same either way;
    /// what walks the messages themselves (rendering, `check`, copying)
    /// needs a complete context.
    pub fn is_complete(&self) -> bool {
        self.log.is_complete()
    }

    /// The index from which every message is held: 0 for a complete
    /// context, else where the snapshot it was opened from ends.
    pub fn held_from(&self) -> usize {
        self.log.held_from()
    }

    /// The layer of message `index`; `None` for a text or opaque message
    /// (or past the end).
    pub fn message_identity(&self, index: usize) -> Option<&Identity> {
        self.layers
            .get_index(self.log.layer(index)?)
            .map(|(id, _)| id)
    }

    /// The position of message `index`'s layer among
    /// [`Context::identities`] (an index, where [`Context::message_identity`]
    /// gives the identity): what a walk over the messages can mark layers
    /// by without hashing them. `None` as for [`Context::message_identity`].
    pub fn message_layer(&self, index: usize) -> Option<usize> {
        self.log.layer(index)
    }

    /// Number of messages.
    pub fn len(&self) -> usize {
        self.log.len()
    }

    /// True when there are no messages.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
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
        self.push_written(Cow::Owned(message), schema, written, false);
        Ok(())
    }

    /// [`Context::push_unchecked`] for a message whose compact JSON is
    /// `text` when given (a line read that was exactly that): the text is
    /// stored as it is instead of writing the message again. `text` must be
    /// the compact text of `message`'s fields, read within [`MAX_DEPTH`].
    ///
    /// [`MAX_DEPTH`]: agent_core::MAX_DEPTH
    pub(crate) fn push_text(
        &mut self,
        message: Message,
        schema: Option<Arc<Compiled>>,
        text: Option<&str>,
    ) -> Result<(), MessageFault> {
        let Some(text) = text else {
            return self.push_unchecked(message, schema);
        };
        let written = self.log.write_text(text);
        self.push_written(Cow::Owned(message), schema, written, false);
        Ok(())
    }

    /// The kind named `kind`, interned (shared with the layers', and kept
    /// for those to come), and the instance `id`; `None` when R2 refuses
    /// either. For [`Context::add_interned_layer`].
    pub(crate) fn identity_named(&mut self, kind: &str, id: &str) -> Option<(Kind, Instance)> {
        self.identity_named_after(kind, id, &mut None)
    }

    /// [`Context::identity_named`] in a run of lines, `recent` the kind the
    /// last of them named (kept up to date here): a run mostly names one
    /// kind, then found without a lookup.
    pub(crate) fn identity_named_after(
        &mut self,
        kind: &str,
        id: &str,
        recent: &mut Option<Kind>,
    ) -> Option<(Kind, Instance)> {
        let instance = id.parse().ok()?;
        if let Some(known) = recent.as_ref().filter(|known| known.as_str() == kind) {
            return Some((known.clone(), instance));
        }
        let kind = match self.kinds.get(kind) {
            Some(known) => known.clone(),
            None => {
                let kind = Kind::new(kind).ok()?;
                self.kinds.insert(kind.clone());
                kind
            }
        };
        *recent = Some(kind.clone());
        Some((kind, instance))
    }

    /// [`Context::push_unchecked`] for a message already written to the log;
    /// `checked` when validation accepted its write against the view it
    /// lands on (an append), so the fold does not check it again.
    pub(crate) fn push_written(
        &mut self,
        message: Cow<'_, Message>,
        schema: Option<Arc<Compiled>>,
        written: Written,
        checked: bool,
    ) {
        let Message::Data(data) = message.as_ref() else {
            return self.log.seal(written, None);
        };
        let index = self.log.len();
        if data.instance().is_none() {
            // Every layered view of this kind folded over the old global
            // view: those built are forgotten, each once per build, so a
            // log of many instances and many global writes loads in linear
            // time.
            let mut built = self.layered.take();
            built.retain(|&at| match self.layers.get_index_mut(at as usize) {
                Some((id, layer)) if &id.kind == data.kind() => {
                    layer.invalidate_layered();
                    false
                }
                Some(_) => true,
                None => false,
            });
            self.layered.put(built);
        }
        let at = self.layer_index(data.kind(), data.instance());
        self.log.seal(written, Some(at));
        if data.instance().is_some() {
            self.instance_writes += 1;
        }
        let Some((identity, layer)) = self.layers.get_index_mut(at) else {
            return;
        };
        let description = data.description().map(str::to_owned);
        // The message is stored as text now: an owned one's value moves
        // into the view; a borrowed one's path is only read.
        let owned;
        let (destination, method, value) = match message {
            Cow::Owned(Message::Data(data)) => {
                let (destination, method, value) = data.into_write();
                owned = destination;
                (&owned, method, value)
            }
            Cow::Borrowed(Message::Data(data)) => {
                (data.destination(), data.method(), data.value().clone())
            }
            _ => return,
        };
        let write = Write {
            index,
            destination,
            method,
            value,
            checked,
        };
        layer.apply(&self.log, identity, write, schema, description.as_deref());
    }

    /// Copies every view into freshly allocated memory, without spare
    /// capacity. A view built by many small writes is scattered through the
    /// heap, among the allocations of everything built alongside it; a
    /// compacted one reads and serialises markedly faster (rendering the W3
    /// benchmark context takes about half the time). The view of a layer
    /// whose messages and view are short is dropped instead, and folded
    /// again from them on first read (D40: short layers refolded). A view made by one message, or
    /// by more than a mebibyte of messages, is left where it is: copying
    /// it would hold it twice (D48: snapshot holds once). Loading compacts as it goes and once
    /// at the end. Views and reads are unchanged.
    pub fn compact(&mut self) {
        let mut start = 0;
        while start < self.layers.len() {
            self.compact_layers(start);
            start += COMPACT_BATCH;
        }
    }

    /// Compacts the layers of the batch at `*compacted` once a newer batch
    /// is complete, and moves `*compacted` past it. Loading calls this after
    /// every message, so a context of many small layers never holds all
    /// their views parsed; the newest batch is left alone, its
    /// layers being the likeliest to be written again.
    pub(crate) fn compact_behind(&mut self, compacted: &mut usize) {
        if self.layers.len() >= *compacted + 2 * COMPACT_BATCH {
            self.compact_layers(*compacted);
            *compacted += COMPACT_BATCH;
        }
    }

    /// Compacts the views of the layers from `start`, a batch at most:
    /// copies first, then the old views dropped, so the copies are laid out
    /// together instead of filling the holes the old ones leave.
    fn compact_layers(&mut self, start: usize) {
        let end = (start + COMPACT_BATCH).min(self.layers.len());
        let Some(batch) = self.layers.values_in_mut(start..end) else {
            return;
        };
        let log = &self.log;
        // A bare layer (a new instance's one write) has nothing to compact:
        // skipped, as most of a wide context's layers are.
        let copies: Vec<_> = batch
            .enumerate()
            .filter(|(_, layer)| !layer.is_bare())
            .map(|(at, layer)| {
                // A view made by one write is laid out as it was parsed,
                // together: a copy would gain nothing and, for a message
                // of millions of items, double what loading holds. A view
                // written by more than COPY_LIMIT bytes of messages is not
                // copied either: a parsed view costs tens of times its
                // text, and holding it twice costs more than scattered
                // memory slows reads of it.
                let refolds = layer.refolds(log);
                let copy =
                    if !refolds && (layer.len() == 1 || layer.written_beyond(log, COPY_LIMIT)) {
                        layer.copies_layered()
                    } else {
                        layer.copies(refolds)
                    };
                (at, copy)
            })
            .collect();
        for (at, copy) in copies {
            if let Some((_, layer)) = self.layers.get_index_mut(start + at) {
                layer.compact(copy);
            }
        }
    }

    /// The index of a layer, created empty if it is new.
    fn layer_index(&mut self, kind: &Kind, instance: Option<&Instance>) -> usize {
        let (hash, found) = self.find_layer(kind, instance);
        match found {
            Some(at) => at,
            None => self.add_layer(kind, instance, Layer::default(), hash),
        }
    }

    /// Adds `layer` as the layer of `(kind, instance)` unless there is one:
    /// its index, and whether it was added. The new key shares its kind and
    /// instance id with the layers before it: a context of many instances
    /// holds each kind once, and each id once for all its layers and the
    /// instance list.
    pub(crate) fn insert_layer(
        &mut self,
        kind: &Kind,
        instance: Option<&Instance>,
        layer: Layer,
    ) -> (usize, bool) {
        match self.find_layer(kind, instance) {
            (_, Some(at)) => (at, false),
            (hash, None) => (self.add_layer(kind, instance, layer, hash), true),
        }
    }

    /// The hash of `(kind, instance)` in the layer map and its layer's
    /// index, if it has one: hashed once for the lookup and the insertion
    /// after it.
    pub(crate) fn find_layer(
        &self,
        kind: &Kind,
        instance: Option<&Instance>,
    ) -> (u64, Option<usize>) {
        let probe = IdentityRef::new(kind, instance);
        let hash = self.layers.hash(&probe);
        let found = self.layers.find(hash, &probe);
        (hash, found)
    }

    /// [`Context::insert_layer`] for a layer known to be new, `hash` being
    /// its identity's.
    pub(crate) fn add_layer(
        &mut self,
        kind: &Kind,
        instance: Option<&Instance>,
        layer: Layer,
        hash: u64,
    ) -> usize {
        let kind = match self.kinds.get(kind.as_str()) {
            Some(known) => known.clone(),
            None => {
                self.kinds.insert(kind.clone());
                kind.clone()
            }
        };
        self.add_interned_layer(kind, instance, layer, hash)
    }

    /// [`Context::add_layer`] for a kind [`Context::identity_named`]
    /// interned: it becomes the new identity's as it is, with no second
    /// lookup (a load of many instances adds a layer per line).
    pub(crate) fn add_interned_layer(
        &mut self,
        kind: Kind,
        instance: Option<&Instance>,
        layer: Layer,
        hash: u64,
    ) -> usize {
        let known = instance.and_then(|x| self.instances.find(&self.layers, &kind, x.as_str()));
        let first = instance.is_some() && known.is_none();
        let identity = Identity {
            kind,
            instance: known.or(instance).cloned(),
        };
        let at = self.layers.push(hash, identity, layer);
        if first {
            self.instances.insert(&self.layers, at);
        }
        at
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

    /// The context as it was after its first `k` messages, numbered as
    /// [`Context::message`] numbers them (R34f): the fold of those messages
    /// and nothing later — views, reads, diagnostics, instances and the
    /// chain's head all as if the log had ended there. `prefix(0)` is the
    /// empty context and `prefix(self.len())` a copy of this one. It costs
    /// loading `k` messages again (each is held as its JSON line).
    ///
    /// # Errors
    /// [`Error::PastTheEnd`] when `k` is more than [`Context::len`];
    /// [`Error::NotHeld`] when the context was opened from a snapshot
    /// ([`Context::is_complete`] is false) and `k` is short of its end:
    /// the messages before `k` are summarised, not held, so load the
    /// context whole first.
    ///
    /// [`Error::PastTheEnd`]: crate::Error::PastTheEnd
    /// [`Error::NotHeld`]: crate::Error::NotHeld
    pub fn prefix(&self, k: usize) -> crate::Result<Context> {
        let len = self.len();
        if k > len {
            return Err(crate::Error::PastTheEnd { at: k, len });
        }
        if k == len {
            return Ok(self.clone());
        }
        let jsonl = self.log.prefix_jsonl(k).ok_or(crate::Error::NotHeld {
            at: k,
            held_from: self.held_from(),
        })?;
        // Each held line is one normalised message, which loads back as
        // itself (R3): the loaded context numbers them as this one does.
        crate::load::load_jsonl(jsonl, "<prefix>").map(|loaded| loaded.context)
    }

    /// The whole context as a JSON array of normalised messages (R3); for
    /// a context that is not [complete](Context::is_complete), the held ones.
    pub fn to_json(&self) -> Value {
        Value::Array((0..self.len()).filter_map(|i| self.log.value(i)).collect())
    }

    /// The whole context as JSONL: one compact message per line (R3); for
    /// a context that is not [complete](Context::is_complete), the held ones.
    pub fn to_jsonl(&self) -> String {
        // The log is UTF-8 JSONL already.
        String::from_utf8_lossy(self.log.jsonl()).into_owned()
    }
}
