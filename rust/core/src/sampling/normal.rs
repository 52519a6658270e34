//! The bit-aware regression solver: projected normal equations built from the packed coalitions.
//!
//! The projected weighted least-squares problem of [`crate::sampling::solve`] has the design
//! `X = diag(√ω) Z P` (`Z` the binary coalition matrix, `P = I − 11ᵀ/n`). Its normal matrix is
//! `XᵀX = P (Zᵀ diag(ω) Z) P`, and `A = Zᵀ diag(ω) Z` needs no floating-point design at all:
//! grouping the rows by weight, `A_ij = Σ_groups ω_g · popcount(c_i^g ∧ c_j^g)` where `c_i^g` is
//! player `i`'s column bit set over the rows of group `g`. That costs `n² / 2` bit-set
//! intersections of `≈ m / 64` words instead of the SVD's `O(m n²)` floating-point work and
//! `O(m n)` memory. The right-hand sides `Zᵀ diag(ω) r` of every explained row are a bit-set ×
//! matrix product. One Cholesky factor of `XᵀX + c 11ᵀ/n` (the `c 11ᵀ/n` term only lifts the null
//! direction `1`, which the right-hand sides never touch) serves every row.
//!
//! Normal equations square the condition number, so [`NormalSolver::new`] estimates it and
//! declines (returns [`Declined`]) when it is too large for the result to match the SVD's.

use std::collections::HashMap;

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::{cholesky_in_place, cholesky_in_place_scratch};
use faer::linalg::cholesky::llt::solve::solve_in_place;
use faer::linalg::matmul::triangular::{matmul, BlockStructure};
use faer::linalg::triangular_solve::solve_lower_triangular_in_place;
use faer::{Accum, Mat, MatMut, MatRef, Par};
use rayon::prelude::*;

use crate::cancel::Cancel;
use crate::error::{CoreError, Result};
use crate::sampling::solve::{ProperRows, COLUMN_BLOCK};
use crate::sampling::Design;

/// Largest estimated condition number of the normal matrix accepted: its rounding error
/// (`≈ κ ε`) then stays below `1e-10`, well inside the `1e-9` agreement with the SVD path.
pub const MAX_CONDITION: f64 = 1e6;

/// Proper design rows per parallel block of the right-hand-side product. Fixed, so results do
/// not depend on the number of threads.
const ROW_BLOCK: usize = 2048;

/// Values per row-block accumulator of the right-hand-side product (`n ×` columns): small
/// enough to stay in a core's L2 cache, so that each pass reads the coalition values once.
const SWEEP_VALUES: usize = 32 * 1024;

/// Columns of the coalition values summed in one pass over the design rows: a multiple of
/// [`COLUMN_BLOCK`] (at least one block), so that the solves run on the same column blocks, and
/// the same arithmetic, whatever the pass width.
fn sweep_columns(n: usize) -> usize {
    (SWEEP_VALUES / n.max(1) / COLUMN_BLOCK).max(1) * COLUMN_BLOCK
}

/// Iterations of the power and inverse-power methods behind the condition estimate.
const CONDITION_ITERATIONS: usize = 30;

/// Why the normal-equations path was not used; the caller falls back to the SVD.
#[derive(Debug, Clone, PartialEq)]
pub enum Declined {
    /// Fewer weighted rows than `n − 1`: the design cannot have full rank.
    TooFewRows,
    /// The Cholesky factorization met a non-positive pivot (rank deficient or nearly so).
    NotPositiveDefinite,
    /// The estimated condition number exceeds [`MAX_CONDITION`].
    IllConditioned(f64),
    /// The caller cancelled the build: no reason to fall back, the caller stops.
    Cancelled,
}

impl From<CoreError> for Declined {
    /// The only core error of the build is a cancellation.
    fn from(_: CoreError) -> Self {
        Self::Cancelled
    }
}

