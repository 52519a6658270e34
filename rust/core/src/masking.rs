//! Masked model inputs of the interventional game (the query phase's inner loop).
//!
//! For each (coalition, explained row) pair and each background row `b`, the model input takes
//! the explained row's features inside the coalition and `b`'s features outside it:
//! `v_x(S) = mean_b f(x_S, b_notS)` needs exactly these `B` inputs per pair.

use rayon::prelude::*;

use crate::coalitions::{contains, CoalitionMatrix};
use crate::error::{CoreError, Result};

/// The coalitions whose masked inputs are built: feature indicators, or a design's packed
/// coalitions of players read in place (so a design's masks never leave the core).
#[derive(Debug, Clone, Copy)]
pub enum Coalitions<'a> {
    /// Indicators `m × n`, row-major: `true` where the feature comes from the explained row.
    Indicators(&'a [bool]),
    /// Packed coalitions of players; feature `j` is inside when player `player_of_feature[j]`
    /// is (each feature its own player when `None`).
    Packed {
        /// The coalitions, one per row.
        matrix: &'a CoalitionMatrix,
        /// The player of each feature (feature groups), or `None` for one player per feature.
        player_of_feature: Option<&'a [usize]>,
    },
}

impl<'a> Coalitions<'a> {
    /// Number of coalitions, or an error when they do not fit `n` features, naming
    /// `player_of_feature` or else `argument` (what the caller calls the coalitions).
    pub fn count(&self, n: usize, argument: &'static str) -> Result<usize> {
        match *self {
            Coalitions::Indicators(masks) if masks.len() % n == 0 => Ok(masks.len() / n),
            Coalitions::Indicators(masks) => Err(CoreError::invalid(
                argument,
                format!("expected {n} columns, got {} values", masks.len()),
            )),
            Coalitions::Packed {
                matrix,
                player_of_feature,
            } => {
                let players = matrix.n_players();
                match player_of_feature {
                    None if players == n => Ok(matrix.n_rows()),
                    None => Err(CoreError::invalid(
                        argument,
                        format!("the design has {players} players but the data {n} features"),
                    )),
                    Some(map) if map.len() != n => Err(CoreError::invalid(
                        "player_of_feature",
                        format!("expected {n} entries (one per feature), got {}", map.len()),
                    )),
                    Some(map) => match map.iter().find(|&&p| p >= players) {
                        Some(bad) => Err(CoreError::invalid(
                            "player_of_feature",
                            format!("{bad} is out of range for {players} players"),
                        )),
                        None => Ok(matrix.n_rows()),
                    },
                }
            }
        }
    }

    /// The feature indicators of coalition `mask`: borrowed, or unpacked into `scratch`.
    fn row<'s>(&self, mask: usize, n: usize, scratch: &'s mut [bool]) -> &'s [bool]
    where
        'a: 's,
    {
        match *self {
            Coalitions::Indicators(masks) => &masks[mask * n..(mask + 1) * n],
            Coalitions::Packed {
                matrix,
                player_of_feature,
            } => {
                let bits = matrix.row(mask);
                for (j, inside) in scratch.iter_mut().enumerate() {
                    *inside = contains(bits, player_of_feature.map_or(j, |map| map[j]));
                }
                scratch
            }
        }
    }
}

/// Where the masked inputs come from: coalitions, explained rows and background, the data
/// row-major with `n_features` columns.
#[derive(Debug, Clone, Copy)]
pub struct MaskSources<'a, T> {
    /// Number of features `n`.
    pub n_features: usize,
    /// The coalitions.
    pub masks: Coalitions<'a>,
    /// Explained rows, `R × n`.
    pub rows: &'a [T],
    /// Background rows, `B × n`.
    pub background: &'a [T],
}

/// Fills `out` (`k · B × n`, row-major) with the inputs of the pairs
/// `(mask_index[j], row_index[j])`, `j < k`: block `j` holds `B` rows, one per background row.
///
/// Runs in parallel over pairs. Errors name the argument whose shape or index is off.
pub fn fill_masked_inputs<T: Copy + Send + Sync + 'static>(
    out: &mut [T],
    sources: MaskSources<'_, T>,
    mask_index: &[usize],
    row_index: &[usize],
) -> Result<()> {
    fill_masked_inputs_walking(out, sources, mask_index, row_index, Walk::Parallel)
}

