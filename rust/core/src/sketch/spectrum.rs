//! A sparse q-ary Fourier spectrum `f(m) = F[0] + Σ_k F[k] ω^{⟨m,k⟩}` and its evaluation.

use num_complex::Complex64;
use rayon::prelude::*;

use super::qary::{check_alphabet, negate, Roots};
use crate::error::{CoreError, Result};

/// One term of the real part of the synthesis sum: a key's support, its digits there and the
/// coefficient that multiplies `ω^{⟨x,k⟩}` inside `Re(·)`.
#[derive(Debug, Clone)]
pub(crate) struct Term {
    pub(crate) positions: Vec<u32>,
    pub(crate) digits: Vec<u8>,
    pub(crate) coefficient: Complex64,
}

impl Term {
    /// `⟨x, k⟩ mod q` over the support.
    #[inline]
    pub(crate) fn phase(&self, x: &[u8], q: usize) -> usize {
        self.positions
            .iter()
            .zip(&self.digits)
            .map(|(&i, &d)| usize::from(x[i as usize]) * usize::from(d))
            .sum::<usize>()
            % q
    }
}

/// A sparse spectrum of a real function on `Z_q^n`: the mean `F[0]` and non-zero keys.
#[derive(Debug, Clone)]
pub struct Spectrum {
    n: usize,
    q: usize,
    mean: f64,
    keys: Vec<u8>,
    coefficients: Vec<Complex64>,
    /// Each conjugate pair `{k, −k}` merged into one term with coefficient `F[k] + conj F[−k]`:
    /// since every output is `Re(·)` of a sum that is linear in `F`, the pair contributes
    /// `Re((F[k] + conj F[−k]) ω^{⟨x,k⟩})`, so the merge is exact and halves the work.
    terms: Vec<Term>,
    roots: Roots,
}

impl Spectrum {
    /// Builds and validates a spectrum. `keys` is `K × n` codes (row-major) holding distinct,
    /// non-zero keys with digits below `q`; `coefficients` has `K` finite entries; `mean` is
    /// `F[0]`, the uniform mean of the function.
    pub fn new(
        n: usize,
        q: usize,
        keys: Vec<u8>,
        coefficients: Vec<Complex64>,
        mean: f64,
    ) -> Result<Self> {
        check_alphabet(q)?;
        if n == 0 {
            return Err(CoreError::invalid("length", "must be at least 1, got 0"));
        }
        if keys.len() != coefficients.len() * n {
            return Err(CoreError::invalid(
                "keys",
                format!(
                    "expected {} × {n} codes for {} coefficients, got {} codes",
                    coefficients.len(),
                    coefficients.len(),
                    keys.len()
                ),
            ));
        }
        if !mean.is_finite()
            || coefficients
                .iter()
                .any(|c| !c.re.is_finite() || !c.im.is_finite())
        {
            return Err(CoreError::invalid(
                "coefficients",
                "must be finite (no NaN or infinity)",
            ));
        }
        if let Some(at) = keys.iter().position(|&d| usize::from(d) >= q) {
            return Err(CoreError::invalid(
                "keys",
                format!(
                    "key {} has digit {} at position {}, outside 0..{q}",
                    at / n,
                    keys[at],
                    at % n
                ),
            ));
        }
        let mut order: Vec<usize> = (0..coefficients.len()).collect();
        order.sort_unstable_by(|&a, &b| keys[a * n..(a + 1) * n].cmp(&keys[b * n..(b + 1) * n]));
        for pair in order.windows(2) {
            if keys[pair[0] * n..(pair[0] + 1) * n] == keys[pair[1] * n..(pair[1] + 1) * n] {
                return Err(CoreError::invalid(
                    "keys",
                    format!("keys {} and {} are equal", pair[0], pair[1]),
                ));
            }
        }
        if let Some(zero) = keys.chunks_exact(n).position(|k| k.iter().all(|&d| d == 0)) {
            return Err(CoreError::invalid(
                "keys",
                format!("key {zero} is the zero key; F[0] belongs in the mean"),
            ));
        }
        let terms = merge_conjugates(n, q, &keys, &coefficients, &order);
        Ok(Self {
            n,
            q,
            mean,
            keys,
            coefficients,
            terms,
            roots: Roots::new(q),
        })
    }

    /// Sequence length `n`.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Alphabet size `q`.
    pub fn q(&self) -> usize {
        self.q
    }

    /// `F[0]`: the mean of the function over uniform random sequences.
    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// The non-zero keys, `K × n` codes, row-major.
    pub fn keys(&self) -> &[u8] {
        &self.keys
    }

    /// The coefficients `F[k]` of [`Self::keys`].
    pub fn coefficients(&self) -> &[Complex64] {
        &self.coefficients
    }

    /// Number of non-zero keys `K` (the mean excluded).
    pub fn len(&self) -> usize {
        self.coefficients.len()
    }

    /// True when the spectrum is constant (no non-zero key).
    pub fn is_empty(&self) -> bool {
        self.coefficients.is_empty()
    }

