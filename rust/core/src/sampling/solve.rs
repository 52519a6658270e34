//! Linear estimators shared by every sampling design: the projected weighted least-squares
//! (regression) solve and the matrix–vector estimator, both with λ = α.
//!
//! Both are linear in the coalition values, so each becomes an `n × m` operator `L` built once
//! per design; explaining `R` rows is then one product `L · Y` with `Y` of shape `m × R`.

use faer::diag::Diag;
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::matmul::matmul;
use faer::linalg::svd::{svd, svd_scratch, ComputeSvdVectors};
use faer::{Accum, Mat, Par};
use rayon::prelude::*;

use crate::cancel::Cancel;
use crate::error::{CoreError, Result};
use crate::sampling::Design;

/// Columns per parallel block. Fixed, so results do not depend on the number of threads.
pub const COLUMN_BLOCK: usize = 64;

/// An `n × m` matrix mapping a design's coalition values to Shapley values.
#[derive(Debug, Clone)]
pub struct LinearOperator {
    /// The operator, one column per design row.
    pub matrix: Mat<f64>,
    /// Numerical rank of the projected weighted design (regression only).
    pub rank: Option<usize>,
}

/// The rows of a design that carry weight, with ∅'s and N's rows.
#[derive(Debug, Clone)]
pub struct ProperRows {
    /// Design rows with `0 < size < n` and a positive weight.
    pub rows: Vec<usize>,
    /// Their coalition sizes.
    pub sizes: Vec<usize>,
    /// The row of ∅.
    pub empty: usize,
    /// The row of N.
    pub full: usize,
}

impl ProperRows {
    /// Finds the proper rows of `design`; an error if ∅ or N is missing.
    pub fn of(design: &Design) -> Result<Self> {
        let n = design.n_players;
        let sizes = design.sizes();
        let find = |target: usize| {
            sizes.iter().position(|&s| s == target).ok_or_else(|| {
                CoreError::invalid("design", format!("has no coalition of size {target}"))
            })
        };
        let (empty, full) = (find(0)?, find(n)?);
        let rows: Vec<usize> = (0..sizes.len())
            .filter(|&r| sizes[r] > 0 && sizes[r] < n && design.weights[r] > 0.0)
            .collect();
        let sizes = rows.iter().map(|&r| sizes[r]).collect();
        Ok(Self {
            rows,
            sizes,
            empty,
            full,
        })
    }
}

/// The minimum-norm projected weighted least-squares operator (docs/estimators.md, docs/solver.md):
/// `φ = α 1 + P (diag(√ω) Z P)⁺ diag(√ω) (v − v0 − α s)`, through a thin SVD with a relative rank
/// cutoff of `max(m, n) · ε · σ_max`. Polls `cancel` before and after the SVD (which runs as one
/// call) and in the product that follows.
pub fn regression_operator(
    design: &Design,
    proper: &ProperRows,
    cancel: &Cancel,
) -> Result<LinearOperator> {
    cancel.check()?;
    let n = design.n_players;
    let m_p = proper.rows.len();
    let sqrt_w: Vec<f64> = proper
        .rows
        .iter()
        .map(|&r| design.weights[r].sqrt())
        .collect();
    let x = Mat::from_fn(m_p, n, |p, i| {
        let z = f64::from(u8::from(design.coalitions.contains(proper.rows[p], i)));
        sqrt_w[p] * (z - proper.sizes[p] as f64 / n as f64)
    });
    let (u, s, v) = thin_svd(&x)?;
    drop(x);
    cancel.check()?;
    let sigma_max = s.first().copied().unwrap_or(0.0);
    let tol = m_p.max(n) as f64 * f64::EPSILON * sigma_max;
    let rank = s.iter().take_while(|&&x| x > tol).count();
    // K = V_r Σ_r⁻¹ U_rᵀ diag(√ω): solution coefficients per proper row.
    let v_scaled = Mat::from_fn(n, rank, |i, j| v[(i, j)] / s[j]);
    let u_r = u.subcols(0, rank);
    let mut k = Mat::<f64>::zeros(n, m_p);
    k.par_col_chunks_mut(COLUMN_BLOCK)
        .enumerate()
        .try_for_each(|(block, mut dst)| {
            cancel.check()?;
            let start = block * COLUMN_BLOCK;
            let width = dst.ncols();
            let src = u_r.subrows(start, width).transpose();
            matmul(
                dst.as_mut(),
                Accum::Replace,
                v_scaled.as_ref(),
                src,
                1.0,
                Par::Seq,
            );
            for j in 0..width {
                for i in 0..n {
                    dst[(i, j)] *= sqrt_w[start + j];
                }
            }
            Ok(())
        })?;
    Ok(LinearOperator {
        matrix: assemble(n, design.n_coalitions(), proper, k),
        rank: Some(rank),
    })
}

