//! Coefficients summed by key: the hash table behind a tree's expansion and the ensemble's sum.
//!
//! Both sum hundreds of thousands of small terms whose keys repeat a few times each; a general
//! map spends most of that time probing and clearing. This one keeps the terms in insertion
//! order beside an open-addressing index (linear probing, at most half full) that a generation
//! counter empties in constant time, so the same table serves tree after tree.

use std::hash::{BuildHasher, Hash};

use rustc_hash::FxBuildHasher;

/// Terms summed by key, in the order their keys first came.
pub(super) struct Sums<K> {
    /// `(generation, term index)`; a slot from an older generation is empty.
    slots: Vec<(u32, u32)>,
    generation: u32,
    terms: Vec<(K, f64)>,
}

impl<K: Hash + Eq> Sums<K> {
    /// An empty table.
    pub(super) fn new() -> Self {
        Self {
            slots: vec![(0, 0); 64],
            generation: 1,
            terms: Vec::new(),
        }
    }

    /// Adds `value` to the sum for `key`.
    #[inline]
    pub(super) fn add(&mut self, key: K, value: f64) {
        if 2 * (self.terms.len() + 1) > self.slots.len() {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut slot = self.home(&key);
        loop {
            let (generation, index) = self.slots[slot];
            if generation != self.generation {
                self.slots[slot] = (self.generation, self.terms.len() as u32);
                self.terms.push((key, value));
                return;
            }
            let term = &mut self.terms[index as usize];
            if term.0 == key {
                term.1 += value;
                return;
            }
            slot = (slot + 1) & mask;
        }
    }

    /// The slot where the search for `key` starts: the top bits of its Fx hash times `2^64/φ`.
    ///
    /// Fx alone leaves the bits of some players out of its low bits (keys differing only there
    /// would share a slot); the multiplication spreads every bit into the top ones.
    fn home(&self, key: &K) -> usize {
        let hash = FxBuildHasher
            .hash_one(key)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (hash >> (64 - self.slots.len().trailing_zeros())) as usize
    }

    /// Doubles the index and re-enters the terms.
    fn grow(&mut self) {
        let len = 2 * self.slots.len();
        self.slots = vec![(0, 0); len];
        self.generation = 1;
        for index in 0..self.terms.len() {
            let mut slot = self.home(&self.terms[index].0);
            while self.slots[slot].0 == 1 {
                slot = (slot + 1) & (len - 1);
            }
            self.slots[slot] = (1, index as u32);
        }
    }

    /// Takes the terms out, in insertion order, leaving the table empty.
    pub(super) fn drain(&mut self) -> std::vec::Drain<'_, (K, f64)> {
        if self.generation == u32::MAX {
            self.slots.fill((0, 0));
            self.generation = 0;
        }
        self.generation += 1;
        self.terms.drain(..)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_by_key_in_first_seen_order_across_growth_and_reuse() {
        let mut sums = Sums::new();
        for round in 0..3 {
            for i in 0..1000u128 {
                sums.add(i % 300, 1.0);
                sums.add(1 << (i % 128), 0.5);
            }
            let terms: Vec<(u128, f64)> = sums.drain().collect();
            let mut expected: Vec<(u128, f64)> = Vec::new();
            for i in 0..1000u128 {
                for (key, value) in [(i % 300, 1.0), (1 << (i % 128), 0.5)] {
                    match expected.iter_mut().find(|t| t.0 == key) {
                        Some(t) => t.1 += value,
                        None => expected.push((key, value)),
                    }
                }
            }
            assert_eq!(terms, expected, "round {round}");
        }
    }

    #[test]
    fn generations_wrap_around() {
        let mut sums = Sums::new();
        sums.generation = u32::MAX - 1;
        for _ in 0..4 {
            sums.add(7u128, 1.0);
            sums.add(7u128, 2.0);
            assert_eq!(sums.drain().collect::<Vec<_>>(), vec![(7, 3.0)]);
        }
    }
}
