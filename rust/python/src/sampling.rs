//! Bindings of the sampling engine: planned designs (`Design`) and `plan` (see `_core.pyi`).

use std::sync::OnceLock;

use ferroshap_core::cancel::Cancel;
use ferroshap_core::coalitions::{EMPTY_ROW, FIRST_SAMPLED_ROW, FULL_ROW};
use ferroshap_core::sampling::regression::{Solver, CROSSOVER_PLAYERS};
use ferroshap_core::sampling::uncertainty::horvitz_thompson_errors;
use ferroshap_core::sampling::{self, MAX_EXACT_PLAYERS};
use ferroshap_core::{Design, Estimator, Method, PlanRequest};
use numpy::{
    PyArray1, PyArray2, PyArrayDyn, PyArrayMethods, PyReadonlyArrayDyn, PyUntypedArrayMethods,
};
use pyo3::exceptions::PyUserWarning;
use pyo3::prelude::*;

use crate::exceptions::to_py_err;
use crate::runner::interruptible;

/// A planned design (see `_core.pyi`); its estimator is factorized on first use and cached.
#[pyclass(frozen, module = "ferroshap._core", name = "Design")]
pub(crate) struct PyDesign {
    pub(crate) design: Design,
    solver: Solver,
    estimator: OnceLock<Estimator>,
}

#[pymethods]
impl PyDesign {
    #[getter]
    fn method(&self) -> &'static str {
        self.design.method.name()
    }

    #[getter]
    fn n_players(&self) -> usize {
        self.design.n_players
    }

    #[getter]
    fn n_coalitions(&self) -> usize {
        self.design.n_coalitions()
    }

    #[getter]
    fn budget(&self) -> u64 {
        self.design.budget
    }

    #[getter]
    fn exact(&self) -> bool {
        self.design.method == Method::Exact
    }

    #[getter]
    fn exact_fallback(&self) -> bool {
        self.design.exact_fallback
    }

    #[getter]
    fn seed(&self) -> u64 {
        self.design.seed
    }

    #[getter]
    fn stream(&self) -> u64 {
        self.design.stream
    }

    #[pyo3(signature = (start = 0, stop = None))]
    fn masks<'py>(
        &self,
        py: Python<'py>,
        start: usize,
        stop: Option<usize>,
    ) -> PyResult<Bound<'py, PyArray2<bool>>> {
        let (m, n) = (self.design.n_coalitions(), self.design.n_players);
        let stop = stop.unwrap_or(m).min(m);
        let start = start.min(stop);
        let flat = py.detach(|| self.design.coalitions.rows_to_indicators(start, stop));
        PyArray1::from_vec(py, flat).reshape([stop - start, n])
    }

    fn sizes<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        let sizes: Vec<i64> = self.design.sizes().into_iter().map(|s| s as i64).collect();
        PyArray1::from_vec(py, sizes)
    }

    fn weights<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_slice(py, &self.design.weights)
    }

    fn rank(&self) -> Option<usize> {
        self.estimator.get().and_then(Estimator::rank)
    }

    fn solver(&self) -> Option<&'static str> {
        self.estimator.get().and_then(Estimator::solver_name)
    }

    fn estimate<'py>(
        &self,
        py: Python<'py>,
        values: PyReadonlyArrayDyn<'py, f64>,
    ) -> PyResult<Bound<'py, PyArrayDyn<f64>>> {
        self.per_column(py, values, |estimator, flat, columns, cancel| {
            estimator.estimate_cancellable(flat, columns, cancel)
        })
    }

    fn standard_errors<'py>(
        &self,
        py: Python<'py>,
        values: PyReadonlyArrayDyn<'py, f64>,
    ) -> PyResult<Bound<'py, PyArrayDyn<f64>>> {
        self.per_column(py, values, |estimator, flat, columns, cancel| {
            estimator.standard_errors(&self.design, flat, columns, cancel)
        })
    }

    fn horvitz_thompson_errors<'py>(
        &self,
        py: Python<'py>,
        values: PyReadonlyArrayDyn<'py, f64>,
    ) -> PyResult<Bound<'py, PyArrayDyn<f64>>> {
        self.per_column(py, values, |_, flat, columns, cancel| {
            horvitz_thompson_errors(&self.design, flat, columns, cancel)
        })
    }

    fn __repr__(&self) -> String {
        format!(
            "Design(method={:?}, n_players={}, n_coalitions={}, budget={}, seed={}, stream={})",
            self.design.method.name(),
            self.design.n_players,
            self.design.n_coalitions(),
            self.design.budget,
            self.design.seed,
            self.design.stream
        )
    }
}

