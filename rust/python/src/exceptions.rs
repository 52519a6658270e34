//! ferroshap's exception classes, defined here so that the compiled core raises them without
//! importing any Python code, and the one conversion of a core error into one of them.
//!
//! Every error a user can trigger is a `FerroshapError` and also a built-in `ValueError`,
//! `TypeError` or `MemoryError`, so `except ValueError` keeps working. The classes need two
//! bases each, which a `#[pyclass]` cannot have, so they are built at import by calling `type`
//! (as a `class` statement does). Python code raises them too, as
//! `InvalidArgumentError(message, argument="budget")`.

use ferroshap_core::CoreError;
use pyo3::exceptions::{
    PyException, PyKeyboardInterrupt, PyMemoryError, PyRuntimeError, PyTypeError, PyValueError,
};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};

const BASE_DOC: &str = "Base class of every error raised by ferroshap.

Attributes
----------
argument : str or None
    Name of the offending argument as the caller spells it (``\"budget\"``, ``\"seed\"``, ...),
    ``None`` when the error is not about one argument or its name is unknown. Messages name the
    argument, what was expected and what was received.
";

const INVALID_ARGUMENT_DOC: &str = "An argument has the right type but an invalid value (wrong \
shape, NaN, out of range). Also a ``ValueError``; the compiled core raises it with ``argument`` \
always set.";

const INVALID_TYPE_DOC: &str = "An argument has an unsupported type (for example a model that \
cannot be called). Also a ``TypeError``.";

const DEVICE_MEMORY_DOC: &str = "The model ran out of (device) memory even on the smallest chunk \
of inputs. Also a ``MemoryError``.

Chunks are halved and retried on out-of-memory errors first; this is raised only when a chunk of
one coalition still fails, and names the number of model rows that was tried.";

/// The four classes, built once per interpreter.
struct Classes {
    base: Py<PyType>,
    invalid_argument: Py<PyType>,
    invalid_type: Py<PyType>,
    device_memory: Py<PyType>,
}

static CLASSES: PyOnceLock<Classes> = PyOnceLock::new();

/// `FerroshapError.__init__`: the positional arguments become the exception's `args` (the
/// message), the keyword `argument` its `argument` attribute.
#[pyfunction]
#[pyo3(signature = (this, *args, argument = None), text_signature = "(self, *args, argument=None)")]
fn initialize(
    this: &Bound<'_, PyAny>,
    args: &Bound<'_, PyTuple>,
    argument: Option<&Bound<'_, PyAny>>,
) -> PyResult<()> {
    this.setattr("args", args)?;
    this.setattr("argument", argument)
}

/// A class named `name` (module `ferroshap`) with `bases` and the docstring `doc`, plus the
/// entries of `extra` in its namespace.
fn class<'py>(
    py: Python<'py>,
    name: &str,
    bases: Bound<'py, PyTuple>,
    doc: &str,
    extra: &[(&str, Bound<'py, PyAny>)],
) -> PyResult<Py<PyType>> {
    let namespace = PyDict::new(py);
    namespace.set_item("__module__", "ferroshap")?;
    namespace.set_item("__doc__", doc)?;
    for (key, value) in extra {
        namespace.set_item(key, value)?;
    }
    let made = py.get_type::<PyType>().call1((name, bases, namespace))?;
    Ok(made.cast_into::<PyType>()?.unbind())
}

/// The classes, built on first use. `__init__` is bound through `functools.partialmethod`
/// because a compiled function is not a method descriptor by itself.
fn classes(py: Python<'_>) -> PyResult<&Classes> {
    CLASSES.get_or_try_init(py, || {
        let initialize = wrap_pyfunction!(initialize, py)?;
        let method = py
            .import("functools")?
            .getattr("partialmethod")?
            .call1((initialize,))?;
        let base = class(
            py,
            "FerroshapError",
            PyTuple::new(py, [py.get_type::<PyException>()])?,
            BASE_DOC,
            &[("__init__", method), ("argument", py.None().into_bound(py))],
        )?;
        let with = |name: &str, builtin: Bound<'_, PyType>, doc: &str| {
            class(
                py,
                name,
                PyTuple::new(py, [base.bind(py).clone(), builtin])?,
                doc,
                &[],
            )
        };
        Ok(Classes {
            invalid_argument: with(
                "InvalidArgumentError",
                py.get_type::<PyValueError>(),
                INVALID_ARGUMENT_DOC,
            )?,
            invalid_type: with(
                "InvalidTypeError",
                py.get_type::<PyTypeError>(),
                INVALID_TYPE_DOC,
            )?,
            device_memory: with(
                "DeviceMemoryError",
                py.get_type::<PyMemoryError>(),
                DEVICE_MEMORY_DOC,
            )?,
            base,
        })
    })
}

/// Adds the exception classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let built = classes(m.py())?;
    m.add("FerroshapError", built.base.bind(m.py()))?;
    m.add("InvalidArgumentError", built.invalid_argument.bind(m.py()))?;
    m.add("InvalidTypeError", built.invalid_type.bind(m.py()))?;
    m.add("DeviceMemoryError", built.device_memory.bind(m.py()))?;
    Ok(())
}

/// The Python exception for `err`: `InvalidArgumentError` (a `ValueError`) for bad arguments,
/// with the offending argument's name as its `argument` attribute, `FerroshapError` (whose
/// `argument` is `None`) for numerical failures, `KeyboardInterrupt` for a cancelled computation
/// (the bindings cancel only on an interrupt, see `runner::interruptible`).
pub fn to_py_err(py: Python<'_>, err: CoreError) -> PyErr {
    let message = err.to_string();
    let built = classes(py).and_then(|built| {
        let (class, argument) = match err {
            CoreError::InvalidArgument { argument, .. } => {
                (&built.invalid_argument, Some(argument))
            }
            CoreError::Numerical(_) => (&built.base, None),
            CoreError::Cancelled => return Ok(PyKeyboardInterrupt::new_err(message.clone())),
        };
        let kwargs = PyDict::new(py);
        kwargs.set_item("argument", argument)?;
        let instance = class.bind(py).call((message.clone(),), Some(&kwargs))?;
        Ok(PyErr::from_value(instance))
    });
    built.unwrap_or_else(|_| PyRuntimeError::new_err(message))
}
