//! NEON filters: 64 rows per output word. Each vector's compare gives a lane
//! mask; the masks of 16 rows narrow to 16 bytes with `uzp1` (keeping the
//! low half of each lane, all ones or zero), and four such byte masks become
//! the 64-bit word by weighting each byte with its bit and adding pairwise
//! (`addp`). NEON compares signed, unsigned and float lanes directly, so no
//! key mapping is needed; floats use ordered compares, and `!=` is the
//! inverse of `==` (true for `NaN`), as IEEE and the scalar twin say. The
//! tail (< 64 rows) runs the scalar twin.

use crate::arch::mask::RowMask;
use crate::arch::scalar::filter::{self as scalar, EQ, GE, GT, LE, LT, NE, sink, tail_out};
use core::arch::aarch64::*;

/// The 64 byte masks `b0..b3` (bytes 0..64 = rows 0..64, each all ones or
/// zero) as one bit per row.
#[inline(always)]
unsafe fn movemask64(b: [uint8x16_t; 4]) -> u64 {
    const W: [u8; 16] = [1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128];
    // SAFETY: the load reads the 16 bytes of `W`; NEON register ops, enabled
    // by the enclosing leaf.
    unsafe {
        let w = vld1q_u8(W.as_ptr());
        let s0 = vpaddq_u8(vandq_u8(b[0], w), vandq_u8(b[1], w));
        let s1 = vpaddq_u8(vandq_u8(b[2], w), vandq_u8(b[3], w));
        let s = vpaddq_u8(s0, s1);
        let s = vpaddq_u8(s, s);
        vgetq_lane_u64::<0>(vreinterpretq_u64_u8(s))
    }
}

/// Eight 2-lane masks (16 rows) narrowed to 16 byte masks, rows in order.
#[inline(always)]
unsafe fn narrow64(m: [uint64x2_t; 8]) -> uint8x16_t {
    // SAFETY: NEON register ops, enabled by the enclosing leaf.
    unsafe {
        let h = |a: uint64x2_t, b: uint64x2_t| {
            vuzp1q_u32(vreinterpretq_u32_u64(a), vreinterpretq_u32_u64(b))
        };
        let (a0, a1, a2, a3) = (h(m[0], m[1]), h(m[2], m[3]), h(m[4], m[5]), h(m[6], m[7]));
        narrow32([a0, a1, a2, a3])
    }
}

/// Four 4-lane masks (16 rows) narrowed to 16 byte masks, rows in order.
#[inline(always)]
unsafe fn narrow32(m: [uint32x4_t; 4]) -> uint8x16_t {
    // SAFETY: NEON register ops, enabled by the enclosing leaf.
    unsafe {
        let b0 = vuzp1q_u16(vreinterpretq_u16_u32(m[0]), vreinterpretq_u16_u32(m[1]));
        let b1 = vuzp1q_u16(vreinterpretq_u16_u32(m[2]), vreinterpretq_u16_u32(m[3]));
        vuzp1q_u8(vreinterpretq_u8_u16(b0), vreinterpretq_u8_u16(b1))
    }
}

/// Lane mask of `OP` (as [`scalar::filter_code`]; `!=` computes `==` here
/// and the leaf inverts the word).
macro_rules! cmp {
    ($name:ident, $v:ty, $m:ty, $eq:ident, $lt:ident, $le:ident, $gt:ident, $ge:ident,
     $and:ident) => {
        #[inline(always)]
        unsafe fn $name<const OP: u8>(x: $v, a: $v, b: $v) -> $m {
            // SAFETY: NEON register ops, enabled by the enclosing leaf.
            unsafe {
                match OP {
                    EQ | NE => $eq(x, a),
                    LT => $lt(x, a),
                    LE => $le(x, a),
                    GT => $gt(x, a),
                    GE => $ge(x, a),
                    _ => $and($ge(x, a), $le(x, b)),
                }
            }
        }
    };
}
cmp!(
    cmp_i64, int64x2_t, uint64x2_t, vceqq_s64, vcltq_s64, vcleq_s64, vcgtq_s64, vcgeq_s64,
    vandq_u64
);
cmp!(
    cmp_u64, uint64x2_t, uint64x2_t, vceqq_u64, vcltq_u64, vcleq_u64, vcgtq_u64, vcgeq_u64,
    vandq_u64
);
cmp!(
    cmp_f64,
    float64x2_t,
    uint64x2_t,
    vceqq_f64,
    vcltq_f64,
    vcleq_f64,
    vcgtq_f64,
    vcgeq_f64,
    vandq_u64
);
cmp!(
    cmp_i32, int32x4_t, uint32x4_t, vceqq_s32, vcltq_s32, vcleq_s32, vcgtq_s32, vcgeq_s32,
    vandq_u32
);
cmp!(
    cmp_u32, uint32x4_t, uint32x4_t, vceqq_u32, vcltq_u32, vcleq_u32, vcgtq_u32, vcgeq_u32,
    vandq_u32
);
cmp!(
    cmp_f32,
    float32x4_t,
    uint32x4_t,
    vceqq_f32,
    vcltq_f32,
    vcleq_f32,
    vcgtq_f32,
    vcgeq_f32,
    vandq_u32
);

