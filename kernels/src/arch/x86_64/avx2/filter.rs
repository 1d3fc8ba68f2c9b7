//! AVX2 filters: 64 rows per output word; each vector's comparison mask
//! becomes 4 or 8 bits through `movemask`. Integers compare through `eq` and
//! signed `gt` (unsigned types flip the sign bit first); the other operators
//! are those with operands swapped or the bits inverted. Floats use ordered
//! compares (unordered for `!=`), as IEEE and the scalar twin do. Full
//! blocks go eight a step, then one at a time ([`blocks`]); the tail
//! (< 64 rows) runs the scalar twin.

use crate::arch::mask::RowMask;
use crate::arch::scalar::filter::{self as scalar, EQ, GE, GT, LE, LT, NE, sink, tail_out};
use crate::arch::x86_64::{PREFETCH_MIN_BYTES, prefetch_lines};
use core::arch::x86_64::*;

pub(crate) use super::narrow::{filter_i8, filter_i16, filter_u8, filter_u16};

/// Full blocks a step of [`blocks`]' main loop, for every leaf but the
/// 64-bit integer ones.
pub(super) const STEP: usize = 8;

/// Full blocks a step for the 64-bit integer leaves: one. Their block is
/// sixteen `vpcmpgtq`/`vpcmpeqq` already, and eight a step halved their
/// speed from L3 and DRAM on Zen 4 (i64 `lt` at 128 Mi rows 12.5-13.2
/// GB/s against 19.9-27.5 a block a step, at 1 Mi rows 38-49 against
/// 63-66; f64, whose leaf is the same but for its compare, kept its speed
/// at eight: `bench/results/2026-12-04-kernels-avx2-filter-step-zen4.md`).
const STEP_INT64: usize = 1;

/// Passes `word(blk)` for each full block `blk in 0..full`, in order, to
/// sink `SINK`; returns the sinks' count. `STEP` blocks a step (the loop
/// branch and index updates once per 512 rows; a block a step, u8 ran two
/// loads an iteration); the fewer than `STEP` blocks left go one at a time
/// through the same `word`. Each word is sunk before the next is computed:
/// computing all `STEP` first let the compiler hoist all their loads, which
/// for 16-bit columns (32 vectors) spilled past AVX2's 16 registers and ran
/// slower in cache. Every filter leaf (here and in `narrow.rs`) runs its
/// full blocks through this.
///
/// `v` is the column the words are computed from: one of at least
/// `PREFETCH_MIN_BYTES` is prefetched ahead of the loads where
/// `cpu::avx2_prefetch` holds (Intel), a step's lines at a time (the loop
/// is written twice, so a column in cache pays nothing).
#[inline(always)]
pub(super) fn blocks<const SINK: u8, const STEP: usize, T>(
    v: &[T],
    full: usize,
    out: &mut [u64],
    m: RowMask<'_>,
    mut word: impl FnMut(usize) -> u64,
) -> usize {
    let mut n = 0;
    let mut blk = 0;
    let step_bytes = STEP * 64 * core::mem::size_of::<T>();
    if core::mem::size_of_val(v) >= PREFETCH_MIN_BYTES && crate::cpu::avx2_prefetch() {
        let base = v.as_ptr().cast::<u8>();
        while blk + STEP <= full {
            prefetch_lines(
                base.wrapping_add(blk * 64 * core::mem::size_of::<T>()),
                step_bytes,
            );
            for k in 0..STEP {
                n += sink::<SINK>(out, blk + k, word(blk + k), m);
            }
            blk += STEP;
        }
    }
    while blk + STEP <= full {
        for k in 0..STEP {
            n += sink::<SINK>(out, blk + k, word(blk + k), m);
        }
        blk += STEP;
    }
    for blk in blk..full {
        n += sink::<SINK>(out, blk, word(blk), m);
    }
    n
}

#[inline(always)]
unsafe fn mm64(m: __m256i) -> u32 {
    // SAFETY: AVX register op, enabled by the enclosing leaf.
    unsafe { _mm256_movemask_pd(_mm256_castsi256_pd(m)) as u32 }
}
#[inline(always)]
unsafe fn mm32(m: __m256i) -> u32 {
    // SAFETY: AVX register op, enabled by the enclosing leaf.
    unsafe { _mm256_movemask_ps(_mm256_castsi256_ps(m)) as u32 }
}

