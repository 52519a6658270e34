//! ProxySPEX planning and support selection (docs/proxyspex.md, steps 1 and 5).
//!
//! - [`plan_masks`]: distinct uniform random coalitions from a seed, ∅ and N first.
//! - [`select_support`]: from a proxy's exact spectrum, how many of the largest coefficients in
//!   a chosen basis to keep, picked by R² on a validation split (the reference's 95 %-energy
//!   rule caps R² near 0.95 even for a perfect proxy);
//! - [`refit_top`]: that many largest coefficients refitted by least squares.

use faer::Mat;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::cancel::Cancel;
use crate::coalitions::{full_mask, words_for, CoalitionMatrix};
use crate::error::{CoreError, Result};
use crate::interactions::function::{Basis, Key, SparseFunction};
use crate::interactions::indices::{to_fourier, to_moebius};
use crate::sampling::design::CoalitionSet;

/// Random stream of the ProxySPEX plan within a seed.
const PLAN_STREAM: u64 = 0x5052_4f58_5953_5045; // "PROXYSPE"

/// Below this many players, masks are drawn by shuffling every coalition code.
const SHUFFLE_PLAYERS: usize = 20;

/// Largest support the selection considers.
pub const MAX_SUPPORT: usize = 4096;

/// Relative size of a pivot below which a design column counts as dependent.
const DEPENDENT: f64 = 1e-10;

/// `budget` distinct coalitions of `n_players`, drawn uniformly at random (each player in or out
/// with probability 1/2, duplicates redrawn) from `seed`; row 0 is ∅, row 1 is N, the others in
/// random order (so any suffix is a uniform random validation split). Polls `cancel` once per
/// coalition.
pub fn plan_masks(
    n_players: usize,
    budget: u64,
    seed: u64,
    cancel: &Cancel,
) -> Result<CoalitionMatrix> {
    let n = n_players;
    if n == 0 {
        return Err(CoreError::invalid("n", "must be at least 1, got 0"));
    }
    let total = if n < 64 { 1u64 << n } else { u64::MAX };
    if budget < 2 || budget > total {
        return Err(CoreError::invalid(
            "budget",
            format!("must be between 2 and 2^n = {total} distinct coalitions, got {budget}"),
        ));
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(PLAN_STREAM);
    let mut set = CoalitionSet::new(n);
    set.add(vec![0; words_for(n)], 0.0);
    set.add(full_mask(n), 0.0);
    if n <= SHUFFLE_PLAYERS {
        // Partial Fisher–Yates over the proper coalitions 1 .. 2^n − 2.
        let mut codes: Vec<u64> = (1..total - 1).collect();
        for i in 0..(budget - 2) as usize {
            cancel.check()?;
            let j = rng.random_range(i..codes.len());
            codes.swap(i, j);
            set.add(vec![codes[i]], 0.0);
        }
    } else {
        let tail = n % 64;
        while (set.len() as u64) < budget {
            cancel.check()?;
            let mut mask: Vec<u64> = (0..words_for(n)).map(|_| rng.random()).collect();
            if let (Some(last), true) = (mask.last_mut(), tail != 0) {
                *last &= (1u64 << tail) - 1;
            }
            set.add(mask, 0.0);
        }
    }
    Ok(set.into_parts().0)
}

/// Masks and values of a training or validation set: `masks` row-major `rows × n` indicators.
#[derive(Debug, Clone, Copy)]
pub struct Samples<'a> {
    /// Coalition indicators, row-major.
    pub masks: &'a [bool],
    /// One value per row.
    pub values: &'a [f64],
}

impl Samples<'_> {
    pub(crate) fn rows(&self) -> usize {
        self.values.len()
    }

    pub(crate) fn check(&self, name: &'static str, n: usize) -> Result<()> {
        if self.masks.len() != self.values.len() * n {
            return Err(CoreError::invalid(
                name,
                format!(
                    "{} values but {} mask entries for n = {n} players",
                    self.values.len(),
                    self.masks.len()
                ),
            ));
        }
        if let Some(v) = self.values.iter().find(|v| !v.is_finite()) {
            return Err(CoreError::invalid(
                name,
                format!("values must be finite, found {v}"),
            ));
        }
        Ok(())
    }
}

