//! The one error type of the core crate.

use thiserror::Error;

/// Everything that can go wrong in planning or estimation, each naming the argument at fault.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum CoreError {
    /// An argument is outside the values the operation accepts.
    #[error("{argument}: {message}")]
    InvalidArgument {
        /// Name of the offending argument as the caller spells it.
        argument: &'static str,
        /// What was expected and what was received.
        message: String,
    },
    /// A numerical routine failed (for example a singular value decomposition did not converge).
    #[error("numerical failure: {0}")]
    Numerical(String),
    /// The caller cancelled the computation through its [`crate::cancel::Cancel`] flag.
    #[error("cancelled")]
    Cancelled,
}

impl CoreError {
    /// Shorthand for [`CoreError::InvalidArgument`].
    pub fn invalid(argument: &'static str, message: impl Into<String>) -> Self {
        Self::InvalidArgument {
            argument,
            message: message.into(),
        }
    }
}

/// Result alias used throughout the core crate.
pub type Result<T> = std::result::Result<T, CoreError>;
