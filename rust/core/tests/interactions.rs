//! Property tests of the sparse transforms: basis round trips, every index against the
//! enumeration oracle, efficiency, and random trees against direct prediction on all masks.

use ferroshap_core::interactions::exact::exact_interactions;
use ferroshap_core::interactions::function::{Basis, Key, SparseFunction};
use ferroshap_core::interactions::indices::{
    interactions, shapley_values, to_fourier, to_moebius, Index,
};
use ferroshap_core::interactions::trees::ensemble_fourier;
use ferroshap_core::interactions::trees::lightgbm::{Child, Ensemble, MissingType, Split, Tree};
use ferroshap_core::Cancel;
use proptest::prelude::*;

fn all_masks(n: usize) -> Vec<bool> {
    (0..1usize << n)
        .flat_map(|m| (0..n).map(move |i| m >> i & 1 == 1))
        .collect()
}

/// A sparse function of `n` players with up to 12 random keys.
fn sparse_function(n: usize, basis: Basis) -> impl Strategy<Value = SparseFunction> {
    prop::collection::vec(
        (prop::collection::vec(0..n as u32, 0..=n), -2.0..2.0f64),
        1..12,
    )
    .prop_map(move |raw| {
        let terms = raw
            .into_iter()
            .map(|(mut players, c)| {
                players.sort_unstable();
                players.dedup();
                (Key::new(players, n).unwrap(), c)
            })
            .collect();
        SparseFunction::new(basis, n, terms).unwrap()
    })
}

fn close(a: &SparseFunction, b: &SparseFunction, tol: f64) -> bool {
    let keys = a.terms().iter().chain(b.terms()).map(|(k, _)| k.players());
    keys.into_iter()
        .all(|k| (a.coefficient(k) - b.coefficient(k)).abs() <= tol)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn fourier_moebius_round_trip(f in sparse_function(7, Basis::Moebius)) {
        let fourier = to_fourier(&f).unwrap();
        let back = to_moebius(&fourier).unwrap();
        prop_assert!(close(&f, &back, 1e-12));
        let masks = all_masks(7);
        let (a, b) = (f.evaluate(&masks).unwrap(), fourier.evaluate(&masks).unwrap());
        prop_assert!(a.iter().zip(&b).all(|(x, y)| (x - y).abs() < 1e-12));
    }

    #[test]
    fn every_index_matches_the_oracle(
        f in sparse_function(6, Basis::Fourier),
        order in 1usize..=4,
        which in 0usize..Index::ALL.len(),
    ) {
        let index = Index::ALL[which];
        let table = f.evaluate(&all_masks(6)).unwrap();
        let oracle = exact_interactions(&table, 6, index, order).unwrap();
        let fast = interactions(&f, index, order).unwrap();
        prop_assert_eq!(oracle.max_order, fast.max_order);
        let lookup = |values: &[(Key, f64)], k: &Key| {
            values.iter().find(|(key, _)| key == k).map_or(0.0, |(_, v)| *v)
        };
        for (key, _) in oracle.values.iter().chain(&fast.values) {
            let (a, b) = (lookup(&oracle.values, key), lookup(&fast.values, key));
            prop_assert!((a - b).abs() < 1e-9, "{} {:?}: {} vs {}", index, key, a, b);
        }
        prop_assert!((oracle.baseline - fast.baseline).abs() < 1e-9);
    }

    #[test]
    fn efficiency_of_shapley_and_k_sii(f in sparse_function(8, Basis::Moebius), k in 1usize..5) {
        let masks = [vec![false; 8], vec![true; 8]].concat();
        let ends = f.evaluate(&masks).unwrap();
        let total = ends[1] - ends[0];
        let phi: f64 = shapley_values(&f).unwrap().iter().sum();
        prop_assert!((phi - total).abs() < 1e-9);
        let ksii: f64 = interactions(&f, Index::KSII, k).unwrap().values.iter().map(|(_, v)| v).sum();
        prop_assert!((ksii - total).abs() < 1e-9);
    }

    #[test]
    fn random_trees_reproduce_direct_prediction(
        seeds in prop::collection::vec((0usize..5, 0u8..4, -0.5..1.5f64, -3.0..3.0f64), 1..40),
        n_trees in 1usize..4,
    ) {
        let n = 5;
        let trees: Vec<Tree> = (0..n_trees).map(|t| random_tree(&seeds, t)).collect();
        let ensemble = Ensemble { n_features: n, trees: trees.clone() };
        let f = ensemble_fourier(&ensemble, n, Cancel::never()).unwrap();
        let masks = all_masks(n);
        let got = f.evaluate(&masks).unwrap();
        for (m, value) in got.iter().enumerate() {
            let x = &masks[m * n..(m + 1) * n];
            let expected: f64 = trees.iter().map(|t| predict(t, x)).sum();
            prop_assert!((value - expected).abs() < 1e-9, "mask {}: {} vs {}", m, value, expected);
        }
    }
}

/// A random tree grown breadth-first from `(feature, decision bits, threshold, leaf value)`
/// draws; features repeat on paths, thresholds make some splits pass-throughs.
fn random_tree(draws: &[(usize, u8, f64, f64)], shift: usize) -> Tree {
    let internal = draws.len().min(12);
    let mut splits: Vec<Split> = Vec::new();
    let mut leaves = 0usize;
    for i in 0..internal {
        let (feature, bits, threshold, _) = draws[(i + shift) % draws.len()];
        let child = |c: usize, leaves: &mut usize| {
            if c < internal {
                Child::Node(c)
            } else {
                *leaves += 1;
                Child::Leaf(*leaves - 1)
            }
        };
        let left = child(2 * i + 1, &mut leaves);
        let right = child(2 * i + 2, &mut leaves);
        splits.push(Split {
            feature,
            threshold,
            default_left: bits & 1 == 1,
            missing: if bits & 2 == 2 {
                MissingType::Zero
            } else {
                MissingType::None
            },
            left,
            right,
        });
    }
    let leaf_values = (0..leaves)
        .map(|l| draws[(l + shift) % draws.len()].3 + l as f64 * 0.1)
        .collect();
    Tree {
        splits,
        leaf_values,
    }
}

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
