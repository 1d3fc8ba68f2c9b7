//! AVX-512 aggregates. Rows go in blocks of 64 (one validity word); each
//! vector's slice of the word is its load mask, so nulls, the partial last
//! block and the full path are one code path: masked-off lanes are never
//! read (a masked load does not touch them) and never added.
//! Float sums keep the documented lane assignment (4 registers: lane
//! `row % 32` for f64, `row % 64` for f32), so results equal the scalar twin.

use crate::Element;
use crate::arch::scalar::agg as scalar;
use core::arch::x86_64::*;

/// The mask word for block `b` of a column of `n` rows: validity (or all
/// ones) cut to the rows that exist.
#[inline(always)]
fn block_word(val: Option<&[u64]>, n: usize, b: usize) -> u64 {
    let rows = n - b * 64;
    let lim = if rows >= 64 { !0 } else { (1u64 << rows) - 1 };
    match val {
        Some(v) => v[b] & lim,
        None => lim,
    }
}

macro_rules! int_sum {
    ($name:ident, $t:ty, $sum:ty, |$m:ident, $p:ident| $load:expr) => {
        /// Wrapping sum of the valid values.
        ///
        /// # Safety
        /// The CPU supports AVX-512 (F, BW, DQ, VL); `val`, if any, covers
        /// `v.len()` bits.
        #[target_feature(
            enable = "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,bmi2,popcnt"
        )]
        pub(crate) unsafe fn $name(v: &[$t], val: Option<&[u64]>) -> $sum {
            let n = v.len();
            // SAFETY: each masked load enables only lanes of rows < n, so it
            // reads inside `v`; addresses are formed with wrapping_add and
            // masked-off lanes are not accessed. AVX-512 is enabled.
            unsafe {
                let mut acc = [_mm512_setzero_si512(); 4];
                for b in 0..n.div_ceil(64) {
                    let w = block_word(val, n, b);
                    if w == 0 {
                        continue;
                    }
                    let base = v.as_ptr().wrapping_add(b * 64);
                    for j in 0..8 {
                        let $m = (w >> (8 * j)) as u8;
                        let $p = base.wrapping_add(8 * j);
                        acc[j % 4] = _mm512_add_epi64(acc[j % 4], $load);
                    }
                }
                let s = _mm512_add_epi64(
                    _mm512_add_epi64(acc[0], acc[1]),
                    _mm512_add_epi64(acc[2], acc[3]),
                );
                _mm512_reduce_add_epi64(s) as $sum
            }
        }
    };
}

int_sum!(sum_i64, i64, i64, |m, p| _mm512_maskz_loadu_epi64(
    m,
    p.cast()
));
int_sum!(sum_u64, u64, u64, |m, p| _mm512_maskz_loadu_epi64(
    m,
    p.cast()
));
int_sum!(sum_i32, i32, i64, |m, p| _mm512_cvtepi32_epi64(
    _mm256_maskz_loadu_epi32(m, p.cast())
));
int_sum!(sum_u32, u32, u64, |m, p| _mm512_cvtepu32_epi64(
    _mm256_maskz_loadu_epi32(m, p.cast())
));

macro_rules! float_sum {
    ($name:ident, $t:ty, $lanes:expr, $mt:ty, $set1:ident, $loadz:ident, $madd:ident,
     $store:ident) => {
        /// Sum of the valid values in the documented order.
        ///
        /// # Safety
        /// The CPU supports AVX-512 (F, BW, DQ, VL); `val`, if any, covers
        /// `v.len()` bits.
        #[target_feature(
            enable = "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,bmi2,popcnt"
        )]
        pub(crate) unsafe fn $name(v: &[$t], val: Option<&[u64]>) -> $t {
            const L: usize = $lanes;
            let n = v.len();
            let mut lanes = [<$t as Element>::SUM_ZERO; 64];
            // SAFETY: masked loads enable only rows < n (see int_sum); the
            // stores write 4 * L <= 64 lanes into `lanes`.
            unsafe {
                let mut acc = [$set1(-0.0); 4];
                for b in 0..n.div_ceil(64) {
                    let w = block_word(val, n, b);
                    if w == 0 {
                        continue;
                    }
                    let base = v.as_ptr().wrapping_add(b * 64);
                    for j in 0..64 / L {
                        let m = (w >> (L * j)) as $mt;
                        let x = $loadz(m, base.wrapping_add(L * j));
                        // Masked add: null lanes keep their accumulator.
                        acc[j % 4] = $madd(acc[j % 4], m, acc[j % 4], x);
                    }
                }
                for (r, a) in acc.iter().enumerate() {
                    $store(lanes.as_mut_ptr().add(r * L), *a);
                }
            }
            scalar::reduce_lanes::<$t>(&mut lanes)
        }
    };
}

float_sum!(
    sum_f64,
    f64,
    8,
    u8,
    _mm512_set1_pd,
    _mm512_maskz_loadu_pd,
    _mm512_mask_add_pd,
    _mm512_storeu_pd
);
float_sum!(
    sum_f32,
    f32,
    16,
    u16,
    _mm512_set1_ps,
    _mm512_maskz_loadu_ps,
    _mm512_mask_add_ps,
    _mm512_storeu_ps
);

