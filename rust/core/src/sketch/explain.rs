//! Closed-form explanations from a sparse spectrum (docs/sketch.md, "Explanations in closed form"):
//! Shapley values, Möbius (all-order) and order-limited interactions under the uniform background,
//! and Shapley values under a data background. No model call; rows run in parallel, each
//! independently.
//!
//! Under the uniform background `v_x(S) = Σ_{supp k ⊆ S} F[k] ω^{⟨x,k⟩}`, a sum of unanimity
//! games, so one sequence costs `O(Σ_k deg k)`.

use std::collections::BTreeMap;

use num_complex::Complex64;
use rayon::prelude::*;

use super::spectrum::{check_codes, Spectrum};
use crate::error::{CoreError, Result};
use crate::interactions::indices::{bernoulli_numbers, Index};

/// The interaction indices the sketch computes from each sequence's Möbius coefficients
/// (docs/proxyspex.md, "Interaction indices"), in documentation order. At an order no smaller
/// than the largest key degree every one of them equals the Möbius transform.
pub const SKETCH_INDICES: [Index; 4] = [Index::Moebius, Index::KSII, Index::STII, Index::FSII];

/// The sketch index named `name` (shapiq's spelling), or an `index` error listing
/// [`SKETCH_INDICES`].
pub fn parse_sketch_index(name: &str) -> Result<Index> {
    SKETCH_INDICES
        .into_iter()
        .find(|index| index.name() == name)
        .ok_or_else(|| unsupported_index(name))
}

/// The `index` error for a name outside [`SKETCH_INDICES`].
fn unsupported_index(name: &str) -> CoreError {
    let names: Vec<String> = SKETCH_INDICES
        .iter()
        .map(|i| format!("{:?}", i.name()))
        .collect();
    CoreError::invalid(
        "index",
        format!("must be one of {}; got {name:?}", names.join(", ")),
    )
}

/// Interaction values of many sequences over one shared list of player sets.
#[derive(Debug, Clone, PartialEq)]
pub struct Interactions {
    /// The player sets (sorted positions), ordered by size, then lexicographically.
    pub keys: Vec<Vec<u32>>,
    /// `rows × keys.len()`, row-major.
    pub values: Vec<f64>,
}

impl Spectrum {
    /// Shapley values `[rows × n]` of the uniform-background game (docs/sketch.md):
    /// `φ_i(x) = Re Σ_{k_i ≠ 0} F[k] ω^{⟨x,k⟩} / deg k`. Each row sums to `f̂(x) − F[0]`.
    pub fn shapley_values(&self, codes: &[u8]) -> Result<Vec<f64>> {
        check_codes(codes, self.n(), self.q(), "sequences")?;
        let (n, q) = (self.n(), self.q());
        let mut out = vec![0.0; codes.len()];
        out.par_chunks_exact_mut(n)
            .zip(codes.par_chunks_exact(n))
            .for_each(|(phi, x)| {
                for term in self.terms() {
                    let share = self.real_part(term.coefficient, term.phase(x, q))
                        / term.positions.len() as f64;
                    for &i in &term.positions {
                        phi[i as usize] += share;
                    }
                }
            });
        Ok(out)
    }

