//! Estimate: bin transforms, noise-robust singleton detection and peeling, with the noise
//! threshold tuned on the held-out queries (docs/sketch.md, "Recovering the spectrum").

use std::collections::{BTreeMap, BTreeSet};

use num_complex::Complex64;
use rayon::prelude::*;

use super::design::SketchPlan;
use super::qary::{dft_in_place, dot_mod, negate, Roots};
use super::spectrum::Spectrum;
use crate::cancel::Cancel;
use crate::error::{CoreError, Result};

/// Most peeling rounds per decode.
pub const MAX_ROUNDS: usize = 64;

/// Candidate noise thresholds, relative to the mean energy per bin entry: `10^{−12}, 10^{−11.5},
/// …, 10^0`. Each is decoded and scored on the held-out queries.
pub fn threshold_grid() -> Vec<f64> {
    (0..=24)
        .map(|i| 10f64.powf(-12.0 + 0.5 * f64::from(i)))
        .collect()
}

/// A decoded sketch and how well it predicts the held-out queries.
#[derive(Debug, Clone)]
pub struct SketchFit {
    /// The recovered sparse spectrum (its mean is `F[0]`).
    pub spectrum: Spectrum,
    /// The chosen noise threshold, relative to the mean energy per bin entry.
    pub threshold: f64,
    /// `Σ (f̂ − f)² / Σ (f − mean f)²` over the held-out queries (0 for a constant function
    /// recovered exactly).
    pub holdout_nmse: f64,
}

/// What a bin holds, as far as one classification can tell.
enum Bin {
    Zeroton,
    Singleton {
        key: Vec<u8>,
        value: Complex64,
        residual: f64,
    },
    Multiton,
}

/// The bin transforms of one sketch, `U_c[j]` as columns of `P` delays, and what decoding needs.
struct Transformed<'a> {
    plan: &'a SketchPlan,
    roots: Roots,
    /// Layout `[(c · bins + j) · P + r]`.
    bins: Vec<Complex64>,
    n_bins: usize,
    /// Mean energy of one entry of `bins`.
    scale: f64,
}

impl SketchPlan {
    /// Decodes the model's values on [`SketchPlan::queries`] (one per distinct query, in order)
    /// into a sparse spectrum, choosing the noise threshold that best predicts the held-out
    /// queries. Deterministic: thresholds are decoded in parallel and compared in a fixed order.
    /// Polls `cancel` throughout ([`CoreError::Cancelled`] once it is set).
    pub fn decode(&self, values: &[f64], cancel: &Cancel) -> Result<SketchFit> {
        let m = self.n_queries();
        if values.len() != m {
            return Err(CoreError::invalid(
                "values",
                format!(
                    "expected {m} values (one per distinct query), got {}",
                    values.len()
                ),
            ));
        }
        if let Some(at) = values.iter().position(|v| !v.is_finite()) {
            return Err(CoreError::invalid(
                "values",
                format!(
                    "value {at} is {}; the model must return finite numbers",
                    values[at]
                ),
            ));
        }
        let mean = self
            .sample_rows
            .iter()
            .map(|&r| values[r as usize])
            .sum::<f64>()
            / self.sample_rows.len() as f64;
        let transformed = Transformed::new(self, values, mean, cancel)?;
        let holdout: Vec<f64> = self
            .holdout_rows
            .iter()
            .map(|&r| values[r as usize])
            .collect();
        let mut trials: Vec<(f64, Spectrum, f64)> = threshold_grid()
            .into_par_iter()
            .map(|threshold| {
                let spectrum = transformed.spectrum(transformed.peel(threshold, cancel)?, mean)?;
                cancel.check()?;
                let score = self
                    .holdout_rows
                    .iter()
                    .zip(&holdout)
                    .map(|(&r, &y)| {
                        let n = self.params.n;
                        let x = &self.queries[r as usize * n..(r as usize + 1) * n];
                        (spectrum.evaluate(x) - y).powi(2)
                    })
                    .sum::<f64>();
                Ok((threshold, spectrum, score))
            })
            .collect::<Result<_>>()?;
        // Ties go to the larger threshold (the sparser fit): scan from the top, keep strict wins.
        let mut best = trials.len() - 1;
        for (i, trial) in trials.iter().enumerate().rev() {
            if trial.2 < trials[best].2 {
                best = i;
            }
        }
        let (threshold, spectrum, score) = trials.swap_remove(best);
        Ok(SketchFit {
            spectrum,
            threshold,
            holdout_nmse: normalised(score, &holdout),
        })
    }
}