macro_rules! filter_leaf {
    ($name:ident, $t:ty, $lanes:expr, $cmp:ident, $dup:ident, $ld:ident, $narrow:ident) => {
        /// Filter leaf: `OP` as [`scalar::filter_code`], `SINK` as
        /// [`scalar::sink`].
        ///
        /// # Safety
        /// The CPU supports NEON; `out.len() == v.len().div_ceil(64)`.
        #[target_feature(enable = "neon")]
        pub(crate) unsafe fn $name<const OP: u8, const SINK: u8>(
            v: &[$t],
            c1: $t,
            c2: $t,
            out: &mut [u64],
            m: RowMask<'_>,
        ) -> usize {
            const L: usize = $lanes;
            const PER16: usize = 16 / L;
            let full = v.len() / 64;
            let mut n = 0;
            // SAFETY: loads read L rows inside block `blk < full`; out has a
            // word per block (caller contract); NEON is enabled.
            unsafe {
                let (a, b) = ($dup(c1), $dup(c2));
                for blk in 0..full {
                    let base = v.as_ptr().add(blk * 64);
                    let mut bytes = [vdupq_n_u8(0); 4];
                    for (g, by) in bytes.iter_mut().enumerate() {
                        let p = base.add(16 * g);
                        let mut m = [$cmp::<OP>($ld(p), a, b); PER16];
                        for (k, mk) in m.iter_mut().enumerate().skip(1) {
                            *mk = $cmp::<OP>($ld(p.add(L * k)), a, b);
                        }
                        *by = $narrow(m);
                    }
                    let mut w = movemask64(bytes);
                    if OP == NE {
                        w = !w;
                    }
                    n += sink::<SINK>(out, blk, w, m);
                }
            }
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

filter_leaf!(
    filter_i64,
    i64,
    2,
    cmp_i64,
    vdupq_n_s64,
    vld1q_s64,
    narrow64
);
filter_leaf!(
    filter_u64,
    u64,
    2,
    cmp_u64,
    vdupq_n_u64,
    vld1q_u64,
    narrow64
);
filter_leaf!(
    filter_f64,
    f64,
    2,
    cmp_f64,
    vdupq_n_f64,
    vld1q_f64,
    narrow64
);
filter_leaf!(
    filter_i32,
    i32,
    4,
    cmp_i32,
    vdupq_n_s32,
    vld1q_s32,
    narrow32
);
filter_leaf!(
    filter_u32,
    u32,
    4,
    cmp_u32,
    vdupq_n_u32,
    vld1q_u32,
    narrow32
);
filter_leaf!(
    filter_f32,
    f32,
    4,
    cmp_f32,
    vdupq_n_f32,
    vld1q_f32,
    narrow32
);

// 8- and 16-bit columns: NEON compares bytes and halfwords directly.
cmp!(
    cmp_i8, int8x16_t, uint8x16_t, vceqq_s8, vcltq_s8, vcleq_s8, vcgtq_s8, vcgeq_s8, vandq_u8
);
cmp!(
    cmp_u8, uint8x16_t, uint8x16_t, vceqq_u8, vcltq_u8, vcleq_u8, vcgtq_u8, vcgeq_u8, vandq_u8
);
cmp!(
    cmp_i16, int16x8_t, uint16x8_t, vceqq_s16, vcltq_s16, vcleq_s16, vcgtq_s16, vcgeq_s16,
    vandq_u16
);
cmp!(
    cmp_u16, uint16x8_t, uint16x8_t, vceqq_u16, vcltq_u16, vcleq_u16, vcgtq_u16, vcgeq_u16,
    vandq_u16
);

/// One 16-lane byte mask: already one byte per row.
#[inline(always)]
unsafe fn narrow8(m: [uint8x16_t; 1]) -> uint8x16_t {
    m[0]
}

/// Two 8-lane halfword masks (16 rows) narrowed to 16 byte masks.
#[inline(always)]
unsafe fn narrow16(m: [uint16x8_t; 2]) -> uint8x16_t {
    // SAFETY: NEON register ops, enabled by the enclosing leaf.
    unsafe { vuzp1q_u8(vreinterpretq_u8_u16(m[0]), vreinterpretq_u8_u16(m[1])) }
}

filter_leaf!(filter_i8, i8, 16, cmp_i8, vdupq_n_s8, vld1q_s8, narrow8);
filter_leaf!(filter_u8, u8, 16, cmp_u8, vdupq_n_u8, vld1q_u8, narrow8);
filter_leaf!(
    filter_i16,
    i16,
    8,
    cmp_i16,
    vdupq_n_s16,
    vld1q_s16,
    narrow16
);
filter_leaf!(
    filter_u16,
    u16,
    8,
    cmp_u16,
    vdupq_n_u16,
    vld1q_u16,
    narrow16
);
