//! ferroshap-core: coalition designs and Shapley-value estimators in pure Rust.
//!
//! The crate follows the plan → query → estimate split: [`sampling::plan`] builds a
//! [`sampling::Design`] from a seed, the caller evaluates its game on the design's coalitions, and
//! [`estimator::Estimator`] turns those values (many rows at once) into Shapley values.

pub mod cancel;
pub mod coalitions;
pub mod error;
pub mod estimator;
pub mod exact;
pub mod exact_interactions;
pub mod fourier;
pub mod interactions;
pub mod masking;
pub mod normal;
pub mod proxy_ridge;
pub mod proxyspex;
pub mod regression;
pub mod sampling;
pub mod solve;
pub mod sparse;
pub mod trees;

pub use cancel::Cancel;
pub use error::{CoreError, Result};
pub use estimator::Estimator;
pub use sampling::{plan, plan_cancellable, Design, Method, PlanRequest};
