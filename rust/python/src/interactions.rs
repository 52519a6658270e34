//! Bindings of the sparse set functions, tree transforms, interaction indices and ProxySPEX
//! selection (see `_core.pyi`).

use ferroshap_core::interactions::exact::{exact_interactions as exact, moebius_from_table};
use ferroshap_core::interactions::function::{Basis, Key, SparseFunction};
use ferroshap_core::interactions::indices::{interactions, shapley_values, to_fourier, to_moebius};
use ferroshap_core::interactions::indices::{Index, Interactions};
use ferroshap_core::interactions::proxyspex::{
    plan_masks as plan, refit_top as refit, select_support as select, Extremes, Samples,
};
use ferroshap_core::interactions::ridge::{
    refit_ridge as ridge_refit, select_ridge as ridge_select,
};
use ferroshap_core::interactions::trees::lightgbm_fourier as from_lightgbm;
use ferroshap_core::CoreError;
use numpy::{PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use crate::exceptions::to_py_err;
use crate::runner::{guarded, interruptible};

fn parse_basis(basis: &str) -> Result<Basis, CoreError> {
    match basis {
        "Fourier" => Ok(Basis::Fourier),
        "Moebius" => Ok(Basis::Moebius),
        other => Err(CoreError::invalid(
            "basis",
            format!("expected \"Fourier\" or \"Moebius\", got {other:?}"),
        )),
    }
}

fn order(max_order: i64) -> Result<usize, CoreError> {
    usize::try_from(max_order)
        .ok()
        .filter(|&k| k >= 1)
        .ok_or_else(|| {
            CoreError::invalid("max_order", format!("must be at least 1, got {max_order}"))
        })
}

/// A C-order copy (or view) of a boolean mask array with `n` columns.
fn mask_rows(masks: &PyReadonlyArray2<'_, bool>, n: usize) -> Result<Vec<bool>, CoreError> {
    let shape = masks.as_array().shape().to_vec();
    if shape[1] != n {
        return Err(CoreError::invalid(
            "masks",
            format!("expected shape [m, {n}], got {shape:?}"),
        ));
    }
    Ok(masks.as_array().iter().copied().collect())
}

/// A copy of a set of masks and values, checked against `n` players, that outlives the GIL.
struct OwnedSamples {
    masks: Vec<bool>,
    values: Vec<f64>,
}

impl OwnedSamples {
    fn new(
        masks: &PyReadonlyArray2<'_, bool>,
        values: &PyReadonlyArray1<'_, f64>,
        n: usize,
    ) -> Result<Self, CoreError> {
        Ok(Self {
            masks: mask_rows(masks, n)?,
            values: values.as_array().to_vec(),
        })
    }

    fn view(&self) -> Samples<'_> {
        Samples {
            masks: &self.masks,
            values: &self.values,
        }
    }
}

fn keys_list<'py>(py: Python<'py>, terms: &[(Key, f64)]) -> PyResult<Bound<'py, PyList>> {
    let tuples = terms
        .iter()
        .map(|(k, _)| PyTuple::new(py, k.players()))
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, tuples)
}

type InteractionTuple<'py> = (Bound<'py, PyList>, Bound<'py, PyArray1<f64>>, f64, usize);

fn interaction_tuple<'py>(py: Python<'py>, i: &Interactions) -> PyResult<InteractionTuple<'py>> {
    let values: Vec<f64> = i.values.iter().map(|(_, v)| *v).collect();
    Ok((
        keys_list(py, &i.values)?,
        PyArray1::from_vec(py, values),
        i.baseline,
        i.max_order,
    ))
}

/// A set function given by sparse coefficients in the Fourier or Möbius basis.
#[pyclass(frozen, module = "ferroshap._core", name = "SparseFunction")]
pub struct PySparseFunction {
    inner: SparseFunction,
}

