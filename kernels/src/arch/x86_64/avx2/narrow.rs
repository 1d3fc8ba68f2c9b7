//! AVX2 leaves for 8- and 16-bit columns: filters, sums, min and max. Rows
//! go in blocks of 64 (one mask word), as in `agg.rs` and `filter.rs` (the
//! filters' full blocks through `filter.rs`'s `blocks`, eight a step); the
//! tail (< 64 rows) runs the scalar twin.
//!
//! * Filters compare with `vpcmpeq{b,w}`/`vpcmpgt{b,w}` (unsigned types
//!   flip the sign bit first). A byte compare's mask is the 32-bit
//!   `vpmovmskb`; two 16-bit compares are packed to bytes (`vpacksswb`,
//!   whose lane order `vpermq` restores) and then moved the same way.
//! * 8-bit sums: `vpsadbw` against zero; signed bytes are biased by 128
//!   (`x ^ 0x80`), and each counted row's 128 is taken off at the end.
//!   Null lanes are zeroed after the bias, so they add nothing.
//! * 16-bit sums: `vpmaddwd` by ones into 32-bit lanes, unsigned values
//!   biased by -32768 (each counted row's 32768 given back at the end),
//!   flushed into 64 bits every `FLUSH_BLOCKS` blocks.
//! * Min and max: `vpmin*`/`vpmax*`; null lanes take the identity first.

use super::filter::{STEP, blocks};
use crate::arch::mask::RowMask;
use crate::arch::scalar::agg as scalar_agg;
use crate::arch::scalar::filter::{self as scalar, BETWEEN, EQ, GE, GT, LE, LT, NE, tail_out};
use core::arch::x86_64::*;

/// Mask bits `w & 0xFFFF_FFFF` as 32 byte lanes (all ones = set): each byte
/// of the broadcast word is spread over 8 lanes, which test one bit each.
#[inline(always)]
unsafe fn bytes32(w: u64) -> __m256i {
    // SAFETY: AVX2 register ops; the enclosing leaf enables AVX2.
    unsafe {
        let v = _mm256_set1_epi32(w as i32);
        let spread = _mm256_setr_epi8(
            0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3,
            3, 3, 3,
        );
        let bits = _mm256_set1_epi64x(0x8040_2010_0804_0201u64 as i64);
        _mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(v, spread), bits), bits)
    }
}

/// Mask bits `w & 0xFFFF` as 16 lanes of 16 bits.
#[inline(always)]
unsafe fn words16(w: u64) -> __m256i {
    // SAFETY: AVX2 register ops; the enclosing leaf enables AVX2.
    unsafe {
        let bits = _mm256_setr_epi16(
            1,
            2,
            4,
            8,
            16,
            32,
            64,
            128,
            256,
            512,
            1024,
            2048,
            4096,
            8192,
            16384,
            i16::MIN,
        );
        let v = _mm256_and_si256(_mm256_set1_epi16(w as i16), bits);
        _mm256_cmpeq_epi16(v, bits)
    }
}

/// Whether predicate `OP`'s mask is computed inverted (then flipped).
const fn inverted(op: u8) -> bool {
    matches!(op, NE | LE | GE | BETWEEN)
}

/// The lane mask of predicate `OP` before inversion, from `eq` and signed
/// `gt` compares.
macro_rules! pred_mask {
    ($name:ident, $eq:ident, $gt:ident) => {
        #[inline(always)]
        unsafe fn $name<const OP: u8>(x: __m256i, a: __m256i, b: __m256i) -> __m256i {
            // SAFETY: AVX2 register ops, enabled by the enclosing leaf.
            unsafe {
                match OP {
                    EQ | NE => $eq(x, a),
                    LT | GE => $gt(a, x),
                    GT | LE => $gt(x, a),
                    _ => _mm256_or_si256($gt(a, x), $gt(x, b)),
                }
            }
        }
    };
}
pred_mask!(mask8, _mm256_cmpeq_epi8, _mm256_cmpgt_epi8);
pred_mask!(mask16, _mm256_cmpeq_epi16, _mm256_cmpgt_epi16);

