//! AVX-512 BW aggregates of 8- and 16-bit columns. Rows go in blocks of 64
//! (one mask word), as in `agg.rs`: full blocks load plainly, other blocks
//! with the word (or its halves) as the load mask, masked-off lanes reading
//! as zero.
//!
//! * 8-bit sums: `vpsadbw` against zero adds each 8 bytes into a 64-bit
//!   lane, one instruction per 64 rows. Signed bytes are biased by 128 first
//!   (`x ^ 0x80` is `x + 128` as an unsigned byte); every lane of a block
//!   that is summed then carries 128 extra, null lanes included (they load
//!   as 0, which the bias makes 128), so the block adds exactly `64 * 128`
//!   too much, taken off at the end.
//! * 16-bit sums: `vpmaddwd` by ones adds each pair of lanes into 32 bits;
//!   unsigned lanes are biased by `-32768` first, and every lane of a summed
//!   block gives back 32768 at the end. A 32-bit lane takes at most 2^16 a
//!   block, so the lanes are flushed into 64 bits every `FLUSH_BLOCKS`.
//! * Min and max: the BW lane-wise min/max with the mask word, null lanes
//!   keeping the accumulator.

use crate::arch::mask::RowMask;
use core::arch::x86_64::*;

/// The mask word for block `b` of a column of `n` rows.
#[inline(always)]
fn block_word(m: RowMask<'_>, n: usize, b: usize) -> u64 {
    let rows = n - b * 64;
    let lim = if rows >= 64 { !0 } else { (1u64 << rows) - 1 };
    m.word(b) & lim
}

macro_rules! sum8 {
    ($name:ident, $t:ty, $sum:ty, $signed:expr) => {
        /// Sum of the counted values, exact in 64 bits.
        ///
        /// # Safety
        /// The CPU supports AVX-512 (F, BW); `m` covers `v.len()` rows.
        #[target_feature(
            enable = "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,bmi2,popcnt"
        )]
        pub(crate) unsafe fn $name(v: &[$t], m: RowMask<'_>) -> $sum {
            let n = v.len();
            let mut summed: u64 = 0;
            // SAFETY: a block whose word is all ones has 64 rows below n, so
            // its plain load reads inside `v`; any other block's masked load
            // enables only lanes of rows < n (masked-off lanes are not
            // accessed), at an address formed with wrapping_add. AVX-512 BW
            // is enabled.
            let total = unsafe {
                let bias = _mm512_set1_epi8(if $signed { -128 } else { 0 });
                let zero = _mm512_setzero_si512();
                let mut acc = [zero; 4];
                for b in 0..n.div_ceil(64) {
                    let w = block_word(m, n, b);
                    let p = v.as_ptr().wrapping_add(b * 64);
                    let x = if w == !0 {
                        _mm512_loadu_si512(p.cast())
                    } else if w != 0 {
                        _mm512_maskz_loadu_epi8(w, p.cast())
                    } else {
                        continue;
                    };
                    summed += 1;
                    let s = _mm512_sad_epu8(_mm512_xor_si512(x, bias), zero);
                    acc[b % 4] = _mm512_add_epi64(acc[b % 4], s);
                }
                let s = _mm512_add_epi64(
                    _mm512_add_epi64(acc[0], acc[1]),
                    _mm512_add_epi64(acc[2], acc[3]),
                );
                _mm512_reduce_add_epi64(s) as u64
            };
            let extra = if $signed {
                summed.wrapping_mul(64 * 128)
            } else {
                0
            };
            total.wrapping_sub(extra) as $sum
        }
    };
}

sum8!(sum_u8, u8, u64, false);
sum8!(sum_i8, i8, i64, true);

/// Blocks between flushes of the 16-bit sums' 32-bit lanes: each lane takes
/// one pair sum (|x| <= 2^16) a block, so 2^14 blocks stay below 2^31. Under
/// Miri, every 2 blocks, so short columns cross flushes.
const FLUSH_BLOCKS: usize = if cfg!(miri) { 2 } else { 1 << 14 };

