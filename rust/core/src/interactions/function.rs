//! Sparse set functions: a few coefficients on subsets of players, in the Fourier (Walsh–Hadamard)
//! or the Möbius basis (docs/proxyspex.md, "Conventions").
//!
//! - Fourier: `f(x) = Σ_K F(K) (−1)^{|K ∩ x|}`.
//! - Möbius: `f(x) = Σ_S m(S) [S ⊆ x]`.
//!
//! A [`Key`] is a sorted list of distinct player indices, so any number of players is supported
//! and keys of low order stay small.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;

use rayon::prelude::*;
use std::hash::BuildHasher;

use rustc_hash::{FxBuildHasher, FxHashMap};
use smallvec::SmallVec;

use crate::error::{CoreError, Result};

/// Rows per parallel block when evaluating many coalitions (fixed, so results never depend on
/// the thread count).
const ROW_BLOCK: usize = 256;

/// Players a [`Key`] holds without a heap allocation.
const INLINE_PLAYERS: usize = 4;

/// A subset of players: sorted, distinct indices.
///
/// Keys order by size first, then lexicographically, so sorted output lists ∅, the singletons,
/// the pairs, … Hashing and equality agree with `[u32]`, so maps can be probed with a borrowed
/// slice and no allocation. Keys of up to four players live inline: spectra hold hundreds of
/// thousands of low-order keys, and allocating (and freeing) each one would dominate building
/// them.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Key(SmallVec<[u32; INLINE_PLAYERS]>);

impl Key {
    /// The empty set.
    pub fn empty() -> Self {
        Self(SmallVec::new())
    }

    /// A key from player indices that are already sorted and distinct.
    pub fn from_sorted(players: &[u32]) -> Self {
        Self::from_sorted_iter(players.iter().copied())
    }

    /// [`Key::from_sorted`] from an iterator of sorted, distinct players.
    pub(crate) fn from_sorted_iter(players: impl IntoIterator<Item = u32>) -> Self {
        let players: SmallVec<[u32; INLINE_PLAYERS]> = players.into_iter().collect();
        debug_assert!(players.windows(2).all(|w| w[0] < w[1]));
        Self(players)
    }

    /// A key from any player indices: sorts them and rejects repeats and players `≥ n_players`.
    pub fn new(mut players: Vec<u32>, n_players: usize) -> Result<Self> {
        players.sort_unstable();
        if let Some(w) = players.windows(2).find(|w| w[0] == w[1]) {
            return Err(CoreError::invalid(
                "keys",
                format!("player {} appears twice in one key", w[0]),
            ));
        }
        if let Some(&p) = players.last().filter(|&&p| p as usize >= n_players) {
            return Err(CoreError::invalid(
                "keys",
                format!("player {p} is out of range for n_players = {n_players}"),
            ));
        }
        Ok(Self(SmallVec::from_slice(&players)))
    }

    /// The players, sorted.
    pub fn players(&self) -> &[u32] {
        &self.0
    }

    /// Number of players in the set.
    pub fn order(&self) -> usize {
        self.0.len()
    }

    /// Whether every player of the key is set in the row-major coalition `row`.
    fn within(&self, row: &[bool]) -> bool {
        self.0.iter().all(|&p| row[p as usize])
    }

    /// `|K ∩ x|` is odd.
    fn odd_overlap(&self, row: &[bool]) -> bool {
        self.0.iter().filter(|&&p| row[p as usize]).count() % 2 == 1
    }
}

impl Borrow<[u32]> for Key {
    fn borrow(&self) -> &[u32] {
        &self.0
    }
}

impl Ord for Key {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0
            .len()
            .cmp(&other.0.len())
            .then_with(|| self.0.cmp(&other.0))
    }
}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

/// The basis a [`SparseFunction`]'s coefficients are expressed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Basis {
    /// Walsh–Hadamard characters `(−1)^{|K ∩ x|}`.
    Fourier,
    /// Unanimity games `[S ⊆ x]` (Harsanyi dividends).
    Moebius,
}

