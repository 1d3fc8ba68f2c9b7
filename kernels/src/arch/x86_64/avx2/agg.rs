//! AVX2 aggregates. Rows go in blocks of 64 (one validity word); a full
//! block with no nulls takes an unmasked path, other blocks mask lanes by
//! expanding validity bits into lane masks. The tail (< 64 rows) runs the
//! scalar twin with the same lane assignment, so results equal it bit for bit.

use crate::arch::mask::RowMask;
use crate::arch::num::Num;
use crate::arch::scalar::agg as scalar;
use crate::arch::x86_64::{PREFETCH_MIN_BYTES, head_rows, prefetch_lines};
use core::arch::x86_64::*;

pub(crate) use super::narrow::{
    min_max_i8, min_max_i16, min_max_u8, min_max_u16, sum_i8, sum_i16, sum_u8, sum_u16,
};

/// Validity bits `w & 0xF` as a 4 x 64-bit lane mask (all ones = valid).
#[inline(always)]
unsafe fn mask4(w: u64) -> __m256i {
    // SAFETY: plain AVX2 register ops; the enclosing leaf enables AVX2.
    unsafe {
        let bits = _mm256_setr_epi64x(1, 2, 4, 8);
        let v = _mm256_and_si256(_mm256_set1_epi64x(w as i64), bits);
        _mm256_cmpeq_epi64(v, bits)
    }
}

/// Validity bits `w & 0xFF` as an 8 x 32-bit lane mask.
#[inline(always)]
unsafe fn mask8(w: u64) -> __m256i {
    // SAFETY: plain AVX2 register ops; the enclosing leaf enables AVX2.
    unsafe {
        let bits = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
        let v = _mm256_and_si256(_mm256_set1_epi32(w as i32), bits);
        _mm256_cmpeq_epi32(v, bits)
    }
}

/// Integer sums: every source widens 4 rows into 4 x i64 lanes, added with
/// wrapping (order cannot change a wrapping sum).
macro_rules! int_sum {
    ($name:ident, $t:ty, $sum:ty, |$p:ident| $load:expr) => {
        /// Wrapping sum of the valid values.
        ///
        /// # Safety
        /// The CPU supports AVX2; `m` covers `v.len()` rows.
        #[target_feature(enable = "avx2,bmi1,bmi2,popcnt,fma")]
        pub(crate) unsafe fn $name(v: &[$t], m: RowMask<'_>) -> $sum {
            if m.is_all() {
                let head = head_rows(v);
                if head != 0 {
                    // SAFETY: forwarded; the rest starts on a line.
                    let rest = unsafe { $name(&v[head..], m) };
                    return rest.wrapping_add(scalar::sum(&v[..head], m));
                }
            }
            let full = v.len() / 64;
            let mut rows = full * 64;
            // SAFETY: every load reads 4 rows inside block `b < full`, or
            // from `rows` with `rows + 4 <= v.len()`, so inside `v`; AVX2 is
            // enabled on this leaf.
            let simd = unsafe {
                let mut acc = [_mm256_setzero_si256(); 4];
                for b in 0..full {
                    let w = m.word(b);
                    let base = v.as_ptr().add(b * 64);
                    if w == !0 {
                        for j in 0..16 {
                            let $p = base.add(4 * j);
                            acc[j % 4] = _mm256_add_epi64(acc[j % 4], $load);
                        }
                    } else if w != 0 {
                        for j in 0..16 {
                            let $p = base.add(4 * j);
                            let x = _mm256_and_si256($load, mask4(w >> (4 * j)));
                            acc[j % 4] = _mm256_add_epi64(acc[j % 4], x);
                        }
                    }
                }
                if m.is_all() {
                    // Whole vectors of the tail too: a column that starts
                    // off a line (see above) has up to 63 rows past its
                    // last block.
                    while rows + 4 <= v.len() {
                        let $p = v.as_ptr().add(rows);
                        acc[0] = _mm256_add_epi64(acc[0], $load);
                        rows += 4;
                    }
                }
                let s = _mm256_add_epi64(
                    _mm256_add_epi64(acc[0], acc[1]),
                    _mm256_add_epi64(acc[2], acc[3]),
                );
                let mut lanes = [0i64; 4];
                _mm256_storeu_si256(lanes.as_mut_ptr().cast(), s);
                lanes.iter().fold(0i64, |a, &b| a.wrapping_add(b)) as $sum
            };
            simd.wrapping_add(scalar::sum(&v[rows..], m.skip(rows)))
        }
    };
}

