//! Binding of the masked-input builder (`ferroshap-core::masking`) for float32 / float64 data.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use ferroshap_core::masking::{fill_masked_inputs_walking, Coalitions, MaskSources, Walk};
use ferroshap_core::sampling::Design;
use ferroshap_core::CoreError;
use numpy::{
    Element, PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2,
    PyUntypedArrayMethods,
};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

use crate::exceptions::to_py_err;
use crate::runner::{guarded, guarded_here, SIGNAL_POLL};
use crate::sampling::PyDesign;
use crate::threads::{thread_limit, within_limit};

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

fn fill_typed<T: Element + Copy + Send + Sync + 'static>(
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
    // a limit of one thread (`n_jobs=1`): fill here, without a round trip to a pool of one
    // thread on every chunk
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

/// Fills the chunks of one design's masked inputs ahead of the model, on a thread of its own
/// that never takes the GIL; see `_core.pyi`.
#[pyclass(module = "ferroshap._core", name = "InputFiller")]
pub struct PyInputFiller {
    shared: Arc<Shared>,
    worker: Option<JoinHandle<()>>,
    schedule: Schedule,
    /// The design, data and buffers the worker reads and writes: alive while it runs.
    _held: Vec<Py<PyAny>>,
}

/// The chunks a filler fills: pairs `start ..` in chunks of `chunk` pairs up to `n_pairs`,
/// chunk `k` into buffer `k % slots`.
#[derive(Debug, Clone, Copy)]
struct Schedule {
    start: usize,
    chunk: usize,
    n_pairs: usize,
    slots: usize,
}

impl Schedule {
    /// The pairs of chunk `k`, if there is one.
    fn pairs(&self, k: usize) -> Option<(usize, usize)> {
        let first = self.start.checked_add(k.checked_mul(self.chunk)?)?;
        (first < self.n_pairs).then(|| (first, first.saturating_add(self.chunk).min(self.n_pairs)))
    }
}

/// What the caller and the worker share.
#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    /// Chunks the caller has taken.
    taken: usize,
    /// Outcomes of the chunks filled and not yet taken, in order.
    done: VecDeque<Result<(), CoreError>>,
    /// Set by `close()` or after a chunk that failed: the worker fills nothing more.
    closed: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A pointer the worker reads or writes through; the filler keeps its array alive and the
/// caller does not touch a buffer while the worker fills it (the schedule's contract).
#[derive(Clone, Copy)]
struct Raw<T>(*mut T, usize);

// SAFETY: see `Raw`: the arrays outlive the worker, and each buffer has one writer at a time.
unsafe impl<T> Send for Raw<T> {}

/// The sources of every chunk, as the worker sees them.
struct Sources<T> {
    design: Raw<Design>,
    n_features: usize,
    rows: Raw<T>,
    background: Raw<T>,
    buffers: Vec<Raw<T>>,
    player_of_feature: Option<Vec<usize>>,
    row_of_pair: Option<Vec<usize>>,
    /// Threads of each fill: this one alone (1), or a pool of that many.
    threads: usize,
}

impl<T: Copy + Send + Sync + 'static> Sources<T> {
    /// Fills chunk `pairs` into buffer `slot`.
    fn fill(&self, slot: usize, (start, stop): (usize, usize)) -> Result<(), CoreError> {
        // SAFETY: see `Raw`; lengths were checked when the filler was made.
        let (design, rows, background, out) = unsafe {
            let block = self.background.1;
            (
                &*self.design.0,
                std::slice::from_raw_parts(self.rows.0, self.rows.1),
                std::slice::from_raw_parts(self.background.0, block),
                std::slice::from_raw_parts_mut(self.buffers[slot].0, (stop - start) * block),
            )
        };
        let n_rows = rows.len() / self.n_features.max(1);
        let (mask_index, row_index): (Vec<usize>, Vec<usize>) = match &self.row_of_pair {
            None => (start..stop).map(|p| (p / n_rows, p % n_rows)).unzip(),
            Some(rows) => (start..stop).map(|p| (p, rows[p])).unzip(),
        };
        let sources = MaskSources {
            n_features: self.n_features,
            masks: Coalitions::Packed {
                matrix: &design.coalitions,
                player_of_feature: self.player_of_feature.as_deref(),
            },
            rows,
            background,
        };
        if self.threads <= 1 {
            return fill_masked_inputs_walking(out, sources, &mask_index, &row_index, Walk::Serial);
        }
        within_limit(self.threads, || {
            fill_masked_inputs_walking(out, sources, &mask_index, &row_index, Walk::Parallel)
        })
    }

    /// Fills the chunks of `schedule` in turn, each once the caller has taken the chunk its
    /// buffer held, until they are done, one fails or the filler closes.
    fn run(self, shared: &Shared, schedule: Schedule) {
        let mut k = 0;
        while let Some(pairs) = schedule.pairs(k) {
            let mut state = shared.lock();
            // chunk k's buffer holds chunk k - slots until the caller takes the chunk after it
            while !state.closed && k + 2 > state.taken + schedule.slots {
                state = shared
                    .changed
                    .wait(state)
                    .unwrap_or_else(|p| p.into_inner());
            }
            if state.closed {
                return;
            }
            drop(state);
            let outcome = guarded_here(|| self.fill(k % schedule.slots, pairs));
            let failed = outcome.is_err();
            {
                let mut state = shared.lock();
                if state.closed {
                    // closed while this chunk was filled: dropped like those filled before,
                    // or `take` would hand it out after `close()`
                    return;
                }
                state.done.push_back(outcome);
                state.closed |= failed; // nothing after a chunk that failed
            }
            shared.changed.notify_all();
            if failed {
                return;
            }
            k += 1;
        }
    }
}