impl Basis {
    /// shapiq's spelling: `"Fourier"` or `"Moebius"`.
    pub fn name(self) -> &'static str {
        match self {
            Basis::Fourier => "Fourier",
            Basis::Moebius => "Moebius",
        }
    }
}

/// A set function on `n_players` players given by sparse coefficients in one basis.
///
/// Invariant: `terms` is sorted by key (see [`Key`]'s order), keys are distinct and within
/// `0..n_players`, and no coefficient is exactly zero.
#[derive(Debug, Clone, PartialEq)]
pub struct SparseFunction {
    basis: Basis,
    n_players: usize,
    terms: Vec<(Key, f64)>,
}

impl SparseFunction {
    /// Builds a function from `(key, coefficient)` pairs; repeated keys are summed (in the given
    /// order), exact zeros dropped. Errors name `keys` for players out of range and
    /// `coefficients` for non-finite values.
    pub fn new(basis: Basis, n_players: usize, terms: Vec<(Key, f64)>) -> Result<Self> {
        if let Some((key, _)) = terms
            .iter()
            .find(|(k, _)| k.players().last().is_some_and(|&p| p as usize >= n_players))
        {
            return Err(CoreError::invalid(
                "keys",
                format!("key {key:?} has a player out of range for n_players = {n_players}"),
            ));
        }
        if let Some((key, c)) = terms.iter().find(|(_, c)| !c.is_finite()) {
            return Err(CoreError::invalid(
                "coefficients",
                format!("must be finite; found {c} at key {key:?}"),
            ));
        }
        let mut acc = Accumulator::default();
        for (key, c) in terms {
            acc.add_key(key, c);
        }
        Ok(acc.finish(basis, n_players))
    }

    /// A function from terms that already satisfy the invariant: sorted by key, distinct keys
    /// within `0..n_players`, no exact zeros.
    pub(crate) fn from_sorted_terms(
        basis: Basis,
        n_players: usize,
        terms: Vec<(Key, f64)>,
    ) -> Self {
        debug_assert!(terms.windows(2).all(|w| w[0].0 < w[1].0));
        debug_assert!(terms.iter().all(
            |(k, c)| *c != 0.0 && k.players().last().is_none_or(|&p| (p as usize) < n_players)
        ));
        Self {
            basis,
            n_players,
            terms,
        }
    }

    /// The basis of the coefficients.
    pub fn basis(&self) -> Basis {
        self.basis
    }

    /// Number of players `n`.
    pub fn n_players(&self) -> usize {
        self.n_players
    }

    /// The `(key, coefficient)` pairs, sorted by key.
    pub fn terms(&self) -> &[(Key, f64)] {
        &self.terms
    }

    /// Number of non-zero coefficients.
    pub fn len(&self) -> usize {
        self.terms.len()
    }

    /// Whether the function is identically zero.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// The coefficient of `key` (0 when absent).
    pub fn coefficient(&self, key: &[u32]) -> f64 {
        let probe = Key::from_sorted(key);
        self.terms
            .binary_search_by(|(k, _)| k.cmp(&probe))
            .map_or(0.0, |i| self.terms[i].1)
    }

    /// Largest key order (0 for a constant or empty function).
    pub fn max_order(&self) -> usize {
        self.terms.last().map_or(0, |(k, _)| k.order())
    }

    /// The function's value on each row of the row-major `m × n` indicator array `masks`.
    pub fn evaluate(&self, masks: &[bool]) -> Result<Vec<f64>> {
        let n = self.n_players;
        if n == 0 || masks.len() % n != 0 {
            return Err(CoreError::invalid(
                "masks",
                format!("expected rows of {n} players, got {} entries", masks.len()),
            ));
        }
        let rows = masks.len() / n;
        let mut out = vec![0.0; rows];
        out.par_chunks_mut(ROW_BLOCK)
            .enumerate()
            .for_each(|(block, chunk)| {
                for (j, value) in chunk.iter_mut().enumerate() {
                    let r = block * ROW_BLOCK + j;
                    *value = self.value_at(&masks[r * n..(r + 1) * n]);
                }
            });
        Ok(out)
    }

