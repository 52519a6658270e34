//! Planning: from `(method, n, budget, seed)` to a [`Design`] of distinct coalitions.
//!
//! Every method is non-adaptive, so the design is fixed before any model query and reproducible
//! from its seed and stream id (ChaCha8).

pub mod design;
pub mod enumeration;
pub mod estimator;
pub mod exact;
pub mod layers;
pub mod normal;
pub mod permutation;
pub mod regression;
pub mod sizes;
pub mod solve;
pub mod uncertainty;
pub mod with_replacement;
pub mod without_replacement;

use std::fmt;
use std::str::FromStr;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::cancel::Cancel;
use crate::coalitions::{coalition_count, covers_all, empty_mask, full_mask};
use crate::error::{CoreError, Result};
use crate::sampling::regression::{RegressionFit, Solver};
pub use design::{Design, EstimatorKind, PermutationPath};
pub use sizes::SizeDistribution;
pub use without_replacement::SizePlan;

/// Largest player count that full enumeration accepts.
pub const MAX_EXACT_PLAYERS: usize = 24;

/// A Shapley estimation method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// KernelSHAP: kernel sizes, with replacement, border enumeration, regression.
    Kernel,
    /// Kernel sizes without replacement (deterministic per-size counts), regression.
    KernelWithoutReplacement,
    /// LeverageSHAP: uniform sizes (leverage scores) without replacement, regression.
    Leverage,
    /// Sizes ∝ (s (n − s))^(−1/2) without replacement, regression.
    ModifiedL2,
    /// Matrix–vector estimator with λ = α on a kernel without-replacement design (unbiased).
    Unbiased,
    /// Antithetic permutation sampling.
    Permutation,
    /// Full enumeration (n ≤ 24).
    Exact,
}

impl Method {
    /// Every method, in documentation order.
    pub const ALL: [Method; 7] = [
        Method::Kernel,
        Method::KernelWithoutReplacement,
        Method::Leverage,
        Method::ModifiedL2,
        Method::Unbiased,
        Method::Permutation,
        Method::Exact,
    ];

    /// The name users pass (`"kernel"`, `"kernel-wor"`, …).
    pub fn name(self) -> &'static str {
        match self {
            Method::Kernel => "kernel",
            Method::KernelWithoutReplacement => "kernel-wor",
            Method::Leverage => "leverage",
            Method::ModifiedL2 => "modified-l2",
            Method::Unbiased => "unbiased",
            Method::Permutation => "permutation",
            Method::Exact => "exact",
        }
    }

    /// Whether the `paired` option applies to this method.
    pub fn supports_pairing(self) -> bool {
        !matches!(self, Method::Permutation | Method::Exact)
    }

    /// Whether the estimate is the projected weighted regression (the KernelSHAP family and
    /// LeverageSHAP), solved by a [`Solver`].
    pub fn is_regression(self) -> bool {
        matches!(
            self,
            Method::Kernel
                | Method::KernelWithoutReplacement
                | Method::Leverage
                | Method::ModifiedL2
        )
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Method {
    type Err = CoreError;

    fn from_str(s: &str) -> Result<Self> {
        Method::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                let valid: Vec<&str> = Method::ALL.iter().map(|m| m.name()).collect();
                CoreError::invalid(
                    "method",
                    format!("unknown method {s:?}; expected one of {}", valid.join(", ")),
                )
            })
    }
}

/// What to plan: the arguments of [`plan`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanRequest {
    /// The estimation method.
    pub method: Method,
    /// Number of players (features).
    pub n_players: usize,
    /// Distinct coalitions to evaluate, ∅ and N included.
    pub budget: u64,
    /// Seed of the design.
    pub seed: u64,
    /// Random stream within the seed (independent designs for the same seed).
    pub stream: u64,
    /// Whether to add each sampled coalition's complement (methods that support it).
    pub paired: bool,
}

/// Coalitions a design of `method` holds for `n` players and `budget`: all `2^n` for
/// [`Method::Exact`] or a budget that [`covers_all`] of them ([`coalition_count`]), else the
/// budget.
pub fn planned_coalitions(method: Method, n: usize, budget: u64) -> u64 {
    if method == Method::Exact || covers_all(n, budget) {
        coalition_count(n)
    } else {
        budget
    }
}

