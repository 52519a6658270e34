//! The thread limit of a Python thread's core calls (`n_jobs`): the core's parallel parts run on
//! a pool of that many threads instead of rayon's global pool of one per CPU.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use pyo3::prelude::*;
use rayon::{ThreadPool, ThreadPoolBuilder};

thread_local! {
    /// This thread's limit; 0 for none (rayon's global pool).
    static LIMIT: Cell<usize> = const { Cell::new(0) };
}

/// Sets the calling thread's limit on the threads of the core calls it makes (0: none) and
/// returns the previous one; see `_core.pyi`.
#[pyfunction]
pub fn set_thread_limit(threads: usize) -> usize {
    LIMIT.with(|limit| limit.replace(threads))
}

/// The calling thread's limit (0: none).
pub fn thread_limit() -> usize {
    LIMIT.with(Cell::get)
}

/// Runs `work` on a pool of `threads` threads (0: as it is, on rayon's global pool), one pool per
/// size kept for the process's lifetime. The worker thread that runs `work` carries the same
/// limit, so core calls nested in it keep to it.
pub fn within_limit<T: Send>(threads: usize, work: impl FnOnce() -> T + Send) -> T {
    match (threads > 0).then(|| pool(threads)).flatten() {
        Some(pool) => pool.install(|| {
            let previous = set_thread_limit(threads);
            let result = work();
            set_thread_limit(previous);
            result
        }),
        None => work(),
    }
}

/// The process's pool of `threads` threads, built on first use (`None` if the system refuses
/// the threads: the caller then runs on the global pool).
fn pool(threads: usize) -> Option<Arc<ThreadPool>> {
    static POOLS: OnceLock<Mutex<HashMap<usize, Arc<ThreadPool>>>> = OnceLock::new();
    let mut pools = POOLS
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(pool) = pools.get(&threads) {
        return Some(Arc::clone(pool));
    }
    let built = Arc::new(ThreadPoolBuilder::new().num_threads(threads).build().ok()?);
    pools.insert(threads, Arc::clone(&built));
    Some(built)
}
