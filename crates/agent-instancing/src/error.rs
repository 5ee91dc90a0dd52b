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
    /// The store failed (I/O, a full disk, contention); nothing was appended.
    #[error(transparent)]
    Store(agent_store::Error),
}

impl From<agent_store::Error> for Error {
    fn from(error: agent_store::Error) -> Self {
        match error {
            agent_store::Error::Refused(refused) => Error::Data(*refused),
            other => Error::Store(other),
        }
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