/// `score / Σ (y − ȳ)²`, with 0 for an exact fit of a constant and infinity for a missed one.
fn normalised(score: f64, y: &[f64]) -> f64 {
    let mean = y.iter().sum::<f64>() / y.len().max(1) as f64;
    let spread = y.iter().map(|v| (v - mean).powi(2)).sum::<f64>();
    if spread > 0.0 {
        score / spread
    } else if score <= f64::EPSILON * f64::EPSILON * (1.0 + mean * mean) * y.len() as f64 {
        0.0
    } else {
        f64::INFINITY
    }
}

impl<'a> Transformed<'a> {
    /// The bin transforms of the mean-removed samples, one q-ary DFT per (group, delay).
    fn new(plan: &'a SketchPlan, values: &[f64], mean: f64, cancel: &Cancel) -> Result<Self> {
        let roots = Roots::new(plan.params.q);
        let n_bins = plan.params.bins()?;
        let delays = plan.params.delays();
        let rows: Vec<Vec<Complex64>> = plan
            .sample_rows
            .par_chunks_exact(n_bins)
            .map(|rows| {
                cancel.check()?;
                let mut u: Vec<Complex64> = rows
                    .iter()
                    .map(|&r| Complex64::new(values[r as usize] - mean, 0.0))
                    .collect();
                dft_in_place(&mut u, &roots);
                Ok(u)
            })
            .collect::<Result<_>>()?;
        let mut bins = vec![Complex64::new(0.0, 0.0); rows.len() * n_bins];
        for (cr, row) in rows.iter().enumerate() {
            let (c, r) = (cr / delays, cr % delays);
            for (j, &x) in row.iter().enumerate() {
                bins[(c * n_bins + j) * delays + r] = x;
            }
        }
        let scale = bins.iter().map(Complex64::norm_sqr).sum::<f64>() / bins.len() as f64;
        Ok(Self {
            plan,
            roots,
            bins,
            n_bins,
            scale,
        })
    }

    /// The signature `s(k)_r = ω^{⟨d_r, k⟩}` of a key over the delays.
    fn signature(&self, key: &[u8]) -> Vec<Complex64> {
        let (q, n) = (self.plan.params.q, self.plan.params.n);
        self.plan
            .delays
            .chunks_exact(n)
            .map(|d| self.roots.pow(dot_mod(d, key, q)))
            .collect()
    }

    /// Classifies the bin with index `cj = c · bins + j` holding measurements `u` (docs/sketch.md):
    /// energy test, NSO phase decoding, bin-consistency check, residual test.
    fn classify(&self, cj: usize, u: &[Complex64], cutoff: f64) -> Bin {
        let n = self.plan.params.n;
        let energy: f64 = u.iter().map(Complex64::norm_sqr).sum();
        if energy <= cutoff {
            return Bin::Zeroton;
        }
        let key: Vec<u8> = (0..n)
            .map(|i| {
                let z: Complex64 = u
                    .chunks_exact(n + 1)
                    .map(|block| block[0] * block[1 + i].conj())
                    .sum();
                self.roots.nearest(z)
            })
            .collect();
        if self.plan.bin_of(cj / self.n_bins, &key) != cj % self.n_bins {
            return Bin::Multiton;
        }
        let signature = self.signature(&key);
        let value = u
            .iter()
            .zip(&signature)
            .map(|(x, s)| x * s.conj())
            .sum::<Complex64>()
            / u.len() as f64;
        let residual = u
            .iter()
            .zip(&signature)
            .map(|(x, s)| (x - value * s).norm_sqr())
            .sum();
        if residual <= cutoff {
            Bin::Singleton {
                key,
                value,
                residual,
            }
        } else {
            Bin::Multiton
        }
    }

