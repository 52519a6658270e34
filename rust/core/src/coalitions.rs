//! Bit-packed coalition matrices and the binomial arithmetic that sampling needs.
//!
//! A coalition of `n` players is stored as `ceil(n / 64)` little-endian `u64` words: player `i` is
//! bit `i % 64` of word `i / 64`. Binomials are available exactly (`u128`, when they fit) and in
//! log space (any `n`), so nothing overflows up to thousands of players.

/// Row of the empty coalition ∅ in every planned set of coalitions: the sampling designs
/// ([`crate::sampling::plan`]), full enumeration, and ProxySPEX's masks
/// ([`crate::interactions::proxyspex::plan_masks`]).
pub const EMPTY_ROW: usize = 0;

/// Row of the grand coalition N in every sampled design and in ProxySPEX's masks (full
/// enumeration, in binary order, has it last). The rows past it are the sampled coalitions.
pub const FULL_ROW: usize = 1;

/// First row past ∅ and N in every sampled design and in ProxySPEX's masks: the sampled
/// coalitions start here.
pub const FIRST_SAMPLED_ROW: usize = FULL_ROW + 1;

/// The number of coalitions of `n` players, `2^n` (`u64::MAX` from 64 players on: no budget, a
/// `u64`, covers them).
pub fn coalition_count(n: usize) -> u64 {
    if n < 64 {
        1u64 << n
    } else {
        u64::MAX
    }
}

/// Whether `budget` coalitions cover all `2^n` of `n` players, so that a design enumerates them
/// (no budget covers 64 players or more).
pub fn covers_all(n: usize, budget: u64) -> bool {
    n < 64 && budget >= coalition_count(n)
}

/// Number of `u64` words that hold one coalition of `n_players`.
pub fn words_for(n_players: usize) -> usize {
    n_players.div_ceil(64).max(1)
}

/// A growable, row-major matrix of coalitions over a fixed number of players.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoalitionMatrix {
    n_players: usize,
    words: usize,
    bits: Vec<u64>,
}

impl CoalitionMatrix {
    /// An empty matrix (no rows) over `n_players` players.
    pub fn new(n_players: usize) -> Self {
        Self {
            n_players,
            words: words_for(n_players),
            bits: Vec::new(),
        }
    }

    /// Number of players (columns).
    pub fn n_players(&self) -> usize {
        self.n_players
    }

    /// Number of coalitions (rows).
    pub fn n_rows(&self) -> usize {
        self.bits.len() / self.words
    }

    /// Appends one coalition given as packed words (`words_for(n)` of them).
    pub fn push(&mut self, mask: &[u64]) {
        debug_assert_eq!(mask.len(), self.words);
        self.bits.extend_from_slice(mask);
    }

    /// The packed words of row `row`.
    pub fn row(&self, row: usize) -> &[u64] {
        &self.bits[row * self.words..(row + 1) * self.words]
    }

    /// Whether player `player` belongs to coalition `row`.
    pub fn contains(&self, row: usize, player: usize) -> bool {
        contains(self.row(row), player)
    }

    /// Size (number of players) of coalition `row`.
    pub fn size(&self, row: usize) -> usize {
        popcount(self.row(row))
    }

    /// All rows expanded to a row-major `m × n` indicator array.
    pub fn to_indicators(&self) -> Vec<bool> {
        self.rows_to_indicators(0, self.n_rows())
    }

    /// Rows `start..stop` expanded to a row-major `(stop - start) × n` indicator array, so
    /// callers can walk a large design in chunks instead of expanding it whole.
    pub fn rows_to_indicators(&self, start: usize, stop: usize) -> Vec<bool> {
        let n = self.n_players;
        let rows = stop.saturating_sub(start);
        let mut out = vec![false; rows * n];
        for (offset, chunk) in out.chunks_mut(n.max(1)).enumerate().take(rows) {
            for (player, cell) in chunk.iter_mut().enumerate() {
                *cell = self.contains(start + offset, player);
            }
        }
        out
    }
}

/// Whether `player` is set in the packed coalition `mask`.
pub fn contains(mask: &[u64], player: usize) -> bool {
    (mask[player / 64] >> (player % 64)) & 1 == 1
}

/// Adds `player` to the packed coalition `mask`.
pub fn insert(mask: &mut [u64], player: usize) {
    mask[player / 64] |= 1u64 << (player % 64);
}