/// The 32 bytes at `p`, sign bits flipped by `flip`.
#[inline(always)]
unsafe fn ld<T>(p: *const T, flip: __m256i) -> __m256i {
    // SAFETY: the caller passes 32 readable bytes; AVX2 is enabled by the
    // enclosing leaf.
    unsafe { _mm256_xor_si256(_mm256_loadu_si256(p.cast()), flip) }
}

macro_rules! filter_leaf {
    ($name:ident, $t:ty, $flip:expr, |$f:ident, $a:ident, $b:ident, $p:ident| $bits32:expr) => {
        /// Filter leaf: `OP` as [`scalar::filter_code`], `SINK` as
        /// [`scalar::sink`].
        ///
        /// # Safety
        /// The CPU supports AVX2; `out.len() == v.len().div_ceil(64)`.
        #[target_feature(enable = "avx2,bmi1,bmi2,popcnt,fma")]
        pub(crate) unsafe fn $name<const OP: u8, const SINK: u8>(
            v: &[$t],
            c1: $t,
            c2: $t,
            out: &mut [u64],
            m: RowMask<'_>,
        ) -> usize {
            let full = v.len() / 64;
            // SAFETY: AVX2 is enabled.
            let (flip, $a, $b) = unsafe {
                let flip = $flip;
                (
                    flip,
                    _mm256_xor_si256(splat(c1), flip),
                    _mm256_xor_si256(splat(c2), flip),
                )
            };
            let n = blocks::<SINK, { STEP }, $t>(v, full, out, m, |blk| {
                // SAFETY: `blocks` passes `blk < full`, so the loads read
                // rows inside `v`; AVX2 is enabled.
                unsafe {
                    let base = v.as_ptr().add(blk * 64);
                    let mut w = 0u64;
                    for half in 0..2 {
                        let $p = base.add(32 * half);
                        let $f = flip;
                        let bits: u32 = $bits32;
                        w |= u64::from(bits) << (32 * half);
                    }
                    if inverted(OP) { !w } else { w }
                }
            });
            n + scalar::filter_code::<OP, SINK, $t>(
                &v[full * 64..],
                c1,
                c2,
                tail_out::<SINK>(out, full),
                m.skip(full * 64),
            )
        }
    };
}

#[inline(always)]
unsafe fn splat<T: Splat>(c: T) -> __m256i {
    // SAFETY: AVX register op, enabled by the enclosing leaf.
    unsafe { c.splat() }
}

/// A constant in every lane of its width.
trait Splat: Copy {
    unsafe fn splat(self) -> __m256i;
}
macro_rules! splat_impl {
    ($($t:ty => $set1:ident as $i:ty),*) => {$(
        impl Splat for $t {
            #[inline(always)]
            unsafe fn splat(self) -> __m256i {
                // SAFETY: AVX register op, enabled by the enclosing leaf.
                unsafe { $set1(self as $i) }
            }
        }
    )*};
}
splat_impl!(i8 => _mm256_set1_epi8 as i8, u8 => _mm256_set1_epi8 as i8,
    i16 => _mm256_set1_epi16 as i16, u16 => _mm256_set1_epi16 as i16);

// 8-bit: the 32 rows at `p` are one vector; 16-bit: two (`p`, `p + 16`).
filter_leaf!(filter_i8, i8, _mm256_setzero_si256(), |f, a, b, p| {
    _mm256_movemask_epi8(mask8::<OP>(ld(p, f), a, b)) as u32
});
filter_leaf!(filter_u8, u8, _mm256_set1_epi8(i8::MIN), |f, a, b, p| {
    _mm256_movemask_epi8(mask8::<OP>(ld(p, f), a, b)) as u32
});
filter_leaf!(filter_i16, i16, _mm256_setzero_si256(), |f, a, b, p| {
    pack16(
        mask16::<OP>(ld(p, f), a, b),
        mask16::<OP>(ld(p.add(16), f), a, b),
    )
});
filter_leaf!(
    filter_u16,
    u16,
    _mm256_set1_epi16(i16::MIN),
    |f, a, b, p| {
        pack16(
            mask16::<OP>(ld(p, f), a, b),
            mask16::<OP>(ld(p.add(16), f), a, b),
        )
    }
);

