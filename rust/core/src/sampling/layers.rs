//! Distinct, uniformly random subsets of one size ("a layer").

use rand::Rng;
use rustc_hash::{FxBuildHasher, FxHashSet};

use crate::cancel::Cancel;
use crate::coalitions::{mask_from_players, words_for, Unranker};
use crate::error::Result;

/// Draws `count` distinct subsets of size `size` of the players `0..pool`, uniformly, as packed
/// coalitions over `n_players` words.
///
/// Small layers (whose binomial fits a `u128` with room to spare) draw distinct ranks with Floyd's
/// algorithm and unrank them; astronomically large layers draw random subsets and reject the
/// (vanishingly rare) repeats. `count` must not exceed `C(pool, size)`. The output order depends
/// only on the generator's state. Polls `cancel` once per subset.
pub fn distinct_subsets<R: Rng>(
    rng: &mut R,
    pool: usize,
    size: usize,
    count: usize,
    n_players: usize,
    cancel: &Cancel,
) -> Result<Vec<Vec<u64>>> {
    let n_words = words_for(n_players);
    match Unranker::new(pool, size) {
        Some(unranker) => floyd_ranks(rng, unranker.total(), count)
            .into_iter()
            .map(|rank| {
                cancel.check()?;
                Ok(unranker.unrank(rank, n_words))
            })
            .collect(),
        None => rejection_subsets(rng, pool, size, count, n_players, cancel),
    }
}

/// Every subset of size `size` of `0..n_players`, in lexicographic order; polls `cancel` once
/// per subset.
pub fn all_subsets(n_players: usize, size: usize, cancel: &Cancel) -> Result<Vec<Vec<u64>>> {
    let n_words = words_for(n_players);
    let Some(unranker) = Unranker::new(n_players, size) else {
        return Ok(Vec::new());
    };
    (0..unranker.total())
        .map(|rank| {
            cancel.check()?;
            Ok(unranker.unrank(rank, n_words))
        })
        .collect()
}

/// `count` distinct values of `0..total`, uniformly (Floyd's algorithm), in a seed-determined order.
fn floyd_ranks<R: Rng>(rng: &mut R, total: u128, count: usize) -> Vec<u128> {
    let mut seen = FxHashSet::with_capacity_and_hasher(count, FxBuildHasher);
    let mut order = Vec::with_capacity(count);
    for j in (total - count as u128)..total {
        let t = rng.random_range(0..=j);
        let pick = if seen.contains(&t) { j } else { t };
        seen.insert(pick);
        order.push(pick);
    }
    order
}

fn rejection_subsets<R: Rng>(
    rng: &mut R,
    pool: usize,
    size: usize,
    count: usize,
    n_players: usize,
    cancel: &Cancel,
) -> Result<Vec<Vec<u64>>> {
    let mut seen = FxHashSet::with_capacity_and_hasher(count, FxBuildHasher);
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        cancel.check()?;
        let players = rand::seq::index::sample(rng, pool, size);
        let mask = mask_from_players(players.iter(), n_players);
        if seen.insert(mask.clone()) {
            out.push(mask);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coalitions::popcount;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    use std::collections::HashSet;

    #[test]
    fn small_layers_are_distinct_and_complete_when_asked_for_everything() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let all = distinct_subsets(&mut rng, 8, 3, 56, 8, Cancel::never()).unwrap();
        let set: HashSet<_> = all.iter().cloned().collect();
        assert_eq!(set.len(), 56);
        assert!(all.iter().all(|m| popcount(m) == 3));
        assert_eq!(all_subsets(8, 3, Cancel::never()).unwrap().len(), 56);
    }

    #[test]
    fn huge_layers_fall_back_to_rejection() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let n = 3000;
        let got = distinct_subsets(&mut rng, n, 1500, 20, n, Cancel::never()).unwrap();
        assert_eq!(got.len(), 20);
        assert!(got.iter().all(|m| popcount(m) == 1500));
    }

    #[test]
    fn floyd_is_roughly_uniform() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut hits = [0usize; 10];
        for _ in 0..20_000 {
            for r in floyd_ranks(&mut rng, 10, 3) {
                hits[r as usize] += 1;
            }
        }
        // each rank expected 6000 times; 5 standard deviations ≈ 330
        assert!(
            hits.iter().all(|&h| (h as f64 - 6000.0).abs() < 400.0),
            "{hits:?}"
        );
    }
}
