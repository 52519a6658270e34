//! Exact Walsh (Boolean Fourier) transform of a tree ensemble on 0/1 inputs
//! (docs/proxyspex.md, step 4).
//!
//! A leaf `ℓ` with value `v` is reached when its path's distinct features `P` take the values the
//! path fixes; that indicator is `Π_{i∈P} (1 + σ_i (−1)^{x_i})/2` with `σ_i = +1` for a path
//! through `x_i = 0` and `−1` through `x_i = 1`, so the tree's spectrum is
//! `F[K] = Σ_{ℓ: K ⊆ P_ℓ} v_ℓ 2^{−|P_ℓ|} Π_{i∈K} σ_{ℓ,i}`. A feature that repeats on a path in
//! the same direction counts once; in opposite directions the leaf is unreachable. A split that
//! sends 0 and 1 the same way is a pass-through. Two sibling leaves expand together, as
//! `(v0 + v1)/2 + (v0 − v1)/2 (−1)^{x_i}` times their parent's path, which halves the work.
//!
//! Trees are expanded in parallel, each summed in a hash table over bit sets: of the players
//! themselves when the game has at most 128, else of the tree's own features. Their terms are
//! sorted into buckets of global keys by (size, smallest player), the leading part of [`Key`]'s
//! order, and every bucket is summed in tree order and then sorted, so the result does not
//! depend on the thread count.

use std::cmp::Ordering;
use std::hash::Hash;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};

use rayon::prelude::*;

use crate::cancel::Cancel;
use crate::error::{CoreError, Result};
use crate::interactions::function::{Basis, Key, SparseFunction};
use crate::interactions::trees::lightgbm::{Child, Ensemble, Tree};
use crate::interactions::trees::sums::Sums;

/// Most distinct features one tree may split on (local keys are [`Bits`]).
pub const MAX_TREE_FEATURES: usize = Bits::CAPACITY;

/// Most distinct features on one root-to-leaf path: a leaf expands into `2^d` terms.
const MAX_PATH_FEATURES: usize = 22;

/// Most terms one tree's leaves may expand into.
const MAX_TREE_TERMS: usize = 1 << MAX_PATH_FEATURES;

/// Most non-zero terms all trees together may expand into before they are summed (about 2 GiB
/// of terms): each tree is capped, but their number is not.
const MAX_ENSEMBLE_TERMS: usize = 1 << 26;

/// Most players: keys hold players as `u32`.
const MAX_PLAYERS: usize = u32::MAX as usize + 1;

/// A set of at most 128 players as the bits of a `u128`, player `p` at bit `127 − p`: of two
/// sets of one size, the larger number holds the smallest player of their symmetric difference
/// and comes first in [`Key`]'s order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Bits(u128);

impl Bits {
    /// Most players a set can hold.
    const CAPACITY: usize = 128;

    const EMPTY: Bits = Bits(0);

    /// The set `{player}`.
    fn single(player: usize) -> Self {
        Self(1 << (127 - player))
    }

    fn contains(self, player: usize) -> bool {
        self.0 & Self::single(player).0 != 0
    }

    fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    /// The players, ascending.
    fn players(self) -> impl Iterator<Item = usize> {
        let mut rest = self.0;
        std::iter::from_fn(move || {
            (rest != 0).then(|| {
                let player = rest.leading_zeros() as usize;
                rest ^= Self::single(player).0;
                player
            })
        })
    }
}

/// A key and its coefficient.
type Term<K> = (K, f64);

/// The keys of the summed spectrum.
trait GlobalKey: Hash + Eq + Clone + Send + Sync {
    /// Whether a tree's bit sets hold the players themselves; otherwise bit `j` stands for the
    /// tree's `j`-th smallest feature.
    const PLAYERS_ARE_BITS: bool;

    /// The key of a tree's bit set, whose bit `j` stands for `features[j]` unless
    /// [`Self::PLAYERS_ARE_BITS`].
    fn from_bits(bits: Bits, features: &[u32]) -> Self;

    /// The smallest player (`None` for the empty set).
    fn first(&self) -> Option<usize>;

    /// Number of players.
    fn size(&self) -> usize;

    /// [`Key`]'s order between two keys of one size.
    fn cmp_same_size(&self, other: &Self) -> Ordering;

    /// As a [`Key`].
    fn into_key(self) -> Key;
}

/// Players `< 128`: bit sets throughout.
impl GlobalKey for Bits {
    const PLAYERS_ARE_BITS: bool = true;

    fn from_bits(bits: Bits, _features: &[u32]) -> Self {
        bits
    }

    fn first(&self) -> Option<usize> {
        (self.0 != 0).then(|| self.0.leading_zeros() as usize)
    }