/// Bytes of the estimate's matrices for `m` coalitions of `n` players (the memory estimate
/// checked before planning; saturating at `u64::MAX`).
///
/// A regression on the normal equations keeps bit sets (`n` columns of about `m / 64` words
/// plus one per weight group), the packed design and three `n × n` matrices while building its
/// factor; on the SVD, the `m × n` design, its thin factors and the `n × m` operator. The other
/// sampling methods hold an `n × m` operator; enumeration, the value table only.
pub fn solver_bytes(method: Method, n: usize, m: u64, solver: Solver) -> u64 {
    const FLOAT: u64 = 8;
    const WORD: u64 = 8;
    let n64 = n as u64;
    let product = |terms: &[u64]| terms.iter().fold(1u64, |p, &t| p.saturating_mul(t));
    if method == Method::Exact || covers_all(n, m) {
        return m.saturating_mul(FLOAT);
    }
    if !method.is_regression() {
        return product(&[2, m, n64, FLOAT]);
    }
    if solver.tries_normal(n) && m.saturating_add(1) >= n64 {
        let column_words = product(&[n64, (m / 64).saturating_add(n64 / 2 + 2), WORD]);
        let packed = product(&[m, n64.div_ceil(64), WORD]);
        let matrices = product(&[3, n64, n64, FLOAT]);
        return column_words.saturating_add(packed).saturating_add(matrices);
    }
    let rank = m.min(n64);
    let factors = product(&[3, m, n64]).saturating_add(product(&[m.saturating_add(n64), rank]));
    factors.saturating_mul(FLOAT)
}

/// Builds the design for `request`.
///
/// Errors name the argument at fault: `n_players` of zero, `budget` below 2 (below `2n` for
/// permutation sampling), `exact` above [`MAX_EXACT_PLAYERS`], a budget covering every coalition
/// beyond the enumeration limit.
pub fn plan(request: PlanRequest) -> Result<Design> {
    plan_cancellable(request, Cancel::never())
}

/// [`plan`], polling `cancel` while it samples ([`CoreError::Cancelled`] once it is set).
pub fn plan_cancellable(request: PlanRequest, cancel: &Cancel) -> Result<Design> {
    let PlanRequest {
        method,
        n_players: n,
        seed,
        stream,
        ..
    } = request;
    let paired = request.paired && method.supports_pairing();
    validate(request)?;
    let budget = if paired {
        request.budget & !1
    } else {
        request.budget
    };
    if method == Method::Exact || covers_all(n, budget) {
        if n > MAX_EXACT_PLAYERS {
            return Err(CoreError::invalid(
                "budget",
                format!(
                    "{budget} covers all 2^{n} coalitions, but enumeration is limited to \
                     {MAX_EXACT_PLAYERS} players; use a smaller budget"
                ),
            ));
        }
        return Ok(Design {
            method: Method::Exact,
            n_players: n,
            budget: 1u64 << n,
            seed,
            stream,
            exact_fallback: method != Method::Exact && n > 1,
            coalitions: enumeration::all_coalitions(n),
            weights: vec![0.0; 1 << n],
            estimator: EstimatorKind::Enumeration,
        });
    }

    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(stream);
    let mut draws = 1;
    loop {
        let design = draw(request, budget, paired, &mut rng, cancel)?;
        if draws == MAX_DRAWS || !short_of_rank(&design, paired, cancel)? {
            return Ok(design);
        }
        draws += 1;
    }
}

/// Most designs [`plan`] draws for one request: a regression design short of rank `n − 1` by
/// chance ([`short_of_rank`]) is drawn again from the same random stream, so the result stays
/// reproducible and a design of full rank at its first draw is unchanged. At `budget = 2n`
/// (exactly `n − 1` pairs) up to 4 in 5 draws fall short (`n` of 8 to 30, 200 seeds), so 64
/// draws all fall short with a chance below `1e-6`; the last is kept (and warned about).
pub const MAX_DRAWS: u32 = 64;

/// Budgets below this many times `n` are checked for rank ([`short_of_rank`]); above it no
/// draw of 200 seeds for `n` of 8 to 30 fell short (the check would cost a factorization).
pub const RANK_CHECK_FACTOR: u64 = 6;

/// Most players for which [`plan`] checks a design's rank (the check factorizes the design:
/// `O(m n^2)` for `m < 6 n` coalitions, a few hundredths of a second at this size).
pub const RANK_CHECK_MAX_PLAYERS: usize = 256;