/// A factorized regression design on the normal-equations path.
#[derive(Debug, Clone)]
pub struct NormalSolver {
    n: usize,
    proper: ProperRows,
    /// Weight ω of each proper row.
    weights: Vec<f64>,
    /// Packed coalitions of the proper rows, `words` per row.
    bits: Vec<u64>,
    words: usize,
    /// Lower Cholesky factor of `XᵀX + c 11ᵀ/n`.
    factor: Mat<f64>,
    condition: f64,
}

impl NormalSolver {
    /// Builds and factorizes the normal equations of a regression design, or says why not;
    /// polls `cancel` throughout.
    pub fn new(
        design: &Design,
        proper: ProperRows,
        cancel: &Cancel,
    ) -> std::result::Result<Self, Declined> {
        let n = design.n_players;
        if proper.rows.len() + 1 < n {
            return Err(Declined::TooFewRows);
        }
        let weights: Vec<f64> = proper.rows.iter().map(|&r| design.weights[r]).collect();
        let words = design.coalitions.row(0).len();
        let mut bits = Vec::with_capacity(proper.rows.len() * words);
        for &r in &proper.rows {
            bits.extend_from_slice(design.coalitions.row(r));
        }
        let mut gram = projected_gram(n, &bits, words, &weights, cancel)?;
        let shift = (0..n).map(|i| gram[(i, i)]).sum::<f64>() / (n - 1).max(1) as f64;
        let lift = shift / n as f64;
        for j in 0..n {
            gram.col_mut(j).iter_mut().for_each(|x| *x += lift);
        }
        let lambda_max = largest_eigenvalue(gram.as_ref(), cancel)?;
        let mut factor = gram;
        cholesky(factor.as_mut(), cancel)?;
        for j in 1..n {
            for i in 0..j {
                factor[(i, j)] = 0.0;
            }
        }
        let condition = lambda_max / smallest_eigenvalue(factor.as_ref(), cancel)?;
        if !condition.is_finite() || condition > MAX_CONDITION {
            return Err(Declined::IllConditioned(condition));
        }
        Ok(Self {
            n,
            proper,
            weights,
            bits,
            words,
            factor,
            condition,
        })
    }

    /// Estimated condition number of the (lifted) normal matrix.
    pub fn condition(&self) -> f64 {
        self.condition
    }

    /// Shapley values of every column of `y` (`m × R`, one row per design coalition) into `phi`
    /// (`n × R`), before the final efficiency correction; polls `cancel` between blocks of rows
    /// and of columns.
    pub fn apply(
        &self,
        y: MatRef<'_, f64>,
        mut phi: MatMut<'_, f64>,
        cancel: &Cancel,
    ) -> Result<()> {
        let n = self.n;
        let inv_n = 1.0 / n as f64;
        let sweep = sweep_columns(n);
        for first in (0..y.ncols()).step_by(sweep) {
            cancel.check()?;
            let y = y.subcols(first, sweep.min(y.ncols() - first));
            let alpha: Vec<f64> = (0..y.ncols())
                .map(|j| (y[(self.proper.full, j)] - y[(self.proper.empty, j)]) * inv_n)
                .collect();
            let sums = self.weighted_sums(y, &alpha, cancel)?;
            for start in (0..y.ncols()).step_by(COLUMN_BLOCK) {
                let width = COLUMN_BLOCK.min(y.ncols() - start);
                let mut rhs = sums.subcols(start, width).to_owned();
                for j in 0..width {
                    let mean = rhs.col(j).iter().sum::<f64>() * inv_n;
                    rhs.col_mut(j).iter_mut().for_each(|x| *x -= mean);
                }
                solve_in_place(
                    self.factor.as_ref(),
                    rhs.as_mut(),
                    Par::Seq,
                    MemStack::new(&mut []),
                );
                for j in 0..width {
                    let col = rhs.col(j);
                    let mean = col.iter().sum::<f64>() * inv_n;
                    for i in 0..n {
                        phi[(i, first + start + j)] = alpha[start + j] + col[i] - mean;
                    }
                }
            }
        }
        Ok(())
    }