#[pymethods]
impl PyInputFiller {
    #[new]
    #[pyo3(signature = (buffers, design, rows, background, *, n_pairs, start, chunk, player_of_feature = None, row_of_pair = None, threads = 1))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        buffers: Vec<Bound<'_, PyAny>>,
        design: Bound<'_, PyDesign>,
        rows: Bound<'_, PyAny>,
        background: Bound<'_, PyAny>,
        n_pairs: usize,
        start: usize,
        chunk: usize,
        player_of_feature: Option<PyReadonlyArray1<'_, i64>>,
        row_of_pair: Option<PyReadonlyArray1<'_, i64>>,
        threads: usize,
    ) -> PyResult<Self> {
        let invalid =
            |name: &'static str, what: String| to_py_err(py, CoreError::invalid(name, what));
        if buffers.len() < 2 {
            return Err(invalid(
                "buffers",
                format!("expected at least 2, got {}", buffers.len()),
            ));
        }
        if chunk == 0 {
            return Err(invalid("chunk", "must be at least 1".to_string()));
        }
        let player_of_feature = player_of_feature
            .map(|map| to_indices(py, &map, "player_of_feature"))
            .transpose()?;
        let row_of_pair = row_of_pair
            .map(|rows| to_indices(py, &rows, "row_of_pair"))
            .transpose()?;
        let schedule = Schedule {
            start,
            chunk,
            n_pairs,
            slots: buffers.len(),
        };
        let shared = Arc::new(Shared::default());
        let typed = Typed {
            py,
            design: &design,
            buffers: &buffers,
            player_of_feature,
            row_of_pair,
            n_pairs,
            chunk,
            threads,
        };
        let worker = if let Ok(rows) = rows.cast::<PyArray2<f64>>() {
            typed.spawn(rows, &background, &shared, schedule)?
        } else if let Ok(rows) = rows.cast::<PyArray2<f32>>() {
            typed.spawn(rows, &background, &shared, schedule)?
        } else {
            return Err(PyTypeError::new_err(
                "rows: expected a 2-D float32 or float64 NumPy array",
            ));
        };
        let mut held = vec![
            design.into_any().unbind(),
            rows.unbind(),
            background.unbind(),
        ];
        held.extend(buffers.into_iter().map(Bound::unbind));
        Ok(Self {
            shared,
            worker: Some(worker),
            schedule,
            _held: held,
        })
    }

    /// Waits for the next chunk and returns its buffer and pairs; see `_core.pyi`.
    fn take(&self, py: Python<'_>) -> PyResult<(usize, usize, usize)> {
        let taken = self.shared.lock().taken;
        let no_chunk = |why: &str| to_py_err(py, CoreError::invalid("take", why.to_string()));
        let Some(pairs) = self.schedule.pairs(taken) else {
            return Err(no_chunk("no chunk left to take"));
        };
        loop {
            // Some(Some(outcome)): the chunk; Some(None): none will come; None: not yet
            let outcome = py.detach(|| {
                let mut state = self.shared.lock();
                if state.done.is_empty() && !state.closed {
                    state = self
                        .shared
                        .changed
                        .wait_timeout(state, SIGNAL_POLL)
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                }
                match state.done.pop_front() {
                    Some(outcome) => {
                        state.taken += 1;
                        Some(Some(outcome))
                    }
                    None => state.closed.then_some(None),
                }
            });
            match outcome {
                Some(Some(outcome)) => {
                    self.shared.changed.notify_all();
                    outcome.map_err(|e| to_py_err(py, e))?;
                    return Ok((taken % self.schedule.slots, pairs.0, pairs.1));
                }
                Some(None) => {
                    return Err(no_chunk(
                        "the filler is closed (by close(), or after a chunk that failed)",
                    ))
                }
                None => py.check_signals()?,
            }
        }
    }

    /// Stops the worker (after the chunk it is filling) and waits for it; see `_core.pyi`.
    fn close(&mut self, py: Python<'_>) {
        py.detach(|| self.stop());
    }
}