    fn size(&self) -> usize {
        self.0.count_ones() as usize
    }

    fn cmp_same_size(&self, other: &Self) -> Ordering {
        other.0.cmp(&self.0)
    }

    fn into_key(self) -> Key {
        Key::from_sorted_iter(self.players().map(|p| p as u32))
    }
}

impl GlobalKey for Key {
    const PLAYERS_ARE_BITS: bool = false;

    fn from_bits(bits: Bits, features: &[u32]) -> Self {
        Key::from_sorted_iter(bits.players().map(|j| features[j]))
    }

    fn first(&self) -> Option<usize> {
        self.players().first().map(|&p| p as usize)
    }

    fn size(&self) -> usize {
        self.order()
    }

    fn cmp_same_size(&self, other: &Self) -> Ordering {
        self.cmp(other)
    }

    fn into_key(self) -> Key {
        self
    }
}

/// The exact Fourier coefficients of the sum of the ensemble's trees as a function of
/// `x ∈ {0,1}^n_players`; their synthesis reproduces the model's raw prediction on every mask.
///
/// Errors (argument `model`) for a split on a feature `≥ n_players`, a tree splitting on more
/// than [`MAX_TREE_FEATURES`] features, a leaf whose path fixes more than 22 features or a tree
/// whose leaves expand into more than `2^22` terms, or trees expanding into more than `2^26`
/// non-zero terms together; (argument `n_players`) for more than `2^32` players.
pub fn ensemble_fourier(
    ensemble: &Ensemble,
    n_players: usize,
    cancel: &Cancel,
) -> Result<SparseFunction> {
    if n_players > MAX_PLAYERS {
        return Err(CoreError::invalid(
            "n_players",
            format!("must be at most 2^32, got {n_players}"),
        ));
    }
    let terms = if n_players <= Bits::CAPACITY {
        sum_trees::<Bits>(&ensemble.trees, n_players, MAX_ENSEMBLE_TERMS, cancel)?
    } else {
        sum_trees::<Key>(&ensemble.trees, n_players, MAX_ENSEMBLE_TERMS, cancel)?
    };
    Ok(SparseFunction::from_sorted_terms(
        Basis::Fourier,
        n_players,
        terms,
    ))
}

/// Buckets of global keys by size and smallest player (in ranges of `2^shift` players), numbered
/// in [`Key`]'s order.
struct Buckets {
    /// Buckets per key size.
    per_size: usize,
    /// Smallest players `p` with the same `p >> shift` share a bucket.
    shift: u32,
}

impl Buckets {
    /// At most this many buckets per key size.
    const MAX_PER_SIZE: usize = 128;

    fn new(n_players: usize) -> Self {
        let shift = n_players
            .div_ceil(Self::MAX_PER_SIZE)
            .next_power_of_two()
            .trailing_zeros();
        Self {
            per_size: ((n_players.max(1) - 1) >> shift) + 1,
            shift,
        }
    }

    /// Number of buckets (key sizes `0..=MAX_PATH_FEATURES`).
    fn len(&self) -> usize {
        (MAX_PATH_FEATURES + 1) * self.per_size
    }

    fn of<K: GlobalKey>(&self, key: &K) -> usize {
        key.size() * self.per_size + (key.first().unwrap_or(0) >> self.shift)
    }
}

/// The summed spectrum of `trees`, sorted by key.
///
/// Trees are expanded in parallel chunks; each chunk sorts its terms into [`Buckets`] in tree
/// order. Every bucket then sums its terms, chunk by chunk, so every coefficient is the same sum
/// in the same order whatever the number of threads, and is sorted on its own
/// ([`sum_buckets`]).
///
/// Errors once the trees' non-zero terms together pass `max_terms` (checked after each tree).
fn sum_trees<K: GlobalKey>(
    trees: &[Tree],
    n_players: usize,
    max_terms: usize,
    cancel: &Cancel,
) -> Result<Vec<(Key, f64)>> {
    let buckets = Buckets::new(n_players);
    let chunk = trees
        .len()
        .div_ceil(4 * rayon::current_num_threads())
        .max(1);
    let total = AtomicUsize::new(0);
    let chunks: Vec<BucketedTerms<K>> = trees
        .par_chunks(chunk)
        .map_init(Sums::new, |tree_terms, trees| {
            let (mut terms, mut ids) = (Vec::new(), Vec::new());
            for tree in trees {
                let features = expand_tree::<K>(tree, n_players, tree_terms, cancel)?;
                let before = terms.len();
                for (bits, c) in tree_terms.drain() {
                    if c != 0.0 {
                        let key = K::from_bits(Bits(bits), &features);
                        ids.push(buckets.of(&key));
                        terms.push((key, c));
                    }
                }
                let added = terms.len() - before;
                if total.fetch_add(added, AtomicOrdering::Relaxed) + added > max_terms {
                    return Err(CoreError::invalid(
                        "model",
                        format!(
                            "the trees expand into more than {max_terms} terms together; use \
                             fewer or shallower trees"
                        ),
                    ));
                }
            }
            Ok(BucketedTerms::new(terms, &ids, buckets.len()))
        })
        .collect::<Result<_>>()?;
    sum_buckets(&chunks, buckets.len(), cancel)
}

