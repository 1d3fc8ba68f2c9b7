//! NEON aggregates of 8- and 16-bit columns. Rows go in blocks of 64 (one
//! mask word); null lanes are zeroed (sums) or take the identity (min, max)
//! through lane masks made by testing the mask word's bits (`vtst`). Sums
//! widen pairwise as they add (`vpaddl` to 16, then 32 bits, `vpadal` into
//! 64), so they are exact in 64 bits. The tail (< 64 rows) runs the scalar
//! twin.

use crate::arch::mask::RowMask;
use crate::arch::scalar::agg as scalar;
use core::arch::aarch64::*;

/// Mask bits `w & 0xFFFF` as 16 byte lanes (all ones = set).
#[inline(always)]
unsafe fn bytes16(w: u64) -> uint8x16_t {
    const BITS: [u8; 16] = [1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128];
    // SAFETY: the load reads the 16 bytes of `BITS`; NEON is enabled by the
    // enclosing leaf.
    unsafe {
        let v = vcombine_u8(vdup_n_u8(w as u8), vdup_n_u8((w >> 8) as u8));
        vtstq_u8(v, vld1q_u8(BITS.as_ptr()))
    }
}

/// Mask bits `w & 0xFF` as 8 halfword lanes.
#[inline(always)]
unsafe fn halves8(w: u64) -> uint16x8_t {
    const BITS: [u16; 8] = [1, 2, 4, 8, 16, 32, 64, 128];
    // SAFETY: as `bytes16`.
    unsafe { vtstq_u16(vdupq_n_u16(w as u16), vld1q_u16(BITS.as_ptr())) }
}

macro_rules! sum_leaf {
    ($name:ident, $t:ty, $sum:ty, $lanes:expr, $ld:ident, |$x:ident, $w:ident| $masked:expr,
     |$a:ident, $y:ident| $widen:expr, $acc0:expr, $addv:ident) => {
        /// Sum of the counted values, exact in 64 bits.
        ///
        /// # Safety
        /// The CPU supports NEON; `m` covers `v.len()` rows.
        #[target_feature(enable = "neon")]
        pub(crate) unsafe fn $name(v: &[$t], m: RowMask<'_>) -> $sum {
            const L: usize = $lanes;
            let full = v.len() / 64;
            // SAFETY: loads read L rows inside block `b < full`; NEON is
            // enabled.
            let simd = unsafe {
                let mut acc = [$acc0; 2];
                for b in 0..full {
                    let w = m.word(b);
                    if w == 0 {
                        continue;
                    }
                    let base = v.as_ptr().add(b * 64);
                    for j in 0..64 / L {
                        let $x = $ld(base.add(L * j));
                        let $y = if w == !0 {
                            $x
                        } else {
                            let $w = w >> (L * j);
                            $masked
                        };
                        let $a = acc[j % 2];
                        acc[j % 2] = $widen;
                    }
                }
                ($addv(acc[0]) as $sum).wrapping_add($addv(acc[1]) as $sum)
            };
            simd.wrapping_add(scalar::sum(&v[full * 64..], m.skip(full * 64)))
        }
    };
}

sum_leaf!(
    sum_u8,
    u8,
    u64,
    16,
    vld1q_u8,
    |x, w| vandq_u8(x, bytes16(w)),
    |a, y| vpadalq_u32(a, vpaddlq_u16(vpaddlq_u8(y))),
    vdupq_n_u64(0),
    vaddvq_u64
);
sum_leaf!(
    sum_i8,
    i8,
    i64,
    16,
    vld1q_s8,
    |x, w| vandq_s8(x, vreinterpretq_s8_u8(bytes16(w))),
    |a, y| vpadalq_s32(a, vpaddlq_s16(vpaddlq_s8(y))),
    vdupq_n_s64(0),
    vaddvq_s64
);
sum_leaf!(
    sum_u16,
    u16,
    u64,
    8,
    vld1q_u16,
    |x, w| vandq_u16(x, halves8(w)),
    |a, y| vpadalq_u32(a, vpaddlq_u16(y)),
    vdupq_n_u64(0),
    vaddvq_u64
);
sum_leaf!(
    sum_i16,
    i16,
    i64,
    8,
    vld1q_s16,
    |x, w| vandq_s16(x, vreinterpretq_s16_u16(halves8(w))),
    |a, y| vpadalq_s32(a, vpaddlq_s16(y)),
    vdupq_n_s64(0),
    vaddvq_s64
);

macro_rules! min_max {
    ($name:ident, $t:ty, $lanes:expr, $ld:ident, $dup:ident, $mask:ident, $re:expr, $bsl:ident,
     $min:ident, $max:ident, $minv:ident, $maxv:ident) => {
        /// `(min, max)` of the counted values, as the scalar twin.
        ///
        /// # Safety
        /// The CPU supports NEON; `m` covers `v.len()` rows.
        #[target_feature(enable = "neon")]
        pub(crate) unsafe fn $name<const MODE: u8>(v: &[$t], m: RowMask<'_>) -> ($t, $t) {
            const L: usize = $lanes;
            let full = v.len() / 64;
            // SAFETY: loads read L rows inside block `b < full`; NEON is
            // enabled.
            let simd = unsafe {
                let (hi, lo) = ($dup(<$t>::MAX), $dup(<$t>::MIN));
                let (mut mn, mut mx) = (hi, lo);
                for b in 0..full {
                    let w = m.word(b);
                    if w == 0 {
                        continue;
                    }
                    let base = v.as_ptr().add(b * 64);
                    for j in 0..64 / L {
                        let x = $ld(base.add(L * j));
                        if w == !0 {
                            mn = $min(mn, x);
                            mx = $max(mx, x);
                        } else {
                            let k = $re($mask(w >> (L * j)));
                            mn = $min(mn, $bsl(k, x, hi));
                            mx = $max(mx, $bsl(k, x, lo));
                        }
                    }
                }
                ($minv(mn), $maxv(mx))
            };
            let tail = scalar::min_max::<MODE, $t>(&v[full * 64..], m.skip(full * 64));
            scalar::merge(simd, tail)
        }
    };
}

#[inline(always)]
fn same_u8(m: uint8x16_t) -> uint8x16_t {
    m
}
#[inline(always)]
fn same_u16(m: uint16x8_t) -> uint16x8_t {
    m
}

min_max!(
    min_max_u8, u8, 16, vld1q_u8, vdupq_n_u8, bytes16, same_u8, vbslq_u8, vminq_u8, vmaxq_u8,
    vminvq_u8, vmaxvq_u8
);
min_max!(
    min_max_i8, i8, 16, vld1q_s8, vdupq_n_s8, bytes16, same_u8, vbslq_s8, vminq_s8, vmaxq_s8,
    vminvq_s8, vmaxvq_s8
);
min_max!(
    min_max_u16,
    u16,
    8,
    vld1q_u16,
    vdupq_n_u16,
    halves8,
    same_u16,
    vbslq_u16,
    vminq_u16,
    vmaxq_u16,
    vminvq_u16,
    vmaxvq_u16
);
min_max!(
    min_max_i16,
    i16,
    8,
    vld1q_s16,
    vdupq_n_s16,
    halves8,
    same_u16,
    vbslq_s16,
    vminq_s16,
    vmaxq_s16,
    vminvq_s16,
    vmaxvq_s16
);