    /// The operator's columns `P (XᵀX)⁺ P z_r ω_r` (`n × rows.len()`) of the design rows
    /// `rows`: what [`NormalSolver::apply`] multiplies each row's residual by.
    pub fn columns(&self, design: &Design, rows: &[usize]) -> Mat<f64> {
        let n = self.n;
        let inv_n = 1.0 / n as f64;
        let mut k = Mat::from_fn(n, rows.len(), |i, b| {
            let r = rows[b];
            let z = f64::from(u8::from(design.coalitions.contains(r, i)));
            design.weights[r] * (z - design.coalitions.size(r) as f64 * inv_n)
        });
        k.par_col_chunks_mut(COLUMN_BLOCK).for_each(|mut block| {
            solve_in_place(
                self.factor.as_ref(),
                block.as_mut(),
                Par::Seq,
                MemStack::new(&mut []),
            );
            for j in 0..block.ncols() {
                let mean = block.as_ref().col(j).iter().sum::<f64>() * inv_n;
                block
                    .as_mut()
                    .col_mut(j)
                    .iter_mut()
                    .for_each(|x| *x -= mean);
            }
        });
        k
    }

    /// `Zᵀ diag(ω) r` (`n × width`) with `r_p = y_p − y_∅ − α s_p`, over fixed row blocks in
    /// parallel, summed in block order.
    fn weighted_sums(
        &self,
        y: MatRef<'_, f64>,
        alpha: &[f64],
        cancel: &Cancel,
    ) -> Result<Mat<f64>> {
        let (n, width) = (self.n, alpha.len());
        let m_p = self.proper.rows.len();
        let partials: Vec<Vec<f64>> = (0..m_p.div_ceil(ROW_BLOCK))
            .into_par_iter()
            .map(|block| {
                cancel.check()?;
                let mut acc = vec![0.0; n * width];
                let mut scaled = vec![0.0; width];
                for p in block * ROW_BLOCK..((block + 1) * ROW_BLOCK).min(m_p) {
                    let (row, size) = (self.proper.rows[p], self.proper.sizes[p] as f64);
                    for (j, s) in scaled.iter_mut().enumerate() {
                        let r = y[(row, j)] - y[(self.proper.empty, j)] - alpha[j] * size;
                        *s = self.weights[p] * r;
                    }
                    add_to_players(
                        &mut acc,
                        &self.bits[p * self.words..(p + 1) * self.words],
                        &scaled,
                    );
                }
                Ok(acc)
            })
            .collect::<Result<_>>()?;
        let mut total = vec![0.0; n * width];
        for part in &partials {
            total.iter_mut().zip(part).for_each(|(t, p)| *t += p);
        }
        Ok(Mat::from_fn(n, width, |i, j| total[i * width + j]))
    }
}

/// Adds `scaled` (one entry per column) to the row of `acc` (`n × scaled.len()`, row-major) of
/// every player of the packed coalition `mask`, with the widest vector instructions the CPU has.
/// Each entry's sum runs over the rows in the same order whatever the width, so the result is
/// bit for bit the same on every CPU.
fn add_to_players(acc: &mut [f64], mask: &[u64], scaled: &[f64]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2, checked just above.
        return unsafe { add_to_players_avx2(acc, mask, scaled) };
    }
    add_rows(acc, mask, scaled);
}

/// [`add_rows`] compiled with AVX2 (not in the baseline x86-64 target: twice its vector width).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn add_to_players_avx2(acc: &mut [f64], mask: &[u64], scaled: &[f64]) {
    add_rows(acc, mask, scaled);
}

/// The body of [`add_to_players`].
#[inline(always)]
fn add_rows(acc: &mut [f64], mask: &[u64], scaled: &[f64]) {
    let width = scaled.len();
    for_each_player(mask, |i| {
        let dst = &mut acc[i * width..(i + 1) * width];
        dst.iter_mut().zip(scaled).for_each(|(d, s)| *d += s);
    });
}

