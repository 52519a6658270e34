//! Bindings of the Fourier sketch (`ferroshap_core::sketch`): plan the queries, decode the
//! model's values into a spectrum, explain sequences from it. Work runs with the GIL released.

use std::borrow::Cow;

use ferroshap_core::sketch::{parse_sketch_index, Complex64, SketchPlan, Spectrum, SKETCH_INDICES};
use ferroshap_core::CoreError;
use numpy::ndarray::Array2;
use numpy::PyUntypedArrayMethods;
use numpy::{IntoPyArray, PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use crate::exceptions::to_py_err;
use crate::runner::{guarded, interruptible};

/// The rows of a `[rows, length]` code array as one contiguous slice.
fn rows<'a>(
    py: Python<'_>,
    array: &'a PyReadonlyArray2<'_, u8>,
    length: usize,
    argument: &'static str,
) -> PyResult<Cow<'a, [u8]>> {
    let width = array.shape()[1];
    if width != length {
        return Err(to_py_err(
            py,
            CoreError::invalid(
                argument,
                format!("expected sequences of length {length}, got length {width}"),
            ),
        ));
    }
    Ok(match array.as_slice() {
        Ok(slice) => Cow::Borrowed(slice),
        Err(_) => Cow::Owned(array.as_array().iter().copied().collect()),
    })
}

/// A planned sketch (see `_core.pyi`).
#[pyclass(frozen, module = "ferroshap._core", name = "SketchPlan")]
struct PySketchPlan {
    plan: SketchPlan,
}

#[pymethods]
impl PySketchPlan {
    #[getter]
    fn q(&self) -> usize {
        self.plan.params.q
    }

    #[getter]
    fn length(&self) -> usize {
        self.plan.params.n
    }

    #[getter]
    fn b(&self) -> usize {
        self.plan.params.b
    }

    #[getter]
    fn groups(&self) -> usize {
        self.plan.params.groups
    }

    #[getter]
    fn offsets(&self) -> usize {
        self.plan.params.offsets
    }

    #[getter]
    fn n_holdout(&self) -> usize {
        self.plan.params.holdout
    }

    #[getter]
    fn n_queries(&self) -> usize {
        self.plan.n_queries()
    }

    #[getter]
    fn budget(&self) -> u64 {
        self.plan.budget
    }

    #[getter]
    fn seed(&self) -> u64 {
        self.plan.seed
    }

    fn queries<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<u8>>> {
        let n = self.plan.params.n;
        PyArray1::from_slice(py, self.plan.queries()).reshape([self.plan.n_queries(), n])
    }

    fn decode<'py>(
        &self,
        py: Python<'py>,
        values: PyReadonlyArray1<'py, f64>,
    ) -> PyResult<(PySpectrum, f64, f64)> {
        let values = values.as_array().to_vec();
        let fit = interruptible(py, |cancel| self.plan.decode(&values, cancel))?;
        Ok((
            PySpectrum {
                spectrum: fit.spectrum,
            },
            fit.threshold,
            fit.holdout_nmse,
        ))
    }

    fn __repr__(&self) -> String {
        let p = &self.plan.params;
        format!(
            "SketchPlan(q={}, length={}, b={}, groups={}, offsets={}, n_holdout={}, \
             n_queries={}, budget={}, seed={})",
            p.q,
            p.n,
            p.b,
            p.groups,
            p.offsets,
            p.holdout,
            self.plan.n_queries(),
            self.plan.budget,
            self.plan.seed
        )
    }
}

/// A sparse q-ary Fourier spectrum (see `_core.pyi`).
#[pyclass(frozen, module = "ferroshap._core", name = "Spectrum")]
struct PySpectrum {
    spectrum: Spectrum,
}

#[pymethods]
impl PySpectrum {
    #[new]
    fn new(
        py: Python<'_>,
        length: usize,
        q: usize,
        keys: PyReadonlyArray2<'_, u8>,
        real: PyReadonlyArray1<'_, f64>,
        imag: PyReadonlyArray1<'_, f64>,
        mean: f64,
    ) -> PyResult<Self> {
        let keys = rows(py, &keys, length, "keys")?.into_owned();
        let (real, imag) = (real.as_array(), imag.as_array());
        if real.len() != imag.len() {
            return Err(to_py_err(
                py,
                CoreError::invalid(
                    "imag",
                    format!("has {} entries but real has {}", imag.len(), real.len()),
                ),
            ));
        }
        let coefficients = real
            .iter()
            .zip(imag.iter())
            .map(|(&re, &im)| Complex64::new(re, im))
            .collect();
        let spectrum =
            Spectrum::new(length, q, keys, coefficients, mean).map_err(|e| to_py_err(py, e))?;
        Ok(Self { spectrum })
    }

    #[getter]
    fn length(&self) -> usize {
        self.spectrum.n()
    }

