//! Binding of the masked-input builder (`ferroshap-core::masking`) for float32 / float64 data.

use ferroshap_core::masking::{fill_masked_inputs_walking, Coalitions, MaskSources, Walk};
use ferroshap_core::CoreError;
use numpy::{Element, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

use crate::exceptions::to_py_err;
use crate::runner::{guarded, guarded_here};
use crate::sampling::PyDesign;
use crate::threads::thread_limit;

/// Fills `out` with the masked inputs of the given (mask, row) pairs; see `_core.pyi`.
#[pyfunction]
#[pyo3(signature = (out, masks, mask_index, rows, row_index, background, player_of_feature = None))]
#[allow(clippy::too_many_arguments)]
fn fill_masked_inputs(
    py: Python<'_>,
    out: &Bound<'_, PyAny>,
    masks: &Bound<'_, PyAny>,
    mask_index: PyReadonlyArray1<'_, i64>,
    rows: &Bound<'_, PyAny>,
    row_index: PyReadonlyArray1<'_, i64>,
    background: &Bound<'_, PyAny>,
    player_of_feature: Option<PyReadonlyArray1<'_, i64>>,
) -> PyResult<()> {
    let mask_index = to_indices(py, &mask_index, "mask_index")?;
    let row_index = to_indices(py, &row_index, "row_index")?;
    let player_of_feature = player_of_feature
        .map(|map| to_indices(py, &map, "player_of_feature"))
        .transpose()?;
    let masks = match masks.cast::<PyDesign>() {
        Ok(design) => Masks::Design(design.clone()),
        Err(_) => {
            if player_of_feature.is_some() {
                return Err(to_py_err(
                    py,
                    CoreError::invalid("player_of_feature", "applies to a Design's masks only"),
                ));
            }
            // a failure other than the type's (an interrupt, say) goes through unchanged
            Masks::Indicators(masks.extract().map_err(|err: PyErr| {
                if err.is_instance_of::<PyTypeError>(py) {
                    PyTypeError::new_err("masks: expected a 2-D bool NumPy array or a Design")
                } else {
                    err
                }
            })?)
        }
    };
    let pairs = Pairs {
        masks,
        player_of_feature,
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

/// The coalitions as Python gave them: indicators, or a planned design read in place.
enum Masks<'py> {
    Indicators(PyReadonlyArray2<'py, bool>),
    Design(Bound<'py, PyDesign>),
}

struct Pairs<'py> {
    masks: Masks<'py>,
    player_of_feature: Option<Vec<usize>>,
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
    let n_features = background.as_array().ncols();
    let mut out = out.try_readwrite()?;
    let contiguous = |name: &'static str| {
        to_py_err(
            py,
            CoreError::invalid(name, "must be a C-contiguous array".to_string()),
        )
    };
    let masks = match &pairs.masks {
        Masks::Indicators(masks) => {
            let columns = masks.as_array().ncols();
            if columns != n_features {
                return Err(to_py_err(
                    py,
                    CoreError::invalid(
                        "masks",
                        format!("expected {n_features} columns, got {columns}"),
                    ),
                ));
            }
            Coalitions::Indicators(masks.as_slice().map_err(|_| contiguous("masks"))?)
        }
        Masks::Design(design) => Coalitions::Packed {
            matrix: &design.get().design.coalitions,
            player_of_feature: pairs.player_of_feature.as_deref(),
        },
    };
    let sources = MaskSources {
        n_features,
        masks,
        rows: rows.as_slice().map_err(|_| contiguous("rows"))?,
        background: background
            .as_slice()
            .map_err(|_| contiguous("background"))?,
    };
    let out = out.as_slice_mut().map_err(|_| contiguous("out"))?;
    let (mask_index, row_index) = (&pairs.mask_index, &pairs.row_index);
    // a limit of one thread (the engine's helper thread filling ahead of the model): fill here,
    // without a round trip to a pool of one thread on every chunk
    let walk = if thread_limit() == 1 {
        Walk::Serial
    } else {
        Walk::Parallel
    };
    let fill = move || fill_masked_inputs_walking(out, sources, mask_index, row_index, walk);
    py.detach(|| match walk {
        Walk::Serial => guarded_here(fill),
        Walk::Parallel => guarded(fill),
    })
    .map_err(|e| to_py_err(py, e))
}

/// The entries of `index` as `usize`, or an error naming `name` and its first negative entry.
/// Runs on every chunk the fill builds: one vectorizable pass for the sign, one for the copy.
fn to_indices(
    py: Python<'_>,
    index: &PyReadonlyArray1<'_, i64>,
    name: &'static str,
) -> PyResult<Vec<usize>> {
    let view = index.as_array();
    let copied;
    let index = match view.as_slice() {
        Some(contiguous) => contiguous,
        None => {
            copied = view.to_vec();
            &copied
        }
    };
    if index.iter().fold(0, |lowest, &i| lowest.min(i)) < 0 {
        let negative = index.iter().find(|&&i| i < 0).copied().unwrap_or(-1);
        return Err(to_py_err(
            py,
            CoreError::invalid(name, format!("{negative} is negative")),
        ));
    }
    Ok(index.iter().map(|&i| i as usize).collect())
}

/// Adds the masking functions to `_core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(fill_masked_inputs, m)?)
}
