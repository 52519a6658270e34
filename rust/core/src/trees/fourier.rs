//! Exact Fourier transform of a tree ensemble on 0/1 inputs (spec proxyspex §5).
//!
//! A split on feature `i` with children `C0` (taken at `x_i = 0`) and `C1` (at `x_i = 1`) is
//! `(C0 + C1)/2 + (−1)^{x_i} (C0 − C1)/2`, so its spectrum is, with `⊕` the symmetric difference,
//! `F[K] += (a + c)/2` and `F[K ⊕ {i}] += (a − c)/2` over the children's coefficients. XOR (not
//! union) and accumulation (not assignment) keep it exact when a feature repeats on a path.
//! A split that sends 0 and 1 the same way is a pass-through.
//!
//! A tree's spectrum is kept sorted in [`Key`]'s order, over bit sets of the tree's own
//! features, so combining children is a linear merge and mapping to global players keeps the
//! order. Trees are transformed in parallel and summed per group of keys in tree order, so the
//! result does not depend on the thread count. Global keys are bit sets too when the game has at
//! most 128 players.

use std::cmp::Ordering;
use std::hash::Hash;

use rayon::prelude::*;
use rustc_hash::{FxBuildHasher, FxHashMap};

use crate::error::{CoreError, Result};
use crate::sparse::{Basis, Key, SparseFunction};
use crate::trees::lightgbm::{Child, Ensemble, Tree};

/// Most distinct features one tree may split on (local keys are [`Bits`]).
pub const MAX_TREE_FEATURES: usize = Bits::CAPACITY;

/// Most coefficients one subtree's spectrum may hold (`2^22`).
const MAX_TREE_TERMS: usize = 1 << 22;

/// A set of at most 128 players as a bit set, ordered like [`Key`]: by size, then
/// lexicographically by sorted players.
///
/// Player `p` is bit `63 − p % 64` of word `p / 64`, so of two sets of one size the one holding
/// the smallest player of their symmetric difference has the larger words and comes first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Bits([u64; 2]);

impl Bits {
    /// Most players a set can hold.
    const CAPACITY: usize = 128;

    const EMPTY: Bits = Bits([0; 2]);

    fn contains(self, player: usize) -> bool {
        self.0[player / 64] & 1 << (63 - player % 64) != 0
    }

    /// The set with `player` toggled; adding (or removing) one player to every set of a sorted
    /// run leaves the run sorted.
    fn toggle(self, player: usize) -> Self {
        let mut words = self.0;
        words[player / 64] ^= 1 << (63 - player % 64);
        Self(words)
    }

    /// The players, ascending.
    fn players(self) -> impl Iterator<Item = usize> {
        self.0.into_iter().enumerate().flat_map(|(w, mut word)| {
            std::iter::from_fn(move || {
                (word != 0).then(|| {
                    let bit = word.leading_zeros() as usize;
                    word &= !(1 << (63 - bit));
                    64 * w + bit
                })
            })
        })
    }
}

impl Ord for Bits {
    fn cmp(&self, other: &Self) -> Ordering {
        GlobalKey::size(self)
            .cmp(&GlobalKey::size(other))
            .then_with(|| other.0.cmp(&self.0))
    }
}

impl PartialOrd for Bits {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// A key and its coefficient.
type Term<K> = (K, f64);

/// A sorted spectrum without exact zeros.
type Spectrum<K> = Vec<Term<K>>;

/// Consecutive terms of one tree's spectrum whose keys share a group: (size, smallest player).
type Run<'a, K> = ((usize, usize), &'a [Term<K>]);

/// Global keys a tree's local spectrum maps to.
trait GlobalKey: Ord + Hash + Clone + Send + Sync {
    /// The key holding `features[j]` for each player `j` of the local set (`features` sorted,
    /// so the map keeps [`Key`]'s order).
    fn from_local(local: Bits, features: &[u32]) -> Self;

    /// The smallest player (`None` for the empty set).
    fn first(&self) -> Option<usize>;

    /// Number of players.
    fn size(&self) -> usize;

    /// As a [`Key`].
    fn into_key(self) -> Key;
}