/// Calls `f` on every player of the packed coalition `mask`, in increasing order.
fn for_each_player(mask: &[u64], mut f: impl FnMut(usize)) {
    for (w, &word) in mask.iter().enumerate() {
        let mut rest = word;
        while rest != 0 {
            f(w * 64 + rest.trailing_zeros() as usize);
            rest &= rest - 1;
        }
    }
}

/// Players per tile of the Gram computation: a tile's bit sets stay in cache while every later
/// column streams past them once.
const TILE: usize = 8;

/// `P (Zᵀ diag(ω) Z) P` from the packed proper rows (`words` per row), through weighted
/// popcounts of column bit sets grouped by weight; polls `cancel` once per tile.
fn projected_gram(
    n: usize,
    bits: &[u64],
    words: usize,
    weights: &[f64],
    cancel: &Cancel,
) -> Result<Mat<f64>> {
    let columns = ColumnBits::new(n, bits, words, weights, cancel)?;
    // Tile t holds, for each j ≥ its first player, the overlaps of j with the tile's players.
    let tiles: Vec<Vec<[f64; TILE]>> = (0..n.div_ceil(TILE))
        .into_par_iter()
        .map(|t| {
            cancel.check()?;
            let first = t * TILE;
            Ok((first..n)
                .map(|j| columns.weighted_overlaps(first, j))
                .collect())
        })
        .collect::<Result<_>>()?;
    let mut gram = Mat::<f64>::zeros(n, n);
    for (t, tile) in tiles.iter().enumerate() {
        let first = t * TILE;
        for (k, overlaps) in tile.iter().enumerate() {
            let j = first + k;
            for (b, &value) in overlaps.iter().enumerate() {
                let i = first + b;
                if i <= j {
                    gram[(i, j)] = value;
                    gram[(j, i)] = value;
                }
            }
        }
    }
    let inv_n = 1.0 / n as f64;
    let sums: Vec<f64> = (0..n).map(|i| gram.col(i).iter().sum::<f64>()).collect();
    let total = sums.iter().sum::<f64>() * inv_n * inv_n;
    Ok(Mat::from_fn(n, n, |i, j| {
        gram[(i, j)] - (sums[i] + sums[j]) * inv_n + total
    }))
}

/// Each player's bit set over the proper rows, rows grouped by weight so that every word holds
/// rows of one weight only.
struct ColumnBits {
    /// `n × stride` words, player-major, then zero columns up to a whole number of tiles.
    bits: Vec<u64>,
    stride: usize,
    /// The weight of the rows in each word.
    word_weights: Vec<f64>,
}

impl ColumnBits {
    fn new(n: usize, rows: &[u64], words: usize, weights: &[f64], cancel: &Cancel) -> Result<Self> {
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let mut index: HashMap<u64, usize> = HashMap::new();
        for (p, w) in weights.iter().enumerate() {
            let g = *index.entry(w.to_bits()).or_insert_with(|| {
                groups.push(Vec::new());
                groups.len() - 1
            });
            groups[g].push(p);
        }
        let mut word_weights = Vec::new();
        let mut placement = vec![(0usize, 0u32); weights.len()];
        for group in &groups {
            let first = word_weights.len();
            for (t, &p) in group.iter().enumerate() {
                placement[p] = (first + t / 64, (t % 64) as u32);
            }
            word_weights.extend(std::iter::repeat_n(
                weights[group[0]],
                group.len().div_ceil(64),
            ));
        }
        let stride = word_weights.len();
        let mut bits = vec![0u64; n.div_ceil(TILE) * TILE * stride];
        for (p, &(word, bit)) in placement.iter().enumerate() {
            cancel.check()?;
            for_each_player(&rows[p * words..(p + 1) * words], |i| {
                bits[i * stride + word] |= 1 << bit;
            });
        }
        Ok(Self {
            bits,
            stride,
            word_weights,
        })
    }