/// How [`fill_masked_inputs_walking`] goes over the pairs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Walk {
    /// In parallel, on the current rayon pool.
    Parallel,
    /// On the calling thread alone, pair after pair: for a caller that already runs each fill
    /// on a thread of its own, where handing the work to a pool of one thread would only add a
    /// round trip between threads per call.
    Serial,
}

/// [`fill_masked_inputs`], walking the pairs as `walk` says (the same values either way).
pub fn fill_masked_inputs_walking<T: Copy + Send + Sync + 'static>(
    out: &mut [T],
    sources: MaskSources<'_, T>,
    mask_index: &[usize],
    row_index: &[usize],
    walk: Walk,
) -> Result<()> {
    let n = sources.n_features;
    let block = sources.background.len();
    check_pairs(out.len(), sources, mask_index, row_index)?;
    if block == 0 {
        return Ok(());
    }
    let fill = |dst: &mut [T], (&mi, &ri): (&usize, &usize), scratch: &mut Vec<bool>| {
        fill_pair(dst, &sources, mi, ri, scratch)
    };
    if walk == Walk::Parallel {
        out.par_chunks_mut(block)
            .zip(mask_index.par_iter().zip(row_index.par_iter()))
            // a pair's block can be one short row: keep enough of them per task that rayon's
            // scheduling stays small next to the copying
            .with_min_len(PAIRS_PER_TASK.div_ceil(block).max(1))
            .for_each_init(
                || vec![false; n],
                |scratch, (dst, pair)| fill(dst, pair, scratch),
            );
    } else {
        let mut scratch = vec![false; n];
        for (dst, pair) in out.chunks_mut(block).zip(mask_index.iter().zip(row_index)) {
            fill(dst, pair, &mut scratch);
        }
    }
    Ok(())
}

/// The `B` input rows of one pair (coalition `mi`, explained row `ri`) into `dst`; `scratch`
/// holds a coalition's feature indicators where they are unpacked.
#[inline]
fn fill_pair<T: Copy + 'static>(
    dst: &mut [T],
    sources: &MaskSources<'_, T>,
    mi: usize,
    ri: usize,
    scratch: &mut [bool],
) {
    let n = sources.n_features;
    let x = &sources.rows[ri * n..(ri + 1) * n];
    let rows = dst
        .chunks_exact_mut(n)
        .zip(sources.background.chunks_exact(n));
    if let Coalitions::Packed {
        matrix,
        player_of_feature: None,
    } = sources.masks
    {
        // one player per feature: read the coalition's bits in place, a word at a time
        let bits = matrix.row(mi);
        for (dst_row, bg_row) in rows {
            let words = dst_row
                .chunks_mut(64)
                .zip(x.chunks(64))
                .zip(bg_row.chunks(64));
            for (&word, ((d, xs), bs)) in bits.iter().zip(words) {
                select(d, xs, bs, word);
            }
        }
    } else {
        let mask = sources.masks.row(mi, n, scratch);
        for (dst_row, bg_row) in rows {
            for (((d, &inside), &xi), &bi) in dst_row.iter_mut().zip(mask).zip(x).zip(bg_row) {
                *d = if inside { xi } else { bi };
            }
        }
    }
}

/// Output values per rayon task, at least (a few pages: more than scheduling costs).
const PAIRS_PER_TASK: usize = 4096;

/// `d[j] = if bit j of word { x[j] } else { b[j] }` for up to 64 features. When the rarer
/// source holds at most [`SCATTER_LIMIT`] of them: a block copy of the more common source, then
/// the other one's features one set bit at a time; otherwise [`blend`], without branches.
#[inline]
fn select<T: Copy + 'static>(d: &mut [T], x: &[T], b: &[T], word: u64) {
    let width = d.len();
    let word = word & low_bits(width);
    let (common, rare, mut bits) = if 2 * word.count_ones() as usize > width {
        (x, b, !word & low_bits(width))
    } else {
        (b, x, word)
    };
    if bits.count_ones() as usize > SCATTER_LIMIT {
        return blend(d, x, b, word);
    }
    d.copy_from_slice(common);
    while bits != 0 {
        let j = bits.trailing_zeros() as usize;
        d[j] = rare[j];
        bits &= bits - 1;
    }
}