    pub(crate) fn terms(&self) -> &[Term] {
        &self.terms
    }

    pub(crate) fn roots(&self) -> &Roots {
        &self.roots
    }

    /// `Re(c ω^t)`.
    #[inline]
    pub(crate) fn real_part(&self, coefficient: Complex64, t: usize) -> f64 {
        let w = self.roots.pow(t);
        coefficient.re * w.re - coefficient.im * w.im
    }

    /// The surrogate `f̂(x) = F[0] + Re Σ_k F[k] ω^{⟨x,k⟩}` of one sequence (unchecked codes).
    pub(crate) fn evaluate(&self, x: &[u8]) -> f64 {
        self.mean
            + self
                .terms
                .iter()
                .map(|term| self.real_part(term.coefficient, term.phase(x, self.q)))
                .sum::<f64>()
    }

    /// The surrogate on each of the `rows × n` sequences in `codes`, in parallel.
    pub fn predict(&self, codes: &[u8]) -> Result<Vec<f64>> {
        check_codes(codes, self.n, self.q, "sequences")?;
        Ok(codes
            .par_chunks_exact(self.n)
            .map(|x| self.evaluate(x))
            .collect())
    }
}

/// One term per conjugate class `{k, −k}` in key order (`order` sorts the keys).
fn merge_conjugates(
    n: usize,
    q: usize,
    keys: &[u8],
    coefficients: &[Complex64],
    order: &[usize],
) -> Vec<Term> {
    let key = |i: usize| &keys[i * n..(i + 1) * n];
    let find = |target: &[u8]| order.binary_search_by(|&i| key(i).cmp(target)).ok();
    let mut terms = Vec::new();
    for &i in order {
        let negated = negate(key(i), q);
        let partner = find(&negated).map(|at| order[at]);
        let coefficient = match partner {
            Some(j) if j == i => coefficients[i],
            Some(_) if key(i) > negated.as_slice() => continue, // merged into its partner's term
            Some(j) => coefficients[i] + coefficients[j].conj(),
            None => coefficients[i],
        };
        let positions: Vec<u32> = (0..n as u32).filter(|&p| key(i)[p as usize] != 0).collect();
        let digits = positions.iter().map(|&p| key(i)[p as usize]).collect();
        terms.push(Term {
            positions,
            digits,
            coefficient,
        });
    }
    terms
}

/// Checks that `codes` holds whole sequences of length `n` with codes below `q`, naming the
/// first bad sequence and position.
pub fn check_codes(codes: &[u8], n: usize, q: usize, argument: &'static str) -> Result<()> {
    if n == 0 || codes.len() % n != 0 {
        return Err(CoreError::invalid(
            argument,
            format!("expected rows of length {n}, got {} codes", codes.len()),
        ));
    }
    if let Some(at) = codes.iter().position(|&c| usize::from(c) >= q) {
        return Err(CoreError::invalid(
            argument,
            format!(
                "sequence {} has code {} at position {}, outside the alphabet 0..{q}",
                at / n,
                codes[at],
                at % n
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conjugate_pairs_merge_without_changing_values() {
        // q = 3, n = 2: keys (1, 0), (2, 0) = −(1, 0), and (1, 2) without its partner.
        let keys = vec![1, 0, 2, 0, 1, 2];
        let c = vec![
            Complex64::new(0.5, 0.25),
            Complex64::new(0.5, -0.25),
            Complex64::new(-0.3, 0.1),
        ];
        let spectrum = Spectrum::new(2, 3, keys.clone(), c.clone(), 1.5).unwrap();
        assert_eq!(spectrum.terms().len(), 2);
        let roots = Roots::new(3);
        for x in [[0u8, 0], [1, 2], [2, 1]] {
            let direct: f64 = 1.5
                + keys
                    .chunks_exact(2)
                    .zip(&c)
                    .map(|(k, f)| (f * roots.pow(super::super::qary::dot_mod(&x, k, 3))).re)
                    .sum::<f64>();
            assert!((spectrum.evaluate(&x) - direct).abs() < 1e-15);
        }
    }

    #[test]
    fn invalid_spectra_are_rejected() {
        let one = vec![Complex64::new(1.0, 0.0)];
        assert!(Spectrum::new(2, 3, vec![0, 0], one.clone(), 0.0).is_err());
        assert!(Spectrum::new(2, 3, vec![3, 0], one.clone(), 0.0).is_err());
        assert!(Spectrum::new(2, 3, vec![1], one.clone(), 0.0).is_err());
        assert!(Spectrum::new(2, 3, vec![1, 0], one.clone(), f64::NAN).is_err());
        let two = vec![Complex64::new(1.0, 0.0); 2];
        assert!(Spectrum::new(2, 3, vec![1, 0, 1, 0], two, 0.0).is_err());
        let err = check_codes(&[0, 1, 2, 5], 2, 3, "sequences").unwrap_err();
        assert!(err
            .to_string()
            .contains("sequence 1 has code 5 at position 1"));
    }
}
