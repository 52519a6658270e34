//! SHAP zero sketch end to end: exact recovery of sparse q-ary spectra, robustness to noise, and
//! closed-form explanations against brute-force expectations over the background.

use std::collections::BTreeMap;

use ferroshap_core::interactions::indices::Index;
use ferroshap_core::sampling::exact::shapley_from_table;
use ferroshap_core::sketch::{SketchPlan, Spectrum};
use ferroshap_core::Cancel;
use num_complex::Complex64;
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

/// A random real function with an exactly sparse, Hermitian spectrum: `terms` conjugate classes
/// with degrees `1..=max_degree`, as a map key → `F[k]`, plus `F[0]`.
struct SparseFunction {
    n: usize,
    q: usize,
    mean: f64,
    spectrum: BTreeMap<Vec<u8>, Complex64>,
}

impl SparseFunction {
    fn random(q: usize, n: usize, terms: usize, max_degree: usize, seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut spectrum = BTreeMap::new();
        for _ in 0..20 * terms {
            if spectrum.len() >= 2 * terms {
                break;
            }
            let degree = rng.random_range(1..=max_degree.min(n));
            let mut key = vec![0u8; n];
            for p in rand::seq::index::sample(&mut rng, n, degree) {
                key[p] = rng.random_range(1..q) as u8;
            }
            let negated: Vec<u8> = key.iter().map(|&d| ((q - d as usize) % q) as u8).collect();
            if spectrum.contains_key(&key) {
                continue;
            }
            let magnitude = rng.random_range(0.5..1.5);
            let angle = rng.random_range(0.0..std::f64::consts::TAU);
            let value = if negated == key {
                Complex64::new(magnitude, 0.0)
            } else {
                Complex64::from_polar(magnitude, angle)
            };
            spectrum.insert(negated, value.conj());
            spectrum.insert(key, value);
        }
        Self {
            n,
            q,
            mean: rng.random_range(-1.0..1.0),
            spectrum,
        }
    }

    fn value(&self, x: &[u8]) -> f64 {
        self.mean
            + self
                .spectrum
                .iter()
                .map(|(k, f)| {
                    let t: usize = x
                        .iter()
                        .zip(k)
                        .map(|(&a, &b)| a as usize * b as usize)
                        .sum();
                    let angle = std::f64::consts::TAU * (t % self.q) as f64 / self.q as f64;
                    (f * Complex64::from_polar(1.0, angle)).re
                })
                .sum::<f64>()
    }

    fn to_spectrum(&self) -> Spectrum {
        let keys = self.spectrum.keys().flatten().copied().collect();
        let values = self.spectrum.values().copied().collect();
        Spectrum::new(self.n, self.q, keys, values, self.mean).unwrap()
    }

    /// `‖F̂ − F‖² / ‖F‖²` over every key, the mean included.
    fn spectrum_nmse(&self, found: &Spectrum) -> f64 {
        let mut diff: BTreeMap<Vec<u8>, Complex64> = self.spectrum.clone();
        for (key, value) in found.keys().chunks_exact(self.n).zip(found.coefficients()) {
            *diff.entry(key.to_vec()).or_default() -= value;
        }
        let error =
            diff.values().map(|d| d.norm_sqr()).sum::<f64>() + (self.mean - found.mean()).powi(2);
        let norm = self.spectrum.values().map(|d| d.norm_sqr()).sum::<f64>() + self.mean.powi(2);
        error / norm
    }
}

fn evaluate(plan: &SketchPlan, f: impl FnMut(&[u8]) -> f64) -> Vec<f64> {
    plan.queries().chunks_exact(plan.params.n).map(f).collect()
}

#[test]
fn noiseless_sparse_spectra_are_recovered_exactly() {
    // (q, n, conjugate classes, max degree, budget)
    for (q, n, terms, degree, budget) in [
        (2, 16, 40, 4, 6000),
        (4, 20, 50, 3, 12_096),
        (4, 12, 30, 4, 8000),
        (20, 6, 10, 4, 12_000),
        (3, 10, 25, 2, 5000),
    ] {
        for seed in 0..2 {
            let f = SparseFunction::random(q, n, terms, degree, seed);
            let plan = SketchPlan::from_budget(q, n, budget, 1, seed).unwrap();
            assert!(plan.n_queries() as u64 <= budget);
            let fit = plan
                .decode(&evaluate(&plan, |x| f.value(x)), Cancel::never())
                .unwrap();
            let nmse = f.spectrum_nmse(&fit.spectrum);
            assert!(
                nmse < 1e-20,
                "q={q} n={n} seed={seed}: spectrum NMSE {nmse}"
            );
            assert_eq!(
                fit.spectrum.len(),
                f.spectrum.len(),
                "q={q} n={n}: spurious keys"
            );
            assert!(
                fit.holdout_nmse < 1e-18,
                "held-out NMSE {}",
                fit.holdout_nmse
            );
        }
    }
}

