//! Plan: sketch parameters from a budget, subsampling matrices and delays from a seed, and the
//! distinct query sequences the model is evaluated on (docs/sketch.md, "Recovering the spectrum").

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use super::qary::{check_alphabet, checked_bins};
use crate::error::{CoreError, Result};

/// Fewest subsampling groups a sketch uses; peeling needs at least three hashes per key.
pub const MIN_GROUPS: usize = 3;

/// Most held-out random queries a budget spends on tuning the noise threshold.
pub const MAX_HOLDOUT: u64 = 2000;

/// Random stream of the subsampling matrices.
const STREAM_MATRICES: u64 = 1;
/// Random stream of the delay offsets.
const STREAM_OFFSETS: u64 = 2;
/// Random stream of the held-out queries.
const STREAM_HOLDOUT: u64 = 3;

/// The shape of a sketch: alphabet size, length, and how the queries are subsampled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SketchParams {
    /// Alphabet size `q` (2..=256).
    pub q: usize,
    /// Sequence length `n`.
    pub n: usize,
    /// Subsampling dimension: each group hashes keys into `q^b` bins.
    pub b: usize,
    /// Number of subsampling groups `C` (at least [`MIN_GROUPS`]).
    pub groups: usize,
    /// Number of random delay offsets `P1`; each brings `n + 1` delays.
    pub offsets: usize,
    /// Number of held-out uniform random queries used to tune the noise threshold.
    pub holdout: usize,
}

/// Held-out queries a budget reserves: a tenth of it, at most [`MAX_HOLDOUT`].
pub fn holdout_for(budget: u64) -> u64 {
    (budget / 10).min(MAX_HOLDOUT)
}

impl SketchParams {
    /// Checks the parameters and that their queries fit in `budget`.
    pub fn validate(&self, budget: u64) -> Result<()> {
        check_alphabet(self.q)?;
        if self.n == 0 {
            return Err(CoreError::invalid("length", "must be at least 1, got 0"));
        }
        if self.offsets == 0 {
            return Err(CoreError::invalid("offsets", "must be at least 1, got 0"));
        }
        if self.b == 0 || self.b > self.n {
            return Err(CoreError::invalid(
                "b",
                format!("must be in 1..={} (the length), got {}", self.n, self.b),
            ));
        }
        if self.holdout == 0 {
            return Err(CoreError::invalid(
                "holdout",
                "must be at least 1: the noise threshold is tuned on held-out queries",
            ));
        }
        if self.groups < MIN_GROUPS {
            return Err(CoreError::invalid(
                "groups",
                format!("must be at least {MIN_GROUPS}, got {}", self.groups),
            ));
        }
        let total = self
            .nominal_sketch_queries()?
            .checked_add(self.holdout as u64)
            .ok_or_else(|| CoreError::invalid("b", "the number of queries overflows"))?;
        if total > budget {
            return Err(CoreError::invalid(
                "budget",
                format!(
                    "b={}, groups={}, offsets={} and {} held-out queries need {total} queries, \
                     more than the budget {budget}",
                    self.b, self.groups, self.offsets, self.holdout
                ),
            ));
        }
        Ok(())
    }

    /// Number of bins per group, `q^b`.
    pub fn bins(&self) -> Result<usize> {
        checked_bins(self.q, self.b)
    }

    /// Number of delays `P = offsets · (n + 1)`.
    pub fn delays(&self) -> usize {
        self.offsets * (self.n + 1)
    }

    /// Sketch queries before duplicates are removed: `q^b · groups · offsets · (n + 1)`.
    pub fn nominal_sketch_queries(&self) -> Result<u64> {
        let overflow = || CoreError::invalid("b", "the number of sketch queries overflows");
        let per_bin = (self.offsets as u64)
            .checked_mul(self.n as u64 + 1)
            .ok_or_else(overflow)?;
        (self.bins()? as u64)
            .checked_mul(self.groups as u64)
            .and_then(|x| x.checked_mul(per_bin))
            .ok_or_else(overflow)
    }