int_sum!(sum_i64, i64, i64, |p| _mm256_loadu_si256(p.cast()));
int_sum!(sum_u64, u64, u64, |p| _mm256_loadu_si256(p.cast()));

/// 32-bit sums without widening: each of 32 lanes (4 registers) keeps the
/// wrapping 32-bit sum `w` of its values and the exact sum `h` of their high
/// halves (`x >> 16`). With `l` the sum of the low halves, the lane's exact
/// sum is `h * 2^16 + l`, and `l = w - h * 2^16 (mod 2^32)` is recovered
/// exactly while `l < 2^32`, i.e. for at most 2^16 values per lane; `h`
/// stays in 32 bits for as many. Lanes are flushed every `FLUSH_BLOCKS`
/// blocks (2^15 values per lane). This is three operations per 8 rows where
/// widening to 64-bit lanes takes four and twice the loads, so the 32-bit
/// sums keep up with a plain wrapping 32-bit loop. Under Miri the lanes are
/// flushed every 2 blocks, so that the short columns Miri can run cross
/// several flushes; the bound itself is checked natively by 3 and 4 Mi-row tests.
const FLUSH_BLOCKS: usize = if cfg!(miri) { 2 } else { 1 << 14 };

/// Adds one flush of a 32-bit sum's accumulators up, in 64 bits: each
/// lane's exact sum is its high halves' sum `h` times 2^16 (widened as
/// signed for `i32`) plus its low halves' sum `w - (h << 16) (mod 2^32)`.
#[inline]
#[target_feature(enable = "avx2")]
fn fold_exact<const SIGNED: bool>(w: &[__m256i; 4], h: &[__m256i; 4]) -> u64 {
    let mut wl = [0u32; 32];
    let mut hl = [0u32; 32];
    for k in 0..4 {
        // SAFETY: lanes 8 * k..8 * k + 8 lie inside the 32-lane arrays;
        // AVX2 is enabled.
        unsafe {
            _mm256_storeu_si256(wl.as_mut_ptr().add(8 * k).cast(), w[k]);
            _mm256_storeu_si256(hl.as_mut_ptr().add(8 * k).cast(), h[k]);
        }
    }
    let mut total = 0u64;
    for (&wv, &hv) in wl.iter().zip(&hl) {
        let low = wv.wrapping_sub(hv << 16);
        let high = if SIGNED {
            hv as i32 as i64 as u64
        } else {
            u64::from(hv)
        };
        total = total.wrapping_add((high << 16).wrapping_add(u64::from(low)));
    }
    total
}

