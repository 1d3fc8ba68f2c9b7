//! Scalar twins of the filters, and the predicate codes every filter leaf
//! takes as its `OP` parameter.

use crate::arch::mask::RowMask;

/// `x == c1`
pub(crate) const EQ: u8 = 0;
/// `x != c1`
pub(crate) const NE: u8 = 1;
/// `x < c1`
pub(crate) const LT: u8 = 2;
/// `x <= c1`
pub(crate) const LE: u8 = 3;
/// `x > c1`
pub(crate) const GT: u8 = 4;
/// `x >= c1`
pub(crate) const GE: u8 = 5;
/// `c1 <= x && x <= c2`
pub(crate) const BETWEEN: u8 = 6;

/// Whether `x` passes predicate `op` against `c1` (and `c2` for
/// [`BETWEEN`]), by IEEE comparison for floats. Codes past [`BETWEEN`] are
/// between too.
#[inline(always)]
pub(crate) fn holds<T: PartialOrd>(op: u8, c1: T, c2: T, x: T) -> bool {
    match op {
        EQ => x == c1,
        NE => x != c1,
        LT => x < c1,
        LE => x <= c1,
        GT => x > c1,
        GE => x >= c1,
        _ => c1 <= x && x <= c2,
    }
}

/// What a filter leaf does with each block's word: write it to `out`,
/// and it into `out`, or count its bits that the mask also has.
pub(crate) const WRITE: u8 = 0;
/// See [`WRITE`].
pub(crate) const AND: u8 = 1;
/// See [`WRITE`].
pub(crate) const COUNT: u8 = 2;

/// Applies sink `SINK` to one block's word `w`: `out[blk]` for [`WRITE`]
/// and [`AND`], the count of `w & m.word(blk)` (returned) for [`COUNT`].
#[inline(always)]
pub(crate) fn sink<const SINK: u8>(out: &mut [u64], blk: usize, w: u64, m: RowMask<'_>) -> usize {
    match SINK {
        WRITE => {
            out[blk] = w;
            0
        }
        AND => {
            out[blk] &= w;
            0
        }
        _ => (w & m.word(blk)).count_ones() as usize,
    }
}

/// The part of `out` from word `full` on, for a leaf's scalar tail (empty
/// when counting, where `out` is empty).
#[cfg_attr(
    not(any(
        all(target_arch = "x86_64", target_feature = "sse2"),
        target_arch = "aarch64"
    )),
    allow(dead_code) // the SIMD leaves' scalar tails use it
)]
#[inline(always)]
pub(crate) fn tail_out<const SINK: u8>(out: &mut [u64], full: usize) -> &mut [u64] {
    if SINK == COUNT {
        &mut []
    } else {
        &mut out[full..]
    }
}

/// Predicate `OP` of `v[i]` as bit `i` of one word per 64 rows, each
/// passed to sink `SINK` (`out` has exactly `v.len().div_ceil(64)` words,
/// or none for [`COUNT`]; the last word's spare bits are zero); returns the
/// count for [`COUNT`], else 0.
pub(crate) fn filter_code<const OP: u8, const SINK: u8, T: PartialOrd + Copy>(
    v: &[T],
    c1: T,
    c2: T,
    out: &mut [u64],
    m: RowMask<'_>,
) -> usize {
    let mut n = 0;
    for (blk, chunk) in v.chunks(64).enumerate() {
        let mut w = 0u64;
        for (j, &x) in chunk.iter().enumerate() {
            w |= (holds(OP, c1, c2, x) as u64) << j;
        }
        n += sink::<SINK>(out, blk, w, m);
    }
    n
}
