//! Scalar twins of the bitmap kernels.

use crate::arch::mask::{Bitmap, RowMask};

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

/// The bits of `s` where `w` is set, packed from bit 0 (BMI2's `pext`), a
/// run of set bits of `w` at a time: at most 32 steps a word.
#[inline(always)]
pub(crate) fn pext(s: u64, mut w: u64) -> u64 {
    let ones = |n: u32| if n >= 64 { !0u64 } else { (1u64 << n) - 1 };
    let (mut r, mut k) = (0u64, 0u32);
    while w != 0 {
        let start = w.trailing_zeros();
        let run = (!(w >> start)).trailing_zeros();
        r |= ((s >> start) & ones(run)) << k;
        k += run;
        w &= !(ones(run) << start);
    }
    r
}

/// A bitmap read 64 rows at a time, its layout and offset resolved once
/// (so a loop over it has no branch on them): on little-endian targets
/// `u64` words are their bytes in order, so both layouts are a byte slice,
/// a byte to start at and a shift, and a word is one unaligned load and a
/// byte more. Big-endian targets read through [`Bitmap::word`].
#[derive(Clone, Copy)]
struct WordReader<'a> {
    #[cfg(target_endian = "little")]
    bytes: &'a [u8],
    #[cfg(target_endian = "little")]
    at: usize,
    #[cfg(target_endian = "little")]
    shift: u32,
    src: Bitmap<'a>,
}

impl<'a> WordReader<'a> {
    fn new(src: Bitmap<'a>) -> Self {
        #[cfg(target_endian = "little")]
        {
            let (bytes, o) = match src {
                // SAFETY: a `u64` slice's memory is as many initialised
                // bytes times 8, with no stricter alignment for `u8`, for
                // the same borrow.
                Bitmap::Words(w, o) => (
                    unsafe { core::slice::from_raw_parts(w.as_ptr().cast::<u8>(), w.len() * 8) },
                    o,
                ),
                Bitmap::Bytes(b, o) => (b, o),
            };
            WordReader {
                bytes,
                at: o / 8,
                shift: (o % 8) as u32,
                src,
            }
        }
        #[cfg(not(target_endian = "little"))]
        WordReader { src }
    }

    /// As [`Bitmap::word`].
    #[inline(always)]
    fn word(&self, blk: usize) -> u64 {
        #[cfg(target_endian = "little")]
        if let Some(s) = self.bytes.get(self.at + blk * 8..self.at + blk * 8 + 9) {
            let lo = u64::from_le_bytes([s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]]);
            // The ninth byte's low bits above the word's (none at shift 0).
            return (lo >> self.shift) | (u64::from(s[8]) << 1 << (63 - self.shift));
        }
        self.tail_word(blk)
    }

    /// The last words, within 9 bytes of the end (and every word on
    /// big-endian targets), out of the loop's line.
    #[cold]
    #[inline(never)]
    fn tail_word(&self, blk: usize) -> u64 {
        self.src.word(blk)
    }
}

/// The words [`compact_loop`] reads, 64 rows each: a source, or a mask of
/// every row, one bitmap, or two.
trait WordSource {
    fn word(&self, blk: usize) -> u64;
}

/// `u64` words from row 0 on.
struct Aligned<'a>(&'a [u64]);
impl WordSource for Aligned<'_> {
    #[inline(always)]
    fn word(&self, blk: usize) -> u64 {
        self.0[blk]
    }
}

struct AllRows;
impl WordSource for AllRows {
    #[inline(always)]
    fn word(&self, _: usize) -> u64 {
        !0
    }
}

impl WordSource for WordReader<'_> {
    #[inline(always)]
    fn word(&self, blk: usize) -> u64 {
        WordReader::word(self, blk)
    }
}

impl WordSource for (WordReader<'_>, WordReader<'_>) {
    #[inline(always)]
    fn word(&self, blk: usize) -> u64 {
        self.0.word(blk) & self.1.word(blk)
    }
}