/// Two 16-lane masks (rows 0..16 and 16..32) as 32 bits in row order.
#[inline(always)]
unsafe fn pack16(m0: __m256i, m1: __m256i) -> u32 {
    // SAFETY: AVX2 register ops, enabled by the enclosing leaf.
    unsafe {
        // packs interleaves 128-bit halves: [m0.lo, m1.lo, m0.hi, m1.hi].
        let p = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packs_epi16(m0, m1));
        _mm256_movemask_epi8(p) as u32
    }
}

macro_rules! sum8 {
    ($name:ident, $t:ty, $sum:ty, $signed:expr) => {
        /// Sum of the counted values, exact in 64 bits.
        ///
        /// # Safety
        /// The CPU supports AVX2; `m` covers `v.len()` rows.
        #[target_feature(enable = "avx2,bmi1,bmi2,popcnt,fma")]
        pub(crate) unsafe fn $name(v: &[$t], m: RowMask<'_>) -> $sum {
            let full = v.len() / 64;
            let mut counted: u64 = 0;
            // SAFETY: loads read 32 rows inside block `b < full`; AVX2 is
            // enabled.
            let simd = unsafe {
                let bias = _mm256_set1_epi8(if $signed { i8::MIN } else { 0 });
                let zero = _mm256_setzero_si256();
                let mut acc = [zero; 2];
                for b in 0..full {
                    let w = m.word(b);
                    if w == 0 {
                        continue;
                    }
                    counted += u64::from(w.count_ones());
                    let base = v.as_ptr().add(b * 64);
                    for j in 0..2 {
                        let mut x =
                            _mm256_xor_si256(_mm256_loadu_si256(base.add(32 * j).cast()), bias);
                        if w != !0 {
                            x = _mm256_and_si256(x, bytes32(w >> (32 * j)));
                        }
                        acc[j] = _mm256_add_epi64(acc[j], _mm256_sad_epu8(x, zero));
                    }
                }
                let s = _mm256_add_epi64(acc[0], acc[1]);
                let mut lanes = [0u64; 4];
                _mm256_storeu_si256(lanes.as_mut_ptr().cast(), s);
                lanes.iter().fold(0u64, |a, &b| a.wrapping_add(b))
            };
            let extra = if $signed {
                counted.wrapping_mul(128)
            } else {
                0
            };
            let tail = scalar_agg::sum(&v[full * 64..], m.skip(full * 64));
            (simd.wrapping_sub(extra) as $sum).wrapping_add(tail)
        }
    };
}

sum8!(sum_u8, u8, u64, false);
sum8!(sum_i8, i8, i64, true);

/// Blocks between flushes of the 16-bit sums' 32-bit lanes (one pair sum,
/// |x| <= 2^16, per lane a block). Under Miri, every 2 blocks.
const FLUSH_BLOCKS: usize = if cfg!(miri) { 2 } else { 1 << 14 };

macro_rules! sum16 {
    ($name:ident, $t:ty, $sum:ty, $unsigned:expr) => {
        /// Sum of the counted values, exact in 64 bits.
        ///
        /// # Safety
        /// The CPU supports AVX2; `m` covers `v.len()` rows.
        #[target_feature(enable = "avx2,bmi1,bmi2,popcnt,fma")]
        pub(crate) unsafe fn $name(v: &[$t], m: RowMask<'_>) -> $sum {
            let full = v.len() / 64;
            let mut counted: u64 = 0;
            let mut total: i64 = 0;
            let mut b = 0;
            while b < full {
                let end = full.min(b + FLUSH_BLOCKS);
                // SAFETY: loads read 16 rows inside block `b < full`; AVX2
                // is enabled.
                unsafe {
                    let bias = _mm256_set1_epi16(if $unsigned { i16::MIN } else { 0 });
                    let ones = _mm256_set1_epi16(1);
                    let mut acc = [_mm256_setzero_si256(); 4];
                    while b < end {
                        let w = m.word(b);
                        if w != 0 {
                            counted += u64::from(w.count_ones());
                            let base = v.as_ptr().add(b * 64);
                            for j in 0..4 {
                                let mut x = _mm256_xor_si256(
                                    _mm256_loadu_si256(base.add(16 * j).cast()),
                                    bias,
                                );
                                if w != !0 {
                                    x = _mm256_and_si256(x, words16(w >> (16 * j)));
                                }
                                acc[j] = _mm256_add_epi32(acc[j], _mm256_madd_epi16(x, ones));
                            }
                        }
                        b += 1;
                    }
                    let mut lanes = [0i32; 8];
                    for a in acc {
                        _mm256_storeu_si256(lanes.as_mut_ptr().cast(), a);
                        for &l in &lanes {
                            total = total.wrapping_add(i64::from(l));
                        }
                    }
                }
            }
            let back = if $unsigned {
                counted.wrapping_mul(32768)
            } else {
                0
            };
            let tail = scalar_agg::sum(&v[full * 64..], m.skip(full * 64));
            ((total as u64).wrapping_add(back) as $sum).wrapping_add(tail)
        }
    };
}

