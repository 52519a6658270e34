//! Interaction indices from sparse set functions (docs/proxyspex.md, "Interaction indices"):
//! Fourier ↔ Möbius and Möbius → SV, BV, SII, BII, k-SII, STII, FSII, FBII, each with its exact
//! closed form.
//!
//! Every index is linear in the Möbius coefficients and, for a Möbius key `S` of size `s`, puts
//! a weight `w(s, t)` on each subset `T ⊆ S` of size `t ≤ k` (the explanation order), so a
//! conversion is one pass over the keys and their small subsets.

use std::fmt;
use std::str::FromStr;

use crate::cancel::Cancel;
use crate::coalitions::binomial_f64;
use crate::error::{CoreError, Result};
use crate::interactions::function::{for_each_subset, par_accumulate, Basis, Key, SparseFunction};

/// Keys per parallel block in the conversions.
const KEY_BLOCK: usize = 4096;

/// Largest key order the conversions accept: a key of order `s` spreads into `2^s` subsets.
pub const MAX_KEY_ORDER: usize = 30;

/// An interaction index (shapiq's names and meanings).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Index {
    /// Möbius coefficients (Harsanyi dividends).
    Moebius,
    /// Fourier (Walsh–Hadamard) coefficients.
    Fourier,
    /// Shapley values (order 1).
    SV,
    /// Banzhaf values (order 1).
    BV,
    /// Shapley interaction index (Grabisch and Roubens).
    SII,
    /// Banzhaf interaction index.
    BII,
    /// k-Shapley interaction values (Bordt and von Luxburg): Bernoulli-aggregated SII.
    KSII,
    /// Shapley–Taylor interaction index.
    STII,
    /// Faithful Shapley interaction index (Tsai et al.).
    FSII,
    /// Faithful Banzhaf interaction index.
    FBII,
}

impl Index {
    /// Every index, in documentation order.
    pub const ALL: [Index; 10] = [
        Index::Moebius,
        Index::Fourier,
        Index::SV,
        Index::BV,
        Index::SII,
        Index::BII,
        Index::KSII,
        Index::STII,
        Index::FSII,
        Index::FBII,
    ];

    /// The name users pass (shapiq's spelling).
    pub fn name(self) -> &'static str {
        match self {
            Index::Moebius => "Moebius",
            Index::Fourier => "Fourier",
            Index::SV => "SV",
            Index::BV => "BV",
            Index::SII => "SII",
            Index::BII => "BII",
            Index::KSII => "k-SII",
            Index::STII => "STII",
            Index::FSII => "FSII",
            Index::FBII => "FBII",
        }
    }

    /// The explanation order actually used for a requested `max_order` on `n_players`: 1 for SV
    /// and BV, otherwise `max_order` capped at `n_players` (every index is then the Möbius
    /// transform itself).
    pub fn effective_order(self, max_order: usize, n_players: usize) -> usize {
        match self {
            Index::SV | Index::BV => 1,
            _ => max_order.min(n_players).max(1),
        }
    }

    /// Weight of Möbius key `S` (size `s`) on a subset `T ⊆ S` of size `t` at order `k`
    /// (`t ≤ k`, `t ≤ s`). `bernoulli` holds `B_0 .. B_k`.
    pub(crate) fn weight(self, k: usize, s: usize, t: usize, bernoulli: &[f64]) -> f64 {
        let same = if s == t { 1.0 } else { 0.0 };
        let sign = |e: usize| if e % 2 == 0 { 1.0 } else { -1.0 };
        let c = |a: usize, b: usize| binomial_f64(a as u64, b as u64);
        match self {
            Index::Moebius => same,
            Index::Fourier => unreachable!("Fourier is a change of basis, not a weighting"),
            Index::SV => 1.0 / s as f64,
            Index::BV | Index::BII => 0.5f64.powi((s - t) as i32),
            Index::SII => 1.0 / (s - t + 1) as f64,
            Index::KSII if s <= k => same,
            Index::KSII => (t..=k)
                .map(|r| c(s - t, r - t) * bernoulli[r - t] / (s - r + 1) as f64)
                .sum(),
            Index::STII if t < k => same,
            Index::STII => 1.0 / c(s, k),
            Index::FSII if s <= k => same,
            Index::FSII => {
                sign(k - t) * (t as f64 / (k + t) as f64) * c(k, t) * c(s - 1, k)
                    / c(s + k - 1, k + t)
            }
            Index::FBII if s <= k => same,
            Index::FBII => sign(k - t) * 0.5f64.powi((s - t) as i32) * c(s - t - 1, k - t),
        }
    }
}