    /// Parameters from a budget (docs/sketch.md): a tenth of the budget (at most [`MAX_HOLDOUT`])
    /// is held out; the largest `b ≤ n` with [`MIN_GROUPS`] groups fits the rest; what remains buys
    /// more groups.
    pub fn from_budget(q: usize, n: usize, budget: u64, offsets: usize) -> Result<Self> {
        check_alphabet(q)?;
        let mut params = Self {
            q,
            n,
            b: 1,
            groups: MIN_GROUPS,
            offsets,
            holdout: holdout_for(budget) as usize,
        };
        let minimum = params.minimum_budget()?;
        if budget < minimum {
            return Err(CoreError::invalid(
                "budget",
                format!(
                    "too small for any b: q={q}, length={n} and offsets={offsets} need a budget \
                     of at least {minimum}, got {budget}"
                ),
            ));
        }
        let sketch = budget - params.holdout as u64;
        let per_bin = (offsets as u64) * (n as u64 + 1);
        while params.b < n {
            let wider = Self {
                b: params.b + 1,
                ..params
            };
            match wider.bins() {
                Ok(bins) if (bins as u64).saturating_mul(per_bin * MIN_GROUPS as u64) <= sketch => {
                    params = wider
                }
                _ => break,
            }
        }
        let per_group = params.bins()? as u64 * per_bin;
        params.groups = usize::try_from(sketch / per_group).unwrap_or(usize::MAX);
        params.validate(budget)?;
        Ok(params)
    }

    /// The smallest budget that buys `b = 1` with [`MIN_GROUPS`] groups plus its held-out set.
    pub fn minimum_budget(&self) -> Result<u64> {
        if self.n == 0 {
            return Err(CoreError::invalid("length", "must be at least 1, got 0"));
        }
        if self.offsets == 0 {
            return Err(CoreError::invalid("offsets", "must be at least 1, got 0"));
        }
        let need = Self {
            b: 1,
            groups: MIN_GROUPS,
            ..*self
        }
        .nominal_sketch_queries()?;
        let mut budget = need;
        while budget - holdout_for(budget) < need {
            budget += 1;
        }
        Ok(budget)
    }
}

/// A planned sketch: matrices, delays and the distinct queries, all reproducible from the seed.
#[derive(Debug, Clone)]
pub struct SketchPlan {
    /// The parameters the plan was built with.
    pub params: SketchParams,
    /// The budget the plan was built for.
    pub budget: u64,
    /// The seed of every random choice.
    pub seed: u64,
    /// Subsampling matrices, `groups × n × b`, row-major (`M_c[i][t]`).
    pub(crate) matrices: Vec<u8>,
    /// Delays, `P × n`; row `p (n + 1)` is offset `r_p`, row `p (n + 1) + 1 + i` is `r_p − e_i`.
    pub(crate) delays: Vec<u8>,
    /// Distinct query sequences, `m × n`, in order of first use.
    pub(crate) queries: Vec<u8>,
    /// For each sketch sample `(group, delay, ℓ)` (row-major), its row in `queries`.
    pub(crate) sample_rows: Vec<u32>,
    /// For each held-out query, its row in `queries`.
    pub(crate) holdout_rows: Vec<u32>,
}

impl SketchPlan {
    /// Plans a sketch with explicit parameters (validated against `budget`).
    pub fn new(params: SketchParams, budget: u64, seed: u64) -> Result<Self> {
        params.validate(budget)?;
        let (q, n, b) = (params.q, params.n, params.b);
        let bins = params.bins()?;
        let uniform = |stream: u64, count: usize| -> Vec<u8> {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            rng.set_stream(stream);
            (0..count).map(|_| rng.random_range(0..q) as u8).collect()
        };
        let matrices = uniform(STREAM_MATRICES, params.groups * n * b);
        let offsets = uniform(STREAM_OFFSETS, params.offsets * n);
        let mut delays = Vec::with_capacity(params.delays() * n);
        for offset in offsets.chunks_exact(n) {
            delays.extend_from_slice(offset);
            for i in 0..n {
                delays.extend_from_slice(offset);
                let at = delays.len() - n + i;
                delays[at] = ((usize::from(delays[at]) + q - 1) % q) as u8;
            }
        }
        let samples = params.groups * params.delays() * bins;
        let total = samples + params.holdout;
        let too_large = || {
            CoreError::invalid(
                "budget",
                format!("{total} queries of length {n} do not fit in memory"),
            )
        };
        let mut nominal: Vec<u8> = Vec::new();
        nominal
            .try_reserve_exact(total.checked_mul(n).ok_or_else(too_large)?)
            .map_err(|_| too_large())?;
        for group in matrices.chunks_exact(n * b) {
            let hashed = subsampled(group, q, n, b, bins);
            for delay in delays.chunks_exact(n) {
                for row in hashed.chunks_exact(n) {
                    nominal.extend(
                        row.iter()
                            .zip(delay)
                            .map(|(&h, &d)| ((usize::from(h) + usize::from(d)) % q) as u8),
                    );
                }
            }
        }
        nominal.extend(uniform(STREAM_HOLDOUT, params.holdout * n));
        let (queries, rows) = deduplicate(&nominal, n).ok_or_else(too_large)?;
        let holdout_rows = rows[samples..].to_vec();
        let mut sample_rows = rows;
        sample_rows.truncate(samples);
        Ok(Self {
            params,
            budget,
            seed,
            matrices,
            delays,
            queries,
            sample_rows,
            holdout_rows,
        })
    }