/// The 32-bit sums of every row: [`narrow_sum`]'s split over whole 64-row
/// blocks with no mask words from the first 64-byte line on
/// ([`head_rows`]), then over the whole vectors left; the rows before the
/// line and the last ones (under 8) by the scalar twin. For columns under
/// `agg::UNMASKED_32_BELOW_BYTES`. `PREFETCH`: see `cpu::avx2_prefetch`.
macro_rules! narrow_sum_all {
    ($name:ident, $t:ty, $sum:ty, $high:ident, $signed:expr) => {
        /// Exact sum of every value, in 64 bits (wrapping past them).
        ///
        /// # Safety
        /// The CPU supports AVX2.
        #[target_feature(enable = "avx2,bmi1,bmi2,popcnt,fma")]
        pub(crate) unsafe fn $name<const PREFETCH: bool>(v: &[$t]) -> $sum {
            let (head, v) = v.split_at(head_rows(v));
            let mut total: $sum = scalar::sum(head, RowMask::ALL);
            let mut blocks = v.chunks_exact(64);
            loop {
                let mut w = [_mm256_setzero_si256(); 4];
                let mut h = [_mm256_setzero_si256(); 4];
                let mut k = 0;
                for c in blocks.by_ref().take(FLUSH_BLOCKS) {
                    if PREFETCH {
                        prefetch_lines(c.as_ptr().cast(), 64 * core::mem::size_of::<$t>());
                    }
                    for j in 0..8 {
                        // SAFETY: the block holds 64 values, so the 8 from
                        // 8 * j lie inside it; AVX2 is enabled.
                        let x = unsafe { _mm256_loadu_si256(c.as_ptr().add(8 * j).cast()) };
                        w[j % 4] = _mm256_add_epi32(w[j % 4], x);
                        h[j % 4] = _mm256_add_epi32(h[j % 4], $high::<16>(x));
                    }
                    k += 1;
                }
                total = total.wrapping_add(fold_exact::<$signed>(&w, &h) as $sum);
                if k < FLUSH_BLOCKS {
                    break;
                }
            }
            // The rest's whole vectors (up to 7 a lane, exact), then its
            // last rows.
            let mut rest = blocks.remainder().chunks_exact(8);
            let mut w = [_mm256_setzero_si256(); 4];
            let mut h = [_mm256_setzero_si256(); 4];
            for c in &mut rest {
                // SAFETY: the chunk holds 8 values; AVX2 is enabled.
                let x = unsafe { _mm256_loadu_si256(c.as_ptr().cast()) };
                w[0] = _mm256_add_epi32(w[0], x);
                h[0] = _mm256_add_epi32(h[0], $high::<16>(x));
            }
            total
                .wrapping_add(fold_exact::<$signed>(&w, &h) as $sum)
                .wrapping_add(scalar::sum(rest.remainder(), RowMask::ALL))
        }
    };
}

narrow_sum_all!(sum_all_i32, i32, i64, _mm256_srai_epi32, true);
narrow_sum_all!(sum_all_u32, u32, u64, _mm256_srli_epi32, false);

macro_rules! narrow_sum {
    ($name:ident, $all:ident, $t:ty, $sum:ty, $high:ident, $signed:expr) => {
        /// Sum of the valid values, exact in 64 bits (wrapping past them).
        /// With every row counted, under `agg::UNMASKED_32_BELOW_BYTES`,
        /// [`narrow_sum_all`]'s loop.
        ///
        /// # Safety
        /// The CPU supports AVX2; `m` covers `v.len()` rows.
        #[target_feature(enable = "avx2,bmi1,bmi2,popcnt,fma")]
        pub(crate) unsafe fn $name(v: &[$t], m: RowMask<'_>) -> $sum {
            let bytes = core::mem::size_of_val(v);
            if m.is_all() && bytes < crate::agg::UNMASKED_32_BELOW_BYTES {
                let pf = bytes >= PREFETCH_MIN_BYTES && crate::cpu::avx2_prefetch();
                // SAFETY: AVX2 is enabled (caller).
                return unsafe {
                    if pf {
                        $all::<true>(v)
                    } else {
                        $all::<false>(v)
                    }
                };
            }
            let full = v.len() / 64;
            let mut total: $sum = 0;
            let mut b = 0;
            // On Intel, from DRAM, the 256-bit loads alone ran at
            // 0.66-0.70 of arrow's i32 sum at 128 Mi rows, 0.98-1.02 with it
            // (the 64-bit and float sums, already past arrow, gained
            // nothing); on Zen 4 it cost (see `cpu::avx2_prefetch`).
            let prefetch = bytes >= PREFETCH_MIN_BYTES && crate::cpu::avx2_prefetch();
            while b < full {
                let end = full.min(b + FLUSH_BLOCKS);
                // SAFETY: every load reads 8 rows inside block `b < full`,
                // so inside `v`; AVX2 is enabled on this leaf.
                unsafe {
                    let mut w = [_mm256_setzero_si256(); 4];
                    let mut h = [_mm256_setzero_si256(); 4];
                    while b < end {
                        let m = m.word(b);
                        let base = v.as_ptr().add(b * 64);
                        if prefetch {
                            prefetch_lines(base.cast(), 64 * core::mem::size_of::<$t>());
                        }
                        if m == !0 {
                            for j in 0..8 {
                                let x = _mm256_loadu_si256(base.add(8 * j).cast());
                                w[j % 4] = _mm256_add_epi32(w[j % 4], x);
                                h[j % 4] = _mm256_add_epi32(h[j % 4], $high::<16>(x));
                            }
                        } else if m != 0 {
                            for j in 0..8 {
                                let x = _mm256_and_si256(
                                    _mm256_loadu_si256(base.add(8 * j).cast()),
                                    mask8(m >> (8 * j)),
                                );
                                w[j % 4] = _mm256_add_epi32(w[j % 4], x);
                                h[j % 4] = _mm256_add_epi32(h[j % 4], $high::<16>(x));
                            }
                        }
                        b += 1;
                    }
                    total = total.wrapping_add(fold_exact::<$signed>(&w, &h) as $sum);
                }
            }
            let tail_val = m.skip(full * 64);
            total.wrapping_add(scalar::sum(&v[full * 64..], tail_val))
        }
    };
}

