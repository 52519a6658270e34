//! The proxy-scaled ridge refit of a ProxySPEX surrogate.
//!
//! Instead of keeping the `k` largest terms of a proxy's Fourier spectrum and refitting them by
//! least squares (see [`crate::interactions::proxyspex`]), every term (up to [`MAX_RIDGE_TERMS`], the largest
//! first) is refitted with a ridge penalty whose scale is the proxy's own |coefficient|: the
//! estimate minimises `Σ_rows (y − f(x))² + λ Σ_K (β_K / s_K)²` with `s_K = |F̂(K)| / max |F̂|`.
//! Large proxy terms are fitted almost freely, small ones are shrunk towards zero, and none is
//! dropped by a hard cut. [`select_ridge`] chooses the penalty on a validation split from one
//! eigendecomposition, [`refit_ridge`] fits it on every sample with one Cholesky factorization.
//! Both solve the smaller of the primal (`terms × terms`) and dual (`rows × rows`) systems.
//! Given the game's values at ∅ and N, [`refit_ridge`] holds the fit to them exactly.

use faer::linalg::solvers::Solve;
use faer::{Mat, Side};

use crate::cancel::Cancel;
use crate::error::{CoreError, Result};
use crate::interactions::function::{Basis, Key, SparseFunction};
use crate::interactions::proxyspex::{
    check_split, design, r_squared, ranked_terms, solve_constraints, Extremes, Samples,
};

/// Most Fourier terms of the proxy that the ridge keeps (the largest |coefficient| first).
pub const MAX_RIDGE_TERMS: usize = 1024;

/// Penalties per sample tried by [`select_ridge`]: `PENALTY_STEPS` points, log-spaced from the
/// first to the second bound (the penalty is this times the number of rows, so a penalty chosen
/// on the training split means the same on every sample).
const PENALTY_RANGE: (f64, f64) = (1e-8, 1e-2);
const PENALTY_STEPS: usize = 25;

/// The outcome of [`select_ridge`].
#[derive(Debug, Clone)]
pub struct RidgeSelection {
    /// Penalty per sample (see [`refit_ridge`]).
    pub penalty: f64,
    /// R² on the validation set of the training-only fit with that penalty.
    pub validation_r2: f64,
    /// That training-only fit's predictions on the validation rows.
    pub validation_fitted: Vec<f64>,
}

/// Scaled, column-centred Fourier design of a spectrum's terms on some samples.
struct ScaledDesign {
    keys: Vec<Key>,
    /// Prior scale of each key: its |coefficient| over the largest.
    scales: Vec<f64>,
    /// Mean of each unscaled design column.
    means: Vec<f64>,
    /// `(x_ij − means_j) · scales_j`.
    z: Mat<f64>,
    y_mean: f64,
    /// Centred values.
    y: Vec<f64>,
}

impl ScaledDesign {
    fn new(spectrum: &SparseFunction, samples: &Samples<'_>, cancel: &Cancel) -> Result<Self> {
        let n = spectrum.n_players();
        let terms = ranked_terms(spectrum, Basis::Fourier, MAX_RIDGE_TERMS, cancel)?;
        let top = terms.first().map_or(1.0, |t| t.1);
        let (keys, scales): (Vec<Key>, Vec<f64>) =
            terms.into_iter().map(|(k, c)| (k, c / top)).unzip();
        let x = design(&keys, Basis::Fourier, samples, n);
        let rows = samples.rows() as f64;
        let means: Vec<f64> = (0..keys.len())
            .map(|j| x.col(j).iter().sum::<f64>() / rows)
            .collect();
        let y_mean = samples.values.iter().sum::<f64>() / rows;
        let mut d = Self {
            keys,
            scales,
            means,
            z: Mat::new(),
            y_mean,
            y: samples.values.iter().map(|v| v - y_mean).collect(),
        };
        d.z = d.scaled(&x);
        Ok(d)
    }