/// Players `< 128`: the global key is itself a bit set.
impl GlobalKey for Bits {
    fn from_local(local: Bits, features: &[u32]) -> Self {
        // `features` are distinct, so toggling adds each player once.
        local
            .players()
            .fold(Bits::EMPTY, |acc, j| acc.toggle(features[j] as usize))
    }

    fn first(&self) -> Option<usize> {
        self.players().next()
    }

    fn size(&self) -> usize {
        self.0[0].count_ones() as usize + self.0[1].count_ones() as usize
    }

    fn into_key(self) -> Key {
        let players: Vec<u32> = self.players().map(|p| p as u32).collect();
        Key::from_sorted(&players)
    }
}

impl GlobalKey for Key {
    fn from_local(local: Bits, features: &[u32]) -> Self {
        let players: Vec<u32> = local.players().map(|j| features[j]).collect();
        Key::from_sorted(&players)
    }

    fn first(&self) -> Option<usize> {
        self.players().first().map(|&p| p as usize)
    }

    fn size(&self) -> usize {
        self.order()
    }

    fn into_key(self) -> Key {
        self
    }
}

/// The exact Fourier coefficients of the sum of the ensemble's trees as a function of
/// `x ∈ {0,1}^n_players`; their synthesis reproduces the model's raw prediction on every mask.
///
/// Errors (argument `model`) for a split on a feature `≥ n_players`, a tree splitting on more
/// than [`MAX_TREE_FEATURES`] features or with a spectrum above `2^22` terms.
pub fn ensemble_fourier(ensemble: &Ensemble, n_players: usize) -> Result<SparseFunction> {
    let terms: Vec<(Key, f64)> = if n_players <= Bits::CAPACITY {
        sum_trees::<Bits>(&ensemble.trees, n_players)?
            .into_par_iter()
            .map(|(k, c)| (k.into_key(), c))
            .collect()
    } else {
        sum_trees::<Key>(&ensemble.trees, n_players)?
    };
    Ok(SparseFunction::from_sorted_terms(
        Basis::Fourier,
        n_players,
        terms,
    ))
}

/// The summed spectrum of `trees`.
///
/// Keys are grouped by size and smallest player (the leading part of [`Key`]'s order). Each
/// tree's sorted spectrum is a sequence of such groups; every group is summed, in parallel over
/// groups, from its runs in tree order, so every coefficient is the same sum in the same order
/// whatever the number of threads.
fn sum_trees<K: GlobalKey>(trees: &[Tree], n_players: usize) -> Result<Spectrum<K>> {
    let spectra: Vec<Spectrum<K>> = trees
        .par_iter()
        .map(|tree| {
            let (features, local) = tree_fourier(tree, n_players)?;
            Ok(local
                .into_iter()
                .map(|(k, c)| (K::from_local(k, &features), c))
                .collect())
        })
        .collect::<Result<_>>()?;
    let group = |k: &K| (k.size(), k.first().unwrap_or(0));
    let mut runs: Vec<Run<K>> = spectra
        .par_iter()
        .flat_map_iter(|spectrum| {
            spectrum
                .chunk_by(|a, b| group(&a.0) == group(&b.0))
                .map(|run| (group(&run[0].0), run))
        })
        .collect();
    runs.par_sort_by_key(|run| run.0); // stable: runs of one group stay in tree order
    let sums: Vec<Spectrum<K>> = runs
        .chunk_by(|a, b| a.0 == b.0)
        .collect::<Vec<_>>()
        .into_par_iter()
        .map(|runs| {
            let len = runs.iter().map(|run| run.1.len()).sum();
            let mut map: FxHashMap<K, f64> =
                FxHashMap::with_capacity_and_hasher(len, FxBuildHasher);
            for (k, c) in runs.iter().flat_map(|run| run.1) {
                *map.entry(k.clone()).or_insert(0.0) += c;
            }
            let mut terms: Spectrum<K> = map.into_iter().filter(|t| t.1 != 0.0).collect();
            terms.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            terms
        })
        .collect();
    Ok(sums.into_iter().flatten().collect())
}