macro_rules! sum16 {
    ($name:ident, $t:ty, $sum:ty, $unsigned:expr) => {
        /// Sum of the counted values, exact in 64 bits.
        ///
        /// # Safety
        /// The CPU supports AVX-512 (F, BW); `m` covers `v.len()` rows.
        #[target_feature(
            enable = "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,bmi2,popcnt"
        )]
        pub(crate) unsafe fn $name(v: &[$t], m: RowMask<'_>) -> $sum {
            let n = v.len();
            let blocks = n.div_ceil(64);
            let mut summed: u64 = 0;
            // SAFETY: loads as in `sum8`, 32 lanes each: plain ones only for
            // blocks of 64 rows below n, masked ones enabling only rows < n.
            // AVX-512 BW is enabled.
            let total = unsafe {
                let bias = _mm512_set1_epi16(if $unsigned { i16::MIN } else { 0 });
                let ones = _mm512_set1_epi16(1);
                let mut total = _mm512_setzero_si512();
                let mut b = 0;
                while b < blocks {
                    let end = blocks.min(b + FLUSH_BLOCKS);
                    let mut acc = [_mm512_setzero_si512(); 2];
                    while b < end {
                        let w = block_word(m, n, b);
                        let p = v.as_ptr().wrapping_add(b * 64);
                        if w == !0 {
                            for j in 0..2 {
                                let x = _mm512_loadu_si512(p.wrapping_add(32 * j).cast());
                                let x = _mm512_xor_si512(x, bias);
                                acc[j] = _mm512_add_epi32(acc[j], _mm512_madd_epi16(x, ones));
                            }
                            summed += 1;
                        } else if w != 0 {
                            for j in 0..2 {
                                let k = (w >> (32 * j)) as u32;
                                let x = _mm512_maskz_loadu_epi16(k, p.wrapping_add(32 * j).cast());
                                let x = _mm512_xor_si512(x, bias);
                                acc[j] = _mm512_add_epi32(acc[j], _mm512_madd_epi16(x, ones));
                            }
                            summed += 1;
                        }
                        b += 1;
                    }
                    for a in acc {
                        let lo = _mm512_cvtepi32_epi64(_mm512_castsi512_si256(a));
                        let hi = _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64::<1>(a));
                        total = _mm512_add_epi64(total, _mm512_add_epi64(lo, hi));
                    }
                }
                _mm512_reduce_add_epi64(total) as u64
            };
            // Unsigned lanes were biased by -32768, null lanes included.
            let back = if $unsigned {
                summed.wrapping_mul(64 * 32768)
            } else {
                0
            };
            total.wrapping_add(back) as $sum
        }
    };
}

sum16!(sum_u16, u16, u64, true);
sum16!(sum_i16, i16, i64, false);

macro_rules! min_max {
    ($name:ident, $t:ty, $lanes:expr, $mt:ty, $set1:ident, $loadz:ident, $mmin:ident,
     $mmax:ident) => {
        /// `(min, max)` of the counted values, as the scalar twin.
        ///
        /// # Safety
        /// The CPU supports AVX-512 (F, BW); `m` covers `v.len()` rows.
        #[target_feature(
            enable = "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,bmi2,popcnt"
        )]
        pub(crate) unsafe fn $name<const MODE: u8>(v: &[$t], m: RowMask<'_>) -> ($t, $t) {
            const L: usize = $lanes;
            let n = v.len();
            // SAFETY: loads as in `sum8`; the stores write L lanes into
            // arrays of L. AVX-512 BW is enabled.
            unsafe {
                let (hi, lo) = ($set1(<$t>::MAX as _), $set1(<$t>::MIN as _));
                let (mut mn, mut mx) = (hi, lo);
                for b in 0..n.div_ceil(64) {
                    let w = block_word(m, n, b);
                    let base = v.as_ptr().wrapping_add(b * 64);
                    for j in 0..64 / L {
                        let k: $mt = if w == !0 { !0 } else { (w >> (L * j)) as $mt };
                        if k == 0 {
                            continue;
                        }
                        let x = $loadz(k, base.wrapping_add(L * j).cast());
                        if MODE & 1 != 0 {
                            mn = $mmin(mn, k, mn, x);
                        }
                        if MODE & 2 != 0 {
                            mx = $mmax(mx, k, mx, x);
                        }
                    }
                }
                let (mut a, mut b) = ([0 as $t; L], [0 as $t; L]);
                _mm512_storeu_si512(a.as_mut_ptr().cast(), mn);
                _mm512_storeu_si512(b.as_mut_ptr().cast(), mx);
                (
                    a.iter().copied().fold(<$t>::MAX, <$t>::min),
                    b.iter().copied().fold(<$t>::MIN, <$t>::max),
                )
            }
        }
    };
}

min_max!(
    min_max_i8,
    i8,
    64,
    u64,
    _mm512_set1_epi8,
    _mm512_maskz_loadu_epi8,
    _mm512_mask_min_epi8,
    _mm512_mask_max_epi8
);
min_max!(
    min_max_u8,
    u8,
    64,
    u64,
    _mm512_set1_epi8,
    _mm512_maskz_loadu_epi8,
    _mm512_mask_min_epu8,
    _mm512_mask_max_epu8
);
min_max!(
    min_max_i16,
    i16,
    32,
    u32,
    _mm512_set1_epi16,
    _mm512_maskz_loadu_epi16,
    _mm512_mask_min_epi16,
    _mm512_mask_max_epi16
);
min_max!(
    min_max_u16,
    u16,
    32,
    u32,
    _mm512_set1_epi16,
    _mm512_maskz_loadu_epi16,
    _mm512_mask_min_epu16,
    _mm512_mask_max_epu16
);