/// Terms sorted by bucket, keeping their order within each bucket (a counting sort).
struct BucketedTerms<K> {
    terms: Vec<Term<K>>,
    /// Bucket `b` holds `terms[starts[b]..starts[b + 1]]`.
    starts: Vec<usize>,
}

impl<K: Clone> BucketedTerms<K> {
    /// `terms[i]` goes to bucket `ids[i] < n_buckets`.
    fn new(terms: Vec<Term<K>>, ids: &[usize], n_buckets: usize) -> Self {
        let mut starts = vec![0; n_buckets + 1];
        for &b in ids {
            starts[b + 1] += 1;
        }
        for b in 0..n_buckets {
            starts[b + 1] += starts[b];
        }
        let mut next = starts.clone();
        let mut order = vec![0; terms.len()];
        for (i, &b) in ids.iter().enumerate() {
            order[next[b]] = i;
            next[b] += 1;
        }
        Self {
            terms: order.into_iter().map(|i| terms[i].clone()).collect(),
            starts,
        }
    }

    fn bucket(&self, b: usize) -> &[Term<K>] {
        &self.terms[self.starts[b]..self.starts[b + 1]]
    }
}

/// Each bucket's terms (from every chunk, in order) summed by key and sorted; buckets in order.
///
/// Consecutive buckets go in groups of similar work, each summed with one table: a table per
/// bucket would spend more time allocating and growing than adding.
fn sum_buckets<K: GlobalKey>(
    chunks: &[BucketedTerms<K>],
    n_buckets: usize,
    cancel: &Cancel,
) -> Result<Vec<(Key, f64)>> {
    let work = |b: usize| {
        chunks
            .iter()
            .map(|chunk| chunk.bucket(b).len())
            .sum::<usize>()
    };
    let total: usize = chunks.iter().map(|chunk| chunk.terms.len()).sum();
    let per_group = total.div_ceil(8 * rayon::current_num_threads()).max(1);
    let mut groups: Vec<std::ops::Range<usize>> = Vec::new();
    let mut filled = 0;
    for b in 0..n_buckets {
        match groups.last_mut() {
            Some(group) if filled < per_group => group.end = b + 1,
            _ => {
                groups.push(b..b + 1);
                filled = 0;
            }
        }
        filled += work(b);
    }
    let sums: Vec<Vec<(Key, f64)>> = groups
        .into_par_iter()
        .map(|group| {
            let mut sums = Sums::new();
            let mut terms: Vec<Term<K>> = Vec::new();
            let mut out = Vec::new();
            for b in group {
                cancel.check()?;
                for (k, c) in chunks.iter().flat_map(|chunk| chunk.bucket(b)) {
                    sums.add(k.clone(), *c);
                }
                terms.extend(sums.drain().filter(|t| t.1 != 0.0));
                terms.sort_unstable_by(|a, b| a.0.cmp_same_size(&b.0));
                out.extend(terms.drain(..).map(|(k, c)| (k.into_key(), c)));
            }
            Ok(out)
        })
        .collect::<Result<_>>()?;
    Ok(sums.into_iter().flatten().collect())
}