    /// Peels every verified singleton each round (with its conjugate partner, as `f` is real),
    /// summing re-detections, until a round finds none; returns the keys found (zero key
    /// included) and their coefficients. `threshold` is relative to the mean entry energy.
    fn peel(&self, threshold: f64, cancel: &Cancel) -> Result<BTreeMap<Vec<u8>, Complex64>> {
        let (q, delays) = (self.plan.params.q, self.plan.params.delays());
        let cutoff = threshold * self.scale * delays as f64;
        let mut bins = self.bins.clone();
        let mut active = vec![true; bins.len() / delays];
        let mut check: Vec<usize> = (0..active.len()).collect();
        let mut found: BTreeMap<Vec<u8>, Complex64> = BTreeMap::new();
        for _ in 0..MAX_ROUNDS {
            let classes: Vec<(usize, Bin)> = check
                .par_iter()
                .map(|&cj| {
                    cancel.check()?;
                    let bin = &bins[cj * delays..(cj + 1) * delays];
                    Ok((cj, self.classify(cj, bin, cutoff)))
                })
                .collect::<Result<_>>()?;
            // One detection per conjugate class, oriented to its smaller key; best residual wins.
            let mut singles: BTreeMap<Vec<u8>, (f64, Complex64)> = BTreeMap::new();
            for (cj, class) in classes {
                match class {
                    Bin::Zeroton => active[cj] = false,
                    Bin::Multiton => {}
                    Bin::Singleton {
                        key,
                        value,
                        residual,
                    } => {
                        let negated = negate(&key, q);
                        let (key, value) = if negated < key {
                            (negated, value.conj())
                        } else {
                            (key, value)
                        };
                        let entry = singles.entry(key).or_insert((f64::INFINITY, value));
                        if residual < entry.0 {
                            *entry = (residual, value);
                        }
                    }
                }
            }
            if singles.is_empty() {
                break;
            }
            let mut touched = BTreeSet::new();
            for (key, (_, value)) in singles {
                cancel.check()?;
                let negated = negate(&key, q);
                if negated != key {
                    self.subtract(&mut bins, &active, &negated, value.conj(), &mut touched);
                    *found.entry(negated).or_default() += value.conj();
                }
                self.subtract(&mut bins, &active, &key, value, &mut touched);
                *found.entry(key).or_default() += value;
            }
            check = touched.into_iter().collect();
        }
        Ok(found)
    }

    /// Removes `value · s(key)` from the key's active bin in every group.
    fn subtract(
        &self,
        bins: &mut [Complex64],
        active: &[bool],
        key: &[u8],
        value: Complex64,
        touched: &mut BTreeSet<usize>,
    ) {
        let delays = self.plan.params.delays();
        let signature = self.signature(key);
        for c in 0..self.plan.params.groups {
            let cj = c * self.n_bins + self.plan.bin_of(c, key);
            if active[cj] {
                for (x, s) in bins[cj * delays..(cj + 1) * delays]
                    .iter_mut()
                    .zip(&signature)
                {
                    *x -= value * s;
                }
                touched.insert(cj);
            }
        }
    }

    /// The spectrum of the peeled keys: the zero key's value and the sample mean form `F[0]`;
    /// self-conjugate keys (`2k ≡ 0`), whose coefficients of a real function are real, keep
    /// their real parts.
    fn spectrum(&self, found: BTreeMap<Vec<u8>, Complex64>, mean: f64) -> Result<Spectrum> {
        let (q, n) = (self.plan.params.q, self.plan.params.n);
        let mut f0 = mean;
        let mut keys = Vec::new();
        let mut coefficients = Vec::new();
        for (key, value) in found {
            if key.iter().all(|&d| d == 0) {
                f0 += value.re;
                continue;
            }
            let value = if negate(&key, q) == key {
                Complex64::new(value.re, 0.0)
            } else {
                value
            };
            if value != Complex64::new(0.0, 0.0) {
                keys.extend_from_slice(&key);
                coefficients.push(value);
            }
        }
        Spectrum::new(n, q, keys, coefficients, f0)
    }
}