/// Number of players in the packed coalition `mask`.
pub fn popcount(mask: &[u64]) -> usize {
    mask.iter().map(|w| w.count_ones() as usize).sum()
}

/// The empty coalition over `n_players`.
pub fn empty_mask(n_players: usize) -> Vec<u64> {
    vec![0; words_for(n_players)]
}

/// The grand coalition over `n_players`.
pub fn full_mask(n_players: usize) -> Vec<u64> {
    complement(&empty_mask(n_players), n_players)
}

/// The complement `N \ S` of the packed coalition `mask` over `n_players`.
pub fn complement(mask: &[u64], n_players: usize) -> Vec<u64> {
    let mut out: Vec<u64> = mask.iter().map(|w| !w).collect();
    let tail = n_players % 64;
    if tail != 0 {
        if let Some(last) = out.last_mut() {
            *last &= (1u64 << tail) - 1;
        }
    }
    if n_players == 0 {
        out.iter_mut().for_each(|w| *w = 0);
    }
    out
}

/// A packed coalition holding exactly the given players.
pub fn mask_from_players(players: impl IntoIterator<Item = usize>, n_players: usize) -> Vec<u64> {
    let mut mask = empty_mask(n_players);
    for p in players {
        insert(&mut mask, p);
    }
    mask
}

/// `C(n, k)` exactly, or `None` when it does not fit in a `u128`.
pub fn binomial_u128(n: u64, k: u64) -> Option<u128> {
    if k > n {
        return Some(0);
    }
    let k = k.min(n - k);
    let mut acc: u128 = 1;
    for i in 0..k {
        // acc = C(n, i) here; C(n, i + 1) = C(n, i) * (n - i) / (i + 1) is exact.
        acc = acc.checked_mul(u128::from(n - i))? / u128::from(i + 1);
    }
    Some(acc)
}

/// `ln C(n, k)` for any `n` (log-gamma based; exact binomials are used where they fit).
pub fn ln_binomial(n: u64, k: u64) -> f64 {
    if k > n {
        return f64::NEG_INFINITY;
    }
    if let Some(exact) = binomial_u128(n, k).filter(|&c| c < (1u128 << 100)) {
        return (exact as f64).ln();
    }
    let (n, k) = (n as f64, k as f64);
    libm::lgamma(n + 1.0) - libm::lgamma(k + 1.0) - libm::lgamma(n - k + 1.0)
}

/// `C(n, k)` as `f64` (`+inf` beyond `f64::MAX`).
pub fn binomial_f64(n: u64, k: u64) -> f64 {
    match binomial_u128(n, k) {
        Some(c) => c as f64,
        None => ln_binomial(n, k).exp(),
    }
}

/// Unranks `k`-subsets of `0..n` in lexicographic order, from a table of the binomials the walk
/// needs (built once, additions only), so each subset costs `n` lookups and no division.
pub struct Unranker {
    n: usize,
    k: usize,
    total: u128,
    /// `C(a, b)` at `a * k + b` for `a < n`, `b < k`; saturated where it does not fit, which
    /// only entries above `C(n, k)` can do and the walk never reads.
    table: Vec<u128>,
}

impl Unranker {
    /// The unranker of `k`-subsets of `0..n`, if [`unrank_fits`] allows them.
    pub fn new(n: usize, k: usize) -> Option<Self> {
        let total = unrank_fits(n, k)?;
        let mut table = vec![0u128; n * k];
        for a in 0..n {
            for b in 0..k.min(a + 1) {
                table[a * k + b] = if b == 0 || b == a {
                    1
                } else {
                    let above = (a - 1) * k;
                    table[above + b - 1].saturating_add(table[above + b])
                };
            }
        }
        Some(Self { n, k, total, table })
    }

    /// `C(n, k)`: the number of subsets, and the bound on ranks.
    pub fn total(&self) -> u128 {
        self.total
    }

    /// The `rank`-th subset (`rank < C(n, k)`), as a packed coalition over `n_words` words.
    pub fn unrank(&self, mut rank: u128, n_words: usize) -> Vec<u64> {
        let mut mask = vec![0u64; n_words];
        let mut remaining = self.k;
        for j in 0..self.n {
            if remaining == 0 {
                break;
            }
            // subsets of the players from j on, of size `remaining`, that hold j:
            // C(n - j - 1, remaining - 1)
            let with_first = self.table[(self.n - j - 1) * self.k + remaining - 1];
            if rank < with_first {
                insert(&mut mask, j);
                remaining -= 1;
            } else {
                rank -= with_first;
            }
        }
        mask
    }
}

