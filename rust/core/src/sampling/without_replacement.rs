//! Without-replacement designs (LeverageSHAP style, docs/estimators.md): per-size inclusion
//! probabilities from one constant `c`, deterministic per-size counts that hit the budget exactly,
//! distinct uniform subsets within each size, optional pairing with complements; `kernel-wor`
//! enumerates the border sizes 1 and `n − 1` first where the budget holds them.

use rand::Rng;

use crate::cancel::Cancel;
use crate::coalitions::{binomial_f64, complement, insert, ln_binomial};
use crate::error::Result;
use crate::sampling::design::CoalitionSet;
use crate::sampling::layers::distinct_subsets;
use crate::sampling::sizes::SizeDistribution;

/// How a without-replacement design spreads its budget over coalition sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SizePlan {
    /// The weight of each size.
    pub dist: SizeDistribution,
    /// Whether each sampled coalition comes with its complement.
    pub paired: bool,
    /// Whether the border sizes 1 and `n − 1` are enumerated before anything else is drawn,
    /// whenever the budget holds their `2 n` coalitions (`kernel-wor`): each player's own pair
    /// `{i}`, `N ∖ {i}` measures its effect directly and makes the design full rank.
    pub border_first: bool,
}

/// Adds `sampled_budget` distinct proper coalitions to `set` and gives each the weight
/// `w(s) / π_s = 1 / (s (n − s) m_s)`, where `m_s` is the number of size-`s` coalitions drawn.
///
/// `sampled_budget` must be below `2^n − 2` (callers enumerate otherwise) and even when paired.
/// Polls `cancel` once per coalition.
pub fn sample_without_replacement<R: Rng>(
    set: &mut CoalitionSet,
    rng: &mut R,
    n: usize,
    sampled_budget: u64,
    plan: SizePlan,
    cancel: &Cancel,
) -> Result<()> {
    if sampled_budget == 0 || n < 2 {
        return Ok(());
    }
    let SizePlan { dist, paired, .. } = plan;
    let border = 2 * n as u64;
    let expected = if plan.border_first && n >= 4 && sampled_budget >= border {
        let mut inner = layer_counts_between(n, (sampled_budget - border) as f64, dist, 2);
        inner[1] = n as f64;
        inner[n - 1] = n as f64;
        inner
    } else {
        expected_layer_counts(n, sampled_budget as f64, dist)
    };
    let groups = layer_groups(n, paired);
    let targets: Vec<f64> = groups.iter().map(|g| g.units(&expected)).collect();
    let caps: Vec<f64> = groups.iter().map(|g| g.pool_size(n)).collect();
    let total_units = if paired {
        sampled_budget / 2
    } else {
        sampled_budget
    };
    let units = apportion(&targets, &caps, total_units);

    let mut counts = vec![0usize; n + 1];
    for (group, &k) in groups.iter().zip(&units) {
        let k = k as usize;
        if k == 0 {
            continue;
        }
        match group {
            LayerGroup::Single(s) => {
                for mask in distinct_subsets(rng, n, *s, k, n, cancel)? {
                    cancel.check()?;
                    set.add(mask, 1.0);
                }
                counts[*s] += k;
            }
            LayerGroup::Pair(s) => {
                for mask in distinct_subsets(rng, n, *s, k, n, cancel)? {
                    cancel.check()?;
                    set.add(complement(&mask, n), 1.0);
                    set.add(mask, 1.0);
                }
                counts[*s] += k;
                counts[n - s] += k;
            }
            LayerGroup::Middle(s) => {
                // Unordered pairs {S, N∖S} of the middle size: the member holding player n − 1.
                for mut mask in distinct_subsets(rng, n - 1, s - 1, k, n, cancel)? {
                    cancel.check()?;
                    insert(&mut mask, n - 1);
                    set.add(complement(&mask, n), 1.0);
                    set.add(mask, 1.0);
                }
                counts[*s] += 2 * k;
            }
        }
    }
    set.rescale(|s| {
        if s == 0 || s == n || counts[s] == 0 {
            1.0
        } else {
            1.0 / ((s * (n - s)) as f64 * counts[s] as f64)
        }
    });
    Ok(())
}

