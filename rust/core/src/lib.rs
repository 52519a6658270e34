//! ferroshap-core: coalition designs and Shapley-value estimators in pure Rust.
//!
//! The crate follows the plan → query → estimate split: [`sampling::plan`] builds a
//! [`sampling::Design`] from a seed, the caller evaluates its game on the design's coalitions, and
//! [`sampling::estimator::Estimator`] turns those values (many rows at once) into Shapley values.

pub mod cancel;
pub mod coalitions;
pub mod error;
pub mod interactions;
pub mod masking;
pub mod sampling;
pub mod sketch;

pub use cancel::Cancel;
pub use error::{CoreError, Result};
pub use sampling::estimator::Estimator;
pub use sampling::{plan, plan_cancellable, Design, Method, PlanRequest};