#[pymethods]
impl PySparseFunction {
    #[new]
    fn new(
        py: Python<'_>,
        basis: &str,
        n_players: usize,
        keys: Vec<Vec<i64>>,
        coefficients: PyReadonlyArray1<'_, f64>,
    ) -> PyResult<Self> {
        let coefficients = coefficients.as_array().to_vec();
        let build = || -> Result<SparseFunction, CoreError> {
            let basis = parse_basis(basis)?;
            if keys.len() != coefficients.len() {
                return Err(CoreError::invalid(
                    "coefficients",
                    format!(
                        "{} coefficients for {} keys",
                        coefficients.len(),
                        keys.len()
                    ),
                ));
            }
            let terms = keys
                .into_iter()
                .zip(coefficients)
                .map(|(players, c)| {
                    let players = players
                        .into_iter()
                        .map(|p| {
                            u32::try_from(p).map_err(|_| {
                                CoreError::invalid(
                                    "keys",
                                    format!("player {p} is not a valid index"),
                                )
                            })
                        })
                        .collect::<Result<Vec<u32>, _>>()?;
                    Ok((Key::new(players, n_players)?, c))
                })
                .collect::<Result<Vec<_>, CoreError>>()?;
            SparseFunction::new(basis, n_players, terms)
        };
        let inner = build().map_err(|e| to_py_err(py, e))?;
        Ok(Self { inner })
    }

    #[getter]
    fn basis(&self) -> &'static str {
        self.inner.basis().name()
    }

    #[getter]
    fn n_players(&self) -> usize {
        self.inner.n_players()
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    #[pyo3(signature = (positions=None))]
    fn keys<'py>(
        &self,
        py: Python<'py>,
        positions: Option<PyReadonlyArray1<'py, i64>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let terms = self.inner.terms();
        let Some(positions) = positions else {
            return keys_list(py, terms);
        };
        let chosen = positions
            .as_array()
            .iter()
            .map(|&p| {
                usize::try_from(p)
                    .ok()
                    .and_then(|p| terms.get(p).cloned())
                    .ok_or_else(|| {
                        let expected = format!("must be in 0..{}, got {p}", terms.len());
                        to_py_err(py, CoreError::invalid("positions", expected))
                    })
            })
            .collect::<PyResult<Vec<_>>>()?;
        keys_list(py, &chosen)
    }

    fn coefficients<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        let c: Vec<f64> = self.inner.terms().iter().map(|(_, c)| *c).collect();
        PyArray1::from_vec(py, c)
    }

    fn orders<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        let sizes = self
            .inner
            .terms()
            .iter()
            .map(|(k, _)| k.players().len() as i64);
        PyArray1::from_vec(py, sizes.collect())
    }

    fn to_moebius(&self, py: Python<'_>) -> PyResult<Self> {
        let inner = py
            .detach(|| guarded(|| to_moebius(&self.inner)))
            .map_err(|e| to_py_err(py, e))?;
        Ok(Self { inner })
    }

    fn to_fourier(&self, py: Python<'_>) -> PyResult<Self> {
        let inner = py
            .detach(|| guarded(|| to_fourier(&self.inner)))
            .map_err(|e| to_py_err(py, e))?;
        Ok(Self { inner })
    }

    fn evaluate<'py>(
        &self,
        py: Python<'py>,
        masks: PyReadonlyArray2<'py, bool>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let rows = mask_rows(&masks, self.inner.n_players()).map_err(|e| to_py_err(py, e))?;
        let values = py
            .detach(|| guarded(|| self.inner.evaluate(&rows)))
            .map_err(|e| to_py_err(py, e))?;
        Ok(PyArray1::from_vec(py, values))
    }

    fn interactions<'py>(
        &self,
        py: Python<'py>,
        index: &str,
        max_order: i64,
    ) -> PyResult<InteractionTuple<'py>> {
        let result = py
            .detach(|| {
                guarded(|| {
                    let index: Index = index.parse()?;
                    interactions(&self.inner, index, order(max_order)?)
                })
            })
            .map_err(|e| to_py_err(py, e))?;
        interaction_tuple(py, &result)
    }

    fn shapley_values<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let phi = py
            .detach(|| guarded(|| shapley_values(&self.inner)))
            .map_err(|e| to_py_err(py, e))?;
        Ok(PyArray1::from_vec(py, phi))
    }

    fn __repr__(&self) -> String {
        format!(
            "SparseFunction(basis={:?}, n_players={}, terms={})",
            self.inner.basis().name(),
            self.inner.n_players(),
            self.inner.len()
        )
    }
}

