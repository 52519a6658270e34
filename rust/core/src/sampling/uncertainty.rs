//! Standard errors of a design's estimate, from the design's own evidence (no extra queries).
//!
//! Every sampling estimator here is, to first order, a sum of contributions of independently
//! drawn *units*: a sampled coalition, or a coalition with its complement when the design is
//! paired (the pair is drawn as one). Units are drawn within *strata*: the coalition sizes
//! `{s, n − s}` (paired) or `s` (unpaired) of a without-replacement design, each with a fixed
//! number `m_h` of the `N_h` possible units. The variance of such a sum is estimated stratum by
//! stratum and multiplied by the finite-population correction `1 − m_h / N_h`; a fully
//! enumerated size contributes nothing. Per estimator:
//!
//! - **regression** (kernel, kernel-wor, leverage, modified-l2): the cluster-robust sandwich.
//!   With `K` the operator's columns (`φ = α 1 + K r`) and `e_p = v(S_p) − v(∅) − Σ_{i∈S_p} φ_i`
//!   the residual of the fitted additive game, a unit contributes `u_g = Σ_{p∈g} K_p e_p`,
//!   divided by `1 − h_g` (`h_g` the unit's leverage, HC3 style: residuals of the fitted points
//!   understate their errors). The variance is `Σ_h (1 − m_h/N_h) Σ_{g∈h} u_g²`, moderated
//!   towards the mean over players when few units estimate it (see [`moderate`]), and the standard
//!   error is widened by `t_{0.975}(df) / z_{0.975}` with `df` the number of drawn units − 1
//!   (the residuals are pooled over them; few drawn units remain where a design enumerates the
//!   border). With fewer drawn units than [`MIN_SANDWICH_UNITS`] or `n / 3`, the enumerated
//!   sizes' units join them as if drawn (conservative). A game the regression fits exactly
//!   (additive; order ≤ 2 with pairing) has zero residuals and zero error.
//! - **Horvitz–Thompson sums** (unbiased, and the residual games of the proxy methods): the
//!   stratified sample variance `Σ_h (1 − m_h/N_h) m_h/(m_h − 1) Σ_{g∈h} (u_g − ū_h)²` of the
//!   contributions `u_g = Σ_{p∈g} n ω_p (z_p − s_p/n) t_p`. Strata with a single unit are merged
//!   with their neighbour (collapsed strata, conservative). The result is widened by
//!   `t_{0.975}(df) / z_{0.975}` with `df = Σ_h (m_h − 1)`, so that `± 1.96 SE` is the Student-t
//!   interval: a variance estimated from few units is itself uncertain.
//! - **permutation**: the sample variance of the antithetic pairs' estimates over their number
//!   `P`, widened likewise with `df = P − 1`; `NaN` for a single pair.
//! - **enumeration**: zero.
//!
//! A with-replacement design (kernel) draws its sizes at random: its sampled sizes form one
//! stratum without finite-population correction, its enumerated border sizes none at all, and a
//! coalition drawn `c` times (weight `c` times the smallest of its size) counts as `c` draws.

use std::collections::{BTreeMap, HashMap};

use faer::Mat;
use rayon::prelude::*;

use crate::cancel::Cancel;
use crate::coalitions::{binomial_f64, complement};
use crate::error::Result;
use crate::sampling::estimator::check_values;
use crate::sampling::solve::COLUMN_BLOCK;
use crate::sampling::{Design, Method, PermutationPath};

/// Units whose operator columns are formed at once.
const UNIT_BLOCK: usize = 256;

/// Smallest `1 − h_g` divided by: a unit of leverage near 1 is fitted (almost) exactly and its
/// tiny residual says little; the cap keeps rounding from blowing it up.
const MIN_RESIDUAL_SHARE: f64 = 1e-3;

/// What the units' targets are and how their sums become a variance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// Residuals of the fitted additive game, leverage-corrected; uncentred sums of squares.
    Residual,
    /// `v − v(∅) − α s` (the matrix–vector estimator); stratified sample variance.
    Baseline,
    /// `v − v(∅)` (a Horvitz–Thompson sum); stratified sample variance.
    Plain,
}

impl Target {
    fn centred(self) -> bool {
        self != Self::Residual
    }
}

/// Sampling units of one stratum and its finite-population correction.
#[derive(Debug, Clone)]
struct Stratum {
    /// Design rows of each unit: one coalition, or a coalition and its complement.
    units: Vec<Vec<usize>>,
    /// `1 − m_h / N_h` (1 for with-replacement draws).
    fpc: f64,
}