    /// Plans a sketch whose parameters follow from `budget` ([`SketchParams::from_budget`]).
    pub fn from_budget(q: usize, n: usize, budget: u64, offsets: usize, seed: u64) -> Result<Self> {
        Self::new(
            SketchParams::from_budget(q, n, budget, offsets)?,
            budget,
            seed,
        )
    }

    /// The distinct query sequences, `m × n` codes, row-major.
    pub fn queries(&self) -> &[u8] {
        &self.queries
    }

    /// Number of distinct queries `m` (held-out ones included): what the model is evaluated on.
    pub fn n_queries(&self) -> usize {
        self.queries.len() / self.params.n
    }

    /// The bin of `key` in `group`: `M_cᵀ k mod q` as a big-endian index.
    pub(crate) fn bin_of(&self, group: usize, key: &[u8]) -> usize {
        let (q, n, b) = (self.params.q, self.params.n, self.params.b);
        let matrix = &self.matrices[group * n * b..(group + 1) * n * b];
        (0..b).fold(0, |index, t| {
            let digit = key
                .iter()
                .enumerate()
                .map(|(i, &k)| usize::from(k) * usize::from(matrix[i * b + t]))
                .sum::<usize>()
                % q;
            index * q + digit
        })
    }
}

/// `M ℓ mod q` for every `ℓ ∈ Z_q^b` (big-endian order), `q^b × n`.
///
/// Row `ℓ` comes from row `ℓ − q^s` (the same `ℓ` with its lowest non-zero digit, of weight
/// `q^s`, one smaller) plus the matching column of `M`, so each row costs `O(n)`.
fn subsampled(matrix: &[u8], q: usize, n: usize, b: usize, bins: usize) -> Vec<u8> {
    let mut rows = vec![0u8; bins * n];
    for index in 1..bins {
        let (mut rest, mut weight, mut power) = (index, 1, 0);
        while rest % q == 0 {
            rest /= q;
            weight *= q;
            power += 1;
        }
        let column = b - 1 - power;
        let (done, todo) = rows.split_at_mut(index * n);
        let previous = &done[(index - weight) * n..(index - weight + 1) * n];
        for (i, slot) in todo[..n].iter_mut().enumerate() {
            *slot = ((usize::from(previous[i]) + usize::from(matrix[i * b + column])) % q) as u8;
        }
    }
    rows
}

