//! Exact Fourier transform of a tree ensemble on 0/1 inputs (spec proxyspex §5).
//!
//! A split on feature `i` with children `C0` (taken at `x_i = 0`) and `C1` (at `x_i = 1`) is
//! `(C0 + C1)/2 + (−1)^{x_i} (C0 − C1)/2`, so its spectrum is, with `⊕` the symmetric difference,
//! `F[K] += (a + c)/2` and `F[K ⊕ {i}] += (a − c)/2` over the children's coefficients. XOR (not
//! union) and accumulation (not assignment) keep it exact when a feature repeats on a path.
//! A split that sends 0 and 1 the same way is a pass-through.

use crate::error::{CoreError, Result};
use crate::sparse::{par_accumulate, Basis, SparseFunction};
use crate::trees::lightgbm::{Child, Ensemble, Tree};

/// Trees per parallel block (fixed, so sums do not depend on the thread count).
const TREE_BLOCK: usize = 16;

/// Most distinct features one tree may split on (local keys are `u128` bit sets).
pub const MAX_TREE_FEATURES: usize = 128;

/// Most coefficients one subtree's spectrum may hold (`2^22`).
const MAX_TREE_TERMS: usize = 1 << 22;

/// A spectrum over a tree's local features, sorted by key, without exact zeros.
type Local = Vec<(u128, f64)>;

/// The exact Fourier coefficients of the sum of the ensemble's trees as a function of
/// `x ∈ {0,1}^n_players`; their synthesis reproduces the model's raw prediction on every mask.
///
/// Errors (argument `model`) for a split on a feature `≥ n_players`, a tree splitting on more
/// than [`MAX_TREE_FEATURES`] features or with a spectrum above `2^22` terms.
pub fn ensemble_fourier(ensemble: &Ensemble, n_players: usize) -> Result<SparseFunction> {
    let acc = par_accumulate(&ensemble.trees, TREE_BLOCK, |tree, acc| {
        let (features, spectrum) = tree_fourier(tree, n_players)?;
        let mut key = Vec::with_capacity(features.len());
        for (bits, c) in spectrum {
            key.clear();
            let mut rest = bits;
            while rest != 0 {
                key.push(features[rest.trailing_zeros() as usize]);
                rest &= rest - 1;
            }
            acc.add(&key, c);
        }
        Ok(())
    })?;
    Ok(acc.finish(Basis::Fourier, n_players))
}

/// One tree's spectrum over its local features (sorted global indices; local bit `j` is
/// `features[j]`), by the XOR recursion from the deepest node up.
fn tree_fourier(tree: &Tree, n_players: usize) -> Result<(Vec<u32>, Local)> {
    let leaf = |l: usize| -> Local {
        let v = tree.leaf_values[l];
        if v == 0.0 {
            Vec::new()
        } else {
            vec![(0, v)]
        }
    };
    if tree.splits.is_empty() {
        return Ok((Vec::new(), leaf(0)));
    }
    let mut features: Vec<u32> = Vec::new();
    for split in &tree.splits {
        if split.feature >= n_players {
            return Err(CoreError::invalid(
                "model",
                format!(
                    "splits on feature {} but the game has n_players = {n_players} features",
                    split.feature
                ),
            ));
        }
        features.push(split.feature as u32);
    }
    features.sort_unstable();
    features.dedup();
    if features.len() > MAX_TREE_FEATURES {
        return Err(CoreError::invalid(
            "model",
            format!(
                "a tree splits on {} distinct features; the exact transform supports at most \
                 {MAX_TREE_FEATURES} per tree",
                features.len()
            ),
        ));
    }
    // Children always have larger indices than their parent: fill from the last node back.
    let mut done: Vec<Option<Local>> = vec![None; tree.splits.len()];
    for (i, split) in tree.splits.iter().enumerate().rev() {
        let mut take = |c: Child| match c {
            Child::Leaf(l) => leaf(l),
            Child::Node(j) => done[j].take().unwrap_or_default(),
        };
        let (c0, c1) = (split.route(0.0), split.route(1.0));
        let spectrum = if c0 == c1 {
            take(c0)
        } else {
            let (a, c) = (take(c0), take(c1));
            let local = features.partition_point(|&f| f < split.feature as u32);
            combine(&a, &c, 1u128 << local)?
        };
        done[i] = Some(spectrum);
    }
    Ok((features, done[0].take().unwrap_or_default()))
}

