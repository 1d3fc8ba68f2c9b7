//! NEON aggregates. Rows go in blocks of 64 (one validity word); a full
//! block with no nulls takes an unmasked path, other blocks mask lanes by
//! testing validity bits against per-lane bit constants (`vtst`). The tail
//! (< 64 rows) runs the scalar twin with the same lane assignment, so results
//! equal it bit for bit.

use crate::arch::mask::RowMask;
use crate::arch::num::Num;
use crate::arch::scalar::agg as scalar;
use core::arch::aarch64::*;

pub(crate) use super::narrow::{
    min_max_i8, min_max_i16, min_max_u8, min_max_u16, sum_i8, sum_i16, sum_u8, sum_u16,
};

/// Validity bits `w & 0x3` as a 2 x 64-bit lane mask (all ones = valid).
#[inline(always)]
unsafe fn mask2(w: u64) -> uint64x2_t {
    const BITS: [u64; 2] = [1, 2];
    // SAFETY: the load reads the 2 lanes of `BITS`; NEON is enabled by the
    // enclosing leaf.
    unsafe { vtstq_u64(vdupq_n_u64(w), vld1q_u64(BITS.as_ptr())) }
}

/// Validity bits `w & 0xF` as a 4 x 32-bit lane mask.
#[inline(always)]
unsafe fn mask4(w: u64) -> uint32x4_t {
    const BITS: [u32; 4] = [1, 2, 4, 8];
    // SAFETY: the load reads the 4 lanes of `BITS`; NEON is enabled by the
    // enclosing leaf.
    unsafe { vtstq_u32(vdupq_n_u32(w as u32), vld1q_u32(BITS.as_ptr())) }
}

/// 64-bit integer sums: 4 accumulators of 2 lanes, wrapping (order cannot
/// change a wrapping sum).
macro_rules! sum64 {
    ($name:ident, $t:ty) => {
        /// Wrapping sum of the valid values.
        ///
        /// # Safety
        /// The CPU supports NEON; `m` covers `v.len()` rows.
        #[target_feature(enable = "neon")]
        pub(crate) unsafe fn $name(v: &[$t], m: RowMask<'_>) -> $t {
            let full = v.len() / 64;
            // SAFETY: every load reads 2 rows inside block `b < full`, so
            // inside `v`; NEON is enabled on this leaf.
            let simd = unsafe {
                let mut acc = [vdupq_n_u64(0); 4];
                let mut b = 0;
                while b < full {
                    // Runs without nulls in their own loop keep the
                    // accumulators in registers (as in `float_sum!`).
                    while b < full && m.word(b) == !0 {
                        let base = v.as_ptr().add(b * 64).cast::<u64>();
                        for j in 0..32 {
                            let x = vld1q_u64(base.add(2 * j));
                            acc[j % 4] = vaddq_u64(acc[j % 4], x);
                        }
                        b += 1;
                    }
                    if b == full {
                        break;
                    }
                    let w = m.word(b);
                    if w != 0 {
                        let base = v.as_ptr().add(b * 64).cast::<u64>();
                        for j in 0..32 {
                            let x = vandq_u64(vld1q_u64(base.add(2 * j)), mask2(w >> (2 * j)));
                            acc[j % 4] = vaddq_u64(acc[j % 4], x);
                        }
                    }
                    b += 1;
                }
                let s = vaddq_u64(vaddq_u64(acc[0], acc[1]), vaddq_u64(acc[2], acc[3]));
                vaddvq_u64(s) as $t
            };
            let tail_val = m.skip(full * 64);
            simd.wrapping_add(scalar::sum(&v[full * 64..], tail_val))
        }
    };
}

sum64!(sum_i64, i64);
sum64!(sum_u64, u64);

