//! Coalition-size distributions of the τ-family: `q_τ(s) ∝ (s (n − s))^(−τ)` on `1..n−1`.

/// How coalition sizes are weighted when a design samples them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SizeDistribution {
    /// τ = 1: the Shapley kernel's total mass per size, `∝ 1 / (s (n − s))` (KernelSHAP).
    Kernel,
    /// τ = 0: leverage scores, uniform over sizes (LeverageSHAP).
    Leverage,
    /// τ = 1/2: the geometric mean of the two, `∝ 1 / sqrt(s (n − s))` (modified ℓ2).
    ModifiedL2,
}

impl SizeDistribution {
    /// Unnormalised weight of size `size` among `n_players` (`0 < size < n_players`).
    ///
    /// Every distribution here is symmetric, `weight(s) == weight(n − s)`, which pairing needs.
    pub fn weight(self, n_players: usize, size: usize) -> f64 {
        let t = (size * (n_players - size)) as f64;
        match self {
            Self::Kernel => 1.0 / t,
            Self::Leverage => 1.0,
            Self::ModifiedL2 => 1.0 / t.sqrt(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distributions_are_symmetric_and_ordered() {
        let n = 11;
        for dist in [
            SizeDistribution::Kernel,
            SizeDistribution::Leverage,
            SizeDistribution::ModifiedL2,
        ] {
            for s in 1..n {
                assert_eq!(dist.weight(n, s), dist.weight(n, n - s));
            }
        }
        // The kernel favours the border sizes most, leverage not at all.
        let ratio = |d: SizeDistribution| d.weight(n, 1) / d.weight(n, 5);
        assert!(ratio(SizeDistribution::Kernel) > ratio(SizeDistribution::ModifiedL2));
        assert!(ratio(SizeDistribution::ModifiedL2) > ratio(SizeDistribution::Leverage));
    }
}
