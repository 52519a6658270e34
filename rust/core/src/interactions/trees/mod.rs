//! Tree ensembles as exact sparse spectra on 0/1 inputs (docs/proxyspex.md, step 4): [`lightgbm`]
//! parses a model's text, [`walsh`] takes the Walsh (Boolean Fourier) transform of its trees and
//! sums them. The crate's `sketch` module holds the other transform: the q-ary sketch of SHAP zero.

pub mod lightgbm;
mod sums;
pub mod walsh;

pub use lightgbm::Ensemble;
pub use walsh::ensemble_fourier;

use crate::cancel::Cancel;
use crate::error::Result;
use crate::interactions::function::SparseFunction;

/// The exact Fourier spectrum, on `n_players` 0/1 inputs, of the LightGBM regression model
/// whose text (`Booster.model_to_string()`) is `model_text`; polls `cancel` while it expands
/// the trees.
pub fn lightgbm_fourier(
    model_text: &str,
    n_players: usize,
    cancel: &Cancel,
) -> Result<SparseFunction> {
    ensemble_fourier(&Ensemble::from_model_text(model_text)?, n_players, cancel)
}
