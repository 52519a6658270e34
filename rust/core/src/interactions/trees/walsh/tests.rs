//! Unit tests of the Walsh transform of trees (`super`).

use super::*;
use crate::interactions::trees::lightgbm::{MissingType, Split};
use proptest::strategy::Strategy;

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
    let f = ensemble_fourier(&ensemble, n, Cancel::never()).unwrap();
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
    // x0 split again inside its own x0 = 0 branch; union-based code gives 1.5.
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
    let f = ensemble_fourier(&ensemble, 2, Cancel::never()).unwrap();
    assert_eq!(f.terms().len(), 1);
    assert_eq!(f.coefficient(&[0, 1]), 1.0);
    let err = ensemble_fourier(&ensemble, 1, Cancel::never())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("feature 1") && err.contains("n_players = 1"),
        "{err}"
    );
}

/// A full tree of `depth` splitting on features drawn from `features` (repeats allowed),
/// nodes numbered breadth first so children follow their parent.
fn random_tree(rng: &mut impl rand::Rng, depth: usize, features: &[usize]) -> Tree {
    let internal = (1 << depth) - 1;
    let child = |c: usize| {
        if c < internal {
            Child::Node(c)
        } else {
            Child::Leaf(c - internal)
        }
    };
    Tree {
        splits: (0..internal)
            .map(|i| {
                let feature = features[rng.random_range(0..features.len())];
                split(feature, child(2 * i + 1), child(2 * i + 2))
            })
            .collect(),
        leaf_values: (0..=internal)
            .map(|_| rng.random_range(-1.0..1.0))
            .collect(),
    }
}

#[test]
fn ensembles_match_predictions_and_both_key_paths_agree() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let features: Vec<usize> = (0..40).map(|i| 3 * i).collect(); // players up to 117
    let trees: Vec<Tree> = (0..60)
        .map(|t| random_tree(&mut rng, 1 + t % 5, &features))
        .collect();
    let ensemble = Ensemble {
        n_features: 120,
        trees,
    };
    // Bit-set keys (n <= 128) and general keys (n > 128) give the same sums in the same order.
    let narrow = ensemble_fourier(&ensemble, 120, Cancel::never()).unwrap();
    let wide = ensemble_fourier(&ensemble, 300, Cancel::never()).unwrap();
    assert_eq!(narrow.terms(), wide.terms());
    assert!(narrow.terms().windows(2).all(|w| w[0].0 < w[1].0));
    let masks: Vec<bool> = (0..200 * 120)
        .map(|_| rng.random_range(0..2) == 1)
        .collect();
    let got = narrow.evaluate(&masks).unwrap();
    for (m, value) in got.iter().enumerate() {
        let row = &masks[m * 120..(m + 1) * 120];
        let expected: f64 = ensemble.trees.iter().map(|t| predict(t, row)).sum();
        assert!(
            (value - expected).abs() < 1e-9,
            "mask {m}: {value} vs {expected}"
        );
    }
    // Same result whatever the thread count.
    let single = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap()
        .install(|| ensemble_fourier(&ensemble, 120, Cancel::never()).unwrap());
    assert_eq!(single, narrow);
}

#[test]
fn deep_paths_are_refused_before_expanding() {
    // A chain: node i splits on feature i, x_i = 0 goes to leaf i, x_i = 1 deeper.
    let chain = |depth: usize, leaf: fn(usize) -> f64| Tree {
        splits: (0..depth)
            .map(|i| {
                let right = if i + 1 < depth {
                    Child::Node(i + 1)
                } else {
                    Child::Leaf(depth)
                };
                split(i, Child::Leaf(i), right)
            })
            .collect(),
        leaf_values: (0..=depth).map(leaf).collect(),
    };
    let transform = |tree: Tree| {
        let ensemble = Ensemble {
            n_features: 30,
            trees: vec![tree],
        };
        ensemble_fourier(&ensemble, 30, Cancel::never())
    };
    check_all_masks(chain(10, |l| l as f64 + 1.0), 10);
    // The last pair alone fixes 21 features: 2^22 terms, plus the other leaves'.
    let err = transform(chain(22, |l| l as f64 + 1.0))
        .unwrap_err()
        .to_string();
    assert!(err.contains("more than 4194304 terms"), "{err}");
    // Only the deepest leaf is non-zero; its pair fixes 24 features.
    let err = transform(chain(25, |l| if l == 25 { 1.0 } else { 0.0 }))
        .unwrap_err()
        .to_string();
    assert!(err.contains("fixes 24 distinct features"), "{err}");
}

