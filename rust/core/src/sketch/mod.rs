//! SHAP zero: a sparse q-ary Fourier sketch of a sequence model and closed-form explanations
//! from it (the math: `docs/sketch.md`).
//!
//! Plan → query → estimate:
//! - [`SketchPlan`] (plan): parameters from the budget, subsampling matrices and delays from the
//!   seed, and the distinct query sequences `M_c ℓ + d_r` plus held-out random ones;
//! - the caller evaluates the model on [`SketchPlan::queries`];
//! - [`SketchPlan::decode`] (estimate): per-bin q-ary DFTs, singleton detection, peeling and a
//!   noise threshold tuned on the held-out queries, giving a sparse [`Spectrum`].
//!
//! A [`Spectrum`] then explains any sequence with no model call: Shapley values, interactions
//! and base values under the uniform background, and Shapley values under a data background.
//!
//! Conventions: `f(m) = Σ_k F[k] ω^{⟨m,k⟩}` with `ω = e^{2πi/q}`; codes are `u8` in `0..q`;
//! vectors ↔ integers are big-endian.

pub mod decode;
pub mod design;
pub mod explain;
pub mod qary;
pub mod spectrum;

pub use decode::SketchFit;
pub use design::{SketchParams, SketchPlan};
pub use explain::{parse_sketch_index, Interactions, SKETCH_INDICES};
/// The complex type of coefficients (re-exported so that callers need no extra dependency).
pub use num_complex::Complex64;
pub use spectrum::Spectrum;