/// How many draws each row of a with-replacement design stands for: its weight over the
/// smallest weight of its size (a coalition drawn once), rounded; 1 for every other design.
fn draws(design: &Design, sizes: &[usize]) -> Vec<f64> {
    let m = design.n_coalitions();
    if design.method != Method::Kernel {
        return vec![1.0; m];
    }
    let mut least = vec![f64::INFINITY; design.n_players + 1];
    for (r, &w) in design.weights.iter().enumerate() {
        if w > 0.0 {
            least[sizes[r]] = least[sizes[r]].min(w);
        }
    }
    (0..m)
        .map(|r| {
            let w = design.weights[r];
            if w > 0.0 {
                (w / least[sizes[r]]).round().max(1.0)
            } else {
                1.0
            }
        })
        .collect()
}

/// Fewest drawn units from which the regression's sandwich is taken over the drawn units alone,
/// and at least [`SANDWICH_UNITS_PER_PLAYER`] per player; below, every unit counts (see
/// [`strata`]). A design that enumerates the border and draws few pairs beside it
/// (`kernel-wor` just above a budget of `2 n`) leaves the sandwich few units, each of which
/// informs only the players it splits: on the tuning games its intervals covered 0 % of the
/// exact values with none (the error was reported as zero), 32–35 % with one, 80–91 % with
/// three and 91–92 % with four at n = 10–14, but 51–82 % with 5–8 at n = 24–40, and 94–96 %
/// once there were n / 3 or more (2026-12-07).
const MIN_SANDWICH_UNITS: f64 = 4.0;

/// See [`MIN_SANDWICH_UNITS`].
const SANDWICH_UNITS_PER_PLAYER: f64 = 1.0 / 3.0;

/// The strata of `design`'s random units; fully enumerated sizes are left out, unless `pooled`,
/// where every size is kept as if drawn with replacement (no finite-population correction).
/// With `collapse`, strata of a single unit are merged with a neighbour.
fn strata(design: &Design, collapse: bool, pooled: bool) -> Vec<Stratum> {
    let n = design.n_players;
    let sizes = design.sizes();
    let proper: Vec<usize> = (0..design.n_coalitions())
        .filter(|&r| sizes[r] > 0 && sizes[r] < n && design.weights[r] > 0.0)
        .collect();
    let index: HashMap<&[u64], usize> = proper
        .iter()
        .map(|&r| (design.coalitions.row(r), r))
        .collect();
    let partners: Vec<Option<usize>> = proper
        .iter()
        .map(|&r| {
            let c = complement(design.coalitions.row(r), n);
            index.get(c.as_slice()).copied()
        })
        .collect();
    let paired = partners.iter().all(Option::is_some);
    let mut by_key: BTreeMap<usize, Vec<Vec<usize>>> = BTreeMap::new();
    for (&r, partner) in proper.iter().zip(&partners) {
        let s = sizes[r];
        match partner {
            Some(q) if paired => {
                if r < *q {
                    by_key.entry(s.min(n - s)).or_default().push(vec![r, *q]);
                }
            }
            _ => by_key.entry(s).or_default().push(vec![r]),
        }
    }
    let with_replacement = design.method == Method::Kernel;
    let population = |key: usize| {
        let layer = binomial_f64(n as u64, key as u64);
        if paired && 2 * key == n {
            layer / 2.0
        } else {
            layer
        }
    };
    let fpc = |drawn: f64, pool: f64| {
        if pooled {
            1.0
        } else if drawn >= pool {
            0.0
        } else if with_replacement {
            1.0
        } else {
            1.0 - drawn / pool
        }
    };
    let random: Vec<(Vec<Vec<usize>>, f64)> = by_key
        .into_iter()
        .map(|(key, units)| (units, population(key)))
        .filter(|(units, pool)| fpc(units.len() as f64, *pool) > 0.0)
        .collect();
    if !collapse {
        return random
            .into_iter()
            .map(|(units, pool)| Stratum {
                fpc: fpc(units.len() as f64, pool),
                units,
            })
            .collect();
    }
    let mut merged: Vec<(Vec<Vec<usize>>, f64)> = Vec::new();
    let mut open: Option<(Vec<Vec<usize>>, f64)> = None;
    for (units, pool) in random {
        let (mut acc, acc_pool) = open.take().unwrap_or_default();
        acc.extend(units);
        let group = (acc, acc_pool + pool);
        if group.0.len() >= 2 {
            merged.push(group);
        } else {
            open = Some(group);
        }
    }
    if let Some((units, pool)) = open {
        match merged.last_mut() {
            Some(last) => {
                last.0.extend(units);
                last.1 += pool;
            }
            None => merged.push((units, pool)),
        }
    }
    merged
        .into_iter()
        .map(|(units, pool)| Stratum {
            fpc: fpc(units.len() as f64, pool),
            units,
        })
        .collect()
}