narrow_sum!(sum_i32, sum_all_i32, i32, i64, _mm256_srai_epi32, true);
narrow_sum!(sum_u32, sum_all_u32, u32, u64, _mm256_srli_epi32, false);

/// Float sums in the documented order: `8` registers of `LANES` lanes each
/// hold one run's lanes (`8 * LANES`: 32 for f64, 64 for f32), the first run
/// then the second (`scalar::agg::sum_split`); vector `j` of a block goes to
/// register `j % 8`, which is lane `row % (8 * LANES)` of its run. Null lanes
/// add `-0.0`, the exact additive identity.
macro_rules! float_sum {
    ($name:ident, $aligned:ident, $t:ty, $vec:ty, $lanes:expr, $setzero:ident, $set1:ident,
     $load:ident, $add:ident, $blend:ident, $store:ident, $mask:ident, $cast:ident) => {
        /// Sum of the valid values in the documented order.
        ///
        /// # Safety
        /// The CPU supports AVX2; `m` covers `v.len()` rows.
        #[target_feature(enable = "avx2,bmi1,bmi2,popcnt,fma")]
        pub(crate) unsafe fn $name(v: &[$t], m: RowMask<'_>) -> $t {
            const L: usize = $lanes;
            const PER_BLOCK: usize = 64 / L;
            if m.is_all() && v.len() >= ALIGN_FROM_ROWS && v.as_ptr().addr() % 32 != 0 {
                // SAFETY: forwarded.
                return unsafe { $aligned(v) };
            }
            let full = v.len() / 64;
            let split = scalar::sum_split(v.len()) / 64;
            let mut lanes = [<$t as Num>::SUM_ZERO; scalar::MAX_SUM_LANES];
            // SAFETY: loads read L rows inside block `b < full`; the stores
            // write 2 * 8 * L <= MAX_SUM_LANES lanes into `lanes`; AVX2 is
            // enabled.
            unsafe {
                let neg0 = $set1(-0.0);
                for (run, (b0, b1)) in [(0, split), (split, full)].into_iter().enumerate() {
                    let mut acc = [neg0; 8];
                    // With every row counted, two blocks an iteration and no
                    // block word: the same lanes (128 rows is a whole number
                    // of 8 * L), half the loop overhead.
                    let mut from = b0;
                    if m.is_all() {
                        let pairs = (b1 - b0) / 2;
                        for i in 0..pairs {
                            let base = v.as_ptr().add((b0 + 2 * i) * 64);
                            for j in 0..2 * PER_BLOCK {
                                let x = $load(base.add(L * j));
                                acc[j % 8] = $add(acc[j % 8], x);
                            }
                        }
                        from = b0 + 2 * pairs;
                    }
                    for b in from..b1 {
                        let w = m.word(b);
                        let base = v.as_ptr().add(b * 64);
                        if w == !0 {
                            for j in 0..PER_BLOCK {
                                let x = $load(base.add(L * j));
                                acc[j % 8] = $add(acc[j % 8], x);
                            }
                        } else if w != 0 {
                            for j in 0..PER_BLOCK {
                                let x = $load(base.add(L * j));
                                let m = $cast($mask(w >> (L * j)));
                                acc[j % 8] = $add(acc[j % 8], $blend(neg0, x, m));
                            }
                        }
                    }
                    for (r, a) in acc.iter().enumerate() {
                        $store(lanes.as_mut_ptr().add((8 * run + r) * L), *a);
                    }
                }
            }
            scalar::sum_into_lanes::<$t>(&mut lanes, v, full * 64, m);
            scalar::reduce_lanes::<$t>(&mut lanes)
        }

        /// Sum of every value of `v`, which starts off a 32-byte boundary, in
        /// the documented order, with loads on those boundaries (none splits
        /// a line). Each run adds the rows before its first boundary into
        /// their lanes by the scalar twin's rule, walks whole vectors from
        /// there (vector `g` to register `g % 8`, so position `q` of
        /// register `t` keeps lane `(start + t * L + q) mod 8L`, the lanes
        /// loaded into the registers rotated and stored back so), then adds
        /// the rows after the last whole vector. Every lane still takes its
        /// rows in increasing order.
        ///
        /// # Safety
        /// The CPU supports AVX2; `v.len() >= ALIGN_FROM_ROWS`.
        #[target_feature(enable = "avx2,bmi1,bmi2,popcnt,fma")]
        unsafe fn $aligned(v: &[$t]) -> $t {
            const L: usize = $lanes;
            const RUN: usize = 8 * L;
            let n = v.len();
            let h = scalar::sum_split(n);
            // Rows before a boundary, the same at both runs' starts (`h`
            // rows are a whole number of 512 bytes).
            let p = (v.as_ptr().addr().wrapping_neg() % 32) / core::mem::size_of::<$t>();
            let mut lanes = [<$t as Num>::SUM_ZERO; scalar::MAX_SUM_LANES];
            for (run, (lo, hi)) in [(0, h), (h, n)].into_iter().enumerate() {
                let lanes = &mut lanes[run * RUN..(run + 1) * RUN];
                let add_rows = |lanes: &mut [$t], rows: core::ops::Range<usize>| {
                    for i in rows {
                        lanes[i % RUN] += v[i];
                    }
                };
                let start = (lo + p).min(hi);
                add_rows(lanes, lo..start);
                let vecs = (hi - start) / L;
                let rot = start % RUN;
                let mut held = [<$t as Num>::SUM_ZERO; RUN];
                for (k, x) in held.iter_mut().enumerate() {
                    *x = lanes[(rot + k) % RUN];
                }
                // SAFETY: vector `g < vecs` reads rows `start + g * L ..
                // start + g * L + L`, inside `lo..hi`; `held` has 8 * L
                // lanes; AVX2 is enabled.
                unsafe {
                    let base = v.as_ptr().add(start);
                    let mut acc: [$vec; 8] =
                        core::array::from_fn(|t| $load(held.as_ptr().add(t * L)));
                    for g in 0..vecs / 8 {
                        for (j, a) in acc.iter_mut().enumerate() {
                            *a = $add(*a, $load(base.add((8 * g + j) * L)));
                        }
                    }
                    for (j, a) in acc.iter_mut().enumerate() {
                        if j < vecs % 8 {
                            *a = $add(*a, $load(base.add((vecs / 8 * 8 + j) * L)));
                        }
                    }
                    for (t, a) in acc.iter().enumerate() {
                        $store(held.as_mut_ptr().add(t * L), *a);
                    }
                }
                for (k, &x) in held.iter().enumerate() {
                    lanes[(rot + k) % RUN] = x;
                }
                add_rows(lanes, start + vecs * L..hi);
            }
            scalar::reduce_lanes::<$t>(&mut lanes)
        }
    };
}