/// One tree's spectrum, added into `terms` over bit sets of players or, unless
/// [`GlobalKey::PLAYERS_ARE_BITS`], of the returned features (sorted distinct players; empty
/// when the bits are the players). Polls `cancel` once per node.
fn expand_tree<K: GlobalKey>(
    tree: &Tree,
    n_players: usize,
    terms: &mut Sums<u128>,
    cancel: &Cancel,
) -> Result<Vec<u32>> {
    if let Some(split) = tree.splits.iter().find(|s| s.feature >= n_players) {
        return Err(CoreError::invalid(
            "model",
            format!(
                "splits on feature {} but the game has n_players = {n_players} features",
                split.feature
            ),
        ));
    }
    let features: Vec<u32> = if K::PLAYERS_ARE_BITS {
        Vec::new()
    } else {
        let mut features: Vec<u32> = tree.splits.iter().map(|s| s.feature as u32).collect();
        features.sort_unstable();
        features.dedup();
        if features.len() > MAX_TREE_FEATURES {
            return Err(CoreError::invalid(
                "model",
                format!(
                    "a tree splits on {} distinct features; the exact transform supports at \
                     most {MAX_TREE_FEATURES} per tree",
                    features.len()
                ),
            ));
        }
        features
    };
    let bit = |node: usize| {
        let feature = tree.splits[node].feature;
        if K::PLAYERS_ARE_BITS {
            feature
        } else {
            features.partition_point(|&f| (f as usize) < feature)
        }
    };
    let mut expanded = 0;
    // Depth first: a child, the features its path fixes and those it fixes to 1.
    let root = if tree.splits.is_empty() {
        Child::Leaf(0)
    } else {
        Child::Node(0)
    };
    let mut stack = vec![(root, Bits::EMPTY, Bits::EMPTY)];
    while let Some((child, fixed, ones)) = stack.pop() {
        cancel.check()?;
        let node = match child {
            Child::Leaf(l) => {
                let value = tree.leaf_values[l];
                expand_path(fixed, ones, value, None, terms, &mut expanded)?;
                continue;
            }
            Child::Node(i) => i,
        };
        let split = &tree.splits[node];
        let (to0, to1) = (split.route(0.0), split.route(1.0));
        let player = bit(node);
        if to0 == to1 {
            stack.push((to0, fixed, ones));
        } else if fixed.contains(player) {
            let taken = if ones.contains(player) { to1 } else { to0 };
            stack.push((taken, fixed, ones));
        } else if let (Child::Leaf(l0), Child::Leaf(l1)) = (to0, to1) {
            // Two leaves: `v0 [x = 0] + v1 [x = 1] = (v0 + v1)/2 + (v0 − v1)/2 (−1)^x`.
            let (v0, v1) = (tree.leaf_values[l0], tree.leaf_values[l1]);
            let difference = (player, 0.5 * (v0 - v1));
            let mean = 0.5 * (v0 + v1);
            expand_path(fixed, ones, mean, Some(difference), terms, &mut expanded)?;
        } else {
            let fixed = fixed.union(Bits::single(player));
            stack.push((to1, fixed, ones.union(Bits::single(player))));
            stack.push((to0, fixed, ones));
        }
    }
    Ok(features)
}

/// Adds `Π_{i∈fixed} (1 + σ_i (−1)^{x_i})/2 · (value + c (−1)^{x_p})` to `terms`, `σ_i = −1`
/// for `i ∈ ones` and `(p, c) = parity` (`p ∉ fixed`), and counts the terms into `expanded`.
///
/// Errors, before adding anything, for a non-zero product over more than [`MAX_PATH_FEATURES`]
/// features or once the tree's count passes [`MAX_TREE_TERMS`].
fn expand_path(
    fixed: Bits,
    ones: Bits,
    value: f64,
    parity: Option<(usize, f64)>,
    terms: &mut Sums<u128>,
    expanded: &mut usize,
) -> Result<()> {
    let parity = parity.filter(|&(_, c)| c != 0.0);
    let products = usize::from(value != 0.0) + usize::from(parity.is_some());
    if products == 0 {
        return Ok(());
    }
    let depth = fixed.0.count_ones() as usize;
    if depth > MAX_PATH_FEATURES {
        return Err(CoreError::invalid(
            "model",
            format!(
                "a leaf's path fixes {depth} distinct features; the exact transform expands a \
                 leaf into 2^d terms and supports d <= {MAX_PATH_FEATURES}; use shallower trees"
            ),
        ));
    }
    *expanded += products << depth;
    if *expanded > MAX_TREE_TERMS {
        return Err(CoreError::invalid(
            "model",
            format!(
                "a tree's leaves expand into more than {MAX_TREE_TERMS} terms; use shallower \
                 trees"
            ),
        ));
    }
    let mut players = [0; MAX_PATH_FEATURES];
    for (slot, player) in players.iter_mut().zip(fixed.players()) {
        *slot = player;
    }
    // Subsets in Gray-code order: each step toggles one player and flips the sign when that
    // player's path goes through `x = 1`.
    let (mut key, mut sign) = (0u128, 1.0 / (1u64 << depth) as f64);
    for step in 0..1usize << depth {
        if step > 0 {
            let player = players[step.trailing_zeros() as usize];
            key ^= Bits::single(player).0;
            if ones.contains(player) {
                sign = -sign;
            }
        }
        if value != 0.0 {
            terms.add(key, sign * value);
        }
        if let Some((p, c)) = parity {
            terms.add(key | Bits::single(p).0, sign * c);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
