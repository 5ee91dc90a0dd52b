//! [`Append`]: the narrow seam writers above this layer take, so the same
//! code appends to a context in memory or, durably, to a stored one.

use crate::{AppendKey, Build, Error, Once, Result, Store};
use agent_data::{Context, Loaded, Message, Warning};
use std::ops::Range;

/// Somewhere validated messages can be appended: a [`Context`] in memory,
/// or a [`Stored`] context through [`Store::commit`].
pub trait Append {
    /// The context as this appender knows it, for reads.
    fn context(&self) -> &Context;

    /// Appends `messages` all or none, validated as one batch (R13, R25):
    /// each write against the views the earlier ones leave, each layer's
    /// schema on the view the batch's last write to it leaves (decision
    /// D39). Returns their index range.
    ///
    /// # Errors
    /// [`Error::Refused`] when the batch fails validation (R13, R25); for a [`Stored`] context,
    /// the errors of [`Store::commit`]. Nothing is appended.
    fn append_all(&mut self, messages: &[Message]) -> Result<Range<usize>>;

    /// Appends the messages `build` makes from the context as it is when
    /// they land — for messages that depend on it, like fresh instance
    /// ids, which another writer must not make stale. `build` may run more
    /// than once (once per attempt).
    ///
    /// # Errors
    /// [`Error::Refused`] when `build` fails or what it makes fails validation; for a
    /// [`Stored`] context, the errors of [`Store::commit_with`]. Nothing is appended.
    fn append_built(&mut self, build: &mut Build<'_>) -> Result<Range<usize>>;

    /// [`Append::append_all`] at most once per `key` ([`Store::commit_once`]):
    /// when an append with `key` had landed, nothing is appended and the
    /// range it wrote is [`Once::Already`]. Only a store that keeps keys
    /// can promise that; this default (and a context in memory) is
    /// [`Error::KeysUnsupported`], appending nothing.
    ///
    /// # Errors
    /// [`Error::KeysUnsupported`] from this default and a context in memory; for a [`Stored`]
    /// context, the errors of [`Store::commit_once`].
    fn append_once(&mut self, messages: &[Message], key: &AppendKey) -> Result<Once> {
        let _ = (messages, key);
        Err(Error::KeysUnsupported {
            name: "a context in memory".into(),
        })
    }
}

impl Append for Context {
    fn context(&self) -> &Context {
        self
    }

    fn append_all(&mut self, messages: &[Message]) -> Result<Range<usize>> {
        Context::append_all(self, messages).map_err(|e| Error::Refused(Box::new(e)))
    }

    fn append_built(&mut self, build: &mut Build<'_>) -> Result<Range<usize>> {
        let messages = build(self).map_err(|e| Error::Refused(Box::new(e)))?;
        Append::append_all(self, &messages)
    }
}

/// A stored context open for appending: its store and the context as last
/// read. Every append goes through [`Store::commit`], so it is validated
/// against — and lands on — the context as it is in the store then, other
/// writers' appends included; [`Stored::context`] includes them afterwards.
///
/// ```
/// use agent_data::Message;
/// use agent_store::{Append, FileStore, Stored};
/// use agent_core::json;
///
/// let dir = tempfile::tempdir()?;
/// std::fs::write(dir.path().join("c.jsonl"), "{\"type\":\"state\",\"data\":{\"n\":0}}\n")?;
/// let mut stored = Stored::open(FileStore::open(dir.path().join("c.jsonl"))?)?;
/// let set = Message::from_value(json!({"type": "state", "data": {"n": 1}, "_outputPath": "†state.n"}))?;
/// stored.append_all(&set)?;
/// assert_eq!(stored.context().read(&"†state.n".parse()?, None), Some(&json!(1)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Stored<S: Store> {
    store: S,
    context: Context,
    warnings: Vec<Warning>,
}

impl<S: Store> Stored<S> {
    /// Loads the whole context from `store` ([`Store::load`]).
    ///
    /// # Errors
    /// The errors of [`Store::load`], a missing context's included.
    pub fn open(store: S) -> Result<Self> {
        Self::opened(store, S::load).map_err(|(_, e)| e)
    }

    /// Loads what reads and appends need from `store`: its snapshot and
    /// the messages after it ([`Store::load_tail`]), so opening a long
    /// context costs O(tail). The context is not
    /// [complete](Context::is_complete) when a snapshot was used.
    ///
    /// # Errors
    /// The errors of [`Store::load_tail`], a missing context's included.
    pub fn open_tail(store: S) -> Result<Self> {
        Self::opened(store, S::load_tail).map_err(|(_, e)| e)
    }

