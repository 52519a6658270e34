//! With-replacement designs (KernelSHAP, docs/estimators.md): sizes whose expected draws cover
//! their whole layer are enumerated (the border trick), the rest is drawn i.i.d. from the size
//! distribution restricted to the remaining sizes, and weighted by draw counts.

use rand::distr::weighted::WeightedIndex;
use rand::distr::Distribution;
use rand::Rng;

use crate::cancel::Cancel;
use crate::coalitions::{binomial_f64, complement, mask_from_players};
use crate::error::Result;
use crate::sampling::design::CoalitionSet;
use crate::sampling::layers::all_subsets;
use crate::sampling::sizes::SizeDistribution;

/// Relative slack of the border test, as in shap's `KernelExplainer`.
const BORDER_TOLERANCE: f64 = 1e-8;
/// Draws allowed per missing distinct coalition before sampling gives up (near exhaustion).
const MAX_DRAWS_PER_COALITION: u64 = 1000;

/// Adds up to `sampled_budget` distinct proper coalitions to `set` with KernelSHAP weights:
/// `w(s)` for enumerated layers, `cnt_S / (D s (n − s) q_R(s))` for sampled ones (D draws, each
/// yielding two coalitions when paired). Polls `cancel` once per coalition.
pub fn sample_with_replacement<R: Rng>(
    set: &mut CoalitionSet,
    rng: &mut R,
    n: usize,
    sampled_budget: u64,
    dist: SizeDistribution,
    paired: bool,
    cancel: &Cancel,
) -> Result<()> {
    let mut remaining = sampled_budget as f64;
    let mut open: Vec<usize> = (1..n).collect();
    let first_row = set.len();
    // Border trick: enumerate every layer (with its complement layer when paired) whose expected
    // share of the remaining budget covers it, most covered first, until none does.
    while let Some(s) = best_coverable_size(&open, n, remaining, dist, paired) {
        let layers = layer_and_partner(s, n, paired);
        for &size in &layers {
            for mask in all_subsets(n, size, cancel)? {
                cancel.check()?;
                set.add(
                    mask,
                    1.0 / (binomial_f64(n as u64, size as u64) * kernel_mass(n, size)),
                );
            }
            remaining -= binomial_f64(n as u64, size as u64);
        }
        open.retain(|t| !layers.contains(t));
    }
    let enumerated_rows = set.len() - first_row;
    if open.is_empty() || remaining < 1.0 {
        return Ok(());
    }
    let target = first_row + enumerated_rows + remaining as usize;
    let q_mass: f64 = open.iter().map(|&s| dist.weight(n, s)).sum();
    let Ok(size_dist) = WeightedIndex::new(open.iter().map(|&s| dist.weight(n, s))) else {
        return Ok(());
    };
    let mut draws: u64 = 0;
    let max_draws = MAX_DRAWS_PER_COALITION * (remaining as u64 + 1);
    let sampled_start = set.len();
    while set.len() < target && draws < max_draws {
        cancel.check()?;
        let s = open[size_dist.sample(rng)];
        let mask = mask_from_players(rand::seq::index::sample(rng, n, s).iter(), n);
        if paired {
            set.add(complement(&mask, n), 1.0);
        }
        set.add(mask, 1.0);
        draws += 1;
    }
    let effective_draws = if paired { 2 * draws } else { draws } as f64;
    set.rescale_rows(sampled_start, |s| {
        q_mass / (effective_draws * kernel_mass(n, s) * dist.weight(n, s))
    });
    Ok(())
}

/// `s (n − s)`: the inverse of the total kernel mass of layer `s`.
fn kernel_mass(n: usize, s: usize) -> f64 {
    (s * (n - s)) as f64
}

fn layer_and_partner(s: usize, n: usize, paired: bool) -> Vec<usize> {
    if paired && 2 * s != n {
        vec![s, n - s]
    } else {
        vec![s]
    }
}

/// The open size whose layer(s) the remaining budget covers best, if it covers them at all.
fn best_coverable_size(
    open: &[usize],
    n: usize,
    remaining: f64,
    dist: SizeDistribution,
    paired: bool,
) -> Option<usize> {
    let mass: f64 = open.iter().map(|&s| dist.weight(n, s)).sum();
    open.iter()
        .copied()
        .filter(|&s| !paired || 2 * s <= n)
        .filter_map(|s| {
            let layers = layer_and_partner(s, n, paired);
            let cost: f64 = layers
                .iter()
                .map(|&t| binomial_f64(n as u64, t as u64))
                .sum();
            let share: f64 = layers.iter().map(|&t| dist.weight(n, t)).sum::<f64>() / mass;
            let coverage = remaining * share / cost;
            (cost <= remaining && coverage >= 1.0 - BORDER_TOLERANCE).then_some((s, coverage))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
        .map(|(s, _)| s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn border_enumerates_small_layers_and_fills_the_budget() {
        let n = 12;
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut set = CoalitionSet::new(n);
        let kernel = SizeDistribution::Kernel;
        sample_with_replacement(&mut set, &mut rng, n, 500, kernel, true, Cancel::never()).unwrap();
        assert_eq!(set.len(), 500);
        let (coalitions, weights) = set.into_parts();
        let singles = (0..coalitions.n_rows())
            .filter(|&r| coalitions.size(r) == 1)
            .count();
        assert_eq!(singles, 12);
        let w1 = 1.0 / (12.0 * 11.0); // w(1) = 1 / (C(12, 1) · 1 · 11)
        for (r, w) in weights.iter().enumerate() {
            if coalitions.size(r) == 1 {
                assert!((w - w1).abs() < 1e-15);
            }
        }
    }

    #[test]
    fn sampled_weights_estimate_the_kernel_mass() {
        // Σ_sampled ω_S estimates Σ_{S in sampled layers} w(s) = Σ_s 1/(s(n−s)).
        let n = 30;
        let mut rng = ChaCha8Rng::seed_from_u64(8);
        let mut set = CoalitionSet::new(n);
        let kernel = SizeDistribution::Kernel;
        sample_with_replacement(&mut set, &mut rng, n, 2000, kernel, false, Cancel::never())
            .unwrap();
        let (_, weights) = set.into_parts();
        let total: f64 = weights.iter().sum();
        let exact: f64 = (1..n).map(|s| 1.0 / kernel_mass(n, s)).sum();
        assert!((total / exact - 1.0).abs() < 0.05, "{total} vs {exact}");
    }
}