#[test]
fn many_trees_are_refused_once_their_terms_pass_the_cap() {
    // Each stump on a distinct feature expands into two non-zero terms (its mean and parity).
    let trees: Vec<Tree> = (0..10)
        .map(|f| Tree {
            splits: vec![split(f, Child::Leaf(0), Child::Leaf(1))],
            leaf_values: vec![1.0, 3.0],
        })
        .collect();
    assert_eq!(
        sum_trees::<Bits>(&trees, 10, 20, Cancel::never())
            .unwrap()
            .len(),
        11
    );
    let err = sum_trees::<Key>(&trees, 10, 19, Cancel::never())
        .unwrap_err()
        .to_string();
    assert!(err.contains("more than 19 terms together"), "{err}");
}

#[test]
fn more_players_than_keys_can_number_are_refused() {
    let ensemble = Ensemble {
        n_features: 1,
        trees: Vec::new(),
    };
    let err = ensemble_fourier(&ensemble, (u32::MAX as usize) + 2, Cancel::never())
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("n_players: must be at most 2^32"), "{err}");
}

#[test]
fn bucketed_terms_keep_their_order_within_each_bucket() {
    let terms: Vec<Term<Bits>> = (0..10).map(|i| (Bits::single(i), i as f64)).collect();
    let ids = [2, 0, 2, 3, 0, 2, 3, 3, 0, 2];
    let bucketed = BucketedTerms::new(terms, &ids, 5);
    let values = |b: usize| bucketed.bucket(b).iter().map(|t| t.1).collect::<Vec<_>>();
    assert_eq!(values(0), [1.0, 4.0, 8.0]);
    assert!(values(1).is_empty() && values(4).is_empty());
    assert_eq!(values(2), [0.0, 2.0, 5.0, 9.0]);
    assert_eq!(values(3), [3.0, 6.0, 7.0]);
}

fn key(players: &std::collections::BTreeSet<u32>) -> Key {
    Key::from_sorted(&players.iter().copied().collect::<Vec<_>>())
}

proptest::proptest! {
    #[test]
    fn bit_sets_order_like_keys(
        (a, b) in (0usize..6).prop_flat_map(|k| {
            let set = proptest::collection::btree_set(0u32..128, k);
            (set.clone(), set)
        }),
    ) {
        let bits = |s: &std::collections::BTreeSet<u32>| {
            s.iter().fold(Bits::EMPTY, |acc, &p| acc.union(Bits::single(p as usize)))
        };
        proptest::prop_assert_eq!(bits(&a).cmp_same_size(&bits(&b)), key(&a).cmp(&key(&b)));
        proptest::prop_assert_eq!(bits(&a).into_key(), key(&a));
    }

    #[test]
    fn buckets_follow_key_order(
        n in 1usize..2000,
        a in proptest::collection::btree_set(0u32..2000, 0..6),
        b in proptest::collection::btree_set(0u32..2000, 0..6),
    ) {
        let within = |s: std::collections::BTreeSet<u32>| {
            key(&s.into_iter().map(|p| p % n as u32).collect())
        };
        let (a, b) = (within(a), within(b));
        let buckets = Buckets::new(n);
        proptest::prop_assert!(buckets.of(&a) < buckets.len());
        if a < b {
            proptest::prop_assert!(buckets.of(&a) <= buckets.of(&b));
        }
    }
}
