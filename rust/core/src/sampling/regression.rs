//! Choosing the regression solver: the SVD operator of [`crate::sampling::solve`] or the bit-aware normal
//! equations of [`crate::sampling::normal`].
//!
//! Both give the same projected weighted least-squares solution on full-rank designs. The SVD
//! costs `O(m n²)` time and `O(m n)` memory but handles rank-deficient designs (minimum-norm
//! solution) and any conditioning; the normal equations cost `n²/2` bit-set intersections plus
//! one `n × n` Cholesky factor. [`Solver::Auto`] takes the normal equations from
//! [`CROSSOVER_PLAYERS`] players on, and falls back to the SVD whenever they decline.

use std::str::FromStr;

use crate::cancel::Cancel;
use crate::error::{CoreError, Result};
use crate::sampling::normal::{Declined, NormalSolver};
use crate::sampling::solve::{regression_operator, LinearOperator, ProperRows};
use crate::sampling::Design;

/// Fewest players for which [`Solver::Auto`] uses the normal equations (measured crossover:
/// below it the SVD is as fast and the choice does not matter; see BENCHMARKS.md).
pub const CROSSOVER_PLAYERS: usize = 24;

/// Which regression solver to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Solver {
    /// The normal equations from [`CROSSOVER_PLAYERS`] players on, else the SVD.
    #[default]
    Auto,
    /// Always the SVD.
    Svd,
    /// The normal equations whenever they are accurate (the SVD otherwise).
    Normal,
}

impl Solver {
    /// Every choice, in the order documented to users.
    pub const ALL: [Self; 3] = [Self::Auto, Self::Svd, Self::Normal];

    /// The name users pass.
    pub fn name(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Svd => "svd",
            Self::Normal => "normal",
        }
    }

    /// Whether this choice tries the normal equations for `n` players (they may still decline
    /// an ill-conditioned design, which then goes to the SVD).
    pub fn tries_normal(self, n: usize) -> bool {
        match self {
            Self::Svd => false,
            Self::Normal => true,
            Self::Auto => n >= CROSSOVER_PLAYERS,
        }
    }
}

impl FromStr for Solver {
    type Err = CoreError;

    fn from_str(s: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| {
                CoreError::invalid(
                    "solver",
                    format!("expected one of \"auto\", \"svd\", \"normal\", got {s:?}"),
                )
            })
    }
}

/// A factorized regression design.
#[derive(Debug, Clone)]
pub enum Regression {
    /// The SVD operator (`n × m`).
    Svd(LinearOperator),
    /// The normal equations' Cholesky factor and the packed design.
    Normal(NormalSolver),
}

/// The factorized design and, when the normal equations were tried and declined, why.
#[derive(Debug, Clone)]
pub struct RegressionFit {
    /// The solver in use.
    pub regression: Regression,
    /// Why the normal equations were not used, when they were tried.
    pub declined: Option<Declined>,
}

impl RegressionFit {
    /// Factorizes `design` with the solver `choice` asks for, polling `cancel` (the SVD only
    /// before and after its factorization).
    pub fn new(design: &Design, choice: Solver, cancel: &Cancel) -> Result<Self> {
        let proper = ProperRows::of(design)?;
        let declined = if choice.tries_normal(design.n_players) {
            match NormalSolver::new(design, proper.clone(), cancel) {
                Ok(solver) => {
                    return Ok(Self {
                        regression: Regression::Normal(solver),
                        declined: None,
                    })
                }
                Err(Declined::Cancelled) => return Err(CoreError::Cancelled),
                Err(why) => Some(why),
            }
        } else {
            None
        };
        Ok(Self {
            regression: Regression::Svd(regression_operator(design, &proper, cancel)?),
            declined,
        })
    }

    /// Name of the solver in use: `"svd"` or `"normal"`.
    pub fn solver_name(&self) -> &'static str {
        match self.regression {
            Regression::Svd(_) => "svd",
            Regression::Normal(_) => "normal",
        }
    }

    /// Numerical rank of the projected weighted design (`n − 1` on the normal-equations path,
    /// which is only taken on full-rank designs).
    pub fn rank(&self, n: usize) -> usize {
        match &self.regression {
            Regression::Svd(op) => op.rank.unwrap_or(0),
            Regression::Normal(_) => n.saturating_sub(1),
        }
    }

    /// A warning for users when the normal equations declined a full-rank design because of its
    /// conditioning (rank-deficient designs get their own warning from the rank).
    pub fn conditioning_warning(&self, n: usize) -> Option<String> {
        let full_rank = self.rank(n) + 1 >= n;
        match (&self.declined, full_rank) {
            (Some(Declined::IllConditioned(kappa)), true) => Some(format!(
                "ill-conditioned design (estimated condition number {kappa:.3e} of the normal \
                 equations): solved by the slower SVD instead"
            )),
            (Some(Declined::NotPositiveDefinite), true) => Some(
                "ill-conditioned design (the normal equations are numerically singular): solved \
                 by the slower SVD instead"
                    .to_owned(),
            ),
            _ => None,
        }
    }
}
