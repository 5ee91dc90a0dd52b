//! [`Stored`]: a stored context behind the append seam
//! ([`agent_data::Append`]), so the layers that write reach a store
//! without knowing it; and how this crate's errors cross that seam.

use crate::{AppendKey, BuildMessages, Error, KeyedOutcome, Result, Store};
use agent_data::{Append, AppendError, Context, Loaded, Message, Warning};
use std::ops::Range;

/// A refusal and a keyless store cross the seam as what they are; every
/// other failure travels whole, so code that knows this crate gets it back
/// ([`AppendError::store_error`]).
impl From<Error> for AppendError {
    fn from(error: Error) -> Self {
        match error {
            Error::Refused(refused) => AppendError::Refused(refused),
            Error::KeysUnsupported { name } => AppendError::KeysUnsupported { name },
            other => AppendError::Store(Box::new(other)),
        }
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

    fn append_all(
        &mut self,
        messages: &[Message],
    ) -> std::result::Result<Range<usize>, AppendError> {
        Ok(self.store.commit(&mut self.context, messages)?)
    }

    fn append_built(
        &mut self,
        build: &mut BuildMessages<'_>,
    ) -> std::result::Result<Range<usize>, AppendError> {
        Ok(self.store.commit_with(&mut self.context, build)?)
    }

    /// Through [`Store::commit_once`].
    fn append_once(
        &mut self,
        messages: &[Message],
        key: &AppendKey,
    ) -> std::result::Result<KeyedOutcome, AppendError> {
        Ok(self.store.commit_once(&mut self.context, messages, key)?)
    }
}
