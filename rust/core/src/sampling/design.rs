//! The output of planning: coalitions plus what the estimate phase needs to use their values.

use std::collections::HashMap;

use crate::coalitions::CoalitionMatrix;
use crate::sampling::Method;

/// How the values of a design's coalitions turn into Shapley values.
#[derive(Debug, Clone, PartialEq)]
pub enum EstimatorKind {
    /// Projected weighted least squares with λ = α (KernelSHAP family, LeverageSHAP).
    Regression,
    /// The matrix–vector estimator with λ = α (unbiased).
    MatrixVector,
    /// Averages of marginal contributions along permutations.
    Permutation(Vec<PermutationPath>),
    /// Every coalition is present, in mask order: the exact Shapley value.
    Enumeration,
}

/// One permutation of the players and the design rows of its prefixes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermutationPath {
    /// Players in the order they join.
    pub order: Vec<usize>,
    /// `rows[k]` is the design row of the coalition of the first `k` players (`n + 1` entries).
    pub rows: Vec<usize>,
}

/// A planned, seed-reproducible set of distinct coalitions.
#[derive(Debug, Clone)]
pub struct Design {
    /// The method actually planned ([`Method::Exact`] after an exact fallback).
    pub method: Method,
    /// Number of players.
    pub n_players: usize,
    /// Budget after paired rounding.
    pub budget: u64,
    /// Seed the design was drawn from.
    pub seed: u64,
    /// Random stream id within the seed.
    pub stream: u64,
    /// True when a sampling method became exact enumeration because `budget ≥ 2^n`.
    pub exact_fallback: bool,
    /// The distinct coalitions, one per row.
    pub coalitions: CoalitionMatrix,
    /// Per-row regression weight ω (the matrix–vector factor is `n ω`); zero for ∅ and N.
    pub weights: Vec<f64>,
    /// How values become Shapley values.
    pub estimator: EstimatorKind,
}

impl Design {
    /// Number of distinct coalitions (rows).
    pub fn n_coalitions(&self) -> usize {
        self.coalitions.n_rows()
    }

    /// Coalition sizes, one per row.
    pub fn sizes(&self) -> Vec<usize> {
        (0..self.n_coalitions())
            .map(|r| self.coalitions.size(r))
            .collect()
    }
}

/// Collects distinct coalitions with accumulated weights, in first-seen order.
#[derive(Debug)]
pub struct CoalitionSet {
    coalitions: CoalitionMatrix,
    weights: Vec<f64>,
    index: HashMap<Vec<u64>, usize>,
}

impl CoalitionSet {
    /// An empty set over `n_players`.
    pub fn new(n_players: usize) -> Self {
        Self {
            coalitions: CoalitionMatrix::new(n_players),
            weights: Vec::new(),
            index: HashMap::new(),
        }
    }

    /// Adds `weight` to the coalition `mask`, inserting it if new; returns its row.
    pub fn add(&mut self, mask: Vec<u64>, weight: f64) -> usize {
        if let Some(&row) = self.index.get(&mask) {
            self.weights[row] += weight;
            return row;
        }
        let row = self.weights.len();
        self.coalitions.push(&mask);
        self.weights.push(weight);
        self.index.insert(mask, row);
        row
    }

    /// Whether `mask` is already present.
    pub fn contains(&self, mask: &[u64]) -> bool {
        self.index.contains_key(mask)
    }

    /// Number of distinct coalitions so far.
    pub fn len(&self) -> usize {
        self.weights.len()
    }

    /// Whether no coalition was added yet.
    pub fn is_empty(&self) -> bool {
        self.weights.is_empty()
    }

    /// Multiplies the weight of every row by `f(size of the row)`.
    pub fn rescale(&mut self, f: impl Fn(usize) -> f64) {
        self.rescale_rows(0, f);
    }

    /// Multiplies the weight of every row from `first` on by `f(size of the row)`.
    pub fn rescale_rows(&mut self, first: usize, f: impl Fn(usize) -> f64) {
        for (row, w) in self.weights.iter_mut().enumerate().skip(first) {
            *w *= f(self.coalitions.size(row));
        }
    }

    /// The coalitions and their weights.
    pub fn into_parts(self) -> (CoalitionMatrix, Vec<f64>) {
        (self.coalitions, self.weights)
    }
}
