//! ProxySPEX planning and support selection (docs/proxyspex.md, steps 1 and 5).
//!
//! - [`plan_masks`]: distinct uniform random coalitions from a seed, ∅ and N first.
//! - [`select_support`]: from a proxy's exact spectrum, how many of the largest coefficients in
//!   a chosen basis to keep, picked by R² on a validation split (the reference's 95 %-energy
//!   rule caps R² near 0.95 even for a perfect proxy);
//! - [`refit_top`]: that many largest coefficients refitted by least squares, with the game's
//!   values at ∅ and N as equality constraints ([`Extremes`]).

use faer::linalg::solvers::Solve;
use faer::{Mat, Side};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::cancel::Cancel;
use crate::coalitions::{coalition_count, full_mask, words_for, CoalitionMatrix};
use crate::error::{CoreError, Result};
use crate::interactions::function::{Basis, Key, SparseFunction};
use crate::interactions::indices::to_basis;
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
    let total = coalition_count(n);
    if budget < 2 || budget > total {
        return Err(CoreError::invalid(
            "budget",
            format!("must be between 2 and 2^n = {total} distinct coalitions, got {budget}"),
        ));
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(PLAN_STREAM);
    let mut set = CoalitionSet::new(n);
    set.add(vec![0; words_for(n)], 0.0); // EMPTY_ROW
    set.add(full_mask(n), 0.0); // FULL_ROW
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

/// The game's values at ∅ and N, which a refit given them reproduces exactly: the surrogate's
/// `f(N) − f(∅)`, the sum of its Shapley values, is then the game's `v(N) − v(∅)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Extremes {
    /// `v(∅)`.
    pub empty: f64,
    /// `v(N)`.
    pub full: f64,
}

impl Extremes {
    pub(crate) fn check(&self) -> Result<()> {
        if self.empty.is_finite() && self.full.is_finite() {
            return Ok(());
        }
        Err(CoreError::invalid(
            "extremes",
            format!(
                "values at ∅ and N must be finite, got ({}, {})",
                self.empty, self.full
            ),
        ))
    }

    /// The two targets, ∅ first.
    pub(crate) fn values(&self) -> [f64; 2] {
        [self.empty, self.full]
    }

    /// The `2 × keys` design rows of ∅ and N (see [`design`]).
    pub(crate) fn design(&self, keys: &[Key], basis: Basis, n: usize) -> Mat<f64> {
        let mut masks = vec![false; 2 * n];
        masks[n..].fill(true);
        let values = self.values();
        design(
            keys,
            basis,
            &Samples {
                masks: &masks,
                values: &values,
            },
            n,
        )
    }

    /// How many of the two constraints a fit with the `2 × keys` rows `c` (of [`Self::design`],
    /// possibly scaled) can be held to: 2 when some column tells ∅ from N, else 1 (∅ alone;
    /// [`Self::split_gap`] then corrects `f(N)`).
    pub(crate) fn rank(c: &Mat<f64>) -> usize {
        if (0..c.ncols()).any(|j| c[(0, j)] != c[(1, j)]) {
            2
        } else {
            1
        }
    }

    /// `f` plus first-order terms that add `(v(N) − v(∅)) − (f(N) − f(∅))` to `f(N)` and leave
    /// `f(∅)` as it is, the gap shared equally by the players: `gap / n` to each singleton's
    /// Möbius coefficient, or `−gap / 2n` to each singleton's and `gap / 2` to the intercept's
    /// Fourier coefficient. The exact correction for fits whose terms cannot tell ∅ from N.
    pub(crate) fn split_gap(&self, f: SparseFunction) -> Result<SparseFunction> {
        let n = f.n_players();
        let mut masks = vec![false; 2 * n];
        masks[n..].fill(true);
        let at = f.evaluate(&masks)?;
        let gap = (self.full - self.empty) - (at[1] - at[0]);
        let basis = f.basis();
        let (singleton, intercept) = match basis {
            Basis::Moebius => (gap / n as f64, 0.0),
            Basis::Fourier => (-gap / (2 * n) as f64, gap / 2.0),
        };
        let mut terms = f.terms().to_vec();
        terms.push((Key::empty(), intercept));
        terms.extend((0..n as u32).map(|i| (Key::from_sorted(&[i]), singleton)));
        SparseFunction::new(basis, n, terms)
    }
}

