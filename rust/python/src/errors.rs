//! Mapping of core errors and panics to the exception classes of `ferroshap.errors`.

use std::panic::{catch_unwind, AssertUnwindSafe};

use ferroshap_core::CoreError;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Runs `f`, turning a panic into a [`CoreError::Numerical`] so that none reaches Python.
pub fn guarded<T>(f: impl FnOnce() -> Result<T, CoreError>) -> Result<T, CoreError> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|payload| {
        let what = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_string());
        Err(CoreError::Numerical(format!(
            "internal error in ferroshap's core (please report it): {what}"
        )))
    })
}

/// The Python exception for `err`: `InvalidArgumentError` (a `ValueError`) for bad arguments,
/// with the offending argument's name as its `argument` attribute, `FerroshapError` (whose
/// `argument` is `None`) for numerical failures.
pub fn to_py_err(py: Python<'_>, err: CoreError) -> PyErr {
    let (class, argument) = match err {
        CoreError::InvalidArgument { argument, .. } => ("InvalidArgumentError", Some(argument)),
        CoreError::Numerical(_) => ("FerroshapError", None),
    };
    let message = err.to_string();
    let built = (|| {
        let kwargs = PyDict::new(py);
        kwargs.set_item("argument", argument)?;
        py.import("ferroshap.errors")?
            .getattr(class)?
            .call((message.clone(),), Some(&kwargs))
    })();
    match built {
        Ok(instance) => PyErr::from_value(instance),
        Err(_) => PyRuntimeError::new_err(message),
    }
}
