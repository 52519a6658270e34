//! The estimate phase: one [`Estimator`] per design, applied to the values of any number of
//! explained rows and outputs at once.

use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, MatMut, MatRef, Par};
use rayon::prelude::*;

use crate::cancel::Cancel;
use crate::error::{CoreError, Result};
use crate::sampling::exact::shapley_from_table;
use crate::sampling::regression::{Regression, RegressionFit, Solver};
use crate::sampling::solve::{matrix_vector_operator, LinearOperator, COLUMN_BLOCK};
use crate::sampling::uncertainty::{
    horvitz_thompson_columns, permutation_errors, unit_errors, Target,
};
use crate::sampling::{Design, EstimatorKind, PermutationPath};

/// A design's factorized estimator: build once, apply to many value columns.
#[derive(Debug, Clone)]
pub struct Estimator {
    n_players: usize,
    n_coalitions: usize,
    empty_row: usize,
    full_row: usize,
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    Linear(LinearOperator),
    Regression(RegressionFit),
    Enumeration,
}

impl Estimator {
    /// Factorizes `design` with the automatic regression solver ([`Solver::Auto`]).
    pub fn new(design: &Design) -> Result<Self> {
        Self::with_solver(design, Solver::Auto)
    }

    /// Factorizes `design`; regression designs use `solver` (see [`crate::sampling::regression`]).
    pub fn with_solver(design: &Design, solver: Solver) -> Result<Self> {
        Self::with_solver_cancellable(design, solver, Cancel::never())
    }

    /// [`Estimator::with_solver`], polling `cancel` ([`CoreError::Cancelled`] once it is set).
    pub fn with_solver_cancellable(
        design: &Design,
        solver: Solver,
        cancel: &Cancel,
    ) -> Result<Self> {
        cancel.check()?;
        let n = design.n_players;
        let kind = match &design.estimator {
            EstimatorKind::Regression => {
                Kind::Regression(RegressionFit::new(design, solver, cancel)?)
            }
            EstimatorKind::MatrixVector => Kind::Linear(matrix_vector_operator(design)?),
            EstimatorKind::Permutation(paths) => {
                Kind::Linear(permutation_operator(n, design.n_coalitions(), paths))
            }
            EstimatorKind::Enumeration => Kind::Enumeration,
        };
        let sizes = design.sizes();
        let row_of_size = |target| sizes.iter().position(|&s| s == target).unwrap_or(0);
        Ok(Self {
            n_players: n,
            n_coalitions: design.n_coalitions(),
            empty_row: row_of_size(0),
            full_row: row_of_size(n),
            kind,
        })
    }

    /// Numerical rank of the projected weighted design, for regression designs.
    pub fn rank(&self) -> Option<usize> {
        match &self.kind {
            Kind::Regression(fit) => Some(fit.rank(self.n_players)),
            Kind::Linear(_) | Kind::Enumeration => None,
        }
    }

