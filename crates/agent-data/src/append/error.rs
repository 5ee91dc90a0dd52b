//! The seam's one error type: what an append through [`Append`](crate::Append)
//! can come to, whatever stands behind it.

/// Why an append through [`Append`](crate::Append) did not land: the
/// messages were refused, the target keeps no keys, a key is bad, or the
/// store behind it failed. Nothing was appended, except where a store's own
/// error says otherwise (an append in doubt).
///
/// A store's own error travels whole in [`AppendError::Store`], so code that
/// knows the store gets it back ([`AppendError::store_error`]).
///
/// ```
/// use agent_data::{Append, AppendError, Context, Message};
/// use agent_core::json;
///
/// let mut ctx = Context::from_json(r#"[{"type":"state","data":{"n":1},"schema":{"properties":{"n":{"type":"integer"}}}}]"#)?;
/// let bad = Message::from_value(json!({"type": "state", "data": {"n": "one"}}))?;
/// let error = Append::append_all(&mut ctx, &bad).unwrap_err();
/// assert!(error.is_refused());
/// assert!(error.to_string().contains("schema violated"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AppendError {
    /// The messages were refused: a type error or a schema violation
    /// against the context as it is when they land (R13, R25), or a bad
    /// message. Nothing was appended.
    #[error("{0}")]
    Refused(Box<crate::Error>),
    /// An append with a key ([`Append::append_once`](crate::Append::append_once))
    /// to a target that keeps no keys, so it could not promise to append
    /// once. Nothing was appended.
    #[error(
        "{name}: this store keeps no append keys, so an append with a key cannot be made here \
         (nothing was appended); append without a key"
    )]
    KeysUnsupported {
        /// The target (a context's name, or `a context in memory`).
        name: String,
    },
    /// An append key that cannot be used: keys are 1 to
    /// [`MAX_KEY_BYTES`](crate::MAX_KEY_BYTES) bytes of printable ASCII
    /// without spaces.
    #[error("bad append key {key:?}: {reason}")]
    InvalidKey {
        /// The key as given.
        key: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The operating system gave no random bytes for a new key.
    #[error("cannot generate an append key: the operating system gave no random bytes ({reason})")]
    NoRandomness {
        /// What it said.
        reason: String,
    },
    /// The store behind the target failed (I/O, a full disk, contention, a
    /// lost connection): its own error, shown as it is.
    #[error(transparent)]
    Store(Box<dyn std::error::Error + Send + Sync + 'static>),
}

impl AppendError {
    /// True when the messages were refused ([`AppendError::Refused`]): the
    /// append's own fault, which trying again will not mend.
    pub fn is_refused(&self) -> bool {
        matches!(self, AppendError::Refused(_))
    }

    /// The store's own error of type `E`, when this is
    /// [`AppendError::Store`] holding one.
    ///
    /// ```
    /// use agent_data::AppendError;
    /// let error = AppendError::Store(Box::new(std::io::Error::other("disk full")));
    /// assert_eq!(error.store_error::<std::io::Error>().map(|e| e.to_string()).as_deref(), Some("disk full"));
    /// assert!(error.store_error::<std::fmt::Error>().is_none());
    /// ```
    pub fn store_error<E: std::error::Error + 'static>(&self) -> Option<&E> {
        match self {
            AppendError::Store(error) => error.downcast_ref::<E>(),
            _ => None,
        }
    }

    /// Takes the store's own error of type `E` out, or gives `self` back.
    ///
    /// # Errors
    /// `self`, unchanged, when it is not [`AppendError::Store`] holding an `E`.
    pub fn into_store_error<E: std::error::Error + 'static>(self) -> Result<E, AppendError> {
        match self {
            AppendError::Store(error) => match error.downcast::<E>() {
                Ok(error) => Ok(*error),
                Err(error) => Err(AppendError::Store(error)),
            },
            other => Err(other),
        }
    }
}