    /// The value on one coalition given as `n` indicators.
    fn value_at(&self, row: &[bool]) -> f64 {
        match self.basis {
            Basis::Moebius => self
                .terms
                .iter()
                .filter(|(k, _)| k.within(row))
                .map(|(_, c)| c)
                .sum(),
            Basis::Fourier => self
                .terms
                .iter()
                .map(|(k, c)| if k.odd_overlap(row) { -c } else { *c })
                .sum(),
        }
    }
}

/// Sums coefficients per key; contributions to one key are added in the order they arrive, so
/// results are reproducible whatever the map's iteration order.
#[derive(Debug, Default)]
pub(crate) struct Accumulator {
    map: FxHashMap<Key, f64>,
}

impl Accumulator {
    /// Adds `c` to the coefficient of the (sorted, distinct) players `key`, allocating only for
    /// a key not seen before.
    pub(crate) fn add(&mut self, key: &[u32], c: f64) {
        match self.map.get_mut(key) {
            Some(value) => *value += c,
            None => {
                self.map.insert(Key::from_sorted(key), c);
            }
        }
    }

    /// Adds `c` to the coefficient of `key`.
    pub(crate) fn add_key(&mut self, key: Key, c: f64) {
        *self.map.entry(key).or_insert(0.0) += c;
    }

    /// The sorted terms without exact zeros.
    pub(crate) fn into_terms(self) -> Vec<(Key, f64)> {
        let mut terms: Vec<(Key, f64)> = self.map.into_iter().filter(|(_, c)| *c != 0.0).collect();
        terms.par_sort_unstable_by(|a, b| a.0.cmp(&b.0));
        terms
    }

    /// The accumulated function.
    pub(crate) fn finish(self, basis: Basis, n_players: usize) -> SparseFunction {
        SparseFunction {
            basis,
            n_players,
            terms: self.into_terms(),
        }
    }
}

/// Calls `visit(subset)` for every subset of the sorted `players` with at most `max_size`
/// players, in order of size, the subset's players sorted (`buffer` is scratch space).
pub(crate) fn for_each_subset(
    players: &[u32],
    max_size: usize,
    buffer: &mut Vec<u32>,
    mut visit: impl FnMut(&[u32]),
) {
    let k = players.len();
    let mut positions: Vec<usize> = Vec::with_capacity(k);
    for size in 0..=max_size.min(k) {
        // Lexicographic combinations of `size` positions out of `k`.
        positions.clear();
        positions.extend(0..size);
        loop {
            buffer.clear();
            buffer.extend(positions.iter().map(|&j| players[j]));
            visit(buffer);
            let Some(i) = (0..size).rev().find(|&i| positions[i] < k - size + i) else {
                break;
            };
            positions[i] += 1;
            for j in i + 1..size {
                positions[j] = positions[j - 1] + 1;
            }
        }
    }
}

/// Hash shards of the final merge in [`par_accumulate`].
const SHARDS: usize = 16;

