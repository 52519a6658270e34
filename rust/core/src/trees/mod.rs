//! Tree ensembles as exact sparse Fourier spectra (spec proxyspex §5): [`lightgbm`] parses a
//! model's text, [`fourier`] transforms its trees and sums them.

pub mod fourier;
pub mod lightgbm;
mod sums;

pub use fourier::ensemble_fourier;
pub use lightgbm::Ensemble;

use crate::error::Result;
use crate::sparse::SparseFunction;

/// The exact Fourier spectrum, on `n_players` 0/1 inputs, of the LightGBM regression model
/// whose text (`Booster.model_to_string()`) is `model_text`.
pub fn lightgbm_fourier(model_text: &str, n_players: usize) -> Result<SparseFunction> {
    ensemble_fourier(&Ensemble::from_model_text(model_text)?, n_players)
}