/// Whether `design` is a regression design whose budget could give rank `n − 1` (`n − 1`
/// proper coalitions, or pairs when `paired`) but whose draw did not: a design [`plan`] draws
/// again. Checked below [`RANK_CHECK_FACTOR`]` n` coalitions and up to
/// [`RANK_CHECK_MAX_PLAYERS`] players only, where a short draw is likely and the check cheap.
fn short_of_rank(design: &Design, paired: bool, cancel: &Cancel) -> Result<bool> {
    let n = design.n_players;
    let proper = design.n_coalitions().saturating_sub(2) as u64;
    let directions = if paired { proper / 2 } else { proper };
    if !design.method.is_regression()
        || n > RANK_CHECK_MAX_PLAYERS
        || design.budget >= RANK_CHECK_FACTOR * n as u64
        || directions + 1 < n as u64
    {
        return Ok(false);
    }
    Ok(RegressionFit::new(design, Solver::Auto, cancel)?.rank(n) + 1 < n)
}

/// One draw of `request`'s design from `rng`: ∅ and N, then `budget - 2` sampled coalitions.
fn draw(
    request: PlanRequest,
    budget: u64,
    paired: bool,
    rng: &mut ChaCha8Rng,
    cancel: &Cancel,
) -> Result<Design> {
    let (method, n) = (request.method, request.n_players);
    let mut set = design::CoalitionSet::new(n);
    set.add(empty_mask(n), 0.0); // EMPTY_ROW
    set.add(full_mask(n), 0.0); // FULL_ROW
    let sampled = budget - 2;
    let estimator = match method {
        Method::Kernel => {
            with_replacement::sample_with_replacement(
                &mut set,
                rng,
                n,
                sampled,
                SizeDistribution::Kernel,
                paired,
                cancel,
            )?;
            EstimatorKind::Regression
        }
        Method::KernelWithoutReplacement
        | Method::Leverage
        | Method::ModifiedL2
        | Method::Unbiased => {
            let dist = match method {
                Method::KernelWithoutReplacement | Method::Unbiased => SizeDistribution::Kernel,
                Method::Leverage => SizeDistribution::Leverage,
                _ => SizeDistribution::ModifiedL2,
            };
            let plan = SizePlan {
                dist,
                paired,
                border_first: method == Method::KernelWithoutReplacement,
            };
            without_replacement::sample_without_replacement(
                &mut set, rng, n, sampled, plan, cancel,
            )?;
            if method == Method::Unbiased {
                EstimatorKind::MatrixVector
            } else {
                EstimatorKind::Regression
            }
        }
        Method::Permutation => EstimatorKind::Permutation(permutation::sample_permutations(
            &mut set, rng, n, budget, cancel,
        )?),
        Method::Exact => unreachable!("handled by plan"),
    };
    let (coalitions, weights) = set.into_parts();
    Ok(Design {
        method,
        n_players: n,
        budget,
        seed: request.seed,
        stream: request.stream,
        exact_fallback: false,
        coalitions,
        weights,
        estimator,
    })
}

