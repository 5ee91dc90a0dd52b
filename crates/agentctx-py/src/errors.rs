//! The package's exceptions, a small hierarchy under `agentctx.Error`:
//!
//! - `RefusedError`: a write a rule refused (a schema, a method, an
//!   instance's layer); nothing was written;
//! - `NotFoundError`: no such context, or nothing an expression names;
//! - `StoreError`: the file or database failed;
//! - `InDoubtError`: a commit whose outcome is unknown (send it again with
//!   its key, the exception's `key`);
//! - `TamperedError`: the log does not chain (edited, cut, reordered);
//!   from `verify`, its `report` holds the findings.
//!
//! Anything else agentctx refuses is an `agentctx.Error` itself.

use pyo3::create_exception;
use pyo3::prelude::*;

create_exception!(
    agentctx,
    Error,
    pyo3::exceptions::PyException,
    "What agentctx refused or could not do."
);
create_exception!(
    agentctx,
    RefusedError,
    Error,
    "A write a rule refused; nothing was written."
);
create_exception!(
    agentctx,
    NotFoundError,
    Error,
    "No such context, or nothing an expression names."
);
create_exception!(agentctx, StoreError, Error, "The file or database failed.");
create_exception!(
    agentctx,
    InDoubtError,
    StoreError,
    "A commit whose outcome is unknown: send it again with its key."
);
create_exception!(
    agentctx,
    TamperedError,
    StoreError,
    "The log does not chain: it was edited, cut or reordered."
);

/// Adds the exceptions to the module.
pub(crate) fn add(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<Error>())?;
    m.add("RefusedError", py.get_type::<RefusedError>())?;
    m.add("NotFoundError", py.get_type::<NotFoundError>())?;
    m.add("StoreError", py.get_type::<StoreError>())?;
    m.add("InDoubtError", py.get_type::<InDoubtError>())?;
    m.add("TamperedError", py.get_type::<TamperedError>())?;
    Ok(())
}

/// The exception for `error`, its message agentctx's own.
pub(crate) fn to_python(error: &agentctx::Error) -> PyErr {
    use agentctx::Error as E;
    let message = error.to_string();
    match error {
        E::Batch { source, .. } => {
            let inner = to_python(source);
            Python::attach(|py| {
                let kind = inner.get_type(py);
                PyErr::from_type(kind, message)
            })
        }
        E::Unresolved { .. } => NotFoundError::new_err(message),
        E::Store(store) => store_error(store, message),
        E::Append(append) if append.is_refused() => RefusedError::new_err(message),
        E::Append(_) | E::Io(_) => StoreError::new_err(message),
        E::Data(_) | E::Output(_) | E::Instancing(_) => RefusedError::new_err(message),
        _ => Error::new_err(message),
    }
}

fn store_error(error: &agentctx::store::Error, message: String) -> PyErr {
    use agentctx::store::Error as S;
    match error {
        _ if error.is_missing() => NotFoundError::new_err(message),
        S::Tampered { .. } => TamperedError::new_err(message),
        S::Refused(_) => RefusedError::new_err(message),
        S::InDoubt { key, .. } => {
            let error = InDoubtError::new_err(message);
            // The key to send the same write again with (None without one).
            let key = key.as_ref().map(|k| k.as_str().to_owned());
            Python::attach(|py| match error.value(py).setattr("key", key) {
                Ok(()) => error,
                Err(failed) => failed,
            })
        }
        _ => StoreError::new_err(message),
    }
}