/// 32-bit sums widen pairwise into 64-bit lanes as they add
/// (`vpadalq_{s,u}32`: one instruction per 4 rows), exact in 64 bits and
/// wrapping past them as the scalar twin does.
macro_rules! sum32 {
    ($name:ident, $t:ty, $sum:ty, $v32:ty, $v64:ty, $ld:ident, $dup64:ident, $padal:ident,
     $and:ident, $re:ident, $addv:ident) => {
        /// Sum of the valid values, exact in 64 bits (wrapping past them).
        ///
        /// # Safety
        /// The CPU supports NEON; `m` covers `v.len()` rows.
        #[target_feature(enable = "neon")]
        pub(crate) unsafe fn $name(v: &[$t], m: RowMask<'_>) -> $sum {
            let full = v.len() / 64;
            // SAFETY: every load reads 4 rows inside block `b < full`, so
            // inside `v`; NEON is enabled on this leaf.
            let simd = unsafe {
                let mut acc: [$v64; 4] = [$dup64(0); 4];
                for b in 0..full {
                    let w = m.word(b);
                    let base = v.as_ptr().add(b * 64);
                    if w == !0 {
                        for j in 0..16 {
                            let x: $v32 = $ld(base.add(4 * j));
                            acc[j % 4] = $padal(acc[j % 4], x);
                        }
                    } else if w != 0 {
                        for j in 0..16 {
                            let x: $v32 = $and($ld(base.add(4 * j)), $re(mask4(w >> (4 * j))));
                            acc[j % 4] = $padal(acc[j % 4], x);
                        }
                    }
                }
                let mut s: $sum = 0;
                for a in acc {
                    s = s.wrapping_add($addv(a));
                }
                s
            };
            let tail_val = m.skip(full * 64);
            simd.wrapping_add(scalar::sum(&v[full * 64..], tail_val))
        }
    };
}

#[inline(always)]
fn same_u32(x: uint32x4_t) -> uint32x4_t {
    x
}

sum32!(
    sum_i32,
    i32,
    i64,
    int32x4_t,
    int64x2_t,
    vld1q_s32,
    vdupq_n_s64,
    vpadalq_s32,
    vandq_s32,
    vreinterpretq_s32_u32,
    vaddvq_s64
);
sum32!(
    sum_u32,
    u32,
    u64,
    uint32x4_t,
    uint64x2_t,
    vld1q_u32,
    vdupq_n_u64,
    vpadalq_u32,
    vandq_u32,
    same_u32,
    vaddvq_u64
);

/// Float sums in the documented order: 16 registers of `LANES` lanes hold
/// one run's lanes (`16 * LANES`: 32 for f64, 64 for f32), the first run then
/// the second (`scalar::agg::sum_split`); vector `j` of a block goes to
/// register `j % 16`, which is lane `row % (16 * LANES)` of its run. Null
/// lanes add `-0.0`, the exact additive identity.
macro_rules! float_sum {
    ($name:ident, $t:ty, $u:ty, $lanes:expr, $dup:ident, $ld:ident, $add:ident, $bsl:ident,
     $st:ident, $mask:ident) => {
        /// Sum of the valid values in the documented order.
        ///
        /// # Safety
        /// The CPU supports NEON; `m` covers `v.len()` rows.
        #[target_feature(enable = "neon")]
        pub(crate) unsafe fn $name(v: &[$t], m: RowMask<'_>) -> $t {
            const L: usize = $lanes;
            const PER_BLOCK: usize = 64 / L;
            let full = v.len() / 64;
            let split = scalar::sum_split(v.len()) / 64;
            let mut lanes = [<$t as Num>::SUM_ZERO; scalar::MAX_SUM_LANES];
            // SAFETY: loads read L rows inside block `b < full`; the stores
            // write 2 * 16 * L <= MAX_SUM_LANES lanes into `lanes`; NEON is
            // enabled.
            unsafe {
                let neg0 = $dup(-0.0);
                for (run, end) in [split, full].into_iter().enumerate() {
                    let mut acc = [neg0; 16];
                    let mut b = if run == 0 { 0 } else { split };
                    while b < end {
                        // A run of blocks without nulls is its own loop, so
                        // the 16 accumulators stay in registers there (one
                        // loop with both paths spilled some to the stack).
                        while b < end && m.word(b) == !0 {
                            let base = v.as_ptr().add(b * 64);
                            for j in 0..PER_BLOCK {
                                let x = $ld(base.add(L * j));
                                acc[j % 16] = $add(acc[j % 16], x);
                            }
                            b += 1;
                        }
                        if b == end {
                            break;
                        }
                        let w = m.word(b);
                        if w != 0 {
                            let base = v.as_ptr().add(b * 64);
                            for j in 0..PER_BLOCK {
                                let x = $ld(base.add(L * j));
                                let m = $mask(w >> (L * j));
                                acc[j % 16] = $add(acc[j % 16], $bsl(m, x, neg0));
                            }
                        }
                        b += 1;
                    }
                    for (r, a) in acc.iter().enumerate() {
                        $st(lanes.as_mut_ptr().add((16 * run + r) * L), *a);
                    }
                }
            }
            scalar::sum_into_lanes::<$t>(&mut lanes, v, full * 64, m);
            scalar::reduce_lanes::<$t>(&mut lanes)
        }
    };
}