/// The distinct rows of `nominal` (`len × n`) in order of first appearance, and for each nominal
/// row its distinct row; `None` if the row count overflows a `u32`.
fn deduplicate(nominal: &[u8], n: usize) -> Option<(Vec<u8>, Vec<u32>)> {
    let count = nominal.len() / n;
    u32::try_from(count).ok()?;
    let row = |i: u32| &nominal[i as usize * n..(i as usize + 1) * n];
    let mut order: Vec<u32> = (0..count as u32).collect();
    order.par_sort_unstable_by(|&a, &b| row(a).cmp(row(b)).then(a.cmp(&b)));
    // first[i]: the first nominal row equal to row i.
    let mut first = vec![0u32; count];
    let mut start = 0;
    while start < count {
        let mut end = start + 1;
        while end < count && row(order[end]) == row(order[start]) {
            end += 1;
        }
        for &i in &order[start..end] {
            first[i as usize] = order[start];
        }
        start = end;
    }
    let mut distinct = Vec::new();
    let mut rows = vec![0u32; count];
    let mut assigned = vec![u32::MAX; count];
    for i in 0..count {
        let f = first[i] as usize;
        if assigned[f] == u32::MAX {
            assigned[f] = (distinct.len() / n) as u32;
            distinct.extend_from_slice(row(f as u32));
        }
        rows[i] = assigned[f];
    }
    Some((distinct, rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_rule_maximises_b_then_groups() {
        // q = 4, n = 20, budget 12 096: 1 209 held out, then b = 3 (64 · 3 · 21 ≤ 10 887) and
        // 8 groups of 64 · 21 queries.
        let p = SketchParams::from_budget(4, 20, 12_096, 1).unwrap();
        assert_eq!((p.b, p.groups, p.holdout), (3, 8, 1209));
        assert!(p.nominal_sketch_queries().unwrap() + p.holdout as u64 <= 12_096);
    }

    #[test]
    fn too_small_budget_names_the_minimum() {
        let p = SketchParams::from_budget(4, 10, 100, 1).unwrap_err();
        let minimum = 3 * 4 * 11 + 14; // 132 sketch queries + a tenth held out
        assert!(
            p.to_string().contains(&format!("at least {minimum}")),
            "{p}"
        );
        assert!(SketchParams::from_budget(4, 10, minimum, 1).is_ok());
        assert!(SketchParams::from_budget(4, 10, minimum - 1, 1).is_err());
    }

    #[test]
    fn queries_are_distinct_and_cover_every_sample() {
        let plan = SketchPlan::from_budget(3, 6, 2000, 1, 7).unwrap();
        let n = plan.params.n;
        let m = plan.n_queries();
        let mut seen: Vec<&[u8]> = plan.queries.chunks_exact(n).collect();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), m);
        // ℓ = 0 repeats the delay in every group: at least (groups − 1) · P duplicates.
        let nominal = plan.sample_rows.len() + plan.params.holdout;
        assert!(m <= nominal - (plan.params.groups - 1) * plan.params.delays());
        // Every sample's row holds M_c ℓ + d_r.
        let (q, b, bins) = (3usize, plan.params.b, plan.params.bins().unwrap());
        for (s, &r) in plan.sample_rows.iter().enumerate() {
            let (group, rest) = (
                s / (plan.params.delays() * bins),
                s % (plan.params.delays() * bins),
            );
            let (delay, ell) = (rest / bins, rest % bins);
            let digits: Vec<usize> = (0..b)
                .map(|t| ell / q.pow((b - 1 - t) as u32) % q)
                .collect();
            for i in 0..n {
                let mut m_i = usize::from(plan.delays[delay * n + i]);
                for (t, &d) in digits.iter().enumerate() {
                    m_i += usize::from(plan.matrices[group * n * b + i * b + t]) * d;
                }
                assert_eq!(usize::from(plan.queries[r as usize * n + i]), m_i % q);
            }
        }
    }

    #[test]
    fn same_seed_same_plan() {
        let a = SketchPlan::from_budget(4, 8, 5000, 1, 3).unwrap();
        let b = SketchPlan::from_budget(4, 8, 5000, 1, 3).unwrap();
        let c = SketchPlan::from_budget(4, 8, 5000, 1, 4).unwrap();
        assert_eq!(a.queries, b.queries);
        assert_ne!(a.queries, c.queries);
    }

    #[test]
    fn explicit_parameters_are_checked() {
        let p = SketchParams {
            q: 4,
            n: 10,
            b: 3,
            groups: 3,
            offsets: 1,
            holdout: 10,
        };
        assert!(p.validate(10_000).is_ok());
        assert!(SketchParams { holdout: 0, ..p }.validate(10_000).is_err());
        assert!(SketchParams { b: 11, ..p }.validate(u64::MAX).is_err());
        assert!(SketchParams { groups: 2, ..p }.validate(u64::MAX).is_err());
        assert!(p
            .validate(100)
            .unwrap_err()
            .to_string()
            .starts_with("budget"));
        let huge = SketchParams {
            q: 256,
            n: 40,
            b: 40,
            ..p
        };
        assert!(huge
            .validate(u64::MAX)
            .unwrap_err()
            .to_string()
            .contains("overflows"));
    }
}
