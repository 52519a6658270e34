//! The runner of core work: long calls stay interruptible by Ctrl-C and within their thread
//! limit, and a panic becomes a core error instead of reaching Python.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, RecvTimeoutError};
use std::time::Duration;

use ferroshap_core::{Cancel, CoreError};
use pyo3::exceptions::PyKeyboardInterrupt;
use pyo3::prelude::*;

use crate::exceptions::to_py_err;
use crate::threads::{thread_limit, within_limit};

/// How often the calling thread runs Python's signal handlers while the core works.
pub(crate) const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// How many interrupts this process has seen: every running [`interruptible`] call, on any
/// thread, stops once it changes. Signals reach Python's main thread only, so a core call on a
/// worker thread learns of Ctrl-C through this count ([`interrupt`], or a main-thread call's
/// own signal check).
static INTERRUPTS: AtomicU64 = AtomicU64::new(0);

/// Stops every core call running on any thread (they raise `KeyboardInterrupt`); see `_core.pyi`.
#[pyfunction]
pub fn interrupt() {
    INTERRUPTS.fetch_add(1, Ordering::SeqCst);
}

/// Runs `work` with the GIL released and returns its result, or the exception a signal handler
/// raised meanwhile (`KeyboardInterrupt` on Ctrl-C).
///
/// Python runs signal handlers only on its main thread, and only when that thread asks; the core
/// runs parallel parts on other threads while the calling one waits. So `work` runs on a scoped
/// thread while the calling thread wakes every [`SIGNAL_POLL`] to run the handlers; when one
/// raises, it sets the [`Cancel`] flag that `work` polls, waits for `work` to stop (within
/// milliseconds) and returns that exception. Errors and panics of `work` map as in [`to_py_err`]
/// and [`guarded`].
pub fn interruptible<T: Send>(
    py: Python<'_>,
    work: impl FnOnce(&Cancel) -> Result<T, CoreError> + Send,
) -> PyResult<T> {
    let cancel = Cancel::new();
    let limit = thread_limit();
    let epoch = INTERRUPTS.load(Ordering::SeqCst);
    let (outcome, raised) = py.detach(|| {
        std::thread::scope(|scope| {
            let (done, finished) = channel();
            let cancel = &cancel;
            scope.spawn(move || done.send(within_limit(limit, || guarded_here(|| work(cancel)))));
            let stopped = || {
                Err(CoreError::Numerical(
                    "the core's worker thread stopped".into(),
                ))
            };
            loop {
                match finished.recv_timeout(SIGNAL_POLL) {
                    Ok(outcome) => return (outcome, None),
                    Err(RecvTimeoutError::Disconnected) => return (stopped(), None),
                    Err(RecvTimeoutError::Timeout) => {
                        let raised = Python::attach(|py| py.check_signals()).err().or_else(|| {
                            (INTERRUPTS.load(Ordering::SeqCst) != epoch).then(|| {
                                PyKeyboardInterrupt::new_err("interrupted on another thread")
                            })
                        });
                        if let Some(raised) = raised {
                            interrupt();
                            cancel.cancel();
                            return (finished.recv().unwrap_or_else(|_| stopped()), Some(raised));
                        }
                    }
                }
            }
        })
    });
    match raised {
        Some(raised) => Err(raised),
        None => outcome.map_err(|e| to_py_err(py, e)),
    }
}

/// Runs `f` within the calling thread's thread limit ([`within_limit`]), turning a panic into a
/// [`CoreError::Numerical`] so that none reaches Python.
pub fn guarded<T: Send>(f: impl FnOnce() -> Result<T, CoreError> + Send) -> Result<T, CoreError> {
    within_limit(thread_limit(), || guarded_here(f))
}

/// [`guarded`] on the calling thread (and its pool, whatever its limit).
pub fn guarded_here<T>(f: impl FnOnce() -> Result<T, CoreError>) -> Result<T, CoreError> {
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