#[test]
fn noise_error_falls_with_the_budget() {
    let f = SparseFunction::random(4, 12, 20, 3, 9);
    let normal = Normal::new(0.0, 0.05).unwrap();
    let errors: Vec<f64> = [3000u64, 12_000, 48_000]
        .iter()
        .map(|&budget| {
            let plan = SketchPlan::from_budget(4, 12, budget, 1, 1).unwrap();
            let mut rng = ChaCha8Rng::seed_from_u64(budget);
            let values = evaluate(&plan, |x| f.value(x) + normal.sample(&mut rng));
            f.spectrum_nmse(&plan.decode(&values, Cancel::never()).unwrap().spectrum)
        })
        .collect();
    assert!(errors[0] < 0.5 && errors[2] < 1e-5, "{errors:?}");
    assert!(errors[1] < errors[0] && errors[2] < errors[1], "{errors:?}");
}

#[test]
fn decoding_is_reproducible_and_thread_count_independent() {
    let f = SparseFunction::random(4, 10, 15, 3, 4);
    let normal = Normal::new(0.0, 0.1).unwrap();
    let plan = SketchPlan::from_budget(4, 10, 6000, 1, 2).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let values = evaluate(&plan, |x| f.value(x) + normal.sample(&mut rng));
    let many = plan.decode(&values, Cancel::never()).unwrap();
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap()
        .install(|| plan.decode(&values, Cancel::never()).unwrap());
    assert_eq!(many.spectrum.keys(), one.spectrum.keys());
    assert_eq!(many.spectrum.coefficients(), one.spectrum.coefficients());
    assert_eq!(
        many.spectrum.mean().to_bits(),
        one.spectrum.mean().to_bits()
    );
}

#[test]
fn bad_values_are_rejected() {
    let plan = SketchPlan::from_budget(2, 4, 200, 1, 0).unwrap();
    let m = plan.n_queries();
    assert!(plan
        .decode(&vec![0.0; m + 1], Cancel::never())
        .unwrap_err()
        .to_string()
        .starts_with("values"));
    let mut values = vec![0.0; m];
    values[3] = f64::NAN;
    assert!(plan
        .decode(&values, Cancel::never())
        .unwrap_err()
        .to_string()
        .contains("value 3 is NaN"));
}

/// All sequences of `Z_q^n` in big-endian order.
fn all_sequences(q: usize, n: usize) -> Vec<Vec<u8>> {
    (0..q.pow(n as u32))
        .map(|mut i| {
            let mut x = vec![0u8; n];
            for slot in x.iter_mut().rev() {
                *slot = (i % q) as u8;
                i /= q;
            }
            x
        })
        .collect()
}

/// `v(S)` for every coalition `S` (bit `i` = position `i`): the mean of `f(x_S, z_{¬S})` over
/// the replacement rows `z`.
fn game_table(f: &Spectrum, x: &[u8], replacements: &[Vec<u8>]) -> Vec<f64> {
    let n = x.len();
    (0..1usize << n)
        .map(|mask| {
            let rows: Vec<u8> = replacements
                .iter()
                .flat_map(|z| (0..n).map(move |i| if mask >> i & 1 == 1 { x[i] } else { z[i] }))
                .collect();
            let values = f.predict(&rows).unwrap();
            values.iter().sum::<f64>() / values.len() as f64
        })
        .collect()
}

/// Möbius coefficients of a table game.
fn moebius(table: &[f64]) -> Vec<f64> {
    let mut m = table.to_vec();
    let n = table.len().trailing_zeros();
    for i in 0..n {
        for mask in 0..m.len() {
            if mask >> i & 1 == 1 {
                m[mask] -= m[mask ^ (1 << i)];
            }
        }
    }
    m
}