/// The per-stratum accumulation shared by every unit-based estimator: `columns(rows)` gives the
/// operator's columns (`n × rows.len()`) of design rows, `phi` (row-major `R × n`) the estimate.
/// Returns the standard errors, row-major `R × n`.
pub(crate) fn unit_errors(
    design: &Design,
    values: &[f64],
    n_columns: usize,
    phi: &[f64],
    target: Target,
    cancel: &Cancel,
    columns: impl Fn(&[usize]) -> Mat<f64>,
) -> Result<Vec<f64>> {
    let (n, m) = (design.n_players, design.n_coalitions());
    check_values(values, m, n_columns)?;
    let sizes = design.sizes();
    let row_of_size = |t: usize| sizes.iter().position(|&s| s == t).unwrap_or(0);
    let (empty, full) = (row_of_size(0), row_of_size(n));
    let width = n * n_columns;
    let mut variance = vec![0.0; width];
    if n_columns == 0 {
        return Ok(variance);
    }
    let y = |r: usize, j: usize| values[r * n_columns + j];
    let draws = draws(design, &sizes);
    let mut layers = strata(design, target.centred(), false);
    let units: usize = layers.iter().map(|stratum| stratum.units.len()).sum();
    let enough = MIN_SANDWICH_UNITS.max(SANDWICH_UNITS_PER_PLAYER * n as f64);
    // (a design holding every coalition is planned as an enumeration and never comes here)
    if target == Target::Residual && (units as f64) < enough {
        // Too few drawn units to show the error of what they stand for: the enumerated sizes'
        // residuals join them, as if drawn (conservative: they are known exactly).
        layers = strata(design, false, true);
    }
    let (mut freedom, mut drawn) = (0.0, 0.0);
    for stratum in layers {
        let mut sum = vec![0.0; width];
        let mut squares = vec![0.0; width];
        for block in stratum.units.chunks(UNIT_BLOCK) {
            cancel.check()?;
            let rows: Vec<usize> = block.iter().flatten().copied().collect();
            let k = columns(&rows);
            // The units' scale factors: 1 / (1 − leverage) for residuals, else 1.
            let mut scale = vec![1.0; block.len()];
            if target == Target::Residual {
                let mut b = 0;
                for (unit, factor) in block.iter().zip(&mut scale) {
                    let mut leverage = 0.0;
                    for &r in unit {
                        leverage += (0..n)
                            .filter(|&i| design.coalitions.contains(r, i))
                            .map(|i| k[(i, b)])
                            .sum::<f64>();
                        b += 1;
                    }
                    // A row drawn c times holds c identical draws: its squared contribution
                    // over c is their sum of squares.
                    *factor =
                        1.0 / ((1.0 - leverage).max(MIN_RESIDUAL_SHARE) * draws[unit[0]].sqrt());
                }
            }
            // Targets, row-major `rows.len() × R`.
            let mut t = vec![0.0; rows.len() * n_columns];
            for (b, &r) in rows.iter().enumerate() {
                let members: Vec<usize> = (0..n)
                    .filter(|&i| design.coalitions.contains(r, i))
                    .collect();
                for j in 0..n_columns {
                    let base = y(r, j) - y(empty, j);
                    t[b * n_columns + j] = match target {
                        Target::Residual => {
                            base - members.iter().map(|&i| phi[j * n + i]).sum::<f64>()
                        }
                        Target::Baseline => {
                            base - (y(full, j) - y(empty, j)) / n as f64 * sizes[r] as f64
                        }
                        Target::Plain => base,
                    };
                }
            }
            sum.par_chunks_mut(COLUMN_BLOCK * n)
                .zip(squares.par_chunks_mut(COLUMN_BLOCK * n))
                .enumerate()
                .for_each(|(c, (sum, squares))| {
                    let mut u = vec![0.0; n];
                    for local in 0..sum.len() / n {
                        let j = c * COLUMN_BLOCK + local;
                        let mut b = 0;
                        for (unit, &factor) in block.iter().zip(&scale) {
                            u.iter_mut().for_each(|x| *x = 0.0);
                            for _ in unit {
                                let tj = t[b * n_columns + j] * factor;
                                if tj != 0.0 {
                                    u.iter_mut()
                                        .zip(k.col(b).iter())
                                        .for_each(|(x, kb)| *x += kb * tj);
                                }
                                b += 1;
                            }
                            let dst = local * n..(local + 1) * n;
                            for ((s, q), x) in
                                sum[dst.clone()].iter_mut().zip(&mut squares[dst]).zip(&u)
                            {
                                *s += x;
                                *q += x * x;
                            }
                        }
                    }
                });
        }
        let units = stratum.units.len() as f64;
        drawn += units;
        freedom += units - 1.0;
        for ((v, s), q) in variance.iter_mut().zip(&sum).zip(&squares) {
            *v += stratum.fpc
                * if target.centred() {
                    units / (units - 1.0) * (q - s * s / units).max(0.0)
                } else {
                    *q
                };
        }
    }
    // Degrees of freedom of the variances: the residuals' sum of squares is pooled over every
    // drawn unit; centred targets lose one per stratum.
    let df = if target == Target::Residual {
        let df = drawn - 1.0;
        if df >= 1.0 {
            moderate(&mut variance, n, df);
        }
        df
    } else {
        freedom
    };
    let widen = if df > 0.0 { t_widening(df) } else { 1.0 };
    Ok(variance.into_iter().map(|v| v.sqrt() * widen).collect())
}

