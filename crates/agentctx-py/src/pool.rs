//! `agentctx.Pool`: one process's connections to one PostgreSQL database,
//! shared by the contexts opened from it (D114: a pool per process).

use crate::context::{Context, released};
use agentctx::store::PgPool;
use agentctx::{Address, StoredContext};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::time::Duration;

/// At most `size` connections to the PostgreSQL database at `url`, shared
/// by every context opened from the pool: a context holds one only during
/// a call (a read, an append), so a thousand open contexts cost the pool's
/// size of server connections. The URL's `context` parameter, if any, is
/// not used: `open` names the context.
#[pyclass(module = "agentctx", frozen)]
pub(crate) struct Pool {
    inner: PgPool,
}

#[pymethods]
impl Pool {
    /// Connects once (creating or upgrading agentctx's tables if needed);
    /// raises `StoreError` when it cannot. A call that finds every
    /// connection in use waits up to `wait` seconds for one, then raises
    /// `StoreError`.
    #[new]
    #[pyo3(signature = (url, size = 10, wait = 30.0))]
    fn new(py: Python<'_>, url: &str, size: usize, wait: f64) -> PyResult<Pool> {
        let wait = Duration::try_from_secs_f64(wait)
            .map_err(|_| PyValueError::new_err(format!("wait={wait}: give seconds, 0 or more")))?;
        let url = url.to_owned();
        let inner = released(py, move || {
            PgPool::open(&url, size).map_err(agentctx::Error::from)
        })?;
        Ok(Pool {
            inner: inner.with_wait(wait),
        })
    }

    /// Opens the context `name` on the pool's connections; with `create`, a
    /// new empty one when it does not exist yet (as `agentctx.open`).
    #[pyo3(signature = (name, *, create = false))]
    fn open(&self, py: Python<'_>, name: &str, create: bool) -> PyResult<Context> {
        let address = Address::in_pool(&self.inner, name);
        let stored = released(py, move || match create {
            true => StoredContext::open(address),
            false => StoredContext::open_existing(address),
        })?;
        Ok(Context::from_stored(stored))
    }

    /// The most connections the pool opens.
    #[getter]
    fn size(&self) -> usize {
        self.inner.size()
    }

    /// The connections open now (idle, or in use during a call).
    #[getter]
    fn connections(&self) -> usize {
        self.inner.connections()
    }

    /// The open connections no context holds now.
    #[getter]
    fn idle(&self) -> usize {
        self.inner.idle()
    }

    fn __repr__(&self) -> String {
        format!(
            "<agentctx.Pool {} size={}>",
            self.inner.server(),
            self.inner.size()
        )
    }
}
