//! The append seam: what every layer above this one writes through, so the
//! same code appends to a context in memory or, durably, to a stored one
//! (agent-store implements it; a layer that writes never sees a store).

mod error;
mod key;

pub use error::AppendError;
pub use key::{AppendKey, KeyedOutcome, MAX_KEY_BYTES};

use crate::{Context, Message};
use std::ops::Range;

/// Makes the messages to append from the context as it is when they land
/// ([`Append::append_built`]): fresh instance ids, say, which another
/// writer must not make stale.
pub type BuildMessages<'a> = dyn FnMut(&Context) -> Result<Vec<Message>, crate::Error> + 'a;

/// Somewhere validated messages can be appended: a [`Context`] in memory,
/// or a stored context whose every append is a commit (agent-store's
/// `Stored`).
///
/// ```
/// use agent_data::{Append, Context, Message};
/// use agent_core::json;
///
/// // Code that writes takes any `Append`; here, a context in memory.
/// fn note(target: &mut impl Append, messages: &[Message]) -> Result<usize, agent_data::AppendError> {
///     Ok(target.append_all(messages)?.start)
/// }
/// let mut ctx = Context::new();
/// assert_eq!(note(&mut ctx, &Message::from_value(json!({"type": "state", "data": {"n": 1}}))?)?, 0);
/// assert_eq!(note(&mut ctx, &Message::from_value(json!({"type": "state", "data": {"n": 2}}))?)?, 1);
/// assert_eq!(ctx.read(&"†state.n".parse()?, None), Some(&json!(2)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Append {
    /// The context as this appender knows it, for reads.
    fn context(&self) -> &Context;

    /// Appends `messages` all or none, validated as one batch (R13, R25):
    /// each write against the views the earlier ones leave, each layer's
    /// schema on the view the batch's last write to it leaves (decision
    /// D39). Returns their index range.
    ///
    /// # Errors
    /// [`AppendError::Refused`] when the batch fails validation (R13, R25); for a stored
    /// context, [`AppendError::Store`] when its store fails. Nothing is appended.
    fn append_all(&mut self, messages: &[Message]) -> Result<Range<usize>, AppendError>;

    /// Appends the messages `build` makes from the context as it is when
    /// they land — for messages that depend on it, like fresh instance
    /// ids, which another writer must not make stale. `build` may run more
    /// than once (once per attempt).
    ///
    /// # Errors
    /// [`AppendError::Refused`] when `build` fails or what it makes fails validation; for a
    /// stored context, [`AppendError::Store`] when its store fails. Nothing is appended.
    fn append_built(&mut self, build: &mut BuildMessages<'_>) -> Result<Range<usize>, AppendError>;

    /// [`Append::append_all`] at most once per `key`: when an append with
    /// `key` had landed, nothing is appended and the range it wrote is
    /// [`KeyedOutcome::Already`]. Only a store that keeps keys can promise that;
    /// this default (and a context in memory) is
    /// [`AppendError::KeysUnsupported`], appending nothing.
    ///
    /// # Errors
    /// [`AppendError::KeysUnsupported`] from this default and a context in memory; for a
    /// stored context, [`AppendError::Store`] when its store fails.
    fn append_once(
        &mut self,
        messages: &[Message],
        key: &AppendKey,
    ) -> Result<KeyedOutcome, AppendError> {
        let _ = (messages, key);
        Err(AppendError::KeysUnsupported {
            name: "a context in memory".into(),
        })
    }
}

impl Append for Context {
    fn context(&self) -> &Context {
        self
    }

    fn append_all(&mut self, messages: &[Message]) -> Result<Range<usize>, AppendError> {
        Context::append_all(self, messages).map_err(|e| AppendError::Refused(Box::new(e)))
    }

    fn append_built(&mut self, build: &mut BuildMessages<'_>) -> Result<Range<usize>, AppendError> {
        let messages = build(self).map_err(|e| AppendError::Refused(Box::new(e)))?;
        Append::append_all(self, &messages)
    }
}

/// An appender whose every append is made at most once under one key
/// ([`Append::append_once`]), for code that takes any [`Append`] — a
/// call's result written by `agent_output::apply`, say. An append whose
/// key had already landed appends nothing and returns the range that
/// append wrote.
///
/// ```
/// use agent_data::{Append, AppendKey, Context, KeyedAppend, Message};
/// use agent_core::json;
///
/// // A context in memory keeps no keys: a keyed append says so and appends nothing.
/// let mut ctx = Context::new();
/// let mut keyed = KeyedAppend::new(&mut ctx, AppendKey::new("job-1")?);
/// let message = Message::from_value(json!({"type": "state", "data": {"n": 1}}))?;
/// let error = keyed.append_all(&message).unwrap_err();
/// assert!(error.to_string().contains("keeps no append keys"));
/// assert!(ctx.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct KeyedAppend<'a, A: Append + ?Sized> {
    target: &'a mut A,
    key: AppendKey,
    last: Option<KeyedOutcome>,
}

impl<'a, A: Append + ?Sized> KeyedAppend<'a, A> {
    /// Appends to `target` under `key`.
    pub fn new(target: &'a mut A, key: AppendKey) -> Self {
        KeyedAppend {
            target,
            key,
            last: None,
        }
    }

    /// The key.
    pub fn key(&self) -> &AppendKey {
        &self.key
    }

    /// What the last append through it did — landed now, or earlier
    /// under the same key — which [`Append::append_all`] reduces to a
    /// range; `None` before any append landed.
    pub fn outcome(&self) -> Option<&KeyedOutcome> {
        self.last.as_ref()
    }
}

impl<A: Append + ?Sized> Append for KeyedAppend<'_, A> {
    fn context(&self) -> &Context {
        self.target.context()
    }

    fn append_all(&mut self, messages: &[Message]) -> Result<Range<usize>, AppendError> {
        let outcome = self.target.append_once(messages, &self.key)?;
        let range = outcome.range();
        self.last = Some(outcome);
        Ok(range)
    }

    /// Built once, from the context as last read, and appended under the
    /// key: a key names one batch, so a batch another writer made stale is
    /// refused rather than built again.
    fn append_built(&mut self, build: &mut BuildMessages<'_>) -> Result<Range<usize>, AppendError> {
        let messages =
            build(self.target.context()).map_err(|e| AppendError::Refused(Box::new(e)))?;
        self.append_all(&messages)
    }

    fn append_once(
        &mut self,
        messages: &[Message],
        key: &AppendKey,
    ) -> Result<KeyedOutcome, AppendError> {
        self.target.append_once(messages, key)
    }
}