/// Degrees of freedom of the common variance that each player's sandwich variance is shrunk
/// towards (see [`moderate`]). Chosen on the tuning games at seeds 100–119 (2026-12-07): at 3n,
/// where 4–14 units are drawn, coverage rose from 0.918 to 0.943 (0.938 with 2, 0.947 with 8);
/// at 5n by 0.003, from 20n on not at all.
const PRIOR_FREEDOM: f64 = 4.0;

/// Moderates each column's per-player variances (`variance`, row-major `columns × n`) estimated
/// with `freedom` degrees of freedom: `(freedom · v_i + d_0 · v̄) / (freedom + d_0)`, `v̄` the
/// column's mean over players and `d_0` = [`PRIOR_FREEDOM`]. From few units one player's
/// variance is itself noisy, and the intervals missed most where it came out small (the missed
/// values' standard errors were 0.5–0.8 of their column's root mean square one, 0.9 for all
/// values); the players of one game share the residuals it is estimated from, so their mean is
/// a steadier guide. With many units the weight on the mean vanishes; a column with no
/// residual stays at zero. The widening stays that of `freedom` alone (docs/standard-errors.md).
fn moderate(variance: &mut [f64], n: usize, freedom: f64) {
    let prior = PRIOR_FREEDOM / (PRIOR_FREEDOM + freedom);
    for column in variance.chunks_mut(n) {
        let mean = column.iter().sum::<f64>() / n as f64;
        column
            .iter_mut()
            .for_each(|v| *v = (1.0 - prior) * *v + prior * mean);
    }
}

/// The 97.5 % quantile of the standard normal distribution.
const Z_975: f64 = 1.959_963_984_540_054;