#[test]
fn closed_forms_match_brute_force_expectations() {
    let (q, n) = (3, 5);
    let f = SparseFunction::random(q, n, 8, 4, 11).to_spectrum();
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let xs: Vec<u8> = (0..3 * n).map(|_| rng.random_range(0..q) as u8).collect();
    let background: Vec<Vec<u8>> = (0..4)
        .map(|_| (0..n).map(|_| rng.random_range(0..q) as u8).collect())
        .collect();
    let flat_background: Vec<u8> = background.concat();
    let uniform = f.shapley_values(&xs).unwrap();
    let data = f.shapley_values_background(&xs, &flat_background).unwrap();
    let all = f.interactions(&xs, None, Index::Moebius).unwrap();
    for (r, x) in xs.chunks_exact(n).enumerate() {
        let table = game_table(&f, x, &all_sequences(q, n));
        let phi = shapley_from_table(&table, n);
        for i in 0..n {
            assert!((uniform[r * n + i] - phi[i]).abs() < 1e-12);
        }
        assert!((table[0] - f.base_value(None).unwrap()).abs() < 1e-12);
        let m = moebius(&table);
        let width = all.keys.len();
        for (key, value) in all.keys.iter().zip(&all.values[r * width..]) {
            let mask: usize = key.iter().map(|&p| 1 << p).sum();
            assert!((m[mask] - value).abs() < 1e-12, "{key:?}");
        }
        let covered: usize = all.keys.len();
        let nonzero = m[1..].iter().filter(|v| v.abs() > 1e-12).count();
        assert!(nonzero <= covered);
        let table = game_table(&f, x, &background);
        let phi = shapley_from_table(&table, n);
        for i in 0..n {
            assert!((data[r * n + i] - phi[i]).abs() < 1e-12);
        }
        assert!((table[0] - f.base_value(Some(&flat_background)).unwrap()).abs() < 1e-12);
    }
}

#[test]
fn order_limited_indices_are_efficient() {
    let (q, n) = (4, 8);
    let f = SparseFunction::random(q, n, 20, 4, 3).to_spectrum();
    let xs: Vec<u8> = (0..2 * n).map(|i| (i * 7 % q) as u8).collect();
    let predictions = f.predict(&xs).unwrap();
    for index in [Index::KSII, Index::STII, Index::FSII] {
        for order in 1..=3 {
            let out = f.interactions(&xs, Some(order), index).unwrap();
            assert!(out.keys.iter().all(|k| (1..=order).contains(&k.len())));
            let width = out.keys.len();
            for (r, row) in out.values.chunks_exact(width).enumerate() {
                let total: f64 = row.iter().sum();
                assert!(
                    (total - (predictions[r] - f.mean())).abs() < 1e-10,
                    "{index} order {order}"
                );
            }
        }
        // First order of every index is the Shapley value.
        let first = f.interactions(&xs, Some(1), index).unwrap();
        let phi = f.shapley_values(&xs).unwrap();
        for (r, row) in first.values.chunks_exact(first.keys.len()).enumerate() {
            for (key, value) in first.keys.iter().zip(row) {
                assert!((phi[r * n + key[0] as usize] - value).abs() < 1e-12);
            }
        }
    }
}

#[test]
fn indices_the_sketch_does_not_compute_are_rejected() {
    let f = SparseFunction::random(2, 4, 5, 3, 1).to_spectrum();
    let xs = [0u8, 1, 0, 1];
    for index in [
        Index::Fourier,
        Index::SV,
        Index::BV,
        Index::SII,
        Index::BII,
        Index::FBII,
    ] {
        let err = f.interactions(&xs, Some(2), index).unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "index: must be one of \"Moebius\", \"k-SII\", \"STII\", \"FSII\"; got \"{index}\""
            )
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn shapley_values_are_efficient(seed in 0u64..10_000, q in 2usize..7, n in 1usize..9) {
        let f = SparseFunction::random(q, n, 6, 4, seed).to_spectrum();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let xs: Vec<u8> = (0..3 * n).map(|_| rng.random_range(0..q) as u8).collect();
        let bg: Vec<u8> = (0..2 * n).map(|_| rng.random_range(0..q) as u8).collect();
        let predictions = f.predict(&xs).unwrap();
        let uniform = f.shapley_values(&xs).unwrap();
        let data = f.shapley_values_background(&xs, &bg).unwrap();
        let base = f.base_value(Some(&bg)).unwrap();
        for r in 0..3 {
            let u: f64 = uniform[r * n..(r + 1) * n].iter().sum();
            let d: f64 = data[r * n..(r + 1) * n].iter().sum();
            prop_assert!((u - (predictions[r] - f.mean())).abs() < 1e-10);
            prop_assert!((d - (predictions[r] - base)).abs() < 1e-10);
        }
    }
}