/// Unmasked float sums of at least this many rows whose column starts off
/// a 32-byte boundary take loads on the boundaries (`sum_f64_aligned`).
const ALIGN_FROM_ROWS: usize = 256;

float_sum!(
    sum_f64,
    sum_f64_aligned,
    f64,
    __m256d,
    4,
    _mm256_setzero_pd,
    _mm256_set1_pd,
    _mm256_loadu_pd,
    _mm256_add_pd,
    _mm256_blendv_pd,
    _mm256_storeu_pd,
    mask4,
    _mm256_castsi256_pd
);
float_sum!(
    sum_f32,
    sum_f32_aligned,
    f32,
    __m256,
    8,
    _mm256_setzero_ps,
    _mm256_set1_ps,
    _mm256_loadu_ps,
    _mm256_add_ps,
    _mm256_blendv_ps,
    _mm256_storeu_ps,
    mask8,
    _mm256_castsi256_ps
);

// Min/max over order keys: each type maps to signed integer keys whose order
// is the min/max order (identity for signed ints, sign flip for unsigned,
// sign-magnitude fix-up for floats, as `total_cmp` does).

#[inline(always)]
unsafe fn min64(a: __m256i, b: __m256i) -> __m256i {
    // SAFETY: AVX2 register ops, enabled by the enclosing leaf.
    unsafe { _mm256_blendv_epi8(a, b, _mm256_cmpgt_epi64(a, b)) }
}
#[inline(always)]
unsafe fn max64(a: __m256i, b: __m256i) -> __m256i {
    // SAFETY: AVX2 register ops, enabled by the enclosing leaf.
    unsafe { _mm256_blendv_epi8(a, b, _mm256_cmpgt_epi64(b, a)) }
}
#[inline(always)]
unsafe fn key_i64(x: __m256i) -> __m256i {
    x
}
#[inline(always)]
unsafe fn key_u64(x: __m256i) -> __m256i {
    // SAFETY: AVX2 register ops, enabled by the enclosing leaf.
    unsafe { _mm256_xor_si256(x, _mm256_set1_epi64x(i64::MIN)) }
}
#[inline(always)]
unsafe fn key_f64(x: __m256i) -> __m256i {
    // SAFETY: AVX2 register ops, enabled by the enclosing leaf.
    // Negative values flip their magnitude bits: an xor and a blend on the
    // sign bit (two operations where a compare, shift and xor took three).
    unsafe {
        let flipped = _mm256_xor_si256(x, _mm256_set1_epi64x(i64::MAX));
        _mm256_castpd_si256(_mm256_blendv_pd(
            _mm256_castsi256_pd(x),
            _mm256_castsi256_pd(flipped),
            _mm256_castsi256_pd(x),
        ))
    }
}
#[inline(always)]
unsafe fn key_i32(x: __m256i) -> __m256i {
    x
}
#[inline(always)]
unsafe fn key_u32(x: __m256i) -> __m256i {
    // SAFETY: AVX2 register ops, enabled by the enclosing leaf.
    unsafe { _mm256_xor_si256(x, _mm256_set1_epi32(i32::MIN)) }
}
#[inline(always)]
unsafe fn key_f32(x: __m256i) -> __m256i {
    // SAFETY: AVX2 register ops, enabled by the enclosing leaf.
    unsafe {
        let flipped = _mm256_xor_si256(x, _mm256_set1_epi32(i32::MAX));
        _mm256_castps_si256(_mm256_blendv_ps(
            _mm256_castsi256_ps(x),
            _mm256_castsi256_ps(flipped),
            _mm256_castsi256_ps(x),
        ))
    }
}