/// Walks two runs sorted by key in one linear merge, calling `emit(key, a's value, b's value)`
/// once per distinct key, in order.
fn merge_by<K: Ord, A, B>(
    a: Vec<(K, A)>,
    b: Vec<(K, B)>,
    mut emit: impl FnMut(K, Option<A>, Option<B>),
) {
    let (mut a, mut b) = (a.into_iter(), b.into_iter());
    let (mut x, mut y) = (a.next(), b.next());
    loop {
        let order = match (&x, &y) {
            (Some(p), Some(q)) => p.0.cmp(&q.0),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => return,
        };
        let left = if order.is_le() {
            std::mem::replace(&mut x, a.next())
        } else {
            None
        };
        let right = if order.is_ge() {
            std::mem::replace(&mut y, b.next())
        } else {
            None
        };
        match (left, right) {
            (Some((k, u)), right) => emit(k, Some(u), right.map(|t| t.1)),
            (None, Some((k, v))) => emit(k, None, Some(v)),
            (None, None) => return,
        }
    }
}

/// One tree's spectrum over its local features (sorted global indices; local player `j` is
/// `features[j]`), by the XOR recursion from the deepest node up.
fn tree_fourier(tree: &Tree, n_players: usize) -> Result<(Vec<u32>, Spectrum<Bits>)> {
    let leaf = |l: usize| -> Spectrum<Bits> {
        let v = tree.leaf_values[l];
        if v == 0.0 {
            Vec::new()
        } else {
            vec![(Bits::EMPTY, v)]
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
    let mut done: Vec<Option<Spectrum<Bits>>> = vec![None; tree.splits.len()];
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
            combine(a, c, local)?
        };
        done[i] = Some(spectrum);
    }
    Ok((features, done[0].take().unwrap_or_default()))
}

/// `F[K] += (a + c)/2`, `F[K ⊕ {player}] += (a − c)/2`, as linear merges of sorted runs.
fn combine(a: Spectrum<Bits>, c: Spectrum<Bits>, player: usize) -> Result<Spectrum<Bits>> {
    let mut sum = Vec::with_capacity(a.len() + c.len());
    // Halved differences at the toggled keys: those that gain `player` and those that lose
    // it each stay sorted.
    let (mut gain, mut lose) = (Vec::with_capacity(a.len() + c.len()), Vec::new());
    merge_by(a, c, |k, u, v| {
        let (u, v) = (u.unwrap_or(0.0), v.unwrap_or(0.0));
        sum.push((k, 0.5 * (u + v)));
        let difference = (k.toggle(player), 0.5 * (u - v));
        if k.contains(player) {
            lose.push(difference);
        } else {
            gain.push(difference);
        }
    });
    let toggled = if lose.is_empty() {
        gain
    } else {
        let mut toggled = Vec::with_capacity(gain.len() + lose.len());
        merge_by(gain, lose, |k, u, v| {
            toggled.push((k, u.or(v).unwrap_or(0.0)))
        });
        toggled
    };
    let mut out = Vec::with_capacity(sum.len() + toggled.len());
    merge_by(sum, toggled, |k, u, v| {
        let value = u.unwrap_or(0.0) + v.unwrap_or(0.0);
        if value != 0.0 {
            out.push((k, value));
        }
    });
    if out.len() > MAX_TREE_TERMS {
        return Err(CoreError::invalid(
            "model",
            format!("a tree's exact spectrum exceeds {MAX_TREE_TERMS} terms; use shallower trees"),
        ));
    }
    Ok(out)
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
        let narrow = ensemble_fourier(&ensemble, 120).unwrap();
        let wide = ensemble_fourier(&ensemble, 300).unwrap();
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
            .install(|| ensemble_fourier(&ensemble, 120).unwrap());
        assert_eq!(single, narrow);
    }

    proptest::proptest! {
        #[test]
        fn bit_sets_order_like_keys(
            a in proptest::collection::btree_set(0u32..128, 0..6),
            b in proptest::collection::btree_set(0u32..128, 0..6),
        ) {
            let bits = |s: &std::collections::BTreeSet<u32>| {
                s.iter().fold(Bits::EMPTY, |acc, &p| acc.toggle(p as usize))
            };
            let keys = |s: &std::collections::BTreeSet<u32>| {
                Key::from_sorted(&s.iter().copied().collect::<Vec<_>>())
            };
            proptest::prop_assert_eq!(bits(&a).cmp(&bits(&b)), keys(&a).cmp(&keys(&b)));
            proptest::prop_assert_eq!(bits(&a).into_key(), keys(&a));
        }
    }
}
