//! # agentctx-py
//!
//! The native module of the `agentctx` Python package (`agentctx._agentctx`),
//! a thin binding over the [`agentctx`] facade: contexts in memory or in
//! files, read by reference and written through the store's validated,
//! durable commit. Python-side types live in `python/agentctx/_agentctx.pyi`;
//! docs/python.md is the guide.
//!
//! Every entry point catches what it calls: an error becomes one of the
//! package's exceptions ([`errors`]), and the GIL is released around
//! reading, folding and writing.

mod context;
mod errors;
mod pool;
mod run;
mod values;

use pyo3::prelude::*;

/// The module `agentctx._agentctx`.
#[pymodule]
fn _agentctx(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<context::Context>()?;
    m.add_class::<pool::Pool>()?;
    m.add_function(wrap_pyfunction!(context::open, m)?)?;
    m.add_function(wrap_pyfunction!(run::run, m)?)?;
    errors::add(m)?;
    Ok(())
}