/// Expected number of size-`s` coalitions, `min(C(n, s), c d_s)`, with `c` solving
/// `Σ_s min(C(n, s), c d_s) = budget` in closed form. Index 0 and `n` are unused (zero).
pub fn expected_layer_counts(n: usize, budget: f64, dist: SizeDistribution) -> Vec<f64> {
    layer_counts_between(n, budget, dist, 1)
}

/// [`expected_layer_counts`] over the sizes `first..=n − first` only (the others zero).
fn layer_counts_between(n: usize, budget: f64, dist: SizeDistribution, first: usize) -> Vec<f64> {
    let sizes: Vec<usize> = (first..=n - first).collect();
    if sizes.is_empty() {
        return vec![0.0; n + 1];
    }
    let d: Vec<f64> = (0..=n)
        .map(|s| {
            if s < first || s > n - first {
                0.0
            } else {
                dist.weight(n, s)
            }
        })
        .collect();
    // Breakpoint of size s: the c at which the layer saturates, C(n, s) / d_s (log space).
    let mut order = sizes.clone();
    let ln_break = |s: usize| ln_binomial(n as u64, s as u64) - d[s].ln();
    order.sort_by(|&a, &b| ln_break(a).total_cmp(&ln_break(b)).then(a.cmp(&b)));

    let mut saturated_total = 0.0;
    let mut unsaturated_d: f64 = sizes.iter().map(|&s| d[s]).sum();
    let mut k = 0;
    let c = loop {
        let c = (budget - saturated_total) / unsaturated_d;
        if k + 1 >= order.len() || c.ln() < ln_break(order[k]) {
            break c;
        }
        saturated_total += binomial_f64(n as u64, order[k] as u64);
        unsaturated_d -= d[order[k]];
        k += 1;
    };
    (0..=n)
        .map(|s| {
            if d[s] == 0.0 {
                0.0
            } else {
                (c * d[s]).min(binomial_f64(n as u64, s as u64))
            }
        })
        .collect()
}

/// Sizes that are drawn together: alone (unpaired), with their complement size, or the middle
/// size of an even `n` drawn as unordered complementary pairs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LayerGroup {
    Single(usize),
    Pair(usize),
    Middle(usize),
}

impl LayerGroup {
    /// Expected number of draws (units) this group receives.
    fn units(self, expected: &[f64]) -> f64 {
        match self {
            Self::Single(s) | Self::Pair(s) => expected[s],
            Self::Middle(s) => expected[s] / 2.0,
        }
    }

    /// How many distinct units exist.
    fn pool_size(self, n: usize) -> f64 {
        match self {
            Self::Single(s) | Self::Pair(s) => binomial_f64(n as u64, s as u64),
            Self::Middle(s) => binomial_f64(n as u64 - 1, s as u64 - 1),
        }
    }
}

fn layer_groups(n: usize, paired: bool) -> Vec<LayerGroup> {
    if !paired {
        return (1..n).map(LayerGroup::Single).collect();
    }
    (1..=n / 2)
        .map(|s| {
            if 2 * s == n {
                LayerGroup::Middle(s)
            } else {
                LayerGroup::Pair(s)
            }
        })
        .collect()
}

