//! The one error type of this crate.

/// Everything that can go wrong in a batch operation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading or appending to the context failed.
    #[error(transparent)]
    Data(#[from] agent_data::Error),
    /// A call is malformed (not an object, bad `_instance`, syntax error).
    #[error(transparent)]
    Vars(#[from] agent_vars::Error),
    /// Writing a call's result failed.
    #[error(transparent)]
    Output(#[from] agent_output::Error),
    /// The append did not land for a reason other than a refusal: the
    /// store failed (I/O, a full disk, contention) or keeps no keys.
    /// Nothing was appended (but see the store's in-doubt error).
    #[error(transparent)]
    Store(agent_data::AppendError),
}

impl From<agent_data::AppendError> for Error {
    fn from(error: agent_data::AppendError) -> Self {
        match error {
            agent_data::AppendError::Refused(refused) => Error::Data(*refused),
            other => Error::Store(other),
        }
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