float_sum!(
    sum_f64,
    f64,
    u64,
    2,
    vdupq_n_f64,
    vld1q_f64,
    vaddq_f64,
    vbslq_f64,
    vst1q_f64,
    mask2
);
float_sum!(
    sum_f32,
    f32,
    u32,
    4,
    vdupq_n_f32,
    vld1q_f32,
    vaddq_f32,
    vbslq_f32,
    vst1q_f32,
    mask4
);

// Min/max over order keys: each type maps to signed integer keys whose order
// is the min/max order (identity for signed ints, sign flip for unsigned,
// magnitude flip of negative values for floats, as `total_cmp` does).

#[inline(always)]
unsafe fn min64(a: int64x2_t, b: int64x2_t) -> int64x2_t {
    // SAFETY: NEON register ops, enabled by the enclosing leaf.
    unsafe { vbslq_s64(vcgtq_s64(a, b), b, a) }
}
#[inline(always)]
unsafe fn max64(a: int64x2_t, b: int64x2_t) -> int64x2_t {
    // SAFETY: NEON register ops, enabled by the enclosing leaf.
    unsafe { vbslq_s64(vcgtq_s64(b, a), b, a) }
}
#[inline(always)]
unsafe fn key_i64(p: *const i64) -> int64x2_t {
    // SAFETY: the caller passes 2 readable rows; NEON is enabled by the
    // enclosing leaf.
    unsafe { vld1q_s64(p) }
}
#[inline(always)]
unsafe fn key_u64(p: *const u64) -> int64x2_t {
    // SAFETY: as `key_i64`.
    unsafe { vreinterpretq_s64_u64(veorq_u64(vld1q_u64(p), vdupq_n_u64(1 << 63))) }
}
#[inline(always)]
unsafe fn key_f64(p: *const f64) -> int64x2_t {
    // SAFETY: as `key_i64`. A negative value (sign bit set) xors its
    // magnitude bits with all ones: the shift spreads the sign bit, the and
    // keeps the magnitude part.
    unsafe {
        let x = vld1q_s64(p.cast());
        let flip = vandq_s64(vshrq_n_s64::<63>(x), vdupq_n_s64(i64::MAX));
        veorq_s64(x, flip)
    }
}
#[inline(always)]
unsafe fn key_i32(p: *const i32) -> int32x4_t {
    // SAFETY: the caller passes 4 readable rows; NEON is enabled by the
    // enclosing leaf.
    unsafe { vld1q_s32(p) }
}
#[inline(always)]
unsafe fn key_u32(p: *const u32) -> int32x4_t {
    // SAFETY: as `key_i32`.
    unsafe { vreinterpretq_s32_u32(veorq_u32(vld1q_u32(p), vdupq_n_u32(1 << 31))) }
}
#[inline(always)]
unsafe fn key_f32(p: *const f32) -> int32x4_t {
    // SAFETY: as `key_i32`; the magnitude flip of `key_f64` in 32 bits.
    unsafe {
        let x = vld1q_s32(p.cast());
        let flip = vandq_s32(vshrq_n_s32::<31>(x), vdupq_n_s32(i32::MAX));
        veorq_s32(x, flip)
    }
}