#[inline(always)]
unsafe fn key_id(x: __m512i) -> __m512i {
    x
}
#[inline(always)]
unsafe fn key_f64(x: __m512i) -> __m512i {
    // SAFETY: AVX-512F register ops, enabled by the enclosing leaf.
    unsafe { _mm512_xor_si512(x, _mm512_srli_epi64::<1>(_mm512_srai_epi64::<63>(x))) }
}
#[inline(always)]
unsafe fn key_f32(x: __m512i) -> __m512i {
    // SAFETY: AVX-512F register ops, enabled by the enclosing leaf.
    unsafe { _mm512_xor_si512(x, _mm512_srli_epi32::<1>(_mm512_srai_epi32::<31>(x))) }
}

macro_rules! min_max {
    ($name:ident, $t:tt, $k:ty, $lanes:expr, $mt:ty, $loadz:ident, $key:ident,
     $mmin:ident, $mmax:ident, $rmin:ident, $rmax:ident, $set1:ident, $lo:expr, $hi:expr,
     |$r:ident| $unkey:expr) => {
        /// `(min, max)` of the valid values, as the scalar twin.
        ///
        /// # Safety
        /// The CPU supports AVX-512 (F, BW, DQ, VL); `val`, if any, covers
        /// `v.len()` bits.
        #[target_feature(
            enable = "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,bmi2,popcnt"
        )]
        pub(crate) unsafe fn $name<const MODE: u8>(v: &[$t], val: Option<&[u64]>) -> ($t, $t) {
            const L: usize = $lanes;
            let n = v.len();
            // SAFETY: masked loads enable only rows < n (see int_sum).
            unsafe {
                // Named accumulators, two of each, two vectors a step, so
                // they stay in registers.
                let (hi, lo) = ($set1($hi), $set1($lo));
                let (mut mn0, mut mn1, mut mx0, mut mx1) = (hi, hi, lo, lo);
                for b in 0..n.div_ceil(64) {
                    let w = block_word(val, n, b);
                    if w == 0 {
                        continue;
                    }
                    let base = v.as_ptr().wrapping_add(b * 64);
                    for j in (0..64 / L).step_by(2) {
                        let m0 = (w >> (L * j)) as $mt;
                        let m1 = (w >> (L * j + L)) as $mt;
                        let x0 = $key($loadz(m0, base.wrapping_add(L * j).cast()));
                        let x1 = $key($loadz(m1, base.wrapping_add(L * j + L).cast()));
                        // Masked min/max: null lanes keep their accumulator.
                        if MODE & 1 != 0 {
                            mn0 = $mmin(mn0, m0, mn0, x0);
                            mn1 = $mmin(mn1, m1, mn1, x1);
                        }
                        if MODE & 2 != 0 {
                            mx0 = $mmax(mx0, m0, mx0, x0);
                            mx1 = $mmax(mx1, m1, mx1, x1);
                        }
                    }
                }
                let kmin: $k = $rmin($mmin(mn0, !0, mn0, mn1)) as $k;
                let kmax: $k = $rmax($mmax(mx0, !0, mx0, mx1)) as $k;
                let unkey = |$r: $k| -> $t { $unkey };
                (unkey(kmin), unkey(kmax))
            }
        }
    };
}

min_max!(
    min_max_i64,
    i64,
    i64,
    8,
    u8,
    _mm512_maskz_loadu_epi64,
    key_id,
    _mm512_mask_min_epi64,
    _mm512_mask_max_epi64,
    _mm512_reduce_min_epi64,
    _mm512_reduce_max_epi64,
    _mm512_set1_epi64,
    i64::MIN,
    i64::MAX,
    |k| k
);
min_max!(
    min_max_u64,
    u64,
    u64,
    8,
    u8,
    _mm512_maskz_loadu_epi64,
    key_id,
    _mm512_mask_min_epu64,
    _mm512_mask_max_epu64,
    _mm512_reduce_min_epu64,
    _mm512_reduce_max_epu64,
    _mm512_set1_epi64,
    0,
    -1,
    |k| k
);
min_max!(
    min_max_f64,
    f64,
    i64,
    8,
    u8,
    _mm512_maskz_loadu_epi64,
    key_f64,
    _mm512_mask_min_epi64,
    _mm512_mask_max_epi64,
    _mm512_reduce_min_epi64,
    _mm512_reduce_max_epi64,
    _mm512_set1_epi64,
    i64::MIN,
    i64::MAX,
    |k| f64::from_bits((k ^ (((k >> 63) as u64) >> 1) as i64) as u64)
);
min_max!(
    min_max_i32,
    i32,
    i32,
    16,
    u16,
    _mm512_maskz_loadu_epi32,
    key_id,
    _mm512_mask_min_epi32,
    _mm512_mask_max_epi32,
    _mm512_reduce_min_epi32,
    _mm512_reduce_max_epi32,
    _mm512_set1_epi32,
    i32::MIN,
    i32::MAX,
    |k| k
);
min_max!(
    min_max_u32,
    u32,
    u32,
    16,
    u16,
    _mm512_maskz_loadu_epi32,
    key_id,
    _mm512_mask_min_epu32,
    _mm512_mask_max_epu32,
    _mm512_reduce_min_epu32,
    _mm512_reduce_max_epu32,
    _mm512_set1_epi32,
    0,
    -1,
    |k| k
);
min_max!(
    min_max_f32,
    f32,
    i32,
    16,
    u16,
    _mm512_maskz_loadu_epi32,
    key_f32,
    _mm512_mask_min_epi32,
    _mm512_mask_max_epi32,
    _mm512_reduce_min_epi32,
    _mm512_reduce_max_epi32,
    _mm512_set1_epi32,
    i32::MIN,
    i32::MAX,
    |k| f32::from_bits((k ^ (((k >> 31) as u32) >> 1) as i32) as u32)
);