    /// `Σ_p ω_p z_pi z_pj` for the players `i` of the tile starting at `first` (players past
    /// `n` give 0), against player `j`. Each sum runs over the words in order, so the value of
    /// an entry does not depend on the tiling, nor on whether the CPU's `popcnt` is used.
    fn weighted_overlaps(&self, first: usize, j: usize) -> [f64; TILE] {
        let column = |i: usize| &self.bits[i * self.stride..(i + 1) * self.stride];
        let tile: [&[u64]; TILE] = std::array::from_fn(|b| column(first + b));
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("popcnt") {
            // SAFETY: the CPU supports `popcnt`, checked just above.
            return unsafe { overlaps_popcnt(&tile, column(j), &self.word_weights) };
        }
        overlaps(&tile, column(j), &self.word_weights)
    }
}

/// [`overlaps`] compiled with the `popcnt` instruction (not in the baseline x86-64 target).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
fn overlaps_popcnt(tile: &[&[u64]; TILE], y: &[u64], weights: &[f64]) -> [f64; TILE] {
    overlaps(tile, y, weights)
}

/// `Σ_k weights[k] · popcount(x[k] ∧ y[k])` for each column `x` of `tile` (all sliced to one
/// length first, so that the loop runs without bounds checks). Plain index loops: measured a
/// third faster here than the iterator form, which LLVM unrolls less well.
#[inline(always)]
#[allow(clippy::needless_range_loop)]
fn overlaps(tile: &[&[u64]; TILE], y: &[u64], weights: &[f64]) -> [f64; TILE] {
    let len = y.len().min(weights.len());
    let (y, weights) = (&y[..len], &weights[..len]);
    let tile: [&[u64]; TILE] = std::array::from_fn(|b| &tile[b][..len]);
    let mut acc = [0.0; TILE];
    for k in 0..len {
        let (yk, w) = (y[k], weights[k]);
        for b in 0..TILE {
            acc[b] += w * f64::from((tile[b][k] & yk).count_ones());
        }
    }
    acc
}

/// A deterministic start vector with no special alignment to the problem's structure.
fn start_vector(n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| 1.0 + ((i as f64 + 1.0) * 0.618_033_988_75).fract())
        .collect()
}

fn normalize(v: &mut [f64]) -> f64 {
    let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    norm
}

/// Largest eigenvalue of the symmetric positive semi-definite `a`, by power iteration.
fn largest_eigenvalue(a: MatRef<'_, f64>, cancel: &Cancel) -> Result<f64> {
    let n = a.nrows();
    let mut v = start_vector(n);
    normalize(&mut v);
    let mut lambda = 0.0;
    for _ in 0..CONDITION_ITERATIONS {
        cancel.check()?;
        let mut w: Vec<f64> = (0..n)
            .map(|i| (0..n).map(|j| a[(j, i)] * v[j]).sum())
            .collect();
        lambda = normalize(&mut w);
        v = w;
    }
    Ok(lambda)
}

/// Rows and columns per step of [`cholesky`]: the top-level block of faer's LLᵀ factorization
/// (its `LltParams` default), from this order on ([`CHOLESKY_UNBLOCKED`] and below, one kernel).
const CHOLESKY_BLOCK: usize = 128;
const CHOLESKY_UNBLOCKED: usize = 64;

