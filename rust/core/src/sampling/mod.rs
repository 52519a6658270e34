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
use crate::coalitions::{empty_mask, full_mask};
use crate::error::{CoreError, Result};
pub use design::{Design, EstimatorKind, PermutationPath};
pub use sizes::SizeDistribution;

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
    let covers_all = n < 64 && budget >= 1u64 << n;
    if method == Method::Exact || covers_all {
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
    let mut set = design::CoalitionSet::new(n);
    set.add(empty_mask(n), 0.0); // EMPTY_ROW
    set.add(full_mask(n), 0.0); // FULL_ROW
    let sampled = budget - 2;
    let estimator = match method {
        Method::Kernel => {
            with_replacement::sample_with_replacement(
                &mut set,
                &mut rng,
                n,
                sampled,
                SizeDistribution::Kernel,
                paired,
                cancel,
            )?;
            EstimatorKind::Regression
        }
        Method::KernelWithoutReplacement | Method::Leverage | Method::ModifiedL2 => {
            let dist = match method {
                Method::KernelWithoutReplacement => SizeDistribution::Kernel,
                Method::Leverage => SizeDistribution::Leverage,
                _ => SizeDistribution::ModifiedL2,
            };
            without_replacement::sample_without_replacement(
                &mut set, &mut rng, n, sampled, dist, paired, cancel,
            )?;
            EstimatorKind::Regression
        }
        Method::Unbiased => {
            without_replacement::sample_without_replacement(
                &mut set,
                &mut rng,
                n,
                sampled,
                SizeDistribution::Kernel,
                paired,
                cancel,
            )?;
            EstimatorKind::MatrixVector
        }
        Method::Permutation => EstimatorKind::Permutation(permutation::sample_permutations(
            &mut set, &mut rng, n, budget, cancel,
        )?),
        Method::Exact => unreachable!("handled above"),
    };
    let (coalitions, weights) = set.into_parts();
    Ok(Design {
        method,
        n_players: n,
        budget,
        seed,
        stream,
        exact_fallback: false,
        coalitions,
        weights,
        estimator,
    })
}

fn validate(request: PlanRequest) -> Result<()> {
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
                "\"exact\" enumerates 2^n coalitions and accepts at most {MAX_EXACT_PLAYERS} \
                 players, got n = {n}; use a sampling method such as \"leverage\""
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
                "\"permutation\" needs at least 2n = {} coalitions for one antithetic pair, \
                 got {budget}",
                2 * n
            ),
        ));
    }
    Ok(())
}