/// Most features of the rarer source that [`select`] writes one at a time after a block copy.
/// Above it the branchless [`blend`] is faster: a `leverage` call of the near-free benchmark
/// (n = 100, half its coalitions of middle sizes) took 96 against 108 ms (medians of five
/// alternating processes, every pair faster).
const SCATTER_LIMIT: usize = 8;

/// [`select`] feature by feature, without branches: for `f64` and `f32`, four features at a
/// time, their choice read from a table of lane masks by four bits of `word` (one vector
/// operation for `f64` with AVX2, two with SSE2); for other types one at a time.
#[inline]
fn blend<T: Copy + 'static>(d: &mut [T], x: &[T], b: &[T], word: u64) {
    use std::any::TypeId;
    let of = TypeId::of::<T>();
    // SAFETY: `T` is a float of the lane's size and alignment (no padding), and its bits are
    // only copied.
    unsafe {
        if of == TypeId::of::<f64>() {
            return blend_lanes(cast::<T, u64>(d), cast_ref(x), cast_ref(b), word);
        }
        if of == TypeId::of::<f32>() {
            return blend_lanes(cast::<T, u32>(d), cast_ref(x), cast_ref(b), word);
        }
    }
    for (j, ((d, &x), &b)) in d.iter_mut().zip(x).zip(b).enumerate() {
        *d = if (word >> j) & 1 == 1 { x } else { b };
    }
}

/// [`blend`] on lanes of one width: four lanes per four bits of `word`.
#[inline(always)]
fn blend_lanes<L: Lane>(d: &mut [L], x: &[L], b: &[L], word: u64) {
    let mut rest = word;
    let quads = d
        .chunks_exact_mut(4)
        .zip(x.chunks_exact(4))
        .zip(b.chunks_exact(4));
    for ((d, x), b) in quads {
        let mask = &L::NIBBLES[(rest & 15) as usize];
        for i in 0..4 {
            d[i] = (x[i] & mask[i]) | (b[i] & !mask[i]);
        }
        rest >>= 4;
    }
    for j in d.len() - d.len() % 4..d.len() {
        d[j] = if (word >> j) & 1 == 1 { x[j] } else { b[j] };
    }
}

/// An unsigned integer standing for a value of its width in [`blend_lanes`].
trait Lane:
    Copy
    + std::ops::BitAnd<Output = Self>
    + std::ops::BitOr<Output = Self>
    + std::ops::Not<Output = Self>
{
    /// Entry `k`, lane `i`: all ones where bit `i` of `k` is set, else zero.
    const NIBBLES: [[Self; 4]; 16];
}

/// The table of [`Lane::NIBBLES`] for a lane whose all-ones value is `$ones`.
macro_rules! nibbles {
    ($ones:expr) => {{
        let mut table = [[0; 4]; 16];
        let mut k = 0;
        while k < 16 {
            let mut i = 0;
            while i < 4 {
                if (k >> i) & 1 == 1 {
                    table[k][i] = $ones;
                }
                i += 1;
            }
            k += 1;
        }
        table
    }};
}

impl Lane for u64 {
    const NIBBLES: [[Self; 4]; 16] = nibbles!(u64::MAX);
}

impl Lane for u32 {
    const NIBBLES: [[Self; 4]; 16] = nibbles!(u32::MAX);
}

/// `values` as a slice of `L`; the caller checks that both have one size and alignment.
unsafe fn cast<T, L>(values: &mut [T]) -> &mut [L] {
    std::slice::from_raw_parts_mut(values.as_mut_ptr().cast(), values.len())
}

/// `values` as a slice of `L`; the caller checks that both have one size and alignment.
unsafe fn cast_ref<T, L>(values: &[T]) -> &[L] {
    std::slice::from_raw_parts(values.as_ptr().cast(), values.len())
}