/// faer's in-place lower Cholesky factorization, run one block column at a time as faer's own
/// top level runs it, polling `cancel` between blocks: faer factors each diagonal block, solves
/// the panel below it and updates the trailing matrix with the same calls, so the factor is
/// bit-for-bit that of one `cholesky_in_place` call (a test checks it). The upper triangle is
/// left as it was.
fn cholesky(mut a: MatMut<'_, f64>, cancel: &Cancel) -> std::result::Result<(), Declined> {
    let n = a.nrows();
    let block = if n <= CHOLESKY_UNBLOCKED {
        n
    } else {
        (n.next_power_of_two() / 2).min(CHOLESKY_BLOCK)
    };
    let scratch = cholesky_in_place_scratch::<f64>(block, Par::Seq, Default::default());
    let mut buffer = MemBuffer::new(scratch);
    let mut j = 0;
    while j < n {
        cancel.check()?;
        let b = block.min(n - j);
        let (mut diagonal, _, mut panel, mut trailing) =
            a.as_mut().get_mut(j.., j..).split_at_mut(b, b);
        cholesky_in_place(
            diagonal.as_mut(),
            Default::default(),
            Par::Seq,
            MemStack::new(&mut buffer),
            Default::default(),
        )
        .map_err(|_| Declined::NotPositiveDefinite)?;
        solve_lower_triangular_in_place(
            diagonal.as_ref(),
            panel.as_mut().transpose_mut(),
            Par::Seq,
        );
        matmul(
            trailing.as_mut(),
            BlockStructure::TriangularLower,
            Accum::Add,
            panel.as_ref(),
            BlockStructure::Rectangular,
            panel.as_ref().transpose(),
            BlockStructure::Rectangular,
            -1.0,
            Par::Seq,
        );
        j += b;
    }
    Ok(())
}

/// Smallest eigenvalue of `L Lᵀ` from its lower Cholesky factor, by inverse iteration.
fn smallest_eigenvalue(factor: MatRef<'_, f64>, cancel: &Cancel) -> Result<f64> {
    let n = factor.nrows();
    let start = start_vector(n);
    let mut v = Mat::from_fn(n, 1, |i, _| start[i]);
    let mut growth = 0.0;
    for _ in 0..CONDITION_ITERATIONS {
        cancel.check()?;
        let norm = v.col(0).iter().map(|x| x * x).sum::<f64>().sqrt();
        v.col_mut(0).iter_mut().for_each(|x| *x /= norm);
        solve_in_place(factor, v.as_mut(), Par::Seq, MemStack::new(&mut []));
        growth = v.col(0).iter().map(|x| x * x).sum::<f64>().sqrt();
    }
    Ok(1.0 / growth)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A symmetric positive definite matrix with no structure faer could exploit.
    fn spd(n: usize) -> Mat<f64> {
        let b = Mat::from_fn(n, n, |i, j| ((i * 7 + j * 13) % 17) as f64 / 17.0 - 0.5);
        let mut a = &b * b.transpose();
        for i in 0..n {
            a[(i, i)] += n as f64;
        }
        a
    }

    #[test]
    fn the_blocked_cholesky_is_faers_bit_for_bit() {
        for n in [1, 5, 64, 65, 127, 128, 129, 200, 300, 513] {
            let a = spd(n);
            let mut expected = a.clone();
            let scratch = cholesky_in_place_scratch::<f64>(n, Par::Seq, Default::default());
            cholesky_in_place(
                expected.as_mut(),
                Default::default(),
                Par::Seq,
                MemStack::new(&mut MemBuffer::new(scratch)),
                Default::default(),
            )
            .unwrap();
            let mut got = a.clone();
            cholesky(got.as_mut(), Cancel::never()).unwrap();
            for j in 0..n {
                for i in j..n {
                    assert_eq!(
                        got[(i, j)].to_bits(),
                        expected[(i, j)].to_bits(),
                        "n = {n}, ({i}, {j})"
                    );
                }
            }
        }
    }

    #[test]
    fn a_cancelled_cholesky_and_gram_stop() {
        let cancel = Cancel::new();
        cancel.cancel();
        let mut a = spd(200);
        assert_eq!(cholesky(a.as_mut(), &cancel), Err(Declined::Cancelled));
        let bits = vec![u64::MAX; 10];
        let gram = projected_gram(8, &bits, 1, &[1.0; 10], &cancel);
        assert_eq!(gram.unwrap_err(), CoreError::Cancelled);
        assert_eq!(
            largest_eigenvalue(a.as_ref(), &cancel),
            Err(CoreError::Cancelled)
        );
    }
}
