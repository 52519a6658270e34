//! Antithetic permutation sampling: each random order is followed by its reverse, and the design
//! holds every prefix coalition of both (∅ and N shared by all).

use rand::seq::SliceRandom;
use rand::Rng;

use crate::cancel::Cancel;
use crate::coalitions::{empty_mask, insert};
use crate::error::Result;
use crate::sampling::design::{CoalitionSet, PermutationPath};

/// Adds antithetic permutation pairs to `set` while one more pair (at most `2 (n − 1)` new
/// coalitions) still fits in `budget` distinct coalitions; returns the permutation paths.
///
/// `set` must already hold ∅ and N, and `budget ≥ 2n` must hold (checked by the planner). Polls
/// `cancel` once per pair.
pub fn sample_permutations<R: Rng>(
    set: &mut CoalitionSet,
    rng: &mut R,
    n: usize,
    budget: u64,
    cancel: &Cancel,
) -> Result<Vec<PermutationPath>> {
    let per_pair = 2 * (n as u64 - 1);
    let mut paths = Vec::new();
    // Each pair adds at least one new coalition unless the design already covers every prefix of
    // it; the attempt cap keeps that rare case (only possible at tiny n) finite.
    let mut attempts = 0;
    while set.len() as u64 + per_pair <= budget && attempts < budget {
        cancel.check()?;
        let mut order: Vec<usize> = (0..n).collect();
        order.shuffle(rng);
        let reversed: Vec<usize> = order.iter().rev().copied().collect();
        paths.push(prefix_path(set, order, n));
        paths.push(prefix_path(set, reversed, n));
        attempts += 1;
    }
    Ok(paths)
}

fn prefix_path(set: &mut CoalitionSet, order: Vec<usize>, n: usize) -> PermutationPath {
    let mut mask = empty_mask(n);
    let mut rows = Vec::with_capacity(n + 1);
    rows.push(set.add(mask.clone(), 0.0));
    for &player in &order {
        insert(&mut mask, player);
        rows.push(set.add(mask.clone(), 0.0));
    }
    PermutationPath { order, rows }
}
