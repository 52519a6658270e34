//! Binding of the masked-input builder (`ferroshap-core::masking`) for float32 / float64 data.

use ferroshap_core::masking::{fill_masked_inputs as fill_core, MaskSources};
use ferroshap_core::CoreError;
use numpy::{Element, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

use crate::errors::{guarded, to_py_err};

/// Fills `out` with the masked inputs of the given (mask, row) pairs; see `_core.pyi`.
#[pyfunction]
fn fill_masked_inputs(
    py: Python<'_>,
    out: &Bound<'_, PyAny>,
    masks: PyReadonlyArray2<'_, bool>,
    mask_index: PyReadonlyArray1<'_, i64>,
    rows: &Bound<'_, PyAny>,
    row_index: PyReadonlyArray1<'_, i64>,
    background: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let mask_index = to_indices(py, &mask_index, "mask_index")?;
    let row_index = to_indices(py, &row_index, "row_index")?;
    let pairs = Pairs {
        masks,
        mask_index,
        row_index,
    };
    if let Ok(out) = out.cast::<PyArray2<f64>>() {
        fill_typed(py, out, rows, background, &pairs)
    } else if let Ok(out) = out.cast::<PyArray2<f32>>() {
        fill_typed(py, out, rows, background, &pairs)
    } else {
        Err(PyTypeError::new_err(
            "out: expected a 2-D float32 or float64 NumPy array",
        ))
    }
}

struct Pairs<'py> {
    masks: PyReadonlyArray2<'py, bool>,
    mask_index: Vec<usize>,
    row_index: Vec<usize>,
}

fn fill_typed<T: Element + Copy + Send + Sync>(
    py: Python<'_>,
    out: &Bound<'_, PyArray2<T>>,
    rows: &Bound<'_, PyAny>,
    background: &Bound<'_, PyAny>,
    pairs: &Pairs<'_>,
) -> PyResult<()> {
    let rows: PyReadonlyArray2<'_, T> = rows.extract()?;
    let background: PyReadonlyArray2<'_, T> = background.extract()?;
    let n_features = pairs.masks.as_array().ncols();
    let mut out = out.try_readwrite()?;
    let contiguous = |name: &'static str| {
        to_py_err(
            py,
            CoreError::invalid(name, "must be a C-contiguous array".to_string()),
        )
    };
    let sources = MaskSources {
        n_features,
        masks: pairs.masks.as_slice().map_err(|_| contiguous("masks"))?,
        rows: rows.as_slice().map_err(|_| contiguous("rows"))?,
        background: background
            .as_slice()
            .map_err(|_| contiguous("background"))?,
    };
    let out = out.as_slice_mut().map_err(|_| contiguous("out"))?;
    let (mask_index, row_index) = (&pairs.mask_index, &pairs.row_index);
    py.detach(|| guarded(|| fill_core(out, sources, mask_index, row_index)))
        .map_err(|e| to_py_err(py, e))
}

fn to_indices(
    py: Python<'_>,
    index: &PyReadonlyArray1<'_, i64>,
    name: &'static str,
) -> PyResult<Vec<usize>> {
    index
        .as_array()
        .iter()
        .map(|&i| {
            usize::try_from(i)
                .map_err(|_| to_py_err(py, CoreError::invalid(name, format!("{i} is negative"))))
        })
        .collect()
}

/// Adds the masking functions to `_core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(fill_masked_inputs, m)?)
}
