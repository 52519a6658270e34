//! PyO3 bindings of ferroshap-core, compiled into `ferroshap._core`.
//!
//! This crate converts arguments and results, releases the GIL around the core's work and maps
//! core errors (and, defensively, panics) to ferroshap's exception classes, which it defines. It
//! holds no estimator logic.

mod exceptions;
mod interactions;
mod masking;
mod runner;
mod sampling;
mod sketch;
mod threads;

use pyo3::prelude::*;

/// The compiled core of ferroshap.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    exceptions::register(m)?;
    m.add_function(wrap_pyfunction!(runner::interrupt, m)?)?;
    m.add_function(wrap_pyfunction!(threads::set_thread_limit, m)?)?;
    sampling::register(m)?;
    masking::register(m)?;
    interactions::register(m)?;
    sketch::register(m)?;
    Ok(())
}