/// `F[K] += (a + c)/2`, `F[K ⊕ bit] += (a − c)/2`, contributions added in a fixed order.
fn combine(a: &Local, c: &Local, bit: u128) -> Result<Local> {
    let mut out: Local = Vec::with_capacity(2 * (a.len() + c.len()));
    for &(k, v) in a {
        out.push((k, 0.5 * v));
        out.push((k ^ bit, 0.5 * v));
    }
    for &(k, v) in c {
        out.push((k, 0.5 * v));
        out.push((k ^ bit, -0.5 * v));
    }
    out.sort_by_key(|&(k, _)| k); // stable: equal keys keep the order above
    let mut merged: Local = Vec::with_capacity(out.len());
    for (k, v) in out {
        match merged.last_mut() {
            Some((last, sum)) if *last == k => *sum += v,
            _ => merged.push((k, v)),
        }
    }
    merged.retain(|&(_, v)| v != 0.0);
    if merged.len() > MAX_TREE_TERMS {
        return Err(CoreError::invalid(
            "model",
            format!("a tree's exact spectrum exceeds {MAX_TREE_TERMS} terms; use shallower trees"),
        ));
    }
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trees::lightgbm::{MissingType, Split};

    fn split(feature: usize, left: Child, right: Child) -> Split {
        Split {
            feature,
            threshold: 0.5,
            default_left: true,
            missing: MissingType::None,
            left,
            right,
        }
    }

    /// Direct evaluation of a tree on a 0/1 input.
    fn predict(tree: &Tree, x: &[bool]) -> f64 {
        let mut child = Child::Node(0);
        loop {
            match child {
                Child::Leaf(l) => return tree.leaf_values[l],
                Child::Node(i) => {
                    let s = &tree.splits[i];
                    child = s.route(if x[s.feature] { 1.0 } else { 0.0 });
                }
            }
        }
    }

    fn check_all_masks(tree: Tree, n: usize) {
        let ensemble = Ensemble {
            n_features: n,
            trees: vec![tree.clone()],
        };
        let f = ensemble_fourier(&ensemble, n).unwrap();
        let masks: Vec<bool> = (0..1usize << n)
            .flat_map(|m| (0..n).map(move |i| m >> i & 1 == 1))
            .collect();
        let got = f.evaluate(&masks).unwrap();
        for (m, value) in got.iter().enumerate() {
            let expected = predict(&tree, &masks[m * n..(m + 1) * n]);
            assert!(
                (value - expected).abs() < 1e-12,
                "mask {m}: {value} vs {expected}"
            );
        }
    }

    #[test]
    fn repeated_feature_on_a_path_uses_xor() {
        // Spec §10.2: x0 split again inside its own x0 = 0 branch; union-based code gives 1.5.
        let tree = Tree {
            splits: vec![
                split(0, Child::Node(1), Child::Leaf(2)),
                split(0, Child::Leaf(0), Child::Leaf(1)),
            ],
            leaf_values: vec![1.0, 5.0, 3.0],
        };
        check_all_masks(tree, 2);
    }

    #[test]
    fn pass_through_and_deep_trees() {
        let mut pass = split(1, Child::Leaf(0), Child::Leaf(1));
        pass.threshold = 2.0; // 0 and 1 both go left
        let tree = Tree {
            splits: vec![
                split(2, Child::Node(1), Child::Node(2)),
                pass,
                split(0, Child::Node(3), Child::Leaf(2)),
                split(2, Child::Leaf(3), Child::Leaf(4)),
            ],
            leaf_values: vec![1.0, -7.0, 3.0, 0.25, -2.0],
        };
        check_all_masks(tree, 3);
    }

    #[test]
    fn parity_tree_is_one_coefficient() {
        // f = (−1)^{x0 + x1}
        let tree = Tree {
            splits: vec![
                split(0, Child::Node(1), Child::Node(2)),
                split(1, Child::Leaf(0), Child::Leaf(1)),
                split(1, Child::Leaf(2), Child::Leaf(3)),
            ],
            leaf_values: vec![1.0, -1.0, -1.0, 1.0],
        };
        let ensemble = Ensemble {
            n_features: 2,
            trees: vec![tree],
        };
        let f = ensemble_fourier(&ensemble, 2).unwrap();
        assert_eq!(f.terms().len(), 1);
        assert_eq!(f.coefficient(&[0, 1]), 1.0);
        let err = ensemble_fourier(&ensemble, 1).unwrap_err().to_string();
        assert!(
            err.contains("feature 1") && err.contains("n_players = 1"),
            "{err}"
        );
    }
}
