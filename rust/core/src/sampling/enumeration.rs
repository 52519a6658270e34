//! Full enumeration: all `2^n` coalitions, row `r` being the coalition whose players are the set
//! bits of `r`.

use crate::coalitions::CoalitionMatrix;

/// Every coalition of `n ≤ 24` players in mask order.
pub fn all_coalitions(n: usize) -> CoalitionMatrix {
    let mut out = CoalitionMatrix::new(n);
    for mask in 0..(1u64 << n) {
        out.push(&[mask]);
    }
    out
}
