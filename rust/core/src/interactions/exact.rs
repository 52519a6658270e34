//! Interaction indices by enumeration, straight from their definitions (the oracle for
//! [`crate::interactions::indices`], small `n`).
//!
//! Everything here starts from the full table `values[mask]` (bit `i` of `mask` = player `i`)
//! and uses each index's own definition — discrete derivatives, Bernoulli aggregation, least
//! squares — never the Möbius closed forms, so the two implementations check each other.

use faer::linalg::solvers::SolveLstsq;
use faer::Mat;

use crate::coalitions::binomial_f64;
use crate::error::{CoreError, Result};
use crate::interactions::function::{Basis, Key, SparseFunction};
use crate::interactions::indices::{bernoulli_numbers, Index, Interactions};
use crate::sampling::exact::shapley_from_table;

/// Largest number of players the enumeration accepts.
pub const MAX_TABLE_PLAYERS: usize = 20;

/// Largest `rows × unknowns` of the least-squares systems behind FSII and FBII.
const MAX_LSTSQ_ENTRIES: usize = 1 << 26;

/// Checks that `values` is a full table of `2^n` finite values.
fn check_table(values: &[f64], n: usize) -> Result<()> {
    if n == 0 || n > MAX_TABLE_PLAYERS {
        return Err(CoreError::invalid(
            "n",
            format!("exact interactions enumerate 2^n coalitions: need 1 ≤ n ≤ {MAX_TABLE_PLAYERS}, got {n}"),
        ));
    }
    if values.len() != 1 << n {
        return Err(CoreError::invalid(
            "values",
            format!(
                "expected 2^{n} = {} values, got {}",
                1u64 << n,
                values.len()
            ),
        ));
    }
    if let Some(mask) = values.iter().position(|v| !v.is_finite()) {
        return Err(CoreError::invalid(
            "values",
            format!("must be finite; found {} at coalition {mask}", values[mask]),
        ));
    }
    Ok(())
}

/// The full Möbius transform of a table (fast subset-sum inversion, `O(n 2^n)`).
pub fn moebius_from_table(values: &[f64], n: usize) -> Result<SparseFunction> {
    check_table(values, n)?;
    let mut m = values.to_vec();
    for i in 0..n {
        for mask in 0..m.len() {
            if mask >> i & 1 == 1 {
                m[mask] -= m[mask ^ (1 << i)];
            }
        }
    }
    let terms = m
        .into_iter()
        .enumerate()
        .map(|(mask, c)| (key_of(mask), c))
        .collect();
    SparseFunction::new(Basis::Moebius, n, terms)
}

fn key_of(mask: usize) -> Key {
    let players: Vec<u32> = (0..usize::BITS).filter(|&i| mask >> i & 1 == 1).collect();
    Key::from_sorted(&players)
}

/// Every coalition mask with `1 ≤ |T| ≤ k`, by size then lexicographically.
fn subsets_up_to(n: usize, k: usize) -> Vec<usize> {
    let mut masks: Vec<usize> = (1..1usize << n)
        .filter(|m| m.count_ones() as usize <= k)
        .collect();
    masks.sort_by_key(|&m| key_of(m));
    masks
}

/// `Δ_T v(S) = Σ_{L ⊆ T} (−1)^{|T| − |L|} v(S ∪ L)` for `S ∩ T = ∅`.
fn derivative(values: &[f64], t: usize, s: usize) -> f64 {
    let t_size = t.count_ones();
    let mut sum = 0.0;
    let mut l = t;
    loop {
        let sign = if (t_size - l.count_ones()) % 2 == 0 {
            1.0
        } else {
            -1.0
        };
        sum += sign * values[s | l];
        if l == 0 {
            break;
        }
        l = (l - 1) & t;
    }
    sum
}

/// `Σ_{S ⊆ N ∖ T} w(|S|) Δ_T v(S)`.
fn weighted_derivatives(values: &[f64], n: usize, t: usize, w: impl Fn(usize) -> f64) -> f64 {
    let rest = ((1usize << n) - 1) & !t;
    let mut sum = 0.0;
    let mut s = rest;
    loop {
        sum += w(s.count_ones() as usize) * derivative(values, t, s);
        if s == 0 {
            break;
        }
        s = (s - 1) & rest;
    }
    sum
}