/// Predicate bits for integer keys: `$eq`/`$gt` compare, `$mm` packs,
/// `$all` is the lane-count mask used to invert.
macro_rules! int_bits {
    ($name:ident, $eq:ident, $gt:ident, $mm:ident, $all:expr) => {
        #[inline(always)]
        unsafe fn $name<const OP: u8>(x: __m256i, a: __m256i, b: __m256i) -> u32 {
            // SAFETY: AVX2 register ops, enabled by the enclosing leaf.
            unsafe {
                match OP {
                    EQ => $mm($eq(x, a)),
                    NE => $mm($eq(x, a)) ^ $all,
                    LT => $mm($gt(a, x)),
                    LE => $mm($gt(x, a)) ^ $all,
                    GT => $mm($gt(x, a)),
                    GE => $mm($gt(a, x)) ^ $all,
                    _ => $mm(_mm256_or_si256($gt(a, x), $gt(x, b))) ^ $all,
                }
            }
        }
    };
}
int_bits!(bits64, _mm256_cmpeq_epi64, _mm256_cmpgt_epi64, mm64, 0xF);
int_bits!(bits32, _mm256_cmpeq_epi32, _mm256_cmpgt_epi32, mm32, 0xFF);

macro_rules! float_bits {
    ($name:ident, $v:ty, $cmp:ident, $and:ident, $mm:ident) => {
        #[inline(always)]
        unsafe fn $name<const OP: u8>(x: $v, a: $v, b: $v) -> u32 {
            // SAFETY: AVX register ops, enabled by the enclosing leaf.
            unsafe {
                (match OP {
                    EQ => $mm($cmp::<_CMP_EQ_OQ>(x, a)),
                    NE => $mm($cmp::<_CMP_NEQ_UQ>(x, a)),
                    LT => $mm($cmp::<_CMP_LT_OQ>(x, a)),
                    LE => $mm($cmp::<_CMP_LE_OQ>(x, a)),
                    GT => $mm($cmp::<_CMP_GT_OQ>(x, a)),
                    GE => $mm($cmp::<_CMP_GE_OQ>(x, a)),
                    _ => $mm($and($cmp::<_CMP_GE_OQ>(x, a), $cmp::<_CMP_LE_OQ>(x, b))),
                }) as u32
            }
        }
    };
}
float_bits!(
    bitsf64,
    __m256d,
    _mm256_cmp_pd,
    _mm256_and_pd,
    _mm256_movemask_pd
);
float_bits!(
    bitsf32,
    __m256,
    _mm256_cmp_ps,
    _mm256_and_ps,
    _mm256_movemask_ps
);

macro_rules! filter_leaf {
    ($name:ident, $t:ty, $lanes:expr, $step:expr, $bits:ident, |$c:ident| $splat:expr, |$p:ident| $load:expr) => {
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
            const L: usize = $lanes;
            let full = v.len() / 64;
            let a = {
                let $c = c1;
                $splat
            };
            let b = {
                let $c = c2;
                $splat
            };
            let n = blocks::<SINK, { $step }, $t>(v, full, out, m, |blk| {
                // SAFETY: `blocks` passes `blk < full`, so the loads read L
                // rows inside `v`; AVX2 is enabled.
                unsafe {
                    let base = v.as_ptr().add(blk * 64);
                    let mut w = 0u64;
                    for j in 0..64 / L {
                        let $p = base.add(L * j);
                        w |= ($bits::<OP>($load, a, b) as u64) << (L * j);
                    }
                    w
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

filter_leaf!(
    filter_i64,
    i64,
    4,
    STEP_INT64,
    bits64,
    |c| _mm256_set1_epi64x(c),
    |p| _mm256_loadu_si256(p.cast())
);
filter_leaf!(
    filter_u64,
    u64,
    4,
    STEP_INT64,
    bits64,
    |c| _mm256_set1_epi64x((c ^ (1 << 63)) as i64),
    |p| _mm256_xor_si256(_mm256_loadu_si256(p.cast()), _mm256_set1_epi64x(i64::MIN))
);
filter_leaf!(
    filter_i32,
    i32,
    8,
    STEP,
    bits32,
    |c| _mm256_set1_epi32(c),
    |p| _mm256_loadu_si256(p.cast())
);
filter_leaf!(
    filter_u32,
    u32,
    8,
    STEP,
    bits32,
    |c| _mm256_set1_epi32((c ^ (1 << 31)) as i32),
    |p| _mm256_xor_si256(_mm256_loadu_si256(p.cast()), _mm256_set1_epi32(i32::MIN))
);
filter_leaf!(
    filter_f64,
    f64,
    4,
    STEP,
    bitsf64,
    |c| _mm256_set1_pd(c),
    |p| _mm256_loadu_pd(p)
);
filter_leaf!(
    filter_f32,
    f32,
    8,
    STEP,
    bitsf32,
    |c| _mm256_set1_ps(c),
    |p| _mm256_loadu_ps(p)
);