/// The matrix–vector operator (docs/estimators.md, `unbiased`):
/// `φ_i = α + Σ_S n ω_S (z_i − s/n)(v(S) − v0 − α s)`.
pub fn matrix_vector_operator(design: &Design) -> Result<LinearOperator> {
    let n = design.n_players;
    let proper = ProperRows::of(design)?;
    let k = Mat::from_fn(n, proper.rows.len(), |i, p| {
        let row = proper.rows[p];
        let z = f64::from(u8::from(design.coalitions.contains(row, i)));
        n as f64 * design.weights[row] * (z - proper.sizes[p] as f64 / n as f64)
    });
    Ok(LinearOperator {
        matrix: assemble(n, design.n_coalitions(), &proper, k),
        rank: None,
    })
}

/// Turns per-row coefficients `K` (`φ = α 1 + K (v_proper − v0 − α s)`) into the full operator
/// over every design row, folding `v0` and `α = (v(N) − v0) / n` into the ∅ and N columns.
/// Columns of `K` are centred first, so each column of the result sums to 0, except ∅'s (−1)
/// and N's (+1): efficiency holds by construction.
fn assemble(n: usize, m: usize, proper: &ProperRows, k: Mat<f64>) -> Mat<f64> {
    let mut out = Mat::<f64>::zeros(n, m);
    let inv_n = 1.0 / n as f64;
    let mut k_ones = vec![0.0; n];
    let mut k_sizes = vec![0.0; n];
    for (p, &row) in proper.rows.iter().enumerate() {
        let mean = (0..n).map(|i| k[(i, p)]).sum::<f64>() * inv_n;
        for i in 0..n {
            let c = k[(i, p)] - mean;
            out[(i, row)] = c;
            k_ones[i] += c;
            k_sizes[i] += c * proper.sizes[p] as f64;
        }
    }
    for i in 0..n {
        let alpha_coef = (1.0 - k_sizes[i]) * inv_n;
        out[(i, proper.empty)] = -k_ones[i] - alpha_coef;
        out[(i, proper.full)] = alpha_coef;
    }
    out
}

/// Thin SVD `X = U diag(s) Vᵀ`, sequential so that results are identical on any thread count.
fn thin_svd(x: &Mat<f64>) -> Result<(Mat<f64>, Vec<f64>, Mat<f64>)> {
    let (m, n) = x.shape();
    let size = m.min(n);
    let mut u = Mat::<f64>::zeros(m, size);
    let mut v = Mat::<f64>::zeros(n, size);
    let mut s = Diag::<f64>::zeros(size);
    if size > 0 {
        let scratch = svd_scratch::<f64>(
            m,
            n,
            ComputeSvdVectors::Thin,
            ComputeSvdVectors::Thin,
            Par::Seq,
            Default::default(),
        );
        let mut buffer = MemBuffer::new(scratch);
        svd(
            x.as_ref(),
            s.as_mut(),
            Some(u.as_mut()),
            Some(v.as_mut()),
            Par::Seq,
            MemStack::new(&mut buffer),
            Default::default(),
        )
        .map_err(|e| CoreError::Numerical(format!("singular value decomposition: {e:?}")))?;
    }
    let s = s.column_vector().iter().copied().collect();
    Ok((u, s, v))
}