    /// The regression solver in use (`"svd"` or `"normal"`), for regression designs.
    pub fn solver_name(&self) -> Option<&'static str> {
        match &self.kind {
            Kind::Regression(fit) => Some(fit.solver_name()),
            Kind::Linear(_) | Kind::Enumeration => None,
        }
    }

    /// A warning for users when an ill-conditioned full-rank design sent the solve to the SVD.
    pub fn conditioning_warning(&self) -> Option<String> {
        match &self.kind {
            Kind::Regression(fit) => fit.conditioning_warning(self.n_players),
            Kind::Linear(_) | Kind::Enumeration => None,
        }
    }

    /// Shapley values for `n_columns` games given their values on the design's coalitions.
    ///
    /// `values` is row-major `m × n_columns` (row = coalition, column = game). Returns a row-major
    /// `n_columns × n` array. Each result sums to `v(N) − v(∅)` of its column up to rounding (a
    /// final correction spreads the rounding residual evenly). Runs in parallel over fixed blocks
    /// of columns, so the output does not depend on the thread count.
    pub fn estimate(&self, values: &[f64], n_columns: usize) -> Result<Vec<f64>> {
        self.estimate_cancellable(values, n_columns, Cancel::never())
    }

    /// [`Estimator::estimate`], polling `cancel` ([`CoreError::Cancelled`] once it is set).
    pub fn estimate_cancellable(
        &self,
        values: &[f64],
        n_columns: usize,
        cancel: &Cancel,
    ) -> Result<Vec<f64>> {
        let (n, m) = (self.n_players, self.n_coalitions);
        check_values(values, m, n_columns)?;
        let mut out = vec![0.0; n * n_columns];
        if n_columns == 0 {
            return Ok(out);
        }
        let y = MatRef::from_row_major_slice(values, m, n_columns);
        match &self.kind {
            Kind::Linear(op)
            | Kind::Regression(RegressionFit {
                regression: Regression::Svd(op),
                ..
            }) => {
                let phi = MatMut::from_column_major_slice_mut(&mut out, n, n_columns);
                apply_blocks(op.matrix.as_ref(), y, phi, cancel)?;
            }
            Kind::Regression(RegressionFit {
                regression: Regression::Normal(solver),
                ..
            }) => {
                let phi = MatMut::from_column_major_slice_mut(&mut out, n, n_columns);
                solver.apply(y, phi, cancel)?;
            }
            Kind::Enumeration => {
                out.par_chunks_mut(n).enumerate().try_for_each(|(j, phi)| {
                    cancel.check()?;
                    let column: Vec<f64> = (0..m).map(|r| y[(r, j)]).collect();
                    phi.copy_from_slice(&shapley_from_table(&column, n));
                    Ok::<_, CoreError>(())
                })?;
            }
        }
        for (j, phi) in out.chunks_mut(n).enumerate() {
            let delta = y[(self.full_row, j)] - y[(self.empty_row, j)];
            let residual = (delta - phi.iter().sum::<f64>()) / n as f64;
            phi.iter_mut().for_each(|x| *x += residual);
        }
        Ok(out)
    }

    /// Standard errors of [`Estimator::estimate`]'s values, same layout (row-major
    /// `n_columns × n`), from the design's own evidence: see [`crate::sampling::uncertainty`].
    ///
    /// `design` must be the design this estimator was built from. Zero for enumeration and
    /// wherever the design leaves no sampling error (a game the regression fits exactly, fully
    /// enumerated sizes); `NaN` where one sampled unit cannot show any spread (one antithetic
    /// pair of permutations).
    ///
    /// Polls `cancel` once per block of sampled units.
    pub fn standard_errors(
        &self,
        design: &Design,
        values: &[f64],
        n_columns: usize,
        cancel: &Cancel,
    ) -> Result<Vec<f64>> {
        let n = self.n_players;
        if design.n_players != n || design.n_coalitions() != self.n_coalitions {
            return Err(CoreError::invalid(
                "design",
                "is not the design this estimator was built from",
            ));
        }
        match (&self.kind, &design.estimator) {
            (Kind::Enumeration, _) => {
                check_values(values, self.n_coalitions, n_columns)?;
                Ok(vec![0.0; n * n_columns])
            }
            (_, EstimatorKind::Permutation(paths)) => {
                check_values(values, self.n_coalitions, n_columns)?;
                Ok(permutation_errors(n, paths, values, n_columns))
            }
            (Kind::Regression(fit), _) => {
                let phi = self.estimate(values, n_columns)?;
                unit_errors(
                    design,
                    values,
                    n_columns,
                    &phi,
                    Target::Residual,
                    cancel,
                    |rows| match &fit.regression {
                        Regression::Svd(op) => {
                            Mat::from_fn(n, rows.len(), |i, b| op.matrix[(i, rows[b])])
                        }
                        Regression::Normal(solver) => solver.columns(design, rows),
                    },
                )
            }
            (Kind::Linear(_), _) => {
                let phi = vec![0.0; n * n_columns];
                unit_errors(
                    design,
                    values,
                    n_columns,
                    &phi,
                    Target::Baseline,
                    cancel,
                    |rows| horvitz_thompson_columns(design, rows),
                )
            }
        }
    }
}

/// Checks that `values` holds `m × n_columns` finite numbers; the error names `values`.
pub(crate) fn check_values(values: &[f64], m: usize, n_columns: usize) -> Result<()> {
    if values.len() != m * n_columns {
        return Err(CoreError::invalid(
            "values",
            format!(
                "expected {m} rows (one per coalition of the design) × {n_columns} columns, \
                 got {} numbers",
                values.len()
            ),
        ));
    }
    if let Some(pos) = values.iter().position(|v| !v.is_finite()) {
        return Err(CoreError::invalid(
            "values",
            format!(
                "must be finite; found {} at coalition row {}, column {}",
                values[pos],
                pos / n_columns.max(1),
                pos % n_columns.max(1)
            ),
        ));
    }
    Ok(())
}

/// `phi = op · y`, computed in fixed column blocks in parallel, polling `cancel` per block.
fn apply_blocks(
    op: MatRef<'_, f64>,
    y: MatRef<'_, f64>,
    mut phi: MatMut<'_, f64>,
    cancel: &Cancel,
) -> Result<()> {
    phi.as_mut()
        .par_col_chunks_mut(COLUMN_BLOCK)
        .enumerate()
        .try_for_each(|(block, dst)| {
            cancel.check()?;
            let start = block * COLUMN_BLOCK;
            let width = dst.ncols();
            matmul(
                dst,
                Accum::Replace,
                op,
                y.subcols(start, width),
                1.0,
                Par::Seq,
            );
            Ok(())
        })
}

/// The average marginal contribution along each permutation path, as an operator.
fn permutation_operator(n: usize, m: usize, paths: &[PermutationPath]) -> LinearOperator {
    let mut matrix = Mat::<f64>::zeros(n, m);
    let share = 1.0 / paths.len().max(1) as f64;
    for path in paths {
        for (k, &player) in path.order.iter().enumerate() {
            matrix[(player, path.rows[k + 1])] += share;
            matrix[(player, path.rows[k])] -= share;
        }
    }
    LinearOperator { matrix, rank: None }
}