/// The lowest `width` bits set (`width` ≤ 64).
#[inline]
fn low_bits(width: usize) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1 << width) - 1
    }
}

fn check_pairs<T>(
    out_len: usize,
    sources: MaskSources<'_, T>,
    mask_index: &[usize],
    row_index: &[usize],
) -> Result<()> {
    let n = sources.n_features;
    if n == 0 {
        return Err(CoreError::invalid(
            "masks",
            "must have at least one feature column",
        ));
    }
    let rows_of = |len: usize, name: &'static str| {
        if len % n == 0 {
            Ok(len / n)
        } else {
            Err(CoreError::invalid(
                name,
                format!("expected {n} columns, got {len} values"),
            ))
        }
    };
    let n_masks = sources.masks.count(n, "masks")?;
    let n_rows = rows_of(sources.rows.len(), "rows")?;
    let n_background = rows_of(sources.background.len(), "background")?;
    if n_background == 0 {
        return Err(CoreError::invalid(
            "background",
            "must have at least one row",
        ));
    }
    if mask_index.len() != row_index.len() {
        return Err(CoreError::invalid(
            "row_index",
            format!(
                "has {} entries but mask_index has {}",
                row_index.len(),
                mask_index.len()
            ),
        ));
    }
    let expected = mask_index.len() * n_background * n;
    if out_len != expected {
        return Err(CoreError::invalid(
            "out",
            format!(
                "expected {} rows of {n} ({} pairs × {n_background} background rows), got {out_len} values",
                mask_index.len() * n_background,
                mask_index.len()
            ),
        ));
    }
    let out_of_range = |index: &[usize], limit: usize| index.iter().copied().find(|&i| i >= limit);
    if let Some(bad) = out_of_range(mask_index, n_masks) {
        return Err(CoreError::invalid(
            "mask_index",
            format!("{bad} is out of range for {n_masks} masks"),
        ));
    }
    if let Some(bad) = out_of_range(row_index, n_rows) {
        return Err(CoreError::invalid(
            "row_index",
            format!("{bad} is out of range for {n_rows} rows"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inside_from_the_row_outside_from_each_background_row() {
        let masks = [true, false, false, true];
        let rows = [1.0, 2.0, 3.0, 4.0];
        let background = [10.0, 20.0, 30.0, 40.0];
        let sources = MaskSources {
            n_features: 2,
            masks: Coalitions::Indicators(&masks),
            rows: &rows,
            background: &background,
        };
        let mut out = [0.0; 8];
        fill_masked_inputs(&mut out, sources, &[0, 1], &[1, 0]).unwrap();
        assert_eq!(out, [3.0, 20.0, 3.0, 40.0, 10.0, 2.0, 30.0, 2.0]);
        let err = fill_masked_inputs(&mut out, sources, &[0, 2], &[1, 0]).unwrap_err();
        assert!(matches!(
            err,
            CoreError::InvalidArgument {
                argument: "mask_index",
                ..
            }
        ));
        let err = fill_masked_inputs(&mut out[..6], sources, &[0, 1], &[1, 0]).unwrap_err();
        assert!(matches!(
            err,
            CoreError::InvalidArgument {
                argument: "out",
                ..
            }
        ));
    }

    #[test]
    fn packed_coalitions_of_many_words_give_the_inputs_of_their_indicators() {
        // n = 130: three words per coalition, the last one partial; 3 background rows; enough
        // pairs that the parallel loop splits them
        let (n, b, m) = (130, 3, 40);
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let indicators: Vec<bool> = (0..m * n).map(|_| next() % 2 == 1).collect();
        let mut matrix = CoalitionMatrix::new(n);
        for row in indicators.chunks(n) {
            let mut words = vec![0u64; 3];
            for (j, _) in row.iter().enumerate().filter(|(_, &inside)| inside) {
                words[j / 64] |= 1 << (j % 64);
            }
            matrix.push(&words);
        }
        let rows: Vec<f64> = (0..5 * n).map(|v| v as f64).collect();
        let background: Vec<f64> = (0..b * n).map(|v| -(v as f64) - 1.0).collect();
        let pairs = 500;
        let mask_index: Vec<usize> = (0..pairs).map(|j| (j * 7) % m).collect();
        let row_index: Vec<usize> = (0..pairs).map(|j| j % 5).collect();
        let fill = |masks, walk| {
            let sources = MaskSources {
                n_features: n,
                masks,
                rows: &rows,
                background: &background,
            };
            let mut out = vec![0.0; pairs * b * n];
            fill_masked_inputs_walking(&mut out, sources, &mask_index, &row_index, walk)
                .map(|()| out)
        };
        let packed = Coalitions::Packed {
            matrix: &matrix,
            player_of_feature: None,
        };
        let expected = fill(Coalitions::Indicators(&indicators), Walk::Parallel).unwrap();
        // either source of the coalitions, walked in parallel or on the calling thread alone
        assert_eq!(fill(packed, Walk::Parallel).unwrap(), expected);
        assert_eq!(fill(packed, Walk::Serial).unwrap(), expected);
        assert_eq!(
            fill(Coalitions::Indicators(&indicators), Walk::Serial).unwrap(),
            expected
        );
    }

    #[test]
    fn select_takes_each_feature_from_its_bit_whichever_source_is_copied_whole() {
        fn check<T: Copy + PartialEq + std::fmt::Debug + 'static>(value: impl Fn(i32) -> T) {
            for width in [1, 5, 13, 36, 63, 64] {
                let x: Vec<T> = (0..width).map(&value).collect();
                let b: Vec<T> = (0..width).map(|j| value(-j - 1)).collect();
                // sparse, dense, empty, full, bits past the width that must be ignored, and
                // words whose rarer source has more than SCATTER_LIMIT features (the blend)
                let words = [
                    0b1001_u64,
                    !0b1001,
                    0,
                    u64::MAX,
                    1 << 63 | 0b10,
                    0xAAAA_AAAA_AAAA_AAAA,
                    0x0F0F_0F0F_0F0F_0F0F,
                    0x1234_5678_9ABC_DEF0,
                ];
                for word in words {
                    let mut d = vec![value(0); width as usize];
                    select(&mut d, &x, &b, word);
                    for j in 0..width as usize {
                        let expected = if (word >> j) & 1 == 1 { x[j] } else { b[j] };
                        assert_eq!(d[j], expected, "width {width}, word {word:#x}, feature {j}");
                    }
                }
            }
        }
        check(f64::from);
        check(|j| j as f32);
        check(|j| [j as u8; 3]); // neither f64 nor f32: chosen feature by feature
    }

    #[test]
    fn a_packed_design_gives_the_inputs_of_its_indicators() {
        let mut matrix = CoalitionMatrix::new(2);
        matrix.push(&[0b01]);
        matrix.push(&[0b10]);
        let rows = [1.0, 2.0, 3.0];
        let background = [10.0, 20.0, 30.0];
        let grouped = Coalitions::Packed {
            matrix: &matrix,
            player_of_feature: Some(&[0, 1, 0]),
        };
        let indicators = [true, false, true, false, true, false];
        let fill = |masks| {
            let sources = MaskSources {
                n_features: 3,
                masks,
                rows: &rows,
                background: &background,
            };
            let mut out = [0.0; 6];
            fill_masked_inputs(&mut out, sources, &[1, 0], &[0, 0]).map(|()| out)
        };
        let expected = fill(Coalitions::Indicators(&indicators)).unwrap();
        assert_eq!(expected, [10.0, 2.0, 30.0, 1.0, 20.0, 3.0]);
        assert_eq!(fill(grouped).unwrap(), expected);
        let bad = Coalitions::Packed {
            matrix: &matrix,
            player_of_feature: Some(&[0, 2, 0]),
        };
        assert!(matches!(
            fill(bad).unwrap_err(),
            CoreError::InvalidArgument {
                argument: "player_of_feature",
                ..
            }
        ));
        let ungrouped = Coalitions::Packed {
            matrix: &matrix,
            player_of_feature: None,
        };
        assert!(fill(ungrouped).is_err());
    }
}