impl PyInputFiller {
    fn stop(&mut self) {
        {
            let mut state = self.shared.lock();
            state.closed = true;
            state.done.clear(); // what was filled ahead is not taken after a close
        }
        self.shared.changed.notify_all();
        if let Some(worker) = self.worker.take() {
            // the worker catches panics of the fill itself: nothing to report here
            let _ = worker.join();
        }
    }
}

impl Drop for PyInputFiller {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The arguments of [`PyInputFiller::new`] common to both dtypes.
struct Typed<'a, 'py> {
    py: Python<'py>,
    design: &'a Bound<'py, PyDesign>,
    buffers: &'a [Bound<'py, PyAny>],
    player_of_feature: Option<Vec<usize>>,
    row_of_pair: Option<Vec<usize>>,
    n_pairs: usize,
    chunk: usize,
    threads: usize,
}

impl Typed<'_, '_> {
    /// Checks the arrays of dtype `T` and starts the worker.
    fn spawn<T: Element + Copy + Send + Sync + 'static>(
        self,
        rows: &Bound<'_, PyArray2<T>>,
        background: &Bound<'_, PyAny>,
        shared: &Arc<Shared>,
        schedule: Schedule,
    ) -> PyResult<JoinHandle<()>> {
        let py = self.py;
        let invalid =
            |name: &'static str, what: String| to_py_err(py, CoreError::invalid(name, what));
        let background = background.cast::<PyArray2<T>>().map_err(|_| {
            PyTypeError::new_err("background: expected a 2-D NumPy array of the rows' dtype")
        })?;
        let contiguous = |name: &'static str| invalid(name, "must be a C-contiguous array".into());
        let n_features = rows.shape()[1];
        if background.shape()[1] != n_features || background.shape()[0] == 0 {
            return Err(invalid(
                "background",
                format!(
                    "expected at least one row of {n_features} features, got shape {:?}",
                    background.shape()
                ),
            ));
        }
        if !rows.is_c_contiguous() {
            return Err(contiguous("rows"));
        }
        if !background.is_c_contiguous() {
            return Err(contiguous("background"));
        }
        let design = &self.design.get().design;
        let coalitions = Coalitions::Packed {
            matrix: &design.coalitions,
            player_of_feature: self.player_of_feature.as_deref(),
        };
        let n_masks = coalitions
            .count(n_features, "design")
            .map_err(|e| to_py_err(py, e))?;
        let n_rows = rows.shape()[0];
        let pairs_available = match &self.row_of_pair {
            None => n_masks.saturating_mul(n_rows),
            Some(of_pair) => {
                if let Some(bad) = of_pair.iter().find(|&&r| r >= n_rows) {
                    return Err(invalid(
                        "row_of_pair",
                        format!("{bad} is out of range for {n_rows} rows"),
                    ));
                }
                n_masks.min(of_pair.len())
            }
        };
        if self.n_pairs > pairs_available {
            return Err(invalid(
                "n_pairs",
                format!(
                    "expected at most {pairs_available} (coalition, row) pairs, got {}",
                    self.n_pairs
                ),
            ));
        }
        let needed = self
            .chunk
            .min(self.n_pairs)
            .saturating_mul(background.len());
        let mut buffers = Vec::with_capacity(self.buffers.len());
        for buffer in self.buffers {
            let buffer = buffer.cast::<PyArray1<T>>().map_err(|_| {
                PyTypeError::new_err("buffers: expected 1-D NumPy arrays of the rows' dtype")
            })?;
            if !buffer.is_c_contiguous() || buffer.try_readwrite().is_err() || buffer.len() < needed
            {
                return Err(invalid(
                    "buffers",
                    format!("expected writeable contiguous arrays of at least {needed} values"),
                ));
            }
            buffers.push(Raw(buffer.data(), buffer.len()));
        }
        let sources = Sources {
            design: Raw(std::ptr::from_ref(design).cast_mut(), 1),
            n_features,
            rows: Raw(rows.data(), rows.len()),
            background: Raw(background.data(), background.len()),
            buffers,
            player_of_feature: self.player_of_feature,
            row_of_pair: self.row_of_pair,
            threads: self.threads,
        };
        let shared = Arc::clone(shared);
        std::thread::Builder::new()
            .name("ferroshap-inputs".into())
            .spawn(move || sources.run(&shared, schedule))
            .map_err(|e| {
                to_py_err(
                    py,
                    CoreError::Numerical(format!("could not start the filler's thread: {e}")),
                )
            })
    }
}

/// Adds the masking functions to `_core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyInputFiller>()?;
    m.add_function(wrap_pyfunction!(fill_masked_inputs, m)?)
}