/// Accumulates `f(item, accumulator)` over `items` in parallel: fixed blocks of `block` items,
/// each summed in item order, then merged block after block (in parallel over hash shards of
/// the keys), so that every coefficient is the same sum in the same order whatever the number
/// of threads.
pub(crate) fn par_accumulate<T: Sync>(
    items: &[T],
    block: usize,
    f: impl Fn(&T, &mut Accumulator) -> Result<()> + Sync,
) -> Result<Accumulator> {
    let shard_of = |key: &Key| (FxBuildHasher.hash_one(key) % SHARDS as u64) as usize;
    let blocks: Vec<Vec<Vec<(Key, f64)>>> = items
        .par_chunks(block.max(1))
        .map(|chunk| {
            let mut acc = Accumulator::default();
            for item in chunk {
                f(item, &mut acc)?;
            }
            let mut shards: Vec<Vec<(Key, f64)>> = vec![Vec::new(); SHARDS];
            for (key, c) in acc.map {
                shards[shard_of(&key)].push((key, c));
            }
            Ok(shards)
        })
        .collect::<Result<_>>()?;
    let mut by_shard: Vec<Vec<Vec<(Key, f64)>>> = (0..SHARDS)
        .map(|_| Vec::with_capacity(blocks.len()))
        .collect();
    for shards in blocks {
        for (s, terms) in shards.into_iter().enumerate() {
            by_shard[s].push(terms);
        }
    }
    let merged: Vec<FxHashMap<Key, f64>> = by_shard
        .into_par_iter()
        .map(|blocks| {
            let mut map = FxHashMap::default();
            for terms in blocks {
                for (key, c) in terms {
                    *map.entry(key).or_insert(0.0) += c;
                }
            }
            map
        })
        .collect();
    let mut total = Accumulator::default();
    total.map.reserve(merged.iter().map(|m| m.len()).sum());
    for map in merged {
        total.map.extend(map);
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(players: &[u32]) -> Key {
        Key::from_sorted(players)
    }

    #[test]
    fn keys_order_by_size_then_players() {
        let mut keys = vec![key(&[0, 2]), key(&[3]), key(&[]), key(&[0, 1]), key(&[1])];
        keys.sort();
        assert_eq!(
            keys,
            vec![key(&[]), key(&[1]), key(&[3]), key(&[0, 1]), key(&[0, 2])]
        );
    }

    #[test]
    fn new_sums_repeats_and_drops_zeros() {
        let f = SparseFunction::new(
            Basis::Moebius,
            3,
            vec![(key(&[1]), 1.0), (key(&[0]), 2.0), (key(&[1]), -1.0)],
        )
        .unwrap();
        assert_eq!(f.terms(), &[(key(&[0]), 2.0)]);
        assert!(SparseFunction::new(Basis::Moebius, 1, vec![(key(&[1]), 1.0)]).is_err());
        assert!(SparseFunction::new(Basis::Moebius, 2, vec![(key(&[1]), f64::NAN)]).is_err());
        assert!(Key::new(vec![2, 2], 3).is_err());
        assert_eq!(Key::new(vec![2, 0], 3).unwrap(), key(&[0, 2]));
    }

    #[test]
    fn parity_and_unanimity_evaluate() {
        // Parity on players 0 and 1: F({0,1}) = 1 is (−1)^{x0 + x1}.
        let parity = SparseFunction::new(Basis::Fourier, 3, vec![(key(&[0, 1]), 1.0)]).unwrap();
        let masks = [
            false, false, false, true, false, false, true, true, true, false, true, false,
        ];
        assert_eq!(parity.evaluate(&masks).unwrap(), vec![1.0, -1.0, 1.0, -1.0]);
        let unanimity = SparseFunction::new(Basis::Moebius, 3, vec![(key(&[0, 1]), 2.0)]).unwrap();
        assert_eq!(
            unanimity.evaluate(&masks).unwrap(),
            vec![0.0, 0.0, 2.0, 0.0]
        );
        assert!(unanimity.evaluate(&masks[..5]).is_err());
    }

    #[test]
    fn subsets_by_size() {
        let mut seen = Vec::new();
        for_each_subset(&[1, 4, 7], 2, &mut Vec::new(), |s| seen.push(s.to_vec()));
        let expected: Vec<Vec<u32>> = vec![
            vec![],
            vec![1],
            vec![4],
            vec![7],
            vec![1, 4],
            vec![1, 7],
            vec![4, 7],
        ];
        assert_eq!(seen, expected);
        let mut count = 0;
        for_each_subset(&[0, 1, 2, 3, 4], 5, &mut Vec::new(), |_| count += 1);
        assert_eq!(count, 32);
    }
}