/// `t_{0.975}(df) / z_{0.975}`: the factor that makes `± 1.96 SE` the Student-t interval of a
/// variance estimated with `df` degrees of freedom. Exact for `df` 1 and 2, a fourth-order
/// Cornish–Fisher expansion above (error below 0.2 %); `NaN` for `df < 1`.
fn t_widening(df: f64) -> f64 {
    let t = if df < 1.0 {
        f64::NAN
    } else if df < 2.0 {
        (std::f64::consts::PI * 0.475).tan()
    } else if df < 3.0 {
        0.95 / (2.0 * 0.975 * 0.025_f64).sqrt()
    } else {
        let z = Z_975;
        let (z3, z5, z7, z9) = (z.powi(3), z.powi(5), z.powi(7), z.powi(9));
        z + (z3 + z) / (4.0 * df)
            + (5.0 * z5 + 16.0 * z3 + 3.0 * z) / (96.0 * df.powi(2))
            + (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / (384.0 * df.powi(3))
            + (79.0 * z9 + 776.0 * z7 + 1482.0 * z5 - 1920.0 * z3 - 945.0 * z)
                / (92160.0 * df.powi(4))
    };
    t / Z_975
}

/// The matrix–vector (Horvitz–Thompson) coefficients `n ω_r (z_r − s_r/n)` of design rows.
pub(crate) fn horvitz_thompson_columns(design: &Design, rows: &[usize]) -> Mat<f64> {
    let n = design.n_players;
    let inv_n = 1.0 / n as f64;
    let shares: Vec<f64> = rows
        .iter()
        .map(|&r| design.coalitions.size(r) as f64 * inv_n)
        .collect();
    Mat::from_fn(n, rows.len(), |i, b| {
        let z = f64::from(u8::from(design.coalitions.contains(rows[b], i)));
        n as f64 * design.weights[rows[b]] * (z - shares[b])
    })
}

/// Standard errors (row-major `R × n`) of the Horvitz–Thompson sums
/// `Σ_S n ω_S (z_S − s/n) (v(S) − v(∅))` of `values` (row-major `m × R`) over the design's
/// proper coalitions: the stratified sample variance described in the module documentation.
///
/// This is the sampling error of the maximum-sample-reuse estimate of a residual game (the
/// weights of a without-replacement design are `1 / (s (n − s) m_s)`, so `n ω (z − s/n)` is
/// `1 / (s m_s)` inside `S` and `−1 / ((n − s) m_s)` outside).
pub fn horvitz_thompson_errors(
    design: &Design,
    values: &[f64],
    n_columns: usize,
    cancel: &Cancel,
) -> Result<Vec<f64>> {
    let phi = vec![0.0; design.n_players * n_columns];
    unit_errors(
        design,
        values,
        n_columns,
        &phi,
        Target::Plain,
        cancel,
        |rows| horvitz_thompson_columns(design, rows),
    )
}

/// Standard errors of the average over antithetic pairs of permutations (consecutive paths):
/// the sample variance of the pairs' estimates divided by their number; `NaN` with one pair.
pub(crate) fn permutation_errors(
    n: usize,
    paths: &[PermutationPath],
    values: &[f64],
    n_columns: usize,
) -> Vec<f64> {
    let pairs: Vec<&[PermutationPath]> = paths.chunks(2).collect();
    let count = pairs.len() as f64;
    let mut out = vec![0.0; n * n_columns];
    out.par_chunks_mut(n).enumerate().for_each(|(j, se)| {
        let y = |r: usize| values[r * n_columns + j];
        let estimates: Vec<Vec<f64>> = pairs
            .iter()
            .map(|pair| {
                let mut phi = vec![0.0; n];
                for path in *pair {
                    for (k, &player) in path.order.iter().enumerate() {
                        phi[player] += (y(path.rows[k + 1]) - y(path.rows[k])) / pair.len() as f64;
                    }
                }
                phi
            })
            .collect();
        for (i, x) in se.iter_mut().enumerate() {
            let mean = estimates.iter().map(|e| e[i]).sum::<f64>() / count;
            let squares: f64 = estimates.iter().map(|e| (e[i] - mean).powi(2)).sum();
            *x = (squares / (count * (count - 1.0))).sqrt() * t_widening(count - 1.0);
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_widening_matches_student_quantiles() {
        // t_{0.975}(df) from tables
        for (df, t) in [
            (1.0, 12.706_204_736),
            (2.0, 4.302_652_730),
            (3.0, 3.182_446_305),
        ]
        .into_iter()
        .chain([(10.0, 2.228_138_852), (50.0, 2.008_559_112)])
        {
            let got = t_widening(df) * Z_975;
            assert!((got / t - 1.0).abs() < 2e-3, "df {df}: {got} vs {t}");
        }
        assert!(t_widening(0.0).is_nan());
        assert!((t_widening(1e9) - 1.0).abs() < 1e-6);
    }

    #[test]
    fn moderation_shrinks_each_column_towards_its_mean() {
        // two columns of three players; 4 degrees of freedom weigh as much as the prior's
        let mut variance = vec![1.0, 2.0, 6.0, 0.0, 0.0, 0.0];
        moderate(&mut variance, 3, PRIOR_FREEDOM);
        assert_eq!(variance, vec![2.0, 2.5, 4.5, 0.0, 0.0, 0.0]);
        let mut many = vec![1.0, 3.0];
        moderate(&mut many, 2, 1e12);
        assert!((many[0] - 1.0).abs() < 1e-9 && (many[1] - 3.0).abs() < 1e-9);
    }
}
