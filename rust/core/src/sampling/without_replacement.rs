//! Without-replacement designs (LeverageSHAP style, docs/estimators.md): per-size inclusion
//! probabilities from one constant `c`, deterministic per-size counts that hit the budget exactly,
//! distinct uniform subsets within each size, optional pairing with complements.

use rand::Rng;

use crate::cancel::Cancel;
use crate::coalitions::{binomial_f64, complement, insert, ln_binomial};
use crate::error::Result;
use crate::sampling::design::CoalitionSet;
use crate::sampling::layers::distinct_subsets;
use crate::sampling::sizes::SizeDistribution;

/// Adds `sampled_budget` distinct proper coalitions to `set` and gives each the weight
/// `w(s) / π_s = 1 / (s (n − s) m_s)`, where `m_s` is the number of size-`s` coalitions drawn.
///
/// `sampled_budget` must be below `2^n − 2` (callers enumerate otherwise) and even when `paired`.
/// Polls `cancel` once per coalition.
pub fn sample_without_replacement<R: Rng>(
    set: &mut CoalitionSet,
    rng: &mut R,
    n: usize,
    sampled_budget: u64,
    dist: SizeDistribution,
    paired: bool,
    cancel: &Cancel,
) -> Result<()> {
    if sampled_budget == 0 || n < 2 {
        return Ok(());
    }
    let expected = expected_layer_counts(n, sampled_budget as f64, dist);
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
    let sizes: Vec<usize> = (1..n).collect();
    let d: Vec<f64> = (0..=n)
        .map(|s| {
            if s == 0 || s == n {
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
            if s == 0 || s == n {
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
            sample_without_replacement(
                &mut set,
                &mut rng,
                n,
                100,
                SizeDistribution::Leverage,
                true,
                Cancel::never(),
            )
            .unwrap();
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
        let kernel = SizeDistribution::Kernel;
        sample_without_replacement(&mut set, &mut rng, n, 2000, kernel, true, Cancel::never())
            .unwrap();
        assert_eq!(set.len(), 2000);
        let (_, weights) = set.into_parts();
        assert!(weights.iter().all(|w| w.is_finite() && *w > 0.0));
    }
}