/// The values of `index` up to order `max_order` of the game whose full table is `values`,
/// from the definitions. FSII and FBII solve least-squares problems over all `2^n` coalitions
/// and refuse sizes whose system exceeds `2^26` entries.
pub fn exact_interactions(
    values: &[f64],
    n: usize,
    index: Index,
    max_order: usize,
) -> Result<Interactions> {
    check_table(values, n)?;
    if max_order < 1 {
        return Err(CoreError::invalid(
            "max_order",
            format!("must be at least 1, got {max_order}"),
        ));
    }
    let k = index.effective_order(max_order, n);
    let subsets = subsets_up_to(n, k);
    let (nf, fact) = (n as f64, |x: usize| {
        (1..=x).map(|i| i as f64).product::<f64>()
    });
    let sii = |t: usize| {
        let t_size = t.count_ones() as usize;
        weighted_derivatives(values, n, t, |s| {
            fact(n - s - t_size) * fact(s) / fact(n - t_size + 1)
        })
    };
    let mut baseline = values[0];
    let computed: Vec<f64> = match index {
        Index::Moebius => subsets.iter().map(|&t| derivative(values, t, 0)).collect(),
        Index::Fourier => subsets
            .iter()
            .map(|&t| {
                let signed: f64 = values
                    .iter()
                    .enumerate()
                    .map(|(x, v)| {
                        if (x & t).count_ones() % 2 == 1 {
                            -v
                        } else {
                            *v
                        }
                    })
                    .sum();
                signed / (1u64 << n) as f64
            })
            .collect(),
        Index::SV => shapley_from_table(values, n),
        Index::BV | Index::BII => subsets
            .iter()
            .map(|&t| {
                let free = n - t.count_ones() as usize;
                weighted_derivatives(values, n, t, |_| 0.5f64.powi(free as i32))
            })
            .collect(),
        Index::SII => subsets.iter().map(|&t| sii(t)).collect(),
        Index::KSII => {
            let sii: Vec<f64> = subsets.iter().map(|&t| sii(t)).collect();
            let bernoulli = bernoulli_numbers(k);
            subsets
                .iter()
                .map(|&t| {
                    subsets
                        .iter()
                        .zip(&sii)
                        .filter(|(&s, _)| s & t == t)
                        .map(|(&s, value)| bernoulli[(s ^ t).count_ones() as usize] * value)
                        .sum()
                })
                .collect()
        }
        Index::STII => subsets
            .iter()
            .map(|&t| {
                if (t.count_ones() as usize) < k {
                    derivative(values, t, 0)
                } else {
                    let scale = k as f64 / nf;
                    weighted_derivatives(values, n, t, |s| {
                        scale / binomial_f64(n as u64 - 1, s as u64)
                    })
                }
            })
            .collect(),
        Index::FSII => {
            let beta = faithful_shapley(values, n, &subsets)?;
            beta[1..].to_vec()
        }
        Index::FBII => {
            let beta = faithful_banzhaf(values, n, &subsets)?;
            baseline = beta[0];
            beta[1..].to_vec()
        }
    };
    let terms = subsets
        .iter()
        .zip(computed)
        .map(|(&t, v)| (key_of(t), v))
        .collect();
    let function = SparseFunction::new(Basis::Moebius, n, terms)?;
    Ok(Interactions {
        index,
        max_order: k,
        values: function.terms().to_vec(),
        baseline,
    })
}

fn check_lstsq_size(n: usize, unknowns: usize) -> Result<()> {
    if (1usize << n).saturating_mul(unknowns) > MAX_LSTSQ_ENTRIES {
        return Err(CoreError::invalid(
            "max_order",
            format!(
                "the exact least-squares system has 2^{n} rows × {unknowns} unknowns; \
                 use a smaller n or max_order"
            ),
        ));
    }
    Ok(())
}

/// FBII: the unweighted least-squares fit `v(S) ≈ β_∅ + Σ_{T ⊆ S} β_T` over every coalition.
/// Returns `[β_∅, β_T for T in subsets]`.
fn faithful_banzhaf(values: &[f64], n: usize, subsets: &[usize]) -> Result<Vec<f64>> {
    let p = subsets.len() + 1;
    check_lstsq_size(n, p)?;
    let a = Mat::from_fn(1 << n, p, |s, j| {
        f64::from(u8::from(j == 0 || s & subsets[j - 1] == subsets[j - 1]))
    });
    let y = Mat::from_fn(1 << n, 1, |s, _| values[s]);
    let beta = a.qr().solve_lstsq(&y);
    Ok((0..p).map(|j| beta[(j, 0)]).collect())
}