    /// `(x_ij − means_j) · scales_j` for a design `x` of the same keys on any rows.
    fn scaled(&self, x: &Mat<f64>) -> Mat<f64> {
        Mat::from_fn(x.nrows(), x.ncols(), |i, j| {
            (x[(i, j)] - self.means[j]) * self.scales[j]
        })
    }

    fn column(values: &[f64]) -> Mat<f64> {
        Mat::from_fn(values.len(), 1, |i, _| values[i])
    }

    /// Scaled coefficients `g` of the ridge with penalty `lambda` (`β = scales ⊙ g`), and
    /// `(zᵀz + λ I)⁻¹ a` for the columns of `a` (`terms × q`), through a Cholesky factorization
    /// of the smaller Gram matrix (in the dual form `(a − zᵀ (z zᵀ + λ I)⁻¹ z a) / λ`).
    fn solve(&self, lambda: f64, a: &Mat<f64>) -> Result<(Vec<f64>, Mat<f64>)> {
        let z = self.z.as_ref();
        let failed = |_| CoreError::Numerical("the ridge system is not positive definite".into());
        let (g, inverse_a) = if z.ncols() <= z.nrows() {
            let mut gram = z.transpose() * z;
            for j in 0..gram.nrows() {
                gram[(j, j)] += lambda;
            }
            let rhs = z.transpose() * Self::column(&self.y);
            let llt = gram.llt(Side::Lower).map_err(failed)?;
            (llt.solve(&rhs), llt.solve(a))
        } else {
            let mut gram = z * z.transpose();
            for i in 0..gram.nrows() {
                gram[(i, i)] += lambda;
            }
            let llt = gram.llt(Side::Lower).map_err(failed)?;
            let alpha = llt.solve(Self::column(&self.y));
            let inverse_a = (a - z.transpose() * llt.solve(z * a)) * faer::Scale(1.0 / lambda);
            (z.transpose() * alpha, inverse_a)
        };
        Ok((g.col(0).iter().copied().collect(), inverse_a))
    }
}

/// Penalty per sample for the proxy-scaled ridge, chosen on a validation split.
///
/// The terms of `spectrum` (at most [`MAX_RIDGE_TERMS`]) are fitted on `train` for each penalty
/// of a log-spaced grid (one eigendecomposition serves them all) and scored by R² on
/// `validation`; the best penalty (the largest on ties) is returned with its score and
/// validation predictions. A spectrum without non-empty terms gives the training mean. Polls
/// `cancel` between steps (the eigendecomposition runs as one call) and once per penalty.
pub fn select_ridge(
    spectrum: &SparseFunction,
    train: Samples<'_>,
    validation: Samples<'_>,
    cancel: &Cancel,
) -> Result<RidgeSelection> {
    let n = spectrum.n_players();
    check_split(&train, &validation, n)?;
    let d = ScaledDesign::new(spectrum, &train, cancel)?;
    cancel.check()?;
    let val_z = d.scaled(&design(&d.keys, Basis::Fourier, &validation, n));
    cancel.check()?;
    // g(λ) = W · (b / (e + λ)): W = V, b = Vᵀ zᵀ y for the primal eigenbasis V of zᵀ z; W = zᵀ U,
    // b = Uᵀ y for the dual one U of z zᵀ.
    let z = d.z.as_ref();
    let failed = |_| CoreError::Numerical("the ridge eigendecomposition did not converge".into());
    let (w, b, e) = if z.ncols() <= z.nrows() {
        let eig = (z.transpose() * z)
            .self_adjoint_eigen(Side::Lower)
            .map_err(failed)?;
        let v = eig.U().to_owned();
        let b = v.transpose() * (z.transpose() * ScaledDesign::column(&d.y));
        (
            v,
            b,
            eig.S().column_vector().iter().copied().collect::<Vec<_>>(),
        )
    } else {
        let eig = (z * z.transpose())
            .self_adjoint_eigen(Side::Lower)
            .map_err(failed)?;
        let u = eig.U();
        let b = u.transpose() * ScaledDesign::column(&d.y);
        (
            z.transpose() * u,
            b,
            eig.S().column_vector().iter().copied().collect(),
        )
    };
    cancel.check()?;
    let projected = &val_z * &w;
    let rows = train.rows() as f64;
    let (low, high) = (PENALTY_RANGE.0.ln(), PENALTY_RANGE.1.ln());
    let mut best: Option<RidgeSelection> = None;
    for step in (0..PENALTY_STEPS).rev() {
        cancel.check()?;
        let penalty = (low + (high - low) * step as f64 / (PENALTY_STEPS - 1) as f64).exp();
        let lambda = penalty * rows;
        let weights = Mat::from_fn(e.len(), 1, |i, _| b[(i, 0)] / (e[i].max(0.0) + lambda));
        let fitted: Vec<f64> = (&projected * &weights)
            .col(0)
            .iter()
            .map(|v| v + d.y_mean)
            .collect();
        let score = r_squared(validation.values, &fitted);
        if best.as_ref().is_none_or(|s| score > s.validation_r2) {
            best = Some(RidgeSelection {
                penalty,
                validation_r2: score,
                validation_fitted: fitted,
            });
        }
    }
    Ok(best.expect("the penalty grid is not empty"))
}