/// Checks a training and a validation set on `n` players: shapes, finite values, at least two
/// training rows and one validation row.
pub(crate) fn check_split(train: &Samples<'_>, validation: &Samples<'_>, n: usize) -> Result<()> {
    train.check("train", n)?;
    validation.check("validation", n)?;
    if train.rows() < 2 || validation.rows() < 1 {
        return Err(CoreError::invalid(
            "budget",
            format!(
                "too few masks to fit and score a surrogate: {} for training and {} for validation",
                train.rows(),
                validation.rows()
            ),
        ));
    }
    Ok(())
}

/// The outcome of [`select_support`].
#[derive(Debug, Clone)]
pub struct Selection {
    /// Number of non-empty keys selected.
    pub support: usize,
    /// R² on the validation set of the training-only fit with that support.
    pub validation_r2: f64,
    /// That training-only fit's predictions on the validation rows (for blending bases).
    pub validation_fitted: Vec<f64>,
}

/// Least-squares columns for the keys on the given rows: `[S ⊆ x]` (Möbius) or
/// `(−1)^{|K ∩ x|}` (Fourier), row-major.
pub(crate) fn design(keys: &[Key], basis: Basis, samples: &Samples<'_>, n: usize) -> Mat<f64> {
    Mat::from_fn(samples.rows(), keys.len(), |r, j| {
        let row = &samples.masks[r * n..(r + 1) * n];
        let players = keys[j].players();
        match basis {
            Basis::Moebius => f64::from(u8::from(players.iter().all(|&p| row[p as usize]))),
            Basis::Fourier => {
                if players.iter().filter(|&&p| row[p as usize]).count() % 2 == 0 {
                    1.0
                } else {
                    -1.0
                }
            }
        }
    })
}

/// `1 − ‖y − ŷ‖² / ‖y − ȳ‖²` (1 for a constant `y` fitted exactly).
pub fn r_squared(y: &[f64], fitted: &[f64]) -> f64 {
    let mean = y.iter().sum::<f64>() / y.len().max(1) as f64;
    let ss_res: f64 = y.iter().zip(fitted).map(|(a, b)| (a - b).powi(2)).sum();
    let ss_tot: f64 = y.iter().map(|a| (a - mean).powi(2)).sum();
    if ss_tot == 0.0 {
        return if ss_res == 0.0 {
            1.0
        } else {
            f64::NEG_INFINITY
        };
    }
    1.0 - ss_res / ss_tot
}

/// Candidate support sizes: a geometric grid (ratio ≈ 1.25) up to `max`, `max` included.
fn size_grid(max: usize) -> Vec<usize> {
    let mut grid = Vec::new();
    let mut k = 1usize;
    while k < max {
        grid.push(k);
        k = (k + 1).max((k as f64 * 1.25).round() as usize);
    }
    grid.push(max);
    grid
}

/// Non-empty terms of `spectrum` in `basis` as `(key, |coefficient|)`, by decreasing
/// |coefficient| (ties by key order), at most `limit` of them.
pub(crate) fn ranked_terms(
    spectrum: &SparseFunction,
    basis: Basis,
    limit: usize,
) -> Result<Vec<(Key, f64)>> {
    let f = match basis {
        Basis::Moebius => to_moebius(spectrum)?,
        Basis::Fourier => to_fourier(spectrum)?,
    };
    let mut ranked: Vec<(&Key, f64)> = f
        .terms()
        .iter()
        .filter(|(k, _)| k.order() > 0)
        .map(|(k, c)| (k, c.abs()))
        .collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    Ok(ranked
        .into_iter()
        .take(limit)
        .map(|(k, c)| (k.clone(), c))
        .collect())
}

/// Keys of `spectrum` in `basis`, ∅ first, then the others by decreasing |coefficient| (ties
/// by key order), at most `limit` non-empty ones.
fn ranked_keys(spectrum: &SparseFunction, basis: Basis, limit: usize) -> Result<Vec<Key>> {
    let mut keys = vec![Key::empty()];
    keys.extend(
        ranked_terms(spectrum, basis, limit)?
            .into_iter()
            .map(|(k, _)| k),
    );
    Ok(keys)
}

/// The thin `R` factor of the QR factorization of `[a | y]`: its first columns are `a`'s `R`,
/// and its last column holds `Qᵀ y`, so no `Q` is ever formed.
fn r_with_rhs(a: &Mat<f64>, y: &[f64]) -> Mat<f64> {
    let p = a.ncols();
    Mat::from_fn(
        a.nrows(),
        p + 1,
        |i, j| if j < p { a[(i, j)] } else { y[i] },
    )
    .qr()
    .thin_R()
    .to_owned()
}

