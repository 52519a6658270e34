//! Exact Shapley values from the values of all `2^n` coalitions (n ≤ 24), in `O(n 2^n)`.

use crate::coalitions::binomial_u128;

/// Shapley values of one game from its full table: `values[mask]` is `v` of the coalition whose
/// players are the set bits of `mask`.
///
/// Marginal contributions are summed per coalition size first, then weighted by
/// `s! (n − s − 1)! / n! = 1 / (n C(n − 1, s))`.
pub fn shapley_from_table(values: &[f64], n: usize) -> Vec<f64> {
    debug_assert_eq!(values.len(), 1usize << n);
    let mut per_size = vec![0.0; n * n.max(1)];
    for (mask, &v) in values.iter().enumerate() {
        let s = mask.count_ones() as usize;
        for i in 0..n {
            if mask & (1 << i) == 0 {
                per_size[i * n + s] += values[mask | (1 << i)] - v;
            }
        }
    }
    let weights: Vec<f64> = (0..n)
        .map(|s| 1.0 / (n as f64 * binomial_u128(n as u64 - 1, s as u64).unwrap_or(1) as f64))
        .collect();
    (0..n)
        .map(|i| (0..n).map(|s| per_size[i * n + s] * weights[s]).sum())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unanimity_game_splits_evenly() {
        // v(S) = [ {1, 3} ⊆ S ] on 5 players: φ_1 = φ_3 = 1/2, others 0.
        let n = 5;
        let values: Vec<f64> = (0..1usize << n)
            .map(|m| f64::from(u8::from(m & 0b1010 == 0b1010)))
            .collect();
        let phi = shapley_from_table(&values, n);
        let expected = [0.0, 0.5, 0.0, 0.5, 0.0];
        for (a, b) in phi.iter().zip(expected) {
            assert!((a - b).abs() < 1e-15);
        }
    }
}