macro_rules! min_max {
    ($name:ident, $t:tt, $k:ty, $lanes:expr, $key:ident, $mask:ident, $re:ident, $bsl:ident,
     $min:ident, $max:ident, $dup:ident, $st:ident) => {
        /// `(min, max)` of the valid values, as the scalar twin.
        ///
        /// # Safety
        /// The CPU supports NEON; `m` covers `v.len()` rows.
        #[target_feature(enable = "neon")]
        pub(crate) unsafe fn $name<const MODE: u8>(v: &[$t], m: RowMask<'_>) -> ($t, $t) {
            const L: usize = $lanes;
            let full = v.len() / 64;
            // SAFETY: key loads read L rows inside block `b < full`; the
            // stores write L lanes into arrays of L; NEON is enabled.
            let simd = unsafe {
                let hi = $dup(<$k>::MAX);
                let lo = $dup(<$k>::MIN);
                let (mut mn0, mut mn1, mut mx0, mut mx1) = (hi, hi, lo, lo);
                for b in 0..full {
                    let w = m.word(b);
                    let base = v.as_ptr().add(b * 64);
                    if w == !0 {
                        for j in (0..64 / L).step_by(2) {
                            let x0 = $key(base.add(L * j));
                            let x1 = $key(base.add(L * j + L));
                            if MODE & 1 != 0 {
                                mn0 = $min(mn0, x0);
                                mn1 = $min(mn1, x1);
                            }
                            if MODE & 2 != 0 {
                                mx0 = $max(mx0, x0);
                                mx1 = $max(mx1, x1);
                            }
                        }
                    } else if w != 0 {
                        for j in (0..64 / L).step_by(2) {
                            let x0 = $key(base.add(L * j));
                            let x1 = $key(base.add(L * j + L));
                            let m0 = $re($mask(w >> (L * j)));
                            let m1 = $re($mask(w >> (L * j + L)));
                            if MODE & 1 != 0 {
                                mn0 = $min(mn0, $bsl(m0, x0, hi));
                                mn1 = $min(mn1, $bsl(m1, x1, hi));
                            }
                            if MODE & 2 != 0 {
                                mx0 = $max(mx0, $bsl(m0, x0, lo));
                                mx1 = $max(mx1, $bsl(m1, x1, lo));
                            }
                        }
                    }
                }
                let (a, b) = ($min(mn0, mn1), $max(mx0, mx1));
                let (mut ka, mut kb) = ([0 as $k; L], [0 as $k; L]);
                $st(ka.as_mut_ptr(), a);
                $st(kb.as_mut_ptr(), b);
                let kmin = ka.iter().copied().fold(<$k>::MAX, <$k>::min);
                let kmax = kb.iter().copied().fold(<$k>::MIN, <$k>::max);
                (unkey!($t, kmin), unkey!($t, kmax))
            };
            let tail_val = m.skip(full * 64);
            let tail = scalar::min_max::<MODE, $t>(&v[full * 64..], tail_val);
            scalar::merge(simd, tail)
        }
    };
}

#[inline(always)]
fn mask_u64(m: uint64x2_t) -> uint64x2_t {
    m
}
#[inline(always)]
fn mask_u32(m: uint32x4_t) -> uint32x4_t {
    m
}

min_max!(
    min_max_i64,
    i64,
    i64,
    2,
    key_i64,
    mask2,
    mask_u64,
    vbslq_s64,
    min64,
    max64,
    vdupq_n_s64,
    vst1q_s64
);
min_max!(
    min_max_u64,
    u64,
    i64,
    2,
    key_u64,
    mask2,
    mask_u64,
    vbslq_s64,
    min64,
    max64,
    vdupq_n_s64,
    vst1q_s64
);
min_max!(
    min_max_f64,
    f64,
    i64,
    2,
    key_f64,
    mask2,
    mask_u64,
    vbslq_s64,
    min64,
    max64,
    vdupq_n_s64,
    vst1q_s64
);
min_max!(
    min_max_i32,
    i32,
    i32,
    4,
    key_i32,
    mask4,
    mask_u32,
    vbslq_s32,
    vminq_s32,
    vmaxq_s32,
    vdupq_n_s32,
    vst1q_s32
);
min_max!(
    min_max_u32,
    u32,
    i32,
    4,
    key_u32,
    mask4,
    mask_u32,
    vbslq_s32,
    vminq_s32,
    vmaxq_s32,
    vdupq_n_s32,
    vst1q_s32
);
min_max!(
    min_max_f32,
    f32,
    i32,
    4,
    key_f32,
    mask4,
    mask_u32,
    vbslq_s32,
    vminq_s32,
    vmaxq_s32,
    vdupq_n_s32,
    vst1q_s32
);