/// The keys whose design column is not (numerically) a combination of earlier ones, judged
/// from the diagonal of the design's `R` factor.
fn independent(keys: &[Key], r: &Mat<f64>) -> Vec<Key> {
    let diag: Vec<f64> = (0..keys.len().min(r.nrows()))
        .map(|j| r[(j, j)].abs())
        .collect();
    let top = diag.iter().copied().fold(0.0, f64::max);
    keys.iter()
        .zip(&diag)
        .filter(|&(_, &d)| d > DEPENDENT * top)
        .map(|(k, _)| k.clone())
        .collect()
}

/// Chooses the support size of the surrogate (docs/proxyspex.md, step 5).
///
/// Keys of the proxy `spectrum` are ranked by |coefficient| in `basis` (∅ always kept as the
/// intercept). For each support size `k` on a geometric grid up to
/// `min(MAX_SUPPORT, rows(train) / 2)`, the top-`k` keys are fitted by least squares on `train`
/// (one QR for all prefixes) and scored by R² on `validation`; the best `k` (the smallest on
/// ties) is returned with its score and validation predictions. [`refit_top`] then fits that
/// many keys on every sample. Polls `cancel` between steps (the QR factorization runs as one
/// call) and once per support size.
pub fn select_support(
    spectrum: &SparseFunction,
    basis: Basis,
    train: Samples<'_>,
    validation: Samples<'_>,
    cancel: &Cancel,
) -> Result<Selection> {
    let n = spectrum.n_players();
    check_split(&train, &validation, n)?;
    let limit = MAX_SUPPORT.min(train.rows() / 2).max(1);
    let keys = ranked_keys(spectrum, basis, limit)?;
    let (keys, r) = independent_fit(keys, basis, &train, n, cancel)?;
    let z = Mat::from_fn(keys.len(), 1, |i, _| r[(i, keys.len())]);
    let val_design = design(&keys, basis, &validation, n);
    // validation predictions of the training-only fit on the top-`k` keys (∅ included)
    let fitted_with = |k: usize| -> Vec<f64> {
        let beta = back_substitute(&r, &z, k + 1);
        (0..validation.rows())
            .map(|i| (0..=k).map(|j| val_design[(i, j)] * beta[j]).sum())
            .collect()
    };
    // the intercept alone stands when no support scores above -inf
    let mut best = (0usize, f64::NEG_INFINITY, fitted_with(0));
    for k in size_grid(keys.len() - 1) {
        cancel.check()?;
        let fitted = fitted_with(k);
        let score = r_squared(validation.values, &fitted);
        if score > best.1 {
            best = (k, score, fitted);
        }
    }
    let (support, validation_r2, validation_fitted) = best;
    Ok(Selection {
        support,
        validation_r2,
        validation_fitted,
    })
}

/// The `support` keys of `spectrum` with the largest |coefficient| in `basis`, plus ∅, fitted by
/// least squares on `samples` (a key whose design column depends on earlier ones is left out).
/// Polls `cancel` between steps (the QR factorization runs as one call).
pub fn refit_top(
    spectrum: &SparseFunction,
    basis: Basis,
    support: usize,
    samples: Samples<'_>,
    cancel: &Cancel,
) -> Result<SparseFunction> {
    let n = spectrum.n_players();
    samples.check("samples", n)?;
    if support >= samples.rows() {
        return Err(CoreError::invalid(
            "support",
            format!(
                "must be below the number of samples ({}), got {support}",
                samples.rows()
            ),
        ));
    }
    let keys = ranked_keys(spectrum, basis, support)?;
    let (keys, r) = independent_fit(keys, basis, &samples, n, cancel)?;
    let z = Mat::from_fn(keys.len(), 1, |i, _| r[(i, keys.len())]);
    let beta = back_substitute(&r, &z, keys.len());
    SparseFunction::new(basis, n, keys.into_iter().zip(beta).collect())
}