    /// Shapley values `[rows × n]` of the data-background game
    /// `v_x(S) = mean_r f̂(x_S, b_{r,¬S})` (docs/sketch.md): each key and background row give a
    /// product game `m(T) = ω^{⟨b,k⟩} Π_{j∈T} g_j` with `g_j = ω^{(x_j − b_j) k_j} − 1`, so
    /// `φ_i = Re(F[k] ω^{⟨b,k⟩} g_i Σ_s e_s(g_{D∖i}) / (s + 1))` averaged over the rows, where
    /// `e_s` are elementary symmetric polynomials (`O(deg³)` per key and row).
    /// Each row sums to `f̂(x) − mean_r f̂(b_r)`.
    pub fn shapley_values_background(&self, codes: &[u8], background: &[u8]) -> Result<Vec<f64>> {
        let (n, q) = (self.n(), self.q());
        check_codes(codes, n, q, "sequences")?;
        check_codes(background, n, q, "background")?;
        if background.is_empty() {
            return Err(CoreError::invalid(
                "background",
                "needs at least one sequence",
            ));
        }
        let rows = (background.len() / n) as f64;
        let roots = self.roots();
        let mut out = vec![0.0; codes.len()];
        out.par_chunks_exact_mut(n)
            .zip(codes.par_chunks_exact(n))
            .for_each(|(phi, x)| {
                let mut g = Vec::new();
                let mut poly = Vec::new();
                for b in background.chunks_exact(n) {
                    for term in self.terms() {
                        let base = term.coefficient * roots.pow(term.phase(b, q)) / rows;
                        g.clear();
                        g.extend(term.positions.iter().zip(&term.digits).map(|(&p, &d)| {
                            let p = p as usize;
                            let diff = (usize::from(x[p]) + q - usize::from(b[p])) % q;
                            roots.pow(diff * usize::from(d)) - 1.0
                        }));
                        for (i, &p) in term.positions.iter().enumerate() {
                            if g[i] == Complex64::new(0.0, 0.0) {
                                continue;
                            }
                            poly.clear();
                            poly.push(Complex64::new(1.0, 0.0));
                            for (j, &gj) in g.iter().enumerate() {
                                if j != i {
                                    poly.push(Complex64::new(0.0, 0.0));
                                    for s in (1..poly.len()).rev() {
                                        let lower = poly[s - 1];
                                        poly[s] += gj * lower;
                                    }
                                }
                            }
                            let weighted: Complex64 = poly
                                .iter()
                                .enumerate()
                                .map(|(s, e)| e / (s + 1) as f64)
                                .sum();
                            phi[p as usize] += (base * g[i] * weighted).re;
                        }
                    }
                }
            });
        Ok(out)
    }

    /// The game's value of the empty coalition: `F[0]` under the uniform background, the
    /// surrogate's mean over the rows of `background` otherwise.
    pub fn base_value(&self, background: Option<&[u8]>) -> Result<f64> {
        match background {
            None => Ok(self.mean()),
            Some(rows) => {
                let values = self.predict(rows)?;
                if values.is_empty() {
                    return Err(CoreError::invalid(
                        "background",
                        "needs at least one sequence",
                    ));
                }
                Ok(values.iter().sum::<f64>() / values.len() as f64)
            }
        }
    }

    /// Interactions of the uniform-background game of each sequence, over player sets of size
    /// `1..=max_order` (`None`: every order, i.e. the Möbius coefficients
    /// `a_x(U) = Re Σ_{supp k = U} F[k] ω^{⟨x,k⟩}`, SHAP zero's interactions). Keys are shared
    /// by all rows: the supports of the spectrum and, for keys of degree above `max_order`,
    /// their subsets that the index spreads them onto. `index` is one of [`SKETCH_INDICES`].
    pub fn interactions(
        &self,
        codes: &[u8],
        max_order: Option<usize>,
        index: Index,
    ) -> Result<Interactions> {
        if !SKETCH_INDICES.contains(&index) {
            return Err(unsupported_index(index.name()));
        }
        check_codes(codes, self.n(), self.q(), "sequences")?;
        if max_order == Some(0) {
            return Err(CoreError::invalid("max_order", "must be at least 1, got 0"));
        }
        let q = self.q();
        let plan = ConversionPlan::new(self, max_order, index);
        let width = plan.keys.len();
        let rows = codes.len() / self.n();
        let mut values = vec![0.0; rows * width];
        if width > 0 {
            values
                .par_chunks_exact_mut(width)
                .zip(codes.par_chunks_exact(self.n()))
                .for_each(|(out, x)| {
                    let mut moebius = vec![0.0; plan.targets.len()];
                    for (term, &support) in self.terms().iter().zip(&plan.term_support) {
                        moebius[support] += self.real_part(term.coefficient, term.phase(x, q));
                    }
                    for (m, targets) in moebius.iter().zip(&plan.targets) {
                        for &(column, weight) in targets {
                            out[column] += weight * m;
                        }
                    }
                });
        }
        Ok(Interactions {
            keys: plan.keys,
            values,
        })
    }
}