/// Exact Fourier spectrum of a LightGBM regression model's text on 0/1 inputs.
#[pyfunction]
fn lightgbm_fourier(
    py: Python<'_>,
    model_text: &str,
    n_players: usize,
) -> PyResult<PySparseFunction> {
    let inner = interruptible(py, |cancel| from_lightgbm(model_text, n_players, cancel))?;
    Ok(PySparseFunction { inner })
}

/// Distinct uniform random coalitions, ∅ and N first.
#[pyfunction]
fn plan_masks<'py>(
    py: Python<'py>,
    n_players: usize,
    budget: u64,
    seed: u64,
) -> PyResult<Bound<'py, PyArray2<bool>>> {
    let matrix = interruptible(py, |cancel| plan(n_players, budget, seed, cancel))?;
    let rows = matrix.n_rows();
    PyArray1::from_vec(py, matrix.to_indicators()).reshape([rows, n_players])
}

/// Top-k support size chosen on a validation split: `(k, validation R², validation fitted)`.
#[pyfunction]
fn select_support<'py>(
    py: Python<'py>,
    spectrum: &PySparseFunction,
    basis: &str,
    train_masks: PyReadonlyArray2<'py, bool>,
    train_values: PyReadonlyArray1<'py, f64>,
    validation_masks: PyReadonlyArray2<'py, bool>,
    validation_values: PyReadonlyArray1<'py, f64>,
) -> PyResult<(usize, f64, Bound<'py, PyArray1<f64>>)> {
    let n = spectrum.inner.n_players();
    let prepared = (|| -> Result<_, CoreError> {
        Ok((
            parse_basis(basis)?,
            OwnedSamples::new(&train_masks, &train_values, n)?,
            OwnedSamples::new(&validation_masks, &validation_values, n)?,
        ))
    })();
    let (basis, train, validation) = prepared.map_err(|e| to_py_err(py, e))?;
    let selection = interruptible(py, |cancel| {
        select(
            &spectrum.inner,
            basis,
            train.view(),
            validation.view(),
            cancel,
        )
    })?;
    Ok((
        selection.support,
        selection.validation_r2,
        PyArray1::from_vec(py, selection.validation_fitted),
    ))
}

/// The game's values `(v(∅), v(N))`, which a refit holds its surrogate to.
fn extremes_of(extremes: Option<(f64, f64)>) -> Option<Extremes> {
    extremes.map(|(empty, full)| Extremes { empty, full })
}

/// The `support` largest keys of a spectrum in a basis, refitted by least squares (subject to
/// `f(∅) = v(∅)` and `f(N) = v(N)` given `extremes = (v(∅), v(N))`).
#[pyfunction]
#[pyo3(signature = (spectrum, basis, support, masks, values, extremes=None))]
fn refit_top<'py>(
    py: Python<'py>,
    spectrum: &PySparseFunction,
    basis: &str,
    support: usize,
    masks: PyReadonlyArray2<'py, bool>,
    values: PyReadonlyArray1<'py, f64>,
    extremes: Option<(f64, f64)>,
) -> PyResult<PySparseFunction> {
    let n = spectrum.inner.n_players();
    let prepared = (|| -> Result<_, CoreError> {
        Ok((parse_basis(basis)?, OwnedSamples::new(&masks, &values, n)?))
    })();
    let (basis, samples) = prepared.map_err(|e| to_py_err(py, e))?;
    let inner = interruptible(py, |cancel| {
        refit(
            &spectrum.inner,
            basis,
            support,
            samples.view(),
            extremes_of(extremes),
            cancel,
        )
    })?;
    Ok(PySparseFunction { inner })
}

