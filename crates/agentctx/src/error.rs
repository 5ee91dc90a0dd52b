//! One error type over every layer's.

use agent_core::Reference;
use agent_vars::SyntaxError;

/// Anything that can go wrong through this crate: each layer's error as it
/// is, plus the two a reader meets first — an expression that does not
/// parse (shown with a caret under the fault) and one that reads nothing.
///
/// `Display` says what and where, as each layer's does; match on the
/// variant to tell them apart, or use [`Error::is_unresolved`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An expression that does not parse (spec R15). `Display` shows the
    /// expression on a second line and a caret under the fault.
    #[error("{}{error}\n{}", if at.is_empty() { String::new() } else { format!("{at}: ") }, error.caret())]
    Syntax {
        /// Where the expression sits in a call (a JSON Pointer), `""` for a
        /// lone expression.
        at: String,
        /// The fault.
        error: SyntaxError,
    },
    /// Nothing an expression names is present (spec R17), or a call still
    /// waits for references (R18).
    #[error("{what} is unresolved: not present: {}", names(missing))]
    Unresolved {
        /// The expression, or `the call`.
        what: String,
        /// Every reference that was not present, in order, once each.
        missing: Vec<Reference>,
    },
    /// One result of a batch written all or none
    /// ([`StoredContext::apply_all`](crate::StoredContext::apply_all)) was
    /// refused, so nothing was written; `index` is its place in the batch.
    /// A schema (R25) or an instance layer's write (D4: instances unbroken) is judged on the
    /// view the batch's *last* write to that layer leaves (D39: batch judged together), so for
    /// those `index` is the last call writing the layer, which may not be
    /// the one whose value broke it.
    #[error("call {index} of the batch: {source}")]
    Batch {
        /// The 0-based place of the refused result in the batch.
        index: usize,
        /// Why it was refused.
        #[source]
        source: Box<Error>,
    },
    /// A borrowing read ([`ContextExt::get_ref`](crate::ContextExt::get_ref))
    /// of text that is an expression, not one reference: `||` and `&&`
    /// choose among values, which [`ContextExt::get`](crate::ContextExt::get)
    /// evaluates.
    #[error(
        "{expression:?} is an expression, not one reference: get_ref borrows one reference's value; get evaluates || and &&"
    )]
    NotAReference {
        /// The expression as given.
        expression: String,
    },
    /// An activity ended with an error instead of a value.
    #[error("activity failed: {0}")]
    Activity(String),
    /// JSON text that does not parse, read with [`json::from_str`]
    /// (the library's reader, which keeps numbers exactly).
    ///
    /// [`json::from_str`]: agent_core::json::from_str
    #[error("invalid JSON: {0}")]
    Json(#[from] agent_core::json::ParseError),
    /// The application's own serde_json work (typed data in and out of
    /// JSON), so that `?` on it works in a function returning
    /// [`Result`](crate::Result).
    #[error("JSON: {0}")]
    SerdeJson(#[from] serde_json::Error),
    /// Reading or writing something other than a context — the application's
    /// own files, so that `?` on them works in a function returning
    /// [`Result`](crate::Result). The stores report their own I/O as
    /// [`Error::Store`], naming the context.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// Paths, references, kinds, instance ids, the write methods.
    #[error(transparent)]
    Core(#[from] agent_core::Error),
    /// Loading, messages, appends refused by a type error or a schema.
    #[error(transparent)]
    Data(#[from] agent_data::Error),
    /// Reading or appending a stored context (a file or PostgreSQL).
    #[error(transparent)]
    Store(#[from] agent_store::Error),
    /// An append through the seam that did not land and is neither a
    /// refusal ([`Error::Data`]) nor a store's own failure
    /// ([`Error::Store`]): a keyed append where no keys are kept, a bad
    /// key, or the failure of a store this crate does not know.
    #[error(transparent)]
    Append(agent_data::AppendError),
    /// Resolving references in a call (syntax errors become [`Error::Syntax`]).
    #[error(transparent)]
    Vars(agent_vars::Error),
    /// Recording a call's result.
    #[error(transparent)]
    Output(#[from] agent_output::Error),
    /// Batches of instances.
    #[error(transparent)]
    Instancing(#[from] agent_instancing::Error),
    /// Rendering and provider payloads.
    #[error(transparent)]
    Render(#[from] agent_render::Error),
    /// Building or running a plan.
    #[error(transparent)]
    Plan(#[from] agent_plan::Error),
    /// Talking to a model: tools, requests, the loop.
    #[cfg(feature = "loop")]
    #[cfg_attr(docsrs, doc(cfg(feature = "loop")))]
    #[error(transparent)]
    Loop(#[from] agent_loop::Error),
}

impl Error {
    /// True for [`Error::Unresolved`]: the read or the call may succeed
    /// once more has been written (the CLI's exit status 3).
    pub fn is_unresolved(&self) -> bool {
        matches!(self, Error::Unresolved { .. })
    }
}

impl Error {
    /// The error of result `index` of a batch.
    pub(crate) fn batch(index: usize, source: Error) -> Self {
        Error::Batch {
            index,
            source: Box::new(source),
        }
    }
}

/// A refusal is the messages' fault ([`Error::Data`], in memory or stored
/// alike); a store's own failure is [`Error::Store`]; the rest, as it is.
impl From<agent_data::AppendError> for Error {
    fn from(error: agent_data::AppendError) -> Self {
        match error.into_store_error::<agent_store::Error>() {
            Ok(agent_store::Error::Refused(refused)) => Error::Data(*refused),
            Ok(store) => Error::Store(store),
            Err(agent_data::AppendError::Refused(refused)) => Error::Data(*refused),
            Err(other) => Error::Append(other),
        }
    }
}

impl From<SyntaxError> for Error {
    fn from(error: SyntaxError) -> Self {
        Error::Syntax {
            at: String::new(),
            error,
        }
    }
}

impl From<agent_vars::Error> for Error {
    fn from(error: agent_vars::Error) -> Self {
        match error {
            agent_vars::Error::Syntax { at, error } => Error::Syntax { at, error },
            other => Error::Vars(other),
        }
    }
}

fn names(references: &[Reference]) -> String {
    let names: Vec<String> = references.iter().map(ToString::to_string).collect();
    names.join(", ")
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
