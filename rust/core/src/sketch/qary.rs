//! q-ary arithmetic: roots of unity, big-endian digit indexing and the in-place q-ary DFT.

use num_complex::Complex64;

use crate::error::{CoreError, Result};

/// Largest alphabet size: letters are stored as `u8` codes `0..q`.
pub const MAX_ALPHABET: usize = 256;

/// Checks that `q` is a usable alphabet size (`2 ≤ q ≤ 256`).
pub fn check_alphabet(q: usize) -> Result<()> {
    if !(2..=MAX_ALPHABET).contains(&q) {
        return Err(CoreError::invalid(
            "q",
            format!("the alphabet size must be in 2..={MAX_ALPHABET}, got {q}"),
        ));
    }
    Ok(())
}

/// `q^b`, or an error naming `b` when it does not fit in a `usize`.
pub fn checked_bins(q: usize, b: usize) -> Result<usize> {
    u32::try_from(b)
        .ok()
        .and_then(|b32| q.checked_pow(b32))
        .ok_or_else(|| CoreError::invalid("b", format!("q^b = {q}^{b} overflows")))
}

/// The `q`-th roots of unity `ω^t = e^{2πi t/q}` for `t ∈ 0..q`.
#[derive(Debug, Clone)]
pub struct Roots {
    table: Vec<Complex64>,
}

impl Roots {
    /// The table for alphabet size `q ≥ 1`.
    pub fn new(q: usize) -> Self {
        let table = (0..q)
            .map(|t| Complex64::from_polar(1.0, std::f64::consts::TAU * t as f64 / q as f64))
            .collect();
        Self { table }
    }

    /// The alphabet size `q`.
    pub fn q(&self) -> usize {
        self.table.len()
    }

    /// `ω^t` for any `t` (reduced mod q).
    #[inline]
    pub fn pow(&self, t: usize) -> Complex64 {
        self.table[t % self.table.len()]
    }

    /// The digit `k ∈ 0..q` whose root `ω^k` is nearest to the direction of `z`.
    #[inline]
    pub fn nearest(&self, z: Complex64) -> u8 {
        let q = self.table.len() as f64;
        let turns = z.im.atan2(z.re) / std::f64::consts::TAU;
        let k = (turns * q).round().rem_euclid(q);
        // `k` is a whole number in [0, q]; q itself wraps to 0. q ≤ 256, so k < 256 fits a u8.
        (k as usize % self.table.len()) as u8
    }
}

/// `Σ_i a_i b_i mod q` for two code vectors.
#[inline]
pub fn dot_mod(a: &[u8], b: &[u8], q: usize) -> usize {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| usize::from(x) * usize::from(y))
        .sum::<usize>()
        % q
}

/// The key `−k mod q` of `k`.
pub fn negate(key: &[u8], q: usize) -> Vec<u8> {
    key.iter()
        .map(|&d| ((q - usize::from(d)) % q) as u8)
        .collect()
}

/// In-place forward q-ary DFT over `b` big-endian digits, scaled by `q^{−b}`:
/// `U[j] = q^{−b} Σ_ℓ u[ℓ] ω^{−⟨ℓ,j⟩}`. `data.len()` must be `q^b`.
///
/// Runs `b` radix-q passes (for q = 2: the fast Walsh–Hadamard transform), `O(q^b · b · q)`.
pub fn dft_in_place(data: &mut [Complex64], roots: &Roots) {
    let q = roots.q();
    let len = data.len();
    let mut gathered = vec![Complex64::new(0.0, 0.0); q];
    let mut stride = len / q;
    while stride >= 1 {
        let block = stride * q;
        for base in (0..len).step_by(block) {
            for offset in 0..stride {
                for (a, slot) in gathered.iter_mut().enumerate() {
                    *slot = data[base + offset + a * stride];
                }
                for j in 0..q {
                    let mut acc = Complex64::new(0.0, 0.0);
                    for (a, &x) in gathered.iter().enumerate() {
                        acc += x * roots.pow(q - (a * j) % q);
                    }
                    data[base + offset + j * stride] = acc;
                }
            }
        }
        stride /= q;
    }
    let scale = 1.0 / len as f64;
    data.iter_mut().for_each(|x| *x *= scale);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The defining sum, `O(q^{2b})`.
    fn naive_dft(u: &[Complex64], q: usize, b: usize) -> Vec<Complex64> {
        let roots = Roots::new(q);
        let digits = |mut x: usize| {
            let mut d = vec![0u8; b];
            for slot in d.iter_mut().rev() {
                *slot = (x % q) as u8;
                x /= q;
            }
            d
        };
        (0..u.len())
            .map(|j| {
                let dj = digits(j);
                u.iter()
                    .enumerate()
                    .map(|(l, &x)| x * roots.pow(q - dot_mod(&digits(l), &dj, q)))
                    .sum::<Complex64>()
                    / u.len() as f64
            })
            .collect()
    }

    proptest! {
        #[test]
        fn fast_dft_matches_the_definition(q in 2usize..6, b in 1usize..4, seed in 0u64..1000) {
            let len = q.pow(b as u32);
            let u: Vec<Complex64> = (0..len)
                .map(|i| {
                    let x = (i as f64 * 0.37 + seed as f64).sin();
                    Complex64::new(x, (x * 3.1).cos())
                })
                .collect();
            let mut fast = u.clone();
            dft_in_place(&mut fast, &Roots::new(q));
            for (a, b) in fast.iter().zip(naive_dft(&u, q, b)) {
                prop_assert!((a - b).norm() < 1e-12);
            }
        }
    }

    #[test]
    fn nearest_root_rounds_to_the_closest_digit() {
        let roots = Roots::new(4);
        for k in 0..4 {
            let z = roots.pow(k) * Complex64::from_polar(2.0, 0.3);
            assert_eq!(usize::from(roots.nearest(z)), k);
        }
        assert_eq!(roots.nearest(Complex64::new(1.0, -1e-9)), 0);
    }

    #[test]
    fn overflowing_bins_are_an_error() {
        assert_eq!(checked_bins(4, 3).unwrap(), 64);
        assert!(checked_bins(256, 9).is_err());
        assert!(check_alphabet(1).is_err());
        assert!(check_alphabet(257).is_err());
    }
}