impl PyDesign {
    /// Runs `work(estimator, values, columns, cancel)` on `values` (`[m]` or `[m, R]`, one row
    /// per coalition) without the GIL and interruptibly, factorizing the estimator on first use (warning once about
    /// an ill-conditioned design), and returns its `R × n` result as `[n]` or `[R, n]`.
    fn per_column<'py>(
        &self,
        py: Python<'py>,
        values: PyReadonlyArrayDyn<'py, f64>,
        work: impl Fn(&Estimator, &[f64], usize, &Cancel) -> ferroshap_core::Result<Vec<f64>>
            + Send
            + Sync,
    ) -> PyResult<Bound<'py, PyArrayDyn<f64>>> {
        let shape = values.shape().to_vec();
        let (rows, columns) = match shape.as_slice() {
            [m] => (*m, 1),
            [m, r] => (*m, *r),
            _ => {
                return Err(to_py_err(
                    py,
                    ferroshap_core::CoreError::invalid(
                        "values",
                        format!("expected a 1-D or 2-D array, got shape {shape:?}"),
                    ),
                ))
            }
        };
        let m = self.design.n_coalitions();
        if rows != m {
            return Err(to_py_err(
                py,
                ferroshap_core::CoreError::invalid(
                    "values",
                    format!("expected {m} rows (one per coalition of the design), got {rows}"),
                ),
            ));
        }
        let owned;
        let flat: &[f64] = match values.as_slice() {
            Ok(slice) => slice,
            Err(_) => {
                owned = values.as_array().iter().copied().collect::<Vec<f64>>();
                &owned
            }
        };
        let n = self.design.n_players;
        let (out, warning) = interruptible(py, |cancel| {
            let (estimator, warning) = match self.estimator.get() {
                Some(e) => (e, None),
                None => {
                    let built =
                        Estimator::with_solver_cancellable(&self.design, self.solver, cancel)?;
                    let warning = built.conditioning_warning();
                    let _ = self.estimator.set(built);
                    let e = self.estimator.get().expect("estimator was just set");
                    (e, warning)
                }
            };
            Ok((work(estimator, flat, columns, cancel)?, warning))
        })?;
        if let Some(message) = warning {
            let message = std::ffi::CString::new(message).expect("warning has no NUL byte");
            PyErr::warn(py, &py.get_type::<PyUserWarning>(), &message, 1)?;
        }
        let out_shape: Vec<usize> = if shape.len() == 1 {
            vec![n]
        } else {
            vec![columns, n]
        };
        PyArray1::from_vec(py, out).reshape(out_shape)
    }
}

/// Plans a design; see `_core.pyi` for the contract.
#[pyfunction]
#[pyo3(signature = (method, n_players, budget, seed, paired = true, stream = 0, solver = "auto"))]
#[allow(clippy::too_many_arguments)]
fn plan(
    py: Python<'_>,
    method: &str,
    n_players: usize,
    budget: u64,
    seed: u64,
    paired: bool,
    stream: u64,
    solver: &str,
) -> PyResult<PyDesign> {
    let method: Method = method.parse().map_err(|e| to_py_err(py, e))?;
    let solver: Solver = solver.parse().map_err(|e| to_py_err(py, e))?;
    let request = PlanRequest {
        method,
        n_players,
        budget,
        seed,
        stream,
        paired,
    };
    let design = interruptible(py, |cancel| {
        ferroshap_core::plan_cancellable(request, cancel)
    })?;
    Ok(PyDesign {
        design,
        solver,
        estimator: OnceLock::new(),
    })
}

/// Whether `budget` coalitions cover all `2^n`; see `_core.pyi`.
#[pyfunction]
fn covers_all(n_players: usize, budget: u64) -> bool {
    ferroshap_core::coalitions::covers_all(n_players, budget)
}

/// The ranges of a plan, checked without planning; see `_core.pyi`.
#[pyfunction]
#[pyo3(signature = (method, n_players, budget = None))]
fn check_plan(py: Python<'_>, method: &str, n_players: usize, budget: Option<u64>) -> PyResult<()> {
    let method: Method = method.parse().map_err(|e| to_py_err(py, e))?;
    let request = PlanRequest {
        method,
        n_players,
        // no budget: check only what does not depend on it
        budget: budget.unwrap_or(u64::MAX),
        seed: 0,
        stream: 0,
        paired: false,
    };
    sampling::validate(request).map_err(|e| to_py_err(py, e))
}

/// Coalitions a design of `method` holds; see `_core.pyi`.
#[pyfunction]
fn planned_coalitions(
    py: Python<'_>,
    method: &str,
    n_players: usize,
    budget: u64,
) -> PyResult<u64> {
    let method: Method = method.parse().map_err(|e| to_py_err(py, e))?;
    Ok(sampling::planned_coalitions(method, n_players, budget))
}

/// Bytes of the estimate's matrices; see `_core.pyi`.
#[pyfunction]
#[pyo3(signature = (method, n_players, coalitions, solver = "auto"))]
fn solver_bytes(
    py: Python<'_>,
    method: &str,
    n_players: usize,
    coalitions: u64,
    solver: &str,
) -> PyResult<u64> {
    let method: Method = method.parse().map_err(|e| to_py_err(py, e))?;
    let solver: Solver = solver.parse().map_err(|e| to_py_err(py, e))?;
    Ok(sampling::solver_bytes(
        method, n_players, coalitions, solver,
    ))
}

/// Adds the sampling engine's classes, functions and constants to `_core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let methods: Vec<&str> = Method::ALL.iter().map(|m| m.name()).collect();
    m.add("METHODS", methods)?;
    m.add("MAX_EXACT_PLAYERS", MAX_EXACT_PLAYERS)?;
    let solvers: Vec<&str> = Solver::ALL.iter().map(|s| s.name()).collect();
    m.add("SOLVERS", solvers)?;
    m.add("CROSSOVER_PLAYERS", CROSSOVER_PLAYERS)?;
    m.add("EMPTY_ROW", EMPTY_ROW)?;
    m.add("FULL_ROW", FULL_ROW)?;
    m.add("FIRST_SAMPLED_ROW", FIRST_SAMPLED_ROW)?;
    m.add_class::<PyDesign>()?;
    m.add_function(wrap_pyfunction!(check_plan, m)?)?;
    m.add_function(wrap_pyfunction!(covers_all, m)?)?;
    m.add_function(wrap_pyfunction!(planned_coalitions, m)?)?;
    m.add_function(wrap_pyfunction!(solver_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(plan, m)?)
}