    #[getter]
    fn q(&self) -> usize {
        self.spectrum.q()
    }

    #[getter]
    fn mean(&self) -> f64 {
        self.spectrum.mean()
    }

    #[getter]
    fn n_coefficients(&self) -> usize {
        self.spectrum.len()
    }

    fn keys<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<u8>>> {
        PyArray1::from_slice(py, self.spectrum.keys())
            .reshape([self.spectrum.len(), self.spectrum.n()])
    }

    fn real<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        let re: Vec<f64> = self.spectrum.coefficients().iter().map(|c| c.re).collect();
        PyArray1::from_vec(py, re)
    }

    fn imag<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        let im: Vec<f64> = self.spectrum.coefficients().iter().map(|c| c.im).collect();
        PyArray1::from_vec(py, im)
    }

    fn predict<'py>(
        &self,
        py: Python<'py>,
        sequences: PyReadonlyArray2<'py, u8>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let codes = rows(py, &sequences, self.spectrum.n(), "sequences")?;
        let out = py
            .detach(|| guarded(|| self.spectrum.predict(&codes)))
            .map_err(|e| to_py_err(py, e))?;
        Ok(PyArray1::from_vec(py, out))
    }

    #[pyo3(signature = (sequences, background = None))]
    fn shapley_values<'py>(
        &self,
        py: Python<'py>,
        sequences: PyReadonlyArray2<'py, u8>,
        background: Option<PyReadonlyArray2<'py, u8>>,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let n = self.spectrum.n();
        let codes = rows(py, &sequences, n, "sequences")?;
        let background = match &background {
            Some(array) => Some(rows(py, array, n, "background")?),
            None => None,
        };
        let out = py
            .detach(|| {
                guarded(|| match &background {
                    Some(bg) => self.spectrum.shapley_values_background(&codes, bg),
                    None => self.spectrum.shapley_values(&codes),
                })
            })
            .map_err(|e| to_py_err(py, e))?;
        PyArray1::from_vec(py, out).reshape([codes.len() / n, n])
    }

    #[pyo3(signature = (background = None))]
    fn base_value(
        &self,
        py: Python<'_>,
        background: Option<PyReadonlyArray2<'_, u8>>,
    ) -> PyResult<f64> {
        let background = match &background {
            Some(array) => Some(rows(py, array, self.spectrum.n(), "background")?),
            None => None,
        };
        py.detach(|| guarded(|| self.spectrum.base_value(background.as_deref())))
            .map_err(|e| to_py_err(py, e))
    }

    #[pyo3(signature = (sequences, max_order = None, index = "k-SII"))]
    fn interactions<'py>(
        &self,
        py: Python<'py>,
        sequences: PyReadonlyArray2<'py, u8>,
        max_order: Option<usize>,
        index: &str,
    ) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyArray2<f64>>)> {
        let index = parse_sketch_index(index).map_err(|e| to_py_err(py, e))?;
        let n = self.spectrum.n();
        let codes = rows(py, &sequences, n, "sequences")?;
        let out = py
            .detach(|| guarded(|| self.spectrum.interactions(&codes, max_order, index)))
            .map_err(|e| to_py_err(py, e))?;
        let keys = out
            .keys
            .iter()
            .map(|key| PyTuple::new(py, key))
            .collect::<PyResult<Vec<_>>>()?;
        let width = out.keys.len();
        let values = Array2::from_shape_vec((codes.len() / n, width), out.values)
            .map_err(|e| to_py_err(py, CoreError::Numerical(e.to_string())))?;
        Ok((PyList::new(py, keys)?, values.into_pyarray(py)))
    }

    fn __repr__(&self) -> String {
        format!(
            "Spectrum(length={}, q={}, n_coefficients={}, mean={})",
            self.spectrum.n(),
            self.spectrum.q(),
            self.spectrum.len(),
            self.spectrum.mean()
        )
    }
}

/// Plans a sketch from a budget; see `_core.pyi` for the contract.
#[pyfunction]
#[pyo3(signature = (q, length, budget, seed, offsets = 1))]
fn sketch_plan(
    py: Python<'_>,
    q: usize,
    length: usize,
    budget: u64,
    seed: u64,
    offsets: usize,
) -> PyResult<PySketchPlan> {
    let plan = py
        .detach(|| guarded(|| SketchPlan::from_budget(q, length, budget, offsets, seed)))
        .map_err(|e| to_py_err(py, e))?;
    Ok(PySketchPlan { plan })
}

/// Adds the sketch's classes and functions to `ferroshap._core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let indices: Vec<&str> = SKETCH_INDICES.iter().map(|i| i.name()).collect();
    m.add("INTERACTION_INDICES", indices)?;
    m.add_class::<PySketchPlan>()?;
    m.add_class::<PySpectrum>()?;
    m.add_function(wrap_pyfunction!(sketch_plan, m)?)?;
    Ok(())
}