/// Penalty of the proxy-scaled ridge chosen on a validation split:
/// `(penalty, validation R², validation fitted)`.
#[pyfunction]
fn select_ridge<'py>(
    py: Python<'py>,
    spectrum: &PySparseFunction,
    train_masks: PyReadonlyArray2<'py, bool>,
    train_values: PyReadonlyArray1<'py, f64>,
    validation_masks: PyReadonlyArray2<'py, bool>,
    validation_values: PyReadonlyArray1<'py, f64>,
) -> PyResult<(f64, f64, Bound<'py, PyArray1<f64>>)> {
    let n = spectrum.inner.n_players();
    let prepared = (|| -> Result<_, CoreError> {
        Ok((
            OwnedSamples::new(&train_masks, &train_values, n)?,
            OwnedSamples::new(&validation_masks, &validation_values, n)?,
        ))
    })();
    let (train, validation) = prepared.map_err(|e| to_py_err(py, e))?;
    let selection = interruptible(py, |cancel| {
        ridge_select(&spectrum.inner, train.view(), validation.view(), cancel)
    })?;
    Ok((
        selection.penalty,
        selection.validation_r2,
        PyArray1::from_vec(py, selection.validation_fitted),
    ))
}

/// A spectrum's terms refitted by the proxy-scaled ridge with a penalty per sample (subject to
/// `f(∅) = v(∅)` and `f(N) = v(N)` given `extremes = (v(∅), v(N))`).
#[pyfunction]
#[pyo3(signature = (spectrum, penalty, masks, values, extremes=None))]
fn refit_ridge<'py>(
    py: Python<'py>,
    spectrum: &PySparseFunction,
    penalty: f64,
    masks: PyReadonlyArray2<'py, bool>,
    values: PyReadonlyArray1<'py, f64>,
    extremes: Option<(f64, f64)>,
) -> PyResult<PySparseFunction> {
    let samples = OwnedSamples::new(&masks, &values, spectrum.inner.n_players())
        .map_err(|e| to_py_err(py, e))?;
    let inner = interruptible(py, |cancel| {
        ridge_refit(
            &spectrum.inner,
            penalty,
            samples.view(),
            extremes_of(extremes),
            cancel,
        )
    })?;
    Ok(PySparseFunction { inner })
}

/// Interaction values from the full table of a game, by their definitions.
#[pyfunction]
fn exact_interactions<'py>(
    py: Python<'py>,
    values: PyReadonlyArray1<'py, f64>,
    n_players: usize,
    index: &str,
    max_order: i64,
) -> PyResult<InteractionTuple<'py>> {
    let table = values.as_array().to_vec();
    let result = py
        .detach(|| guarded(|| exact(&table, n_players, index.parse()?, order(max_order)?)))
        .map_err(|e| to_py_err(py, e))?;
    interaction_tuple(py, &result)
}

/// The full Möbius transform of a game's table.
#[pyfunction]
fn moebius_transform(
    py: Python<'_>,
    values: PyReadonlyArray1<'_, f64>,
    n_players: usize,
) -> PyResult<PySparseFunction> {
    let table = values.as_array().to_vec();
    let inner = py
        .detach(|| guarded(|| moebius_from_table(&table, n_players)))
        .map_err(|e| to_py_err(py, e))?;
    Ok(PySparseFunction { inner })
}

/// Adds this module's classes, functions and constants to `_core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let names: Vec<&str> = Index::ALL.iter().map(|i| i.name()).collect();
    m.add("INDICES", names)?;
    m.add(
        "MAX_TABLE_PLAYERS",
        ferroshap_core::interactions::exact::MAX_TABLE_PLAYERS,
    )?;
    m.add_class::<PySparseFunction>()?;
    m.add_function(wrap_pyfunction!(lightgbm_fourier, m)?)?;
    m.add_function(wrap_pyfunction!(plan_masks, m)?)?;
    m.add_function(wrap_pyfunction!(select_support, m)?)?;
    m.add_function(wrap_pyfunction!(refit_top, m)?)?;
    m.add_function(wrap_pyfunction!(select_ridge, m)?)?;
    m.add_function(wrap_pyfunction!(refit_ridge, m)?)?;
    m.add_function(wrap_pyfunction!(exact_interactions, m)?)?;
    m.add_function(wrap_pyfunction!(moebius_transform, m)?)?;
    Ok(())
}