/// How Möbius coefficients of the spectrum's supports spread onto the output keys.
struct ConversionPlan {
    keys: Vec<Vec<u32>>,
    /// For each term, its support's index.
    term_support: Vec<usize>,
    /// For each support, the `(output column, weight)` pairs of its Möbius coefficient.
    targets: Vec<Vec<(usize, f64)>>,
}

impl ConversionPlan {
    fn new(spectrum: &Spectrum, max_order: Option<usize>, index: Index) -> Self {
        let mut supports: BTreeMap<&[u32], usize> = BTreeMap::new();
        let term_support: Vec<usize> = spectrum
            .terms()
            .iter()
            .map(|term| {
                let next = supports.len();
                *supports.entry(term.positions.as_slice()).or_insert(next)
            })
            .collect();
        // Keys spread only at orders below their degree, which is at most `n`.
        let bernoulli = bernoulli_numbers(max_order.map_or(0, |k| k.min(spectrum.n())));
        let mut spread: Vec<Vec<(Vec<u32>, f64)>> = vec![Vec::new(); supports.len()];
        for (&support, &at) in &supports {
            let s = support.len();
            match max_order {
                Some(k) if s > k => {
                    for t in 1..=k {
                        let weight = index.weight(k, s, t, &bernoulli);
                        if weight != 0.0 {
                            for subset in subsets(support, t) {
                                spread[at].push((subset, weight));
                            }
                        }
                    }
                }
                _ => spread[at].push((support.to_vec(), 1.0)),
            }
        }
        let mut columns: BTreeMap<(usize, Vec<u32>), usize> = spread
            .iter()
            .flatten()
            .map(|(key, _)| ((key.len(), key.clone()), 0))
            .collect();
        for (column, slot) in columns.values_mut().enumerate() {
            *slot = column;
        }
        let targets = spread
            .into_iter()
            .map(|list| {
                list.into_iter()
                    .map(|(key, weight)| (columns[&(key.len(), key)], weight))
                    .collect()
            })
            .collect();
        Self {
            keys: columns.into_keys().map(|(_, key)| key).collect(),
            term_support,
            targets,
        }
    }
}

/// The subsets of `set` with `size` elements, in lexicographic order.
fn subsets(set: &[u32], size: usize) -> Vec<Vec<u32>> {
    let mut out = Vec::new();
    let mut chosen: Vec<usize> = (0..size).collect();
    if size == 0 || size > set.len() {
        return out;
    }
    loop {
        out.push(chosen.iter().map(|&i| set[i]).collect());
        let Some(i) = (0..size).rev().find(|&i| chosen[i] < set.len() - size + i) else {
            return out;
        };
        chosen[i] += 1;
        for j in i + 1..size {
            chosen[j] = chosen[j - 1] + 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subsets_are_listed_lexicographically() {
        assert_eq!(
            subsets(&[1, 4, 7], 2),
            vec![vec![1, 4], vec![1, 7], vec![4, 7]]
        );
        assert_eq!(subsets(&[3], 1), vec![vec![3]]);
        assert!(subsets(&[3], 2).is_empty());
    }

    #[test]
    fn sketch_index_names_round_trip_and_others_are_rejected() {
        for index in SKETCH_INDICES {
            assert_eq!(parse_sketch_index(index.name()).unwrap(), index);
        }
        for name in ["SV", "FBII", "kSII"] {
            assert_eq!(
                parse_sketch_index(name).unwrap_err().to_string(),
                format!(
                    "index: must be one of \"Moebius\", \"k-SII\", \"STII\", \"FSII\"; \
                     got \"{name}\""
                )
            );
        }
    }
}
