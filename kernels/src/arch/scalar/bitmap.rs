//! Scalar twins of the bitmap kernels.

use crate::arch::mask::RowMask;

/// `dst[i] &= src[i]` (equal lengths, checked by the caller).
#[inline(always)]
pub(crate) fn and(dst: &mut [u64], src: &[u64]) {
    dst.iter_mut().zip(src).for_each(|(d, s)| *d &= s);
}

/// `dst[i] |= src[i]`.
#[inline(always)]
pub(crate) fn or(dst: &mut [u64], src: &[u64]) {
    dst.iter_mut().zip(src).for_each(|(d, s)| *d |= s);
}

/// `dst[i] &= !src[i]`.
#[inline(always)]
pub(crate) fn andnot(dst: &mut [u64], src: &[u64]) {
    dst.iter_mut().zip(src).for_each(|(d, s)| *d &= !s);
}

/// Set bits in all of `words`.
#[inline(always)]
pub(crate) fn popcount(words: &[u64]) -> usize {
    words.iter().map(|w| w.count_ones() as usize).sum()
}

/// Indices of the set bits among the first `rows` bits of `words` (which
/// has exactly `rows.div_ceil(64)` words) into `out` (room checked by the
/// caller); returns how many.
#[inline(always)]
pub(crate) fn select(words: &[u64], rows: usize, out: &mut [u32]) -> usize {
    let full = rows / 64;
    let mut n = 0;
    for (i, &w) in words[..full].iter().enumerate() {
        n = select_word(w, (i * 64) as u32, out, n);
    }
    if !rows.is_multiple_of(64) {
        n = select_word(
            words[full] & ((1u64 << (rows % 64)) - 1),
            (full * 64) as u32,
            out,
            n,
        );
    }
    n
}

/// Appends `base` plus the index of each set bit of `w`, lowest first, to
/// `out` from `out[n]` (room checked by the caller); returns the new count.
#[inline(always)]
pub(crate) fn select_word(mut w: u64, base: u32, out: &mut [u32], mut n: usize) -> usize {
    while w != 0 {
        out[n] = base + w.trailing_zeros();
        n += 1;
        w &= w - 1;
    }
    n
}

/// Rows among the first `rows` that a word-aligned bitmap `w` counts
/// (`RowMask::aligned_words`), with `popcount` for its full words: the SIMD
/// leaves' count, each passing its level's popcount.
#[cfg_attr(
    not(all(target_arch = "x86_64", target_feature = "sse2")),
    allow(dead_code) // the AVX2 and AVX-512 counts use it
)]
#[inline(always)]
pub(crate) fn count_words(w: &[u64], rows: usize, popcount: impl FnOnce(&[u64]) -> usize) -> usize {
    let full = (rows / 64).min(w.len());
    let mut n = popcount(&w[..full]);
    if !rows.is_multiple_of(64) {
        let last = w.get(rows / 64).copied().unwrap_or(0);
        n += (last & ((1u64 << (rows % 64)) - 1)).count_ones() as usize;
    }
    n
}

/// Rows among the first `rows` that `m` counts.
#[inline(always)]
pub(crate) fn count_mask(m: RowMask<'_>, rows: usize) -> usize {
    if m.is_all() {
        return rows;
    }
    let full = rows / 64;
    let mut n: usize = (0..full).map(|b| m.word(b).count_ones() as usize).sum();
    if !rows.is_multiple_of(64) {
        n += (m.word(full) & ((1u64 << (rows % 64)) - 1)).count_ones() as usize;
    }
    n
}