/// Checks `request`'s ranges without planning: the errors [`plan`] gives before it samples
/// (`n_players` of zero, `exact` above [`MAX_EXACT_PLAYERS`], a budget below 2, or below `2n` for
/// permutation sampling), worded for the Python caller, which checks them here before any model
/// query.
pub fn validate(request: PlanRequest) -> Result<()> {
    let PlanRequest {
        method,
        n_players: n,
        budget,
        ..
    } = request;
    if n == 0 {
        return Err(CoreError::invalid("n_players", "must be at least 1, got 0"));
    }
    if method == Method::Exact && n > MAX_EXACT_PLAYERS {
        return Err(CoreError::invalid(
            "method",
            format!(
                "method='exact' enumerates all 2**n coalitions and accepts at most \
                 {MAX_EXACT_PLAYERS} features; got n={n} (use a sampling method such as \
                 'leverage')"
            ),
        ));
    }
    if method == Method::Exact {
        return Ok(());
    }
    if budget < 2 {
        return Err(CoreError::invalid(
            "budget",
            format!("must be at least 2 (the empty and the grand coalition), got {budget}"),
        ));
    }
    if method == Method::Permutation && budget < 2 * n as u64 && n > 1 {
        return Err(CoreError::invalid(
            "budget",
            format!(
                "the budget must be at least 2n = {} for method='permutation' with n={n} (one \
                 antithetic pair of permutations); got {budget}",
                2 * n
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn planned_coalitions_enumerate_where_the_budget_covers_them() {
        assert_eq!(planned_coalitions(Method::Exact, 4, 2), 16);
        assert_eq!(planned_coalitions(Method::Leverage, 4, 20), 16);
        assert_eq!(planned_coalitions(Method::Leverage, 40, 500), 500);
        assert_eq!(planned_coalitions(Method::Exact, 70, 2), u64::MAX);
    }

    /// A paired request; the tests below replace the fields they vary.
    const PAIRED: PlanRequest = PlanRequest {
        method: Method::Leverage,
        n_players: 12,
        budget: 24,
        seed: 0,
        stream: 0,
        paired: true,
    };

    fn rank(design: &Design) -> usize {
        let fit = RegressionFit::new(design, Solver::Auto, Cancel::never()).unwrap();
        fit.rank(design.n_players)
    }

    #[test]
    fn regression_designs_reach_full_rank_where_the_budget_allows() {
        // at 2n + 2 (n pairs) most first draws fell short of rank n - 1 before the redraw
        let regression = Method::ALL.into_iter().filter(|m| m.is_regression());
        for method in regression {
            for n in [8, 13, 30] {
                for budget in [2 * n as u64, 2 * n as u64 + 2, 3 * n as u64] {
                    for seed in 0..20 {
                        let request = PlanRequest {
                            method,
                            n_players: n,
                            budget,
                            seed,
                            ..PAIRED
                        };
                        let design = plan(request).unwrap();
                        assert_eq!(rank(&design), n - 1, "{method} n={n} {budget} seed {seed}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_first_draw_of_full_rank_is_kept_and_redraws_reproduce() {
        let (mut kept, mut redrawn) = (0, 0);
        for seed in 0..40 {
            let request = PlanRequest { seed, ..PAIRED };
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let first = draw(request, 24, true, &mut rng, Cancel::never()).unwrap();
            let planned = plan(request).unwrap();
            assert_eq!(planned.coalitions, plan(request).unwrap().coalitions);
            if rank(&first) == 11 {
                assert_eq!(planned.coalitions, first.coalitions);
                assert_eq!(planned.weights, first.weights);
                kept += 1;
            } else {
                assert_ne!(planned.coalitions, first.coalitions);
                redrawn += 1;
            }
        }
        assert!(kept > 0 && redrawn > 0, "{kept} kept, {redrawn} redrawn");
    }

    #[test]
    fn budgets_short_of_n_minus_1_pairs_are_drawn_once() {
        let request = PlanRequest {
            method: Method::Leverage,
            n_players: 20,
            budget: 12,
            ..PAIRED
        };
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let first = draw(request, 12, true, &mut rng, Cancel::never()).unwrap();
        assert_eq!(plan(request).unwrap().coalitions, first.coalitions);
    }

    #[test]
    fn solver_bytes_follow_the_solver_and_saturate() {
        // enumeration: the value table; the unbiased operator: n x m floats
        assert_eq!(solver_bytes(Method::Leverage, 3, 8, Solver::Auto), 64);
        assert_eq!(
            solver_bytes(Method::Unbiased, 10, 100, Solver::Auto),
            2 * 100 * 10 * 8
        );
        // the SVD below the crossover: design, thin factors, operator
        let svd = (3 * 100 * 10 + (100 + 10) * 10) * 8;
        assert_eq!(solver_bytes(Method::Kernel, 10, 100, Solver::Auto), svd);
        // the normal equations from the crossover on (or when asked for)
        let normal = 10 * (100 / 64 + 10 / 2 + 2) * 8 + 100 * 8 + 3 * 10 * 10 * 8;
        assert_eq!(
            solver_bytes(Method::Kernel, 10, 100, Solver::Normal),
            normal
        );
        assert!(solver_bytes(Method::Leverage, 30, 100, Solver::Auto) < svd * 3);
        assert_eq!(
            solver_bytes(Method::Leverage, 1 << 40, u64::MAX / 2, Solver::Svd),
            u64::MAX
        );
    }
}