/// The bits of `src` at the rows among the first `rows` that `m` counts,
/// packed in order from bit 0 of `out`, which holds exactly the words
/// they fill (the last with zeros above its last bit); returns how many.
/// `PEXT` packs a word with BMI2's `pext`, else with the run loop. No
/// branch on the data: a word counting no row packs nothing, and each
/// step stores the word being filled (never past `out`), so sparse masks
/// cost no mispredictions.
///
/// # Safety
/// With `PEXT`, the CPU has BMI2 (x86-64 only). `out` holds
/// `count.div_ceil(64)` words for the `count` rows `m` counts (fewer
/// panics on a bounds check).
#[inline(always)]
pub(crate) unsafe fn compact_with<const PEXT: bool>(
    src: Bitmap<'_>,
    m: RowMask<'_>,
    rows: usize,
    out: &mut [u64],
) -> usize {
    // Both word-aligned (keel's own bitmaps, and arrow's through
    // `keel_kernels::arrow`): the words as they lie.
    // (With no rows the offset may lie past the words: the reader then.)
    if let (Bitmap::Words(sw, so), Some(mw)) = (src, m.aligned_words())
        && so.is_multiple_of(64)
        && let Some(sw) = sw.get(so / 64..)
    {
        // SAFETY: forwarded contract.
        return unsafe { compact_loop::<PEXT>(Aligned(sw), Aligned(mw), rows, out) };
    }
    let s = WordReader::new(src);
    // SAFETY: forwarded contract, for each shape of mask (each its own
    // loop, with no branch on the shape inside).
    unsafe {
        match m.parts() {
            (None, _) => compact_loop::<PEXT>(s, AllRows, rows, out),
            (Some(a), None) => compact_loop::<PEXT>(s, WordReader::new(a), rows, out),
            (Some(a), Some(b)) => {
                let m = (WordReader::new(a), WordReader::new(b));
                compact_loop::<PEXT>(s, m, rows, out)
            }
        }
    }
}

/// [`compact_with`]'s loop, the source's words from `src` and the mask's
/// from `mask`.
///
/// # Safety
/// As [`compact_with`].
#[inline(always)]
unsafe fn compact_loop<const PEXT: bool>(
    src: impl WordSource,
    mask: impl WordSource,
    rows: usize,
    out: &mut [u64],
) -> usize {
    let (mut acc, mut fill, mut o, mut total) = (0u64, 0u32, 0usize, 0usize);
    let mut step = |w: u64, s: u64| {
        let v = if PEXT {
            #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
            // SAFETY: with `PEXT` the CPU has BMI2 (the contract).
            let v = unsafe { core::arch::x86_64::_pext_u64(s, w) };
            #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
            let v = pext(s, w);
            v
        } else {
            pext(s, w)
        };
        let k = w.count_ones();
        // `fill` < 64: the bits that fit, and (shifted twice, so that a
        // `fill` of 0 gives 0) those that spill into the next word.
        let lo = acc | v << fill;
        let hi = (v >> 1) >> (63 - fill);
        if let Some(slot) = out.get_mut(o) {
            *slot = lo;
        }
        let spill = (fill + k) >> 6;
        o += spill as usize;
        acc = if spill != 0 { hi } else { lo };
        fill = (fill + k) & 63;
        total += k as usize;
    };
    let full = rows / 64;
    for b in 0..full {
        step(mask.word(b), src.word(b));
    }
    if !rows.is_multiple_of(64) {
        step(
            mask.word(full) & ((1u64 << (rows % 64)) - 1),
            src.word(full),
        );
    }
    if fill > 0 {
        out[o] = acc;
    }
    total
}

/// [`compact_with`] with the run loop: the scalar twin.
pub(crate) fn compact(src: Bitmap<'_>, m: RowMask<'_>, rows: usize, out: &mut [u64]) -> usize {
    // SAFETY: without `PEXT` nothing is asked of the CPU.
    unsafe { compact_with::<false>(src, m, rows, out) }
}
