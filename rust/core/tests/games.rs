//! Closed-form games shared by the integration tests (test oracles).

#![allow(dead_code)]

use ferroshap_core::coalitions::{contains, CoalitionMatrix};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A sum of unanimity models `v(S) = Σ_k c_k [T_k ⊆ S]` with closed-form Shapley values.
pub struct Soum {
    pub n: usize,
    pub terms: Vec<(Vec<usize>, f64)>,
}

impl Soum {
    pub fn random(n: usize, n_terms: usize, max_order: usize, seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let terms = (0..n_terms)
            .map(|_| {
                let order = rng.random_range(1..=max_order.min(n));
                let players = rand::seq::index::sample(&mut rng, n, order).into_vec();
                (players, rng.random_range(-1.0..1.0))
            })
            .collect();
        Self { n, terms }
    }

    pub fn value(&self, mask: &[u64]) -> f64 {
        self.terms
            .iter()
            .filter(|(t, _)| t.iter().all(|&p| contains(mask, p)))
            .map(|(_, c)| c)
            .sum()
    }

    pub fn shapley(&self) -> Vec<f64> {
        let mut phi = vec![0.0; self.n];
        for (t, c) in &self.terms {
            for &p in t {
                phi[p] += c / t.len() as f64;
            }
        }
        phi
    }

    pub fn evaluate(&self, coalitions: &CoalitionMatrix) -> Vec<f64> {
        (0..coalitions.n_rows())
            .map(|r| self.value(coalitions.row(r)))
            .collect()
    }
}

/// `Σ(a − b)² / Σ b²`.
pub fn relative_error(estimate: &[f64], truth: &[f64]) -> f64 {
    let num: f64 = estimate
        .iter()
        .zip(truth)
        .map(|(a, b)| (a - b).powi(2))
        .sum();
    let den: f64 = truth.iter().map(|b| b * b).sum();
    num / den
}