/// The terms of `spectrum` (at most [`MAX_RIDGE_TERMS`], largest first) fitted on `samples` by
/// the proxy-scaled ridge with `penalty` per sample (the ridge's `λ` is `penalty × rows`); the
/// intercept is not penalised. Returns a Fourier [`SparseFunction`].
///
/// With `extremes`, the ridge is minimised subject to `f(∅) = v(∅)` and `f(N) = v(N)`: in the
/// centred, scaled form `f(x) = c + z(x) · g`, each constraint `c + z_e · g = v_e` enters through
/// a Lagrange multiplier `ν_e`, `g = g₀ − (zᵀz + λ I)⁻¹ Aᵀ ν`, `c = ȳ − Σ ν / rows`, with
/// `(A (zᵀz + λ I)⁻¹ Aᵀ + 1 1ᵀ / rows) ν = ȳ + A g₀ − v` for the rows `A` of ∅ and N (one more
/// solve with the same factorization). Where no term is odd (none tells ∅ from N) only
/// `f(∅) = v(∅)` constrains the fit and the rest of the game's total is shared equally by the
/// players' first-order terms (see [`crate::interactions::proxyspex::refit_top`]).
///
/// Polls `cancel` between steps (the factorization runs as one call).
pub fn refit_ridge(
    spectrum: &SparseFunction,
    penalty: f64,
    samples: Samples<'_>,
    extremes: Option<Extremes>,
    cancel: &Cancel,
) -> Result<SparseFunction> {
    let n = spectrum.n_players();
    samples.check("samples", n)?;
    if !(penalty.is_finite() && penalty > 0.0) {
        return Err(CoreError::invalid(
            "penalty",
            format!("must be a positive finite number, got {penalty}"),
        ));
    }
    if samples.rows() < 1 {
        return Err(CoreError::invalid(
            "samples",
            "at least one sample is needed",
        ));
    }
    if let Some(e) = &extremes {
        e.check()?;
    }
    let d = ScaledDesign::new(spectrum, &samples, cancel)?;
    cancel.check()?;
    let rows = samples.rows() as f64;
    // rows of ∅ and N in the scaled, centred design (as many as can be held)
    let a = extremes.map_or_else(
        || Mat::zeros(0, d.keys.len()),
        |e| {
            let a = d.scaled(&e.design(&d.keys, Basis::Fourier, n));
            let rank = Extremes::rank(&a);
            a.subrows(0, rank).to_owned()
        },
    );
    let (mut g, inverse_a) = d.solve(penalty * rows, &a.transpose().to_owned())?;
    let mut centre = d.y_mean;
    if let Some(e) = extremes {
        let ag = &a * ScaledDesign::column(&g);
        let m = Mat::from_fn(a.nrows(), a.nrows(), |i, j| {
            (0..a.ncols())
                .map(|k| a[(i, k)] * inverse_a[(k, j)])
                .sum::<f64>()
                + 1.0 / rows
        });
        let rhs: Vec<f64> = (0..a.nrows())
            .map(|i| d.y_mean + ag[(i, 0)] - e.values()[i])
            .collect();
        let nu = solve_constraints(&m, &rhs)?;
        for (k, gk) in g.iter_mut().enumerate() {
            *gk -= (0..nu.len())
                .map(|i| inverse_a[(k, i)] * nu[i])
                .sum::<f64>();
        }
        centre -= nu.iter().sum::<f64>() / rows;
    }
    cancel.check()?;
    let beta: Vec<f64> = g.iter().zip(&d.scales).map(|(g, s)| g * s).collect();
    let intercept = centre - beta.iter().zip(&d.means).map(|(b, m)| b * m).sum::<f64>();
    let terms = std::iter::once((Key::empty(), intercept)).chain(d.keys.into_iter().zip(beta));
    let fit = SparseFunction::new(Basis::Fourier, n, terms.collect())?;
    match extremes {
        Some(e) if a.nrows() < 2 => e.split_gap(fit),
        _ => Ok(fit),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interactions::proxyspex::plan_masks;

    fn sample(f: &SparseFunction, n: usize, rows: u64, seed: u64) -> (Vec<bool>, Vec<f64>) {
        let masks = plan_masks(n, rows, seed, Cancel::never())
            .unwrap()
            .to_indicators();
        let values = f.evaluate(&masks).unwrap();
        (masks, values)
    }

    fn target(n: usize) -> SparseFunction {
        let terms = vec![
            (Key::empty(), 0.5),
            (Key::from_sorted(&[0]), 1.0),
            (Key::from_sorted(&[1, 2]), -0.6),
            (Key::from_sorted(&[3]), 0.3),
            (Key::from_sorted(&[2, 4, 5]), 0.2),
        ];
        SparseFunction::new(Basis::Fourier, n, terms).unwrap()
    }

    #[test]
    fn a_small_penalty_recovers_an_exactly_sparse_function_in_both_forms() {
        let n = 8;
        let f = target(n);
        // 200 rows > 4 terms (primal) and 3 rows < 4 terms (dual, still exact in the span)
        for rows in [200u64, 60] {
            let (masks, values) = sample(&f, n, rows, 3);
            let fit = refit_ridge(
                &f,
                1e-10,
                Samples {
                    masks: &masks,
                    values: &values,
                },
                None,
                Cancel::never(),
            )
            .unwrap();
            for (key, c) in f.terms() {
                assert!(
                    (fit.coefficient(key.players()) - c).abs() < 1e-6,
                    "{key:?} at {rows}"
                );
            }
        }
    }

    #[test]
    fn the_penalty_shrinks_small_proxy_terms_first() {
        let n = 8;
        let f = target(n);
        let (masks, values) = sample(&f, n, 120, 5);
        let fit = refit_ridge(
            &f,
            0.5,
            Samples {
                masks: &masks,
                values: &values,
            },
            None,
            Cancel::never(),
        )
        .unwrap();
        let ratio = |p: &[u32]| fit.coefficient(p) / f.coefficient(p);
        assert!(ratio(&[0]) > ratio(&[3]) && ratio(&[3]) > ratio(&[2, 4, 5]));
        assert!(ratio(&[2, 4, 5]) > 0.0 && ratio(&[0]) < 1.0);
    }

    #[test]
    fn the_constrained_ridge_meets_the_extremes_and_is_optimal_otherwise() {
        let n = 8;
        let f = target(n);
        let corners = [&[false; 8][..], &[true; 8][..]].concat();
        let extremes = Extremes {
            empty: -3.0,
            full: 5.0,
        };
        let top = ranked_terms(&f, Basis::Fourier, MAX_RIDGE_TERMS, Cancel::never()).unwrap();
        // primal (120 rows > 4 terms) and dual (3 rows < 4 terms)
        for (rows, penalty) in [(120u64, 0.3), (3, 0.05)] {
            let (masks, mut values) = sample(&f, n, rows, 9);
            values
                .iter_mut()
                .enumerate()
                .for_each(|(i, v)| *v += 0.1 * (i % 3) as f64);
            let samples = Samples {
                masks: &masks,
                values: &values,
            };
            let fit = refit_ridge(&f, penalty, samples, Some(extremes), Cancel::never()).unwrap();
            let at = fit.evaluate(&corners).unwrap();
            assert!(
                (at[0] + 3.0).abs() < 1e-9 && (at[1] - 5.0).abs() < 1e-9,
                "{at:?}"
            );
            // KKT: Xᵀ(y − f) − P β lies in the span of the rows of ∅ and N
            let keys: Vec<Key> = std::iter::once(Key::empty())
                .chain(top.iter().map(|t| t.0.clone()))
                .collect();
            let lambda = penalty * rows as f64;
            let fitted = fit.evaluate(&masks).unwrap();
            let x = design(&keys, Basis::Fourier, &samples, n);
            let gradient = Mat::from_fn(keys.len(), 1, |j, _| {
                let data: f64 = (0..values.len())
                    .map(|i| x[(i, j)] * (values[i] - fitted[i]))
                    .sum();
                let prior = match j {
                    0 => 0.0,
                    _ => {
                        lambda * fit.coefficient(keys[j].players())
                            / (top[j - 1].1 / top[0].1).powi(2)
                    }
                };
                data - prior
            });
            let c = extremes
                .design(&keys, Basis::Fourier, n)
                .transpose()
                .to_owned();
            let nu = faer::linalg::solvers::SolveLstsq::solve_lstsq(&c.qr(), &gradient);
            let off = (&gradient - &c * &nu).norm_l2();
            assert!(off < 1e-8 * gradient.norm_l2().max(1.0), "{rows}: {off}");
        }
        // without odd terms only ∅ is held, and the gap is shared by the singletons
        let even = SparseFunction::new(
            Basis::Fourier,
            n,
            vec![(Key::empty(), 1.0), (Key::from_sorted(&[0, 1]), 2.0)],
        )
        .unwrap();
        let (masks, values) = sample(&even, n, 50, 4);
        let samples = Samples {
            masks: &masks,
            values: &values,
        };
        let fit = refit_ridge(&even, 1e-3, samples, Some(extremes), Cancel::never()).unwrap();
        let at = fit.evaluate(&corners).unwrap();
        assert!(
            (at[0] + 3.0).abs() < 1e-9 && (at[1] - 5.0).abs() < 1e-9,
            "{at:?}"
        );
        assert!((0..8).all(|i| (fit.coefficient(&[i]) + 0.5).abs() < 1e-12));
    }

    #[test]
    fn selection_prefers_small_penalties_on_exact_data_and_refuses_bad_input() {
        let n = 8;
        let f = target(n);
        let (masks, values) = sample(&f, n, 150, 7);
        let split = 100 * n;
        let train = Samples {
            masks: &masks[..split],
            values: &values[..100],
        };
        let validation = Samples {
            masks: &masks[split..],
            values: &values[100..],
        };
        let s = select_ridge(&f, train, validation, Cancel::never()).unwrap();
        assert!(s.validation_r2 > 0.999_999, "{}", s.validation_r2);
        assert!(s.penalty < 1e-4, "{}", s.penalty);
        assert_eq!(s.validation_fitted.len(), 50);
        let samples = Samples {
            masks: &masks,
            values: &values,
        };
        assert!(refit_ridge(&f, 0.0, samples, None, Cancel::never()).is_err());
        assert!(refit_ridge(&f, f64::NAN, samples, None, Cancel::never()).is_err());
        let short = Samples {
            masks: &masks[..n],
            values: &values[..2],
        };
        assert!(refit_ridge(&f, 1.0, short, None, Cancel::never()).is_err());
    }
}