macro_rules! min_max {
    ($name:ident, $t:tt, $k:ty, $lanes:expr, $key:ident, $mask:ident, $min:ident, $max:ident,
     $set1:ident) => {
        /// `(min, max)` of the valid values, as the scalar twin.
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
                let hi = $set1(<$k>::MAX);
                let lo = $set1(<$k>::MIN);
                // Named accumulators, two of each, two vectors a step: kept
                // in registers (an indexed array was kept on the stack).
                let (mut mn0, mut mn1, mut mx0, mut mx1) = (hi, hi, lo, lo);
                // A column of `PREFETCH_MIN_BYTES` or more goes in chunks
                // of 512 bytes, each prefetched ahead first; a smaller one
                // is one chunk, so its inner loop is the loop without the
                // prefetch (a test in it cost i32 min 9% in L1; chunks of
                // eight blocks, bursts of 4 KiB of prefetches for i64, ran
                // slower than none). From DRAM it took i32 min_max from
                // 0.75-0.77 of the read pass to 1.14 at 128 Mi rows on
                // Intel; on Zen 4 it cost (see `cpu::avx2_prefetch`).
                let pf_blocks = (512 / (64 * core::mem::size_of::<$t>())).max(1);
                let prefetch =
                    core::mem::size_of_val(v) >= PREFETCH_MIN_BYTES && crate::cpu::avx2_prefetch();
                let mut first = 0;
                while first < full {
                    let end = if prefetch {
                        prefetch_lines(
                            v.as_ptr().add(first * 64).cast(),
                            pf_blocks * 64 * core::mem::size_of::<$t>(),
                        );
                        full.min(first + pf_blocks)
                    } else {
                        full
                    };
                    for b in first..end {
                        let w = m.word(b);
                        let base = v.as_ptr().add(b * 64);
                        if w == !0 {
                            for j in (0..64 / L).step_by(2) {
                                let x0 = $key(_mm256_loadu_si256(base.add(L * j).cast()));
                                let x1 = $key(_mm256_loadu_si256(base.add(L * j + L).cast()));
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
                                let x0 = $key(_mm256_loadu_si256(base.add(L * j).cast()));
                                let x1 = $key(_mm256_loadu_si256(base.add(L * j + L).cast()));
                                let m0 = $mask(w >> (L * j));
                                let m1 = $mask(w >> (L * j + L));
                                if MODE & 1 != 0 {
                                    mn0 = $min(mn0, _mm256_blendv_epi8(hi, x0, m0));
                                    mn1 = $min(mn1, _mm256_blendv_epi8(hi, x1, m1));
                                }
                                if MODE & 2 != 0 {
                                    mx0 = $max(mx0, _mm256_blendv_epi8(lo, x0, m0));
                                    mx1 = $max(mx1, _mm256_blendv_epi8(lo, x1, m1));
                                }
                            }
                        }
                    }
                    first = end;
                }
                let (a, b) = ($min(mn0, mn1), $max(mx0, mx1));
                let (mut ka, mut kb) = ([0 as $k; L], [0 as $k; L]);
                _mm256_storeu_si256(ka.as_mut_ptr().cast(), a);
                _mm256_storeu_si256(kb.as_mut_ptr().cast(), b);
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

min_max!(
    min_max_i64,
    i64,
    i64,
    4,
    key_i64,
    mask4,
    min64,
    max64,
    _mm256_set1_epi64x
);
min_max!(
    min_max_u64,
    u64,
    i64,
    4,
    key_u64,
    mask4,
    min64,
    max64,
    _mm256_set1_epi64x
);
min_max!(
    min_max_f64,
    f64,
    i64,
    4,
    key_f64,
    mask4,
    min64,
    max64,
    _mm256_set1_epi64x
);
min_max!(
    min_max_i32,
    i32,
    i32,
    8,
    key_i32,
    mask8,
    _mm256_min_epi32,
    _mm256_max_epi32,
    _mm256_set1_epi32
);
min_max!(
    min_max_u32,
    u32,
    i32,
    8,
    key_u32,
    mask8,
    _mm256_min_epi32,
    _mm256_max_epi32,
    _mm256_set1_epi32
);
min_max!(
    min_max_f32,
    f32,
    i32,
    8,
    key_f32,
    mask8,
    _mm256_min_epi32,
    _mm256_max_epi32,
    _mm256_set1_epi32
);