sum16!(sum_u16, u16, u64, true);
sum16!(sum_i16, i16, i64, false);

macro_rules! min_max {
    ($name:ident, $t:ty, $lanes:expr, $set1:ident, $mask:ident, $min:ident, $max:ident) => {
        /// `(min, max)` of the counted values, as the scalar twin.
        ///
        /// # Safety
        /// The CPU supports AVX2; `m` covers `v.len()` rows.
        #[target_feature(enable = "avx2,bmi1,bmi2,popcnt,fma")]
        pub(crate) unsafe fn $name<const MODE: u8>(v: &[$t], m: RowMask<'_>) -> ($t, $t) {
            const L: usize = $lanes;
            let full = v.len() / 64;
            // SAFETY: loads read L rows inside block `b < full`; the stores
            // write L lanes into arrays of L; AVX2 is enabled.
            let simd = unsafe {
                let (hi, lo) = ($set1(<$t>::MAX as _), $set1(<$t>::MIN as _));
                let (mut mn, mut mx) = (hi, lo);
                for b in 0..full {
                    let w = m.word(b);
                    if w == 0 {
                        continue;
                    }
                    let base = v.as_ptr().add(b * 64);
                    for j in 0..64 / L {
                        let x = _mm256_loadu_si256(base.add(L * j).cast());
                        if w == !0 {
                            mn = $min(mn, x);
                            mx = $max(mx, x);
                        } else {
                            let k = $mask(w >> (L * j));
                            mn = $min(mn, _mm256_blendv_epi8(hi, x, k));
                            mx = $max(mx, _mm256_blendv_epi8(lo, x, k));
                        }
                    }
                }
                let (mut a, mut b) = ([0 as $t; L], [0 as $t; L]);
                _mm256_storeu_si256(a.as_mut_ptr().cast(), mn);
                _mm256_storeu_si256(b.as_mut_ptr().cast(), mx);
                (
                    a.iter().copied().fold(<$t>::MAX, <$t>::min),
                    b.iter().copied().fold(<$t>::MIN, <$t>::max),
                )
            };
            // MODE only says which half the caller reads; both are cheap.
            let _ = MODE;
            let tail = scalar_agg::min_max::<MODE, $t>(&v[full * 64..], m.skip(full * 64));
            scalar_agg::merge(simd, tail)
        }
    };
}

min_max!(
    min_max_i8,
    i8,
    32,
    _mm256_set1_epi8,
    bytes32,
    _mm256_min_epi8,
    _mm256_max_epi8
);
min_max!(
    min_max_u8,
    u8,
    32,
    _mm256_set1_epi8,
    bytes32,
    _mm256_min_epu8,
    _mm256_max_epu8
);
min_max!(
    min_max_i16,
    i16,
    16,
    _mm256_set1_epi16,
    words16,
    _mm256_min_epi16,
    _mm256_max_epi16
);
min_max!(
    min_max_u16,
    u16,
    16,
    _mm256_set1_epi16,
    words16,
    _mm256_min_epu16,
    _mm256_max_epu16
);