/// Whether [`Unranker`] can work on `C(n, k)` without overflow; returns the binomial if so.
pub fn unrank_fits(n: usize, k: usize) -> Option<u128> {
    let c = binomial_u128(n as u64, k as u64)?;
    c.checked_mul(n as u128 + 1)?;
    Some(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_covers_every_coalition_only_below_64_players() {
        assert_eq!(coalition_count(3), 8);
        assert_eq!(coalition_count(64), u64::MAX);
        assert!(covers_all(3, 8) && !covers_all(3, 7));
        assert!(!covers_all(64, u64::MAX));
    }

    #[test]
    fn row_ranges_expand_like_the_whole_matrix() {
        let n = 70; // two words per row
        let mut matrix = CoalitionMatrix::new(n);
        for row in 0..5u64 {
            let mut mask = vec![0u64; matrix.words];
            for player in (row as usize..n).step_by(3 + row as usize) {
                insert(&mut mask, player);
            }
            matrix.push(&mask);
        }
        let whole = matrix.to_indicators();
        let pieces = [
            matrix.rows_to_indicators(0, 2),
            matrix.rows_to_indicators(2, 5),
        ]
        .concat();
        assert_eq!(pieces, whole);
        assert!(matrix.rows_to_indicators(3, 3).is_empty());
    }

    #[test]
    fn binomials_exact_and_log_agree() {
        assert_eq!(binomial_u128(10, 3), Some(120));
        assert_eq!(binomial_u128(5, 7), Some(0));
        assert_eq!(binomial_u128(67, 33), Some(14_226_520_737_620_288_370));
        assert!(binomial_u128(140, 70).is_none());
        assert!((ln_binomial(10, 3) - 120f64.ln()).abs() < 1e-12);
        // C(4096, 2048) ~ 10^1231 overflows f64 but not its logarithm.
        let ln = ln_binomial(4096, 2048);
        assert!(ln.is_finite() && (ln / std::f64::consts::LN_10 - 1231.0).abs() < 1.0);
        let ln_big = ln_binomial(200, 100);
        let by_sum: f64 = (1..=100).map(|i| ((100 + i) as f64 / i as f64).ln()).sum();
        assert!((ln_big - by_sum).abs() < 1e-9);
    }

    #[test]
    fn unrank_enumerates_every_subset_once_in_order() {
        let (n, k) = (9, 4);
        let total = binomial_u128(n as u64, k as u64).unwrap();
        let unranker = Unranker::new(n, k).unwrap();
        let mut seen: Vec<u64> = (0..total).map(|r| unranker.unrank(r, 1)[0]).collect();
        assert!(seen.iter().all(|m| m.count_ones() as usize == k));
        let sorted_by_rank = seen.clone();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len() as u128, total);
        // lexicographic on player lists: first subset is {0,1,2,3}
        assert_eq!(sorted_by_rank[0], 0b1111);
        assert_eq!(*sorted_by_rank.last().unwrap(), 0b1_1110_0000);
    }

    #[test]
    fn unranking_reads_only_exact_binomials_even_where_the_table_saturates() {
        // C(139, 69) overflows a u128: the table saturates there, the walk never reads it
        let (n, k) = (140, 110);
        let unranker = Unranker::new(n, k).unwrap();
        let words = words_for(n);
        let players = |mask: &[u64]| (0..n).filter(|&i| contains(mask, i)).collect::<Vec<_>>();
        assert_eq!(
            players(&unranker.unrank(0, words)),
            (0..k).collect::<Vec<_>>()
        );
        let last = unranker.unrank(unranker.total() - 1, words);
        assert_eq!(players(&last), (n - k..n).collect::<Vec<_>>());
        for rank in [1, unranker.total() / 3, unranker.total() / 2] {
            let (a, b) = (
                unranker.unrank(rank, words),
                unranker.unrank(rank + 1, words),
            );
            assert_eq!(popcount(&a), k);
            assert!(players(&a) < players(&b), "rank order is lexicographic");
        }
    }

    #[test]
    fn complement_respects_player_count() {
        let n = 70;
        let m = mask_from_players([0, 65], n);
        let c = complement(&m, n);
        assert_eq!(popcount(&c), n - 2);
        assert!(!contains(&c, 65) && contains(&c, 69));
        assert_eq!(popcount(&full_mask(n)), n);
    }
}
