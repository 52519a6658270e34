//! Cooperative cancellation of the core's long computations.
//!
//! A caller that may want to stop a computation early (the Python bindings, on Ctrl-C) passes a
//! [`Cancel`] flag to the cancellable entry points and sets it from another thread. The long
//! loops poll it (a relaxed atomic load, negligible next to their work) at least every few
//! milliseconds of work, parallel ones from inside every chunk, and return
//! [`CoreError::Cancelled`] once it is set. Polling never changes the order of any reduction, so
//! results are bit-for-bit those of an uncancelled run.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{CoreError, Result};

/// A flag that a computation polls to stop early; see the [module documentation](self).
#[derive(Debug, Default)]
pub struct Cancel {
    flag: AtomicBool,
}

/// The flag of computations nobody can cancel.
static NEVER: Cancel = Cancel::new();

impl Cancel {
    /// A flag that is not set.
    pub const fn new() -> Self {
        Self {
            flag: AtomicBool::new(false),
        }
    }

    /// A flag that is never set, for callers that do not cancel.
    pub fn never() -> &'static Self {
        &NEVER
    }

    /// Asks every computation polling this flag to stop.
    ///
    /// # Panics
    ///
    /// On [`Cancel::never`]'s flag, which must stay unset.
    pub fn cancel(&self) {
        assert!(
            !std::ptr::eq(self, &NEVER),
            "Cancel::never() cannot be cancelled"
        );
        self.flag.store(true, Ordering::Relaxed);
    }

    /// Whether [`Cancel::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }

    /// `Err(CoreError::Cancelled)` once [`Cancel::cancel`] was called, `Ok(())` before.
    pub fn check(&self) -> Result<()> {
        if self.is_cancelled() {
            Err(CoreError::Cancelled)
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_fails_once_cancelled() {
        let cancel = Cancel::new();
        assert_eq!(cancel.check(), Ok(()));
        cancel.cancel();
        assert!(cancel.is_cancelled());
        assert_eq!(cancel.check(), Err(CoreError::Cancelled));
        assert_eq!(Cancel::never().check(), Ok(()));
    }

    #[test]
    #[should_panic(expected = "cannot be cancelled")]
    fn the_never_flag_refuses_to_be_set() {
        Cancel::never().cancel();
    }
}