    /// [`Stored::open`], or an empty context if it does not exist yet
    /// ([`Error::is_missing`]): the first append creates it.
    ///
    /// # Errors
    /// The errors of [`Store::load`] but a missing context's ([`Error::is_missing`]).
    pub fn open_or_create(store: S) -> Result<Self> {
        Self::created(Self::opened(store, S::load))
    }

    /// [`Stored::open_tail`], or an empty context if it does not exist yet.
    ///
    /// # Errors
    /// The errors of [`Store::load_tail`] but a missing context's ([`Error::is_missing`]).
    pub fn open_or_create_tail(store: S) -> Result<Self> {
        Self::created(Self::opened(store, S::load_tail))
    }

    /// Loads with `load`, handing the store back on failure.
    fn opened(
        mut store: S,
        load: fn(&mut S) -> Result<Loaded>,
    ) -> std::result::Result<Self, (S, Error)> {
        match load(&mut store) {
            Ok(Loaded {
                context, warnings, ..
            }) => Ok(Stored {
                store,
                context,
                warnings,
            }),
            Err(error) => Err((store, error)),
        }
    }

    fn created(opened: std::result::Result<Self, (S, Error)>) -> Result<Self> {
        match opened {
            Ok(stored) => Ok(stored),
            Err((store, e)) if e.is_missing() => Ok(Stored::create(store)),
            Err((_, e)) => Err(e),
        }
    }

    /// A context that may not exist yet: starts empty, and the first append
    /// creates it.
    pub fn create(store: S) -> Self {
        Stored {
            store,
            context: Context::new(),
            warnings: Vec::new(),
        }
    }

    /// What loading warned about (a torn last line, R34).
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The store and the context, for appends a particular store offers
    /// (they keep the two in step).
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) fn parts(&mut self) -> (&mut S, &mut Context) {
        (&mut self.store, &mut self.context)
    }

    /// Loads what other writers appended since this handle last read.
    ///
    /// # Errors
    /// The errors of [`Store::catch_up`].
    pub fn refresh(&mut self) -> Result<()> {
        self.store.catch_up(&mut self.context)
    }
}

impl<S: Store> Append for Stored<S> {
    fn context(&self) -> &Context {
        &self.context
    }

    fn append_all(&mut self, messages: &[Message]) -> Result<Range<usize>> {
        self.store.commit(&mut self.context, messages)
    }

    fn append_built(&mut self, build: &mut Build<'_>) -> Result<Range<usize>> {
        self.store.commit_with(&mut self.context, build)
    }

    /// Through [`Store::commit_once`].
    fn append_once(&mut self, messages: &[Message], key: &AppendKey) -> Result<Once> {
        self.store.commit_once(&mut self.context, messages, key)
    }
}

/// An appender whose every append is made at most once under one key
/// ([`Append::append_once`]), for code that takes any [`Append`] — a
/// call's result written by `agent_output::apply`, say. An append whose
/// key had already landed appends nothing and returns the range that
/// append wrote.
#[derive(Debug)]
pub struct KeyedAppend<'a, A: Append + ?Sized> {
    target: &'a mut A,
    key: AppendKey,
}

impl<'a, A: Append + ?Sized> KeyedAppend<'a, A> {
    /// Appends to `target` under `key`.
    pub fn new(target: &'a mut A, key: AppendKey) -> Self {
        KeyedAppend { target, key }
    }

    /// The key.
    pub fn key(&self) -> &AppendKey {
        &self.key
    }
}

impl<A: Append + ?Sized> Append for KeyedAppend<'_, A> {
    fn context(&self) -> &Context {
        self.target.context()
    }

    fn append_all(&mut self, messages: &[Message]) -> Result<Range<usize>> {
        self.target
            .append_once(messages, &self.key)
            .map(|once| once.range())
    }

    /// Built once, from the context as last read, and appended under the
    /// key: a key names one batch, so a batch another writer made stale is
    /// refused rather than built again.
    fn append_built(&mut self, build: &mut Build<'_>) -> Result<Range<usize>> {
        let messages = build(self.target.context()).map_err(|e| Error::Refused(Box::new(e)))?;
        self.append_all(&messages)
    }

    fn append_once(&mut self, messages: &[Message], key: &AppendKey) -> Result<Once> {
        self.target.append_once(messages, key)
    }
}