/// Solves the small symmetric positive definite system `m ν = rhs` of a constrained fit.
pub(crate) fn solve_constraints(m: &Mat<f64>, rhs: &[f64]) -> Result<Vec<f64>> {
    let rhs = Mat::from_fn(rhs.len(), 1, |i, _| rhs[i]);
    let nu = m
        .llt(Side::Lower)
        .map_err(|_| CoreError::Numerical("the constraints at ∅ and N are not independent".into()))?
        .solve(&rhs);
    Ok(nu.col(0).iter().copied().collect())
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
    cancel: &Cancel,
) -> Result<Vec<(Key, f64)>> {
    let f = to_basis(spectrum, basis, cancel)?;
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
fn ranked_keys(
    spectrum: &SparseFunction,
    basis: Basis,
    limit: usize,
    cancel: &Cancel,
) -> Result<Vec<Key>> {
    let mut keys = vec![Key::empty()];
    keys.extend(
        ranked_terms(spectrum, basis, limit, cancel)?
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
    let keys = ranked_keys(spectrum, basis, limit, cancel)?;
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
///
/// With `extremes`, the fit is the least-squares one subject to `f(∅) = v(∅)` and
/// `f(N) = v(N)` (Lagrange multipliers: two extra triangular solves with the design's `R`).
/// Where no kept key tells ∅ from N (no odd Fourier key, no non-empty Möbius key) only
/// `f(∅) = v(∅)` constrains the fit, and [`Extremes::split_gap`] adds the rest of the game's
/// total equally to the players. On an exactly sparse game, whose least-squares fit meets both
/// already, the constrained and the plain fit coincide.
///
/// Polls `cancel` between steps (the QR factorization runs as one call).
pub fn refit_top(
    spectrum: &SparseFunction,
    basis: Basis,
    support: usize,
    samples: Samples<'_>,
    extremes: Option<Extremes>,
    cancel: &Cancel,
) -> Result<SparseFunction> {
    let n = spectrum.n_players();
    samples.check("samples", n)?;
    if let Some(e) = &extremes {
        e.check()?;
    }
    if support >= samples.rows() {
        return Err(CoreError::invalid(
            "support",
            format!(
                "must be below the number of samples ({}), got {support}",
                samples.rows()
            ),
        ));
    }
    let keys = ranked_keys(spectrum, basis, support, cancel)?;
    let (keys, r) = independent_fit(keys, basis, &samples, n, cancel)?;
    let z = Mat::from_fn(keys.len(), 1, |i, _| r[(i, keys.len())]);
    let mut beta = back_substitute(&r, &z, keys.len());
    let Some(e) = extremes else {
        return SparseFunction::new(basis, n, keys.into_iter().zip(beta).collect());
    };
    let c = e.design(&keys, basis, n);
    let rank = Extremes::rank(&c);
    constrain(&r, &mut beta, &c, &e.values()[..rank])?;
    let fit = SparseFunction::new(basis, n, keys.into_iter().zip(beta).collect())?;
    if rank == 2 {
        Ok(fit)
    } else {
        e.split_gap(fit)
    }
}

/// Moves the least-squares coefficients `beta` of a design with `R` factor `r` to the
/// least-squares ones subject to `c_i · β = targets_i` for the first `targets.len()` rows of
/// `c`: `β −= H⁻¹ cᵀ ν` with `H = RᵀR` and `(c H⁻¹ cᵀ) ν = c β − targets`.
fn constrain(r: &Mat<f64>, beta: &mut [f64], c: &Mat<f64>, targets: &[f64]) -> Result<()> {
    let p = beta.len();
    // w_i = R⁻ᵀ c_iᵀ, so c H⁻¹ cᵀ = [w_i · w_j]
    let w: Vec<Vec<f64>> = (0..targets.len())
        .map(|i| {
            let mut w = vec![0.0; p];
            for j in 0..p {
                let s: f64 = (0..j).map(|l| r[(l, j)] * w[l]).sum();
                w[j] = (c[(i, j)] - s) / r[(j, j)];
            }
            w
        })
        .collect();
    let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
    let m = Mat::from_fn(targets.len(), targets.len(), |i, j| dot(&w[i], &w[j]));
    let residual: Vec<f64> = (0..targets.len())
        .map(|i| (0..p).map(|j| c[(i, j)] * beta[j]).sum::<f64>() - targets[i])
        .collect();
    let nu = solve_constraints(&m, &residual)?;
    let v = Mat::from_fn(p, 1, |j, _| (0..nu.len()).map(|i| w[i][j] * nu[i]).sum());
    for (b, d) in beta.iter_mut().zip(back_substitute(r, &v, p)) {
        *b -= d;
    }
    Ok(())
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
    use crate::coalitions::{EMPTY_ROW, FULL_ROW};

    #[test]
    fn masks_are_distinct_uniform_and_reproducible() {
        for (n, budget) in [(5, 32), (5, 10), (70, 500), (21, 300)] {
            let m = plan_masks(n, budget, 7, Cancel::never()).unwrap();
            assert_eq!(m.n_rows() as u64, budget);
            assert_eq!((m.size(EMPTY_ROW), m.size(FULL_ROW)), (0, n));
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
        let fit = refit_top(&truth, Basis::Moebius, 3, samples, None, Cancel::never()).unwrap();
        for (k, c) in truth.terms() {
            assert!((fit.coefficient(k.players()) - c).abs() < 1e-10, "{k:?}");
        }
        // the two largest keys: (1, 2) and (0,), with ∅
        assert_eq!(
            refit_top(&truth, Basis::Moebius, 2, samples, None, Cancel::never())
                .unwrap()
                .terms()
                .len(),
            3
        );
        assert!(refit_top(&truth, Basis::Moebius, 200, samples, None, Cancel::never()).is_err());
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

    /// A noisy game on `n = 10` players, and its own Möbius spectrum as the proxy.
    fn noisy_game(n: usize, rows: u64) -> (SparseFunction, Vec<bool>, Vec<f64>) {
        let key = |p: &[u32]| Key::new(p.to_vec(), n).unwrap();
        let terms = vec![
            (key(&[]), 0.5),
            (key(&[0]), 2.0),
            (key(&[1, 2]), -3.0),
            (key(&[3, 4, 5]), 0.25),
            (key(&[6]), 0.1),
        ];
        let truth = SparseFunction::new(Basis::Moebius, n, terms).unwrap();
        let masks = plan_masks(n, rows, 11, Cancel::never())
            .unwrap()
            .to_indicators();
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let values = truth
            .evaluate(&masks)
            .unwrap()
            .into_iter()
            .map(|v| v + rng.random_range(-0.5..0.5))
            .collect();
        (truth, masks, values)
    }

    #[test]
    fn constrained_refits_meet_the_extremes_and_are_least_squares_otherwise() {
        let n = 10;
        let (truth, masks, values) = noisy_game(n, 150);
        let samples = Samples {
            masks: &masks,
            values: &values,
        };
        let extremes = Extremes {
            empty: -4.0,
            full: 7.5,
        };
        let corners = [&[false; 10][..], &[true; 10][..]].concat();
        for basis in [Basis::Moebius, Basis::Fourier] {
            for support in [1, 3, 6] {
                let fit = refit_top(
                    &truth,
                    basis,
                    support,
                    samples,
                    Some(extremes),
                    Cancel::never(),
                )
                .unwrap();
                let at = fit.evaluate(&corners).unwrap();
                assert!(
                    (at[0] + 4.0).abs() < 1e-10 && (at[1] - 7.5).abs() < 1e-10,
                    "{at:?}"
                );
                // KKT: the residual's gradient Xᵀ(y − Xβ) lies in the span of the rows of ∅, N
                let keys: Vec<Key> = fit.terms().iter().map(|(k, _)| k.clone()).collect();
                let beta: Vec<f64> = fit.terms().iter().map(|(_, c)| *c).collect();
                let fitted = fit.evaluate(&masks).unwrap();
                let x = design(&keys, basis, &samples, n);
                let gradient = Mat::from_fn(keys.len(), 1, |j, _| {
                    (0..values.len())
                        .map(|i| x[(i, j)] * (values[i] - fitted[i]))
                        .sum::<f64>()
                });
                let c = extremes.design(&keys, basis, n).transpose().to_owned();
                let nu = faer::linalg::solvers::SolveLstsq::solve_lstsq(&c.qr(), &gradient);
                let off = (&gradient - &c * &nu).norm_l2();
                assert!(
                    off < 1e-8 * gradient.norm_l2().max(1.0),
                    "{basis:?} {support}: {off}"
                );
                assert_eq!(beta.len(), keys.len());
            }
        }
        // exactly sparse: the constrained fit is the plain one
        let exact = truth.evaluate(&masks).unwrap();
        let at = truth.evaluate(&corners).unwrap();
        let plain = Samples {
            masks: &masks,
            values: &exact,
        };
        let both = Extremes {
            empty: at[0],
            full: at[1],
        };
        let fit = refit_top(
            &truth,
            Basis::Moebius,
            4,
            plain,
            Some(both),
            Cancel::never(),
        )
        .unwrap();
        for (k, c) in truth.terms() {
            assert!((fit.coefficient(k.players()) - c).abs() < 1e-10, "{k:?}");
        }
        let bad = Extremes {
            empty: f64::NAN,
            full: 0.0,
        };
        assert!(refit_top(
            &truth,
            Basis::Moebius,
            2,
            samples,
            Some(bad),
            Cancel::never()
        )
        .is_err());
    }

    #[test]
    fn a_support_that_cannot_tell_empty_from_full_shares_the_gap_equally() {
        let n = 6;
        // one even Fourier key: f(∅) = f(N) for any coefficients
        let pair = SparseFunction::new(
            Basis::Fourier,
            n,
            vec![(Key::empty(), 1.0), (Key::from_sorted(&[0, 1]), 2.0)],
        )
        .unwrap();
        let masks = plan_masks(n, 40, 2, Cancel::never())
            .unwrap()
            .to_indicators();
        let values = pair.evaluate(&masks).unwrap();
        let samples = Samples {
            masks: &masks,
            values: &values,
        };
        let extremes = Extremes {
            empty: 0.0,
            full: 6.0,
        };
        let fit = refit_top(
            &pair,
            Basis::Fourier,
            1,
            samples,
            Some(extremes),
            Cancel::never(),
        )
        .unwrap();
        let corners = [&[false; 6][..], &[true; 6][..]].concat();
        let at = fit.evaluate(&corners).unwrap();
        assert!(at[0].abs() < 1e-12 && (at[1] - 6.0).abs() < 1e-12, "{at:?}");
        // 6 / (2 · 6) from each singleton, the rest in the intercept and the pair
        for i in 0..6 {
            assert!((fit.coefficient(&[i]) + 0.5).abs() < 1e-12);
        }
        let moebius = SparseFunction::new(Basis::Moebius, n, vec![(Key::empty(), 1.0)]).unwrap();
        let fit = refit_top(
            &moebius,
            Basis::Moebius,
            0,
            samples,
            Some(extremes),
            Cancel::never(),
        )
        .unwrap();
        assert!(fit.coefficient(&[]).abs() < 1e-12);
        assert!((0..6).all(|i| (fit.coefficient(&[i]) - 1.0).abs() < 1e-12));
    }

    #[test]
    fn size_grid_is_increasing_and_ends_at_max() {
        let g = size_grid(100);
        assert!(g.windows(2).all(|w| w[0] < w[1]));
        assert_eq!((g[0], *g.last().unwrap()), (1, 100));
        assert_eq!(size_grid(1), vec![1]);
    }
}