/// FSII: the Shapley-kernel weighted fit over proper coalitions, `μ(s) = (n − 1) /
/// (C(n, s) s (n − s))`, with `β_∅ = v(∅)` and `Σ_T β_T = v(N) − v(∅)` imposed exactly (the last
/// unknown is eliminated). Returns `[β_∅, β_T for T in subsets]`.
fn faithful_shapley(values: &[f64], n: usize, subsets: &[usize]) -> Result<Vec<f64>> {
    let full = (1usize << n) - 1;
    let p = subsets.len();
    check_lstsq_size(n, p)?;
    let (v0, total) = (values[0], values[full] - values[0]);
    let last = subsets[p - 1];
    let inside = |s: usize, t: usize| f64::from(u8::from(s & t == t));
    let rows: Vec<usize> = (1..full).collect();
    let sqrt_mu = |s: usize| {
        let size = s.count_ones() as u64;
        ((n as f64 - 1.0) / (binomial_f64(n as u64, size) * (size * (n as u64 - size)) as f64))
            .sqrt()
    };
    let a = Mat::from_fn(rows.len(), p - 1, |r, j| {
        let s = rows[r];
        sqrt_mu(s) * (inside(s, subsets[j]) - inside(s, last))
    });
    let y = Mat::from_fn(rows.len(), 1, |r, _| {
        let s = rows[r];
        sqrt_mu(s) * (values[s] - v0 - total * inside(s, last))
    });
    let beta = if p > 1 {
        a.qr().solve_lstsq(&y)
    } else {
        Mat::zeros(0, 1)
    };
    let mut out = vec![v0];
    out.extend((0..p - 1).map(|j| beta[(j, 0)]));
    out.push(total - out[1..].iter().sum::<f64>());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interactions::indices::interactions;

    #[test]
    fn moebius_of_a_unanimity_game() {
        // v(S) = 2 [{0, 2} ⊆ S] + 1
        let values: Vec<f64> = (0..8)
            .map(|m| 1.0 + 2.0 * f64::from(u8::from(m & 0b101 == 0b101)))
            .collect();
        let m = moebius_from_table(&values, 3).unwrap();
        assert_eq!(
            m.terms(),
            &[
                (Key::from_sorted(&[]), 1.0),
                (Key::from_sorted(&[0, 2]), 2.0)
            ]
        );
        let sv = exact_interactions(&values, 3, Index::SV, 5).unwrap();
        assert_eq!(sv.max_order, 1);
        assert_eq!(sv.values.len(), 2);
    }

    #[test]
    fn closed_forms_match_definitions() {
        // A game with every Möbius term present.
        let n = 5;
        let values: Vec<f64> = (0..1usize << n)
            .map(|m| ((m * 37 % 11) as f64 - 5.0) * 0.3 + (m.count_ones() as f64).powi(2))
            .collect();
        let moebius = moebius_from_table(&values, n).unwrap();
        for index in Index::ALL {
            for order in 1..=n {
                let oracle = exact_interactions(&values, n, index, order).unwrap();
                let fast = interactions(&moebius, index, order).unwrap();
                let lookup = |i: &Interactions, k: &Key| {
                    i.values
                        .iter()
                        .find(|(key, _)| key == k)
                        .map_or(0.0, |(_, v)| *v)
                };
                for (key, _) in oracle.values.iter().chain(&fast.values) {
                    let (a, b) = (lookup(&oracle, key), lookup(&fast, key));
                    assert!(
                        (a - b).abs() < 1e-9,
                        "{index} order {order} {key:?}: {a} vs {b}"
                    );
                }
                assert!(
                    (oracle.baseline - fast.baseline).abs() < 1e-9,
                    "{index} {order}"
                );
            }
        }
    }

    #[test]
    fn bad_tables() {
        assert!(exact_interactions(&[0.0; 3], 2, Index::SV, 1).is_err());
        assert!(exact_interactions(&[0.0, f64::NAN], 1, Index::SV, 1).is_err());
        assert!(exact_interactions(&[0.0; 4], 2, Index::SII, 0).is_err());
        assert!(moebius_from_table(&[], 0).is_err());
    }
}