/// `keys` less those whose design column on `samples` depends on earlier ones, and the `R`
/// factor of `[design | values]` for them (see [`r_with_rhs`]); polls `cancel` around each
/// step.
fn independent_fit(
    keys: Vec<Key>,
    basis: Basis,
    samples: &Samples<'_>,
    n: usize,
    cancel: &Cancel,
) -> Result<(Vec<Key>, Mat<f64>)> {
    let fit = |keys: &[Key]| -> Result<Mat<f64>> {
        cancel.check()?;
        let x = design(keys, basis, samples, n);
        cancel.check()?;
        let r = r_with_rhs(&x, samples.values);
        cancel.check()?;
        Ok(r)
    };
    let r = fit(&keys)?;
    let kept = independent(&keys, &r);
    if kept.len() == keys.len() {
        return Ok((keys, r));
    }
    let r = fit(&kept)?;
    Ok((kept, r))
}

/// Solves the leading `k × k` block `R β = z` (upper triangular).
fn back_substitute(r: &Mat<f64>, z: &Mat<f64>, k: usize) -> Vec<f64> {
    let mut beta = vec![0.0; k];
    for i in (0..k).rev() {
        let s: f64 = (i + 1..k).map(|j| r[(i, j)] * beta[j]).sum();
        beta[i] = (z[(i, 0)] - s) / r[(i, i)];
    }
    beta
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_are_distinct_uniform_and_reproducible() {
        for (n, budget) in [(5, 32), (5, 10), (70, 500), (21, 300)] {
            let m = plan_masks(n, budget, 7, Cancel::never()).unwrap();
            assert_eq!(m.n_rows() as u64, budget);
            assert_eq!((m.size(0), m.size(1)), (0, n));
            let mut rows: Vec<Vec<u64>> = (0..m.n_rows()).map(|r| m.row(r).to_vec()).collect();
            assert_eq!(m, plan_masks(n, budget, 7, Cancel::never()).unwrap());
            rows.sort();
            rows.dedup();
            assert_eq!(rows.len() as u64, budget);
        }
        let m = plan_masks(200, 2000, 1, Cancel::never()).unwrap();
        let mean = (2..m.n_rows()).map(|r| m.size(r)).sum::<usize>() as f64 / 1998.0;
        assert!((mean - 100.0).abs() < 1.0, "{mean}");
        assert!(plan_masks(3, 9, 0, Cancel::never()).is_err());
        assert!(plan_masks(0, 9, 0, Cancel::never()).is_err());
        assert!(plan_masks(3, 1, 0, Cancel::never()).is_err());
    }

    #[test]
    fn refit_top_recovers_an_exactly_sparse_function_and_refuses_too_large_supports() {
        let n = 10;
        let key = |p: &[u32]| Key::new(p.to_vec(), n).unwrap();
        let terms = vec![
            (key(&[]), 0.5),
            (key(&[0]), 2.0),
            (key(&[1, 2]), -3.0),
            (key(&[3, 4, 5]), 0.25),
        ];
        let truth = SparseFunction::new(Basis::Moebius, n, terms).unwrap();
        let masks = plan_masks(n, 200, 3, Cancel::never())
            .unwrap()
            .to_indicators();
        let values = truth.evaluate(&masks).unwrap();
        let samples = Samples {
            masks: &masks,
            values: &values,
        };
        let fit = refit_top(&truth, Basis::Moebius, 3, samples, Cancel::never()).unwrap();
        for (k, c) in truth.terms() {
            assert!((fit.coefficient(k.players()) - c).abs() < 1e-10, "{k:?}");
        }
        // the two largest keys: (1, 2) and (0,), with ∅
        assert_eq!(
            refit_top(&truth, Basis::Moebius, 2, samples, Cancel::never())
                .unwrap()
                .terms()
                .len(),
            3
        );
        assert!(refit_top(&truth, Basis::Moebius, 200, samples, Cancel::never()).is_err());
        let selection = select_support(
            &truth,
            Basis::Fourier,
            Samples {
                masks: &masks[..150 * n],
                values: &values[..150],
            },
            Samples {
                masks: &masks[150 * n..],
                values: &values[150..],
            },
            Cancel::never(),
        )
        .unwrap();
        assert!(selection.validation_r2 > 1.0 - 1e-10);
        assert_eq!(selection.validation_fitted.len(), 50);
    }

    #[test]
    fn size_grid_is_increasing_and_ends_at_max() {
        let g = size_grid(100);
        assert!(g.windows(2).all(|w| w[0] < w[1]));
        assert_eq!((g[0], *g.last().unwrap()), (1, 100));
        assert_eq!(size_grid(1), vec![1]);
    }
}