impl fmt::Display for Index {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Index {
    type Err = CoreError;

    fn from_str(s: &str) -> Result<Self> {
        Index::ALL
            .into_iter()
            .find(|i| i.name() == s)
            .ok_or_else(|| {
                let names: Vec<String> = Index::ALL
                    .iter()
                    .map(|i| format!("\"{}\"", i.name()))
                    .collect();
                CoreError::invalid(
                    "index",
                    format!(
                        "unknown index \"{s}\"; expected one of {}",
                        names.join(", ")
                    ),
                )
            })
    }
}

/// Interaction values of one index at one order.
#[derive(Debug, Clone, PartialEq)]
pub struct Interactions {
    /// The index.
    pub index: Index,
    /// The explanation order used (see [`Index::effective_order`]).
    pub max_order: usize,
    /// Values of the subsets `T` with `1 ≤ |T| ≤ max_order`, sorted by key, exact zeros dropped.
    pub values: Vec<(Key, f64)>,
    /// `v(∅)`; for FBII its own empty-set value (as shapiq reports it).
    pub baseline: f64,
}

fn check_order(key: &Key) -> Result<()> {
    if key.order() > MAX_KEY_ORDER {
        return Err(CoreError::invalid(
            "coefficients",
            format!(
                "key {key:?} has order {} above {MAX_KEY_ORDER}; its {} subsets are too many \
                 to convert",
                key.order(),
                1u64 << key.order()
            ),
        ));
    }
    Ok(())
}

/// The same function in the Möbius basis: `m(S) = (−2)^{|S|} Σ_{K ⊇ S} F(K)`.
pub fn to_moebius(f: &SparseFunction) -> Result<SparseFunction> {
    to_basis(f, Basis::Moebius, Cancel::never())
}

/// The same function in the Fourier basis: `F(K) = (−1)^{|K|} Σ_{S ⊇ K} m(S) / 2^{|S|}`.
pub fn to_fourier(f: &SparseFunction) -> Result<SparseFunction> {
    to_basis(f, Basis::Fourier, Cancel::never())
}

/// The same function in `basis` ([`to_moebius`], [`to_fourier`]), polling `cancel` at every key
/// (a key of order `s` spreads into `2^s` subsets: deep trees make this a long step).
pub fn to_basis(f: &SparseFunction, basis: Basis, cancel: &Cancel) -> Result<SparseFunction> {
    match (f.basis(), basis) {
        (from, to) if from == to => Ok(f.clone()),
        (_, Basis::Moebius) => {
            change_basis(f, Basis::Moebius, cancel, |s| (-2.0f64).powi(s as i32))
        }
        (_, Basis::Fourier) => change_basis(f, Basis::Fourier, cancel, |s| {
            if s % 2 == 0 {
                1.0
            } else {
                -1.0
            }
        }),
    }
}

/// Spreads each key's coefficient over all its subsets: subset `T` of key `K` gets
/// `c(K) · subset_factor(|T|) · key_factor(|K|)`, with `key_factor = 1` into Möbius and `2^{−|K|}`
/// into Fourier.
fn change_basis(
    f: &SparseFunction,
    target: Basis,
    cancel: &Cancel,
    subset_factor: impl Fn(usize) -> f64 + Sync,
) -> Result<SparseFunction> {
    let acc = par_accumulate(f.terms(), KEY_BLOCK, |(key, c), acc| {
        cancel.check()?;
        check_order(key)?;
        let scaled = match target {
            Basis::Moebius => *c,
            Basis::Fourier => c * 0.5f64.powi(key.order() as i32),
        };
        let mut buffer = Vec::with_capacity(key.order());
        for_each_subset(key.players(), key.order(), &mut buffer, |sub| {
            acc.add(sub, scaled * subset_factor(sub.len()));
        });
        Ok(())
    })?;
    Ok(acc.finish(target, f.n_players()))
}

/// Bernoulli numbers `B_0 .. B_k` (with `B_1 = −1/2`).
pub(crate) fn bernoulli_numbers(k: usize) -> Vec<f64> {
    let mut b = vec![0.0; k + 1];
    b[0] = 1.0;
    for m in 1..=k {
        let sum: f64 = (0..m)
            .map(|j| binomial_f64(m as u64 + 1, j as u64) * b[j])
            .sum();
        b[m] = -sum / (m + 1) as f64;
    }
    b
}

/// The values of `index` up to order `max_order` (≥ 1) of the set function `f`.
pub fn interactions(f: &SparseFunction, index: Index, max_order: usize) -> Result<Interactions> {
    if max_order < 1 {
        return Err(CoreError::invalid(
            "max_order",
            format!("must be at least 1, got {max_order}"),
        ));
    }
    let n = f.n_players();
    let k = index.effective_order(max_order, n);
    let moebius = to_moebius(f)?;
    let empty_value = moebius.coefficient(&[]);
    if index == Index::Fourier || index == Index::Moebius {
        let g = if index == Index::Fourier {
            to_fourier(&moebius)?
        } else {
            moebius
        };
        let values = g
            .terms()
            .iter()
            .filter(|(key, _)| (1..=k).contains(&key.order()))
            .cloned()
            .collect();
        return Ok(Interactions {
            index,
            max_order: k,
            values,
            baseline: empty_value,
        });
    }
    let top = moebius.max_order();
    let bernoulli = bernoulli_numbers(k);
    // weights[s][t]: weight of a size-s Möbius key on each of its size-t subsets.
    let weights: Vec<Vec<f64>> = (0..=top)
        .map(|s| {
            (0..=k.min(s))
                .map(|t| match t {
                    0 => 0.0,
                    _ => index.weight(k, s, t, &bernoulli),
                })
                .collect()
        })
        .collect();
    let acc = par_accumulate(moebius.terms(), KEY_BLOCK, |(key, c), acc| {
        check_order(key)?;
        let row = &weights[key.order()];
        let mut buffer = Vec::with_capacity(k);
        for_each_subset(key.players(), k, &mut buffer, |sub| {
            if !sub.is_empty() {
                acc.add(sub, c * row[sub.len()]);
            }
        });
        Ok(())
    })?;
    let baseline = match index {
        Index::FBII => moebius
            .terms()
            .iter()
            .map(|(key, c)| {
                let s = key.order();
                let w = if s <= k {
                    if s == 0 {
                        1.0
                    } else {
                        0.0
                    }
                } else {
                    let sign = if k % 2 == 0 { 1.0 } else { -1.0 };
                    sign * 0.5f64.powi(s as i32) * binomial_f64(s as u64 - 1, k as u64)
                };
                c * w
            })
            .sum(),
        _ => empty_value,
    };
    Ok(Interactions {
        index,
        max_order: k,
        values: acc.into_terms(),
        baseline,
    })
}

/// Shapley values `φ_i = Σ_{S ∋ i} m(S) / |S|` of the whole function, dense over the players.
///
/// A Fourier function is read directly, `φ_i = −2 Σ_{K ∋ i, |K| odd} F(K) / |K|` (the character
/// `χ_K` gives each member `((−1)^{|K|} − 1) / |K|`), without expanding high-order keys into
/// the Möbius basis (2^|K| terms each; tree proxies have orders of ten and more).
pub fn shapley_values(f: &SparseFunction) -> Result<Vec<f64>> {
    if f.basis() == Basis::Fourier {
        let mut phi = vec![0.0; f.n_players()];
        for (key, c) in f.terms().iter().filter(|(key, _)| key.order() % 2 == 1) {
            let share = -2.0 * c / key.order() as f64;
            for &i in key.players() {
                phi[i as usize] += share;
            }
        }
        return Ok(phi);
    }
    let sv = interactions(f, Index::SV, 1)?;
    let mut phi = vec![0.0; f.n_players()];
    for (key, value) in sv.values {
        phi[key.players()[0] as usize] = value;
    }
    Ok(phi)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(players: &[u32]) -> Key {
        Key::from_sorted(players)
    }

    fn moebius(n: usize, terms: &[(&[u32], f64)]) -> SparseFunction {
        let terms = terms.iter().map(|(k, c)| (key(k), *c)).collect();
        SparseFunction::new(Basis::Moebius, n, terms).unwrap()
    }

    fn value(i: &Interactions, players: &[u32]) -> f64 {
        i.values
            .iter()
            .find(|(k, _)| k.players() == players)
            .map_or(0.0, |(_, v)| *v)
    }

    #[test]
    fn parity_is_one_fourier_coefficient() {
        // f = (−1)^{x0 + x1} = 1 − 2 x0 − 2 x1 + 4 x0 x1.
        let f = moebius(3, &[(&[], 1.0), (&[0], -2.0), (&[1], -2.0), (&[0, 1], 4.0)]);
        let fourier = to_fourier(&f).unwrap();
        assert_eq!(fourier.terms(), &[(key(&[0, 1]), 1.0)]);
        assert_eq!(to_moebius(&fourier).unwrap(), f);
    }

    #[test]
    fn fourier_shapley_values_match_the_moebius_route() {
        let terms = [
            (&[0u32][..], 0.7),
            (&[1, 2][..], -1.3),
            (&[0, 2, 3][..], 0.4),
            (&[0, 1, 2, 3, 4][..], -0.9),
            (&[][..], 2.0),
        ];
        let terms = terms.iter().map(|(k, c)| (key(k), *c)).collect();
        let fourier = SparseFunction::new(Basis::Fourier, 5, terms).unwrap();
        let direct = shapley_values(&fourier).unwrap();
        let via_moebius = shapley_values(&to_moebius(&fourier).unwrap()).unwrap();
        for (a, b) in direct.iter().zip(&via_moebius) {
            assert!((a - b).abs() < 1e-13, "{direct:?} vs {via_moebius:?}");
        }
    }

    #[test]
    fn k_sii_is_aggregated_once() {
        // m(0) = 1, m(0,1) = 0.8 → k-SII(0) = 1.4 − 0.5·0.8 = 1.0 at order 2.
        let f = moebius(2, &[(&[0], 1.0), (&[0, 1], 0.8)]);
        let i = interactions(&f, Index::KSII, 2).unwrap();
        assert!((value(&i, &[0]) - 1.0).abs() < 1e-15);
        assert!((value(&i, &[0, 1]) - 0.8).abs() < 1e-15);
        // At order 1, k-SII is the Shapley value: 1 + 0.4.
        let i = interactions(&f, Index::KSII, 1).unwrap();
        assert!((value(&i, &[0]) - 1.4).abs() < 1e-15);
    }

    #[test]
    fn bernoulli_numbers_match_the_table() {
        let b = bernoulli_numbers(6);
        let expected = [1.0, -0.5, 1.0 / 6.0, 0.0, -1.0 / 30.0, 0.0, 1.0 / 42.0];
        for (a, e) in b.iter().zip(expected) {
            assert!((a - e).abs() < 1e-15, "{a} vs {e}");
        }
    }

    #[test]
    fn bad_order_and_names() {
        let f = moebius(2, &[(&[0], 1.0)]);
        assert!(interactions(&f, Index::SII, 0).is_err());
        let err = "kSII".parse::<Index>().unwrap_err().to_string();
        assert!(
            err.starts_with("index:") && err.contains("\"k-SII\""),
            "{err}"
        );
        assert_eq!("FBII".parse::<Index>().unwrap(), Index::FBII);
    }
}