/// Integer counts close to `targets` (largest remainder), each at most its cap, summing to `total`.
///
/// Requires `total ≤ Σ caps`. Ties go to the earlier entry, so the result is deterministic.
pub fn apportion(targets: &[f64], caps: &[f64], total: u64) -> Vec<u64> {
    let mut counts: Vec<u64> = targets
        .iter()
        .zip(caps)
        .map(|(t, c)| t.min(*c).max(0.0).floor() as u64)
        .collect();
    let mut order: Vec<usize> = (0..targets.len()).collect();
    let frac = |i: usize| targets[i] - targets[i].floor();
    order.sort_by(|&a, &b| frac(b).total_cmp(&frac(a)).then(a.cmp(&b)));
    let assigned: u64 = counts.iter().sum();
    if assigned > total {
        let mut excess = assigned - total;
        while excess > 0 {
            for &i in order.iter().rev() {
                if excess > 0 && counts[i] > 0 {
                    counts[i] -= 1;
                    excess -= 1;
                }
            }
        }
    } else {
        let mut missing = total - assigned;
        while missing > 0 {
            let before = missing;
            for &i in &order {
                if missing > 0 && ((counts[i] + 1) as f64) <= caps[i] {
                    counts[i] += 1;
                    missing -= 1;
                }
            }
            if before == missing {
                break; // every cap reached: total exceeded the pool (caller's precondition)
            }
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn expected_counts_hit_the_budget_and_saturate_small_layers() {
        let n = 12;
        let e = expected_layer_counts(n, 300.0, SizeDistribution::Leverage);
        let total: f64 = e.iter().sum();
        assert!((total - 300.0).abs() < 1e-9, "{total}");
        assert_eq!(e[1], 12.0); // C(12,1) = 12 < c: saturated
        assert!(e[6] < binomial_f64(12, 6));
        for s in 1..n {
            assert!((e[s] - e[n - s]).abs() < 1e-9);
        }
    }

    #[test]
    fn the_kernel_border_comes_first_when_the_budget_holds_it() {
        let sizes_of = |n: usize, budget: u64, paired: bool, border_first: bool| {
            let mut rng = ChaCha8Rng::seed_from_u64(3);
            let mut set = CoalitionSet::new(n);
            let dist = SizeDistribution::Kernel;
            let plan = SizePlan {
                dist,
                paired,
                border_first,
            };
            sample_without_replacement(&mut set, &mut rng, n, budget, plan, Cancel::never())
                .unwrap();
            assert_eq!(set.len() as u64, budget);
            let coalitions = set.into_parts().0;
            let count = |s| {
                (0..budget as usize)
                    .filter(|&r| coalitions.size(r) == s)
                    .count()
            };
            (count(1), count(n - 1))
        };
        for (n, budget, paired) in [
            (12, 34, true),
            (12, 24, true),
            (13, 31, false),
            (30, 88, true),
        ] {
            assert_eq!(
                sizes_of(n, budget, paired, true),
                (n, n),
                "n = {n}, {budget}"
            );
            // the kernel's own share of these budgets leaves part of the border out
            let (small, large) = sizes_of(n, budget, paired, false);
            assert!(
                small < n && large < n,
                "n = {n}, {budget}: {small}, {large}"
            );
        }
        // short of the border's 2n coalitions, the plain kernel counts
        assert_eq!(sizes_of(12, 22, true, true), sizes_of(12, 22, true, false));
    }

    #[test]
    fn apportion_is_exact_and_capped() {
        let counts = apportion(&[1.4, 2.4, 3.2], &[10.0, 2.0, 10.0], 7);
        assert_eq!(counts.iter().sum::<u64>(), 7);
        assert!(counts[1] <= 2);
        assert_eq!(apportion(&[0.5, 0.5], &[1.0, 1.0], 1), vec![1, 0]);
    }

    #[test]
    fn paired_design_hits_the_budget_exactly_with_complements() {
        for n in [7, 8, 40, 300] {
            let mut rng = ChaCha8Rng::seed_from_u64(5);
            let mut set = CoalitionSet::new(n);
            let plan = SizePlan {
                dist: SizeDistribution::Leverage,
                paired: true,
                border_first: false,
            };
            sample_without_replacement(&mut set, &mut rng, n, 100, plan, Cancel::never()).unwrap();
            assert_eq!(set.len(), 100, "n = {n}");
            let (coalitions, weights) = set.into_parts();
            for (row, w) in weights.iter().enumerate() {
                let c = complement(coalitions.row(row), n);
                assert!((0..coalitions.n_rows()).any(|r| coalitions.row(r) == c.as_slice()));
                assert!(*w > 0.0);
            }
        }
    }

    #[test]
    fn huge_player_counts_do_not_overflow() {
        let n = 4096;
        let mut rng = ChaCha8Rng::seed_from_u64(6);
        let mut set = CoalitionSet::new(n);
        let plan = SizePlan {
            dist: SizeDistribution::Kernel,
            paired: true,
            border_first: true,
        };
        sample_without_replacement(&mut set, &mut rng, n, 2000, plan, Cancel::never()).unwrap();
        assert_eq!(set.len(), 2000);
        let (_, weights) = set.into_parts();
        assert!(weights.iter().all(|w| w.is_finite() && *w > 0.0));
    }
}
