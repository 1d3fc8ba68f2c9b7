//! AVX-512 aggregates. Rows go in blocks of 64 (one validity word); each
//! vector's slice of the word is its load mask, so nulls and the partial
//! last block are one code path: masked-off lanes are never read (a masked
//! load does not touch them) and never added. Blocks whose 64 rows are all
//! there and valid take plain loads instead (constant all-ones masks, which
//! compile to unmasked instructions): moving a mask into a mask register is
//! one more instruction per vector on the shuffle port.
//! Float sums keep the documented lane assignment (4 registers a run, both
//! runs at once: `scalar::agg::sum_lane`), so results equal the scalar twin.

use crate::arch::mask::RowMask;
use crate::arch::num::Num;
use crate::arch::scalar::agg as scalar;
use crate::arch::x86_64::head_rows;
use core::arch::x86_64::*;

pub(crate) use super::narrow::{
    min_max_i8, min_max_i16, min_max_u8, min_max_u16, sum_i8, sum_i16, sum_u8, sum_u16,
};

/// The mask word for block `b` of a column of `n` rows: validity (or all
/// ones) cut to the rows that exist.
#[inline(always)]
fn block_word(m: RowMask<'_>, n: usize, b: usize) -> u64 {
    let rows = n - b * 64;
    let lim = if rows >= 64 { !0 } else { (1u64 << rows) - 1 };
    m.word(b) & lim
}

macro_rules! int_sum {
    ($name:ident, $t:ty) => {
        /// Wrapping sum of the valid values.
        ///
        /// # Safety
        /// The CPU supports AVX-512 (F, BW, DQ, VL); `m` covers `v.len()`
        /// rows.
        #[target_feature(
            enable = "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,bmi2,popcnt"
        )]
        pub(crate) unsafe fn $name(v: &[$t], m: RowMask<'_>) -> $t {
            let n = v.len();
            // SAFETY: a block whose word is all ones has 64 rows below n, so
            // its plain loads read inside `v`; any other block's masked loads
            // enable only lanes of rows < n, so they read inside `v` too.
            // Addresses are formed with wrapping_add and masked-off lanes are
            // not accessed. AVX-512 is enabled.
            unsafe {
                let mut acc = [_mm512_setzero_si512(); 4];
                for b in 0..n.div_ceil(64) {
                    let w = block_word(m, n, b);
                    let base = v.as_ptr().wrapping_add(b * 64);
                    if w == !0 {
                        // No mask register on the common path: moving one
                        // in costs an instruction on the shuffle port.
                        for j in 0..8 {
                            let x = _mm512_loadu_si512(base.wrapping_add(8 * j).cast());
                            acc[j % 4] = _mm512_add_epi64(acc[j % 4], x);
                        }
                    } else if w != 0 {
                        for j in 0..8 {
                            let m = (w >> (8 * j)) as u8;
                            let x = _mm512_maskz_loadu_epi64(m, base.wrapping_add(8 * j).cast());
                            acc[j % 4] = _mm512_add_epi64(acc[j % 4], x);
                        }
                    }
                }
                let s = _mm512_add_epi64(
                    _mm512_add_epi64(acc[0], acc[1]),
                    _mm512_add_epi64(acc[2], acc[3]),
                );
                _mm512_reduce_add_epi64(s) as $t
            }
        }
    };
}

int_sum!(sum_i64, i64);
int_sum!(sum_u64, u64);

/// Unmasked 64-bit sums for `cpu::wide_sums` CPUs: eight independent
/// 512-bit accumulators over 64-row blocks that start on a 64-byte line, no
/// mask words; the rows before the first line and the partial last block by
/// the masked leaf (integer adds wrap, so any order gives the same sum).
macro_rules! int_sum_all {
    ($name:ident, $t:ty, $masked:ident) => {
        /// Wrapping sum of every value.
        ///
        /// # Safety
        /// The CPU supports AVX-512 (F, BW, DQ, VL).
        #[target_feature(
            enable = "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,bmi2,popcnt"
        )]
        pub(crate) unsafe fn $name(v: &[$t]) -> $t {
            let (head, v) = v.split_at(head_rows(v));
            let mut acc = [_mm512_setzero_si512(); 8];
            let mut blocks = v.chunks_exact(64);
            for c in &mut blocks {
                for (j, a) in acc.iter_mut().enumerate() {
                    // SAFETY: the block holds 64 values, so the 8 values
                    // from 8 * j lie inside it; AVX-512 is enabled.
                    let x = unsafe { _mm512_loadu_si512(c.as_ptr().add(8 * j).cast()) };
                    *a = _mm512_add_epi64(*a, x);
                }
            }
            let s = acc
                .iter()
                .fold(_mm512_setzero_si512(), |s, &a| _mm512_add_epi64(s, a));
            // No call for an empty part: an aligned column has no head.
            let part = |rows: &[$t]| {
                if rows.is_empty() {
                    0
                } else {
                    // SAFETY: AVX-512 is enabled; every row counts.
                    unsafe { $masked(rows, RowMask::ALL) }
                }
            };
            (_mm512_reduce_add_epi64(s) as $t)
                .wrapping_add(part(blocks.remainder()))
                .wrapping_add(part(head))
        }
    };
}

int_sum_all!(sum_all_i64, i64, sum_i64);
int_sum_all!(sum_all_u64, u64, sum_u64);

/// Blocks between flushes of the 32-bit sums. Each of the 4 accumulators
/// takes one vector per block, so a flush that first adds the 4 together
/// has summed `4 * FLUSH_BLOCKS = 2^16` values per lane: the most for which
/// the split below stays exact (see the AVX2 twin). The unmasked loop's 8
/// accumulators take one vector per two blocks and flush as often. Under
/// Miri, every 2 blocks, as there.
const FLUSH_BLOCKS: usize = if cfg!(miri) { 2 } else { 1 << 14 };

/// 32-bit sums, exact in 64 bits: as the AVX2 twin, each lane adds the
/// values with wrapping (`w`) and their high 16-bit halves (`h`); the low
/// halves' sum is `w - h * 2^16`, exact for up to 2^16 values per lane.
/// One load, one shift and two adds per 16 rows, where widening to 64-bit
/// lanes costs a shuffle-port conversion per 8 rows: with the mask moves,
/// that leaf ran at 24 GB/s in L1 on a Sapphire Rapids class core, this one
/// at 77-85.
/// Adds one flush of an exact 32-bit sum's accumulators to the 64-bit
/// `total`: `w` the wrapping sums of the values (needed mod 2^32 only),
/// `h` the sums of their high halves (exact for 2^16 values a lane, which
/// `FLUSH_BLOCKS` bounds), so each lane's sum is `h << 16` plus the low
/// part `w - (h << 16)`, the high part widened as signed for `i32`.
#[inline]
#[target_feature(enable = "avx512f")]
fn fold_exact<const SIGNED: bool>(
    mut total: __m512i,
    w: &[__m512i; 4],
    h: &[__m512i; 4],
) -> __m512i {
    let ws = _mm512_add_epi32(_mm512_add_epi32(w[0], w[1]), _mm512_add_epi32(w[2], w[3]));
    let hs = _mm512_add_epi32(_mm512_add_epi32(h[0], h[1]), _mm512_add_epi32(h[2], h[3]));
    let lo = _mm512_sub_epi32(ws, _mm512_slli_epi32::<16>(hs));
    let halves = [
        (_mm512_castsi512_si256(hs), _mm512_castsi512_si256(lo)),
        (
            _mm512_extracti64x4_epi64::<1>(hs),
            _mm512_extracti64x4_epi64::<1>(lo),
        ),
    ];
    for (hh, ll) in halves {
        let hi = if SIGNED {
            _mm512_cvtepi32_epi64(hh)
        } else {
            _mm512_cvtepu32_epi64(hh)
        };
        total = _mm512_add_epi64(total, _mm512_slli_epi64::<16>(hi));
        total = _mm512_add_epi64(total, _mm512_cvtepu32_epi64(ll));
    }
    total
}

macro_rules! narrow_sum {
    ($name:ident, $all:ident, $t:ty, $sum:ty, $high:ident, $signed:expr) => {
        /// Sum of the valid values, exact in 64 bits (wrapping past them).
        /// With every row counted, two blocks or more (the unmasked loop's
        /// step) and under `agg::UNMASKED_32_BELOW_BYTES`, the unmasked loop
        /// (`sum_all_*`), which leaves its last rows under a step here.
        ///
        /// # Safety
        /// The CPU supports AVX-512 (F, BW, DQ, VL); `m` covers `v.len()`
        /// rows.
        #[target_feature(
            enable = "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,bmi2,popcnt"
        )]
        pub(crate) unsafe fn $name(v: &[$t], m: RowMask<'_>) -> $sum {
            let n = v.len();
            if m.is_all()
                && n >= 128
                && core::mem::size_of_val(v) < crate::agg::UNMASKED_32_BELOW_BYTES
            {
                // SAFETY: AVX-512 is enabled (caller). Its tail, under 128
                // rows, comes back here and takes the masked loop.
                return unsafe { $all(v) };
            }
            let blocks = n.div_ceil(64);
            // SAFETY: loads as in `int_sum`: plain ones only for blocks of
            // 64 rows below n, masked ones enabling only rows < n.
            // AVX-512 is enabled.
            unsafe {
                let mut total = _mm512_setzero_si512();
                let mut b = 0;
                while b < blocks {
                    let end = blocks.min(b + FLUSH_BLOCKS);
                    let mut w = [_mm512_setzero_si512(); 4];
                    let mut h = [_mm512_setzero_si512(); 4];
                    while b < end {
                        let m = block_word(m, n, b);
                        let base = v.as_ptr().wrapping_add(b * 64);
                        if m == !0 {
                            for j in 0..4 {
                                let x = _mm512_loadu_si512(base.wrapping_add(16 * j).cast());
                                w[j] = _mm512_add_epi32(w[j], x);
                                h[j] = _mm512_add_epi32(h[j], $high::<16>(x));
                            }
                        } else if m != 0 {
                            for j in 0..4 {
                                let k = (m >> (16 * j)) as u16;
                                let x =
                                    _mm512_maskz_loadu_epi32(k, base.wrapping_add(16 * j).cast());
                                w[j] = _mm512_add_epi32(w[j], x);
                                h[j] = _mm512_add_epi32(h[j], $high::<16>(x));
                            }
                        }
                        b += 1;
                    }
                    total = fold_exact::<$signed>(total, &w, &h);
                }
                _mm512_reduce_add_epi64(total) as $sum
            }
        }
    };
}

narrow_sum!(sum_i32, sum_all_i32, i32, i64, _mm512_srai_epi32, true);
narrow_sum!(sum_u32, sum_all_u32, u32, u64, _mm512_srli_epi32, false);

/// The 32-bit sums of every row: the masked leaf's split over whole
/// 128-row steps (two blocks) with no mask words, from the first 64-byte
/// line on; the rows before it and the rest (under 128 rows) by the masked
/// leaf (see `agg::UNMASKED_32_BELOW_BYTES`). Eight
/// chains of each kind, one per vector of a step: with four (a block a
/// step) the loop ran at 0.78 of a wrapping sum's speed in L1 on Zen 4,
/// with eight at 0.87, as the high halves' `vpdpwssd` (latency 4 or more)
/// no longer waits on itself
/// (`bench/results/2026-12-06-kernels-i32-eight-chains-zen4.md`).
/// `|h, x| update` adds the high halves of `x` to `h`; `$features` are the
/// leaf's target features.
macro_rules! narrow_sum_all {
    ($name:ident, $t:ty, $sum:ty, $features:literal, |$h:ident, $x:ident| $update:expr,
     $masked:ident, $signed:expr) => {
        /// Exact sum of every value, in 64 bits (wrapping past them).
        ///
        /// # Safety
        /// The CPU supports the leaf's target features.
        #[target_feature(enable = $features)]
        pub(crate) unsafe fn $name(v: &[$t]) -> $sum {
            let (head, v) = v.split_at(head_rows(v));
            let mut total = _mm512_setzero_si512();
            let mut blocks = v.chunks_exact(128);
            loop {
                let mut w = [_mm512_setzero_si512(); 8];
                let mut h = [_mm512_setzero_si512(); 8];
                let mut k = 0;
                // Half as many steps as blocks: each chain then holds as
                // many values a lane as a chain of the masked leaf.
                for c in blocks.by_ref().take(FLUSH_BLOCKS / 2) {
                    for j in 0..8 {
                        // SAFETY: the step holds 128 values, so the 16
                        // from 16 * j lie inside it; the features are
                        // enabled.
                        let $x = unsafe { _mm512_loadu_si512(c.as_ptr().add(16 * j).cast()) };
                        w[j] = _mm512_add_epi32(w[j], $x);
                        let $h = h[j];
                        h[j] = $update;
                    }
                    k += 1;
                }
                let w4 = core::array::from_fn(|j| _mm512_add_epi32(w[j], w[j + 4]));
                let h4 = core::array::from_fn(|j| _mm512_add_epi32(h[j], h[j + 4]));
                total = fold_exact::<$signed>(total, &w4, &h4);
                if k < FLUSH_BLOCKS / 2 {
                    break;
                }
            }
            let rest = blocks.remainder();
            let part = |rows: &[$t]| {
                if rows.is_empty() {
                    0
                } else {
                    // SAFETY: AVX-512 is enabled; every row counts.
                    unsafe { $masked(rows, RowMask::ALL) }
                }
            };
            (_mm512_reduce_add_epi64(total) as $sum)
                .wrapping_add(part(rest))
                .wrapping_add(part(head))
        }
    };
}

narrow_sum_all!(
    sum_all_i32_shift,
    i32,
    i64,
    "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,bmi2,popcnt",
    |h, x| _mm512_add_epi32(h, _mm512_srai_epi32::<16>(x)),
    sum_i32,
    true
);
narrow_sum_all!(
    sum_all_u32,
    u32,
    u64,
    "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,bmi2,popcnt",
    |h, x| _mm512_add_epi32(h, _mm512_srli_epi32::<16>(x)),
    sum_u32,
    false
);
// `vpdpwssd` multiplies the words of `x` by the words (0, 1) and adds each
// lane's pair to `h`: the high half, signed, in one instruction where the
// shifting loops take two (two vector instructions per 16 rows, not three).
narrow_sum_all!(
    sum_all_i32_vnni,
    i32,
    i64,
    "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,avx512vnni,bmi2,popcnt",
    |h, x| _mm512_dpwssd_epi32(h, x, _mm512_set1_epi32(1 << 16)),
    sum_i32,
    true
);

/// The unmasked exact `i32` sum: with AVX-512 VNNI, `sum_all_i32_vnni`;
/// without, `sum_all_i32_shift`.
///
/// # Safety
/// The CPU supports AVX-512 (F, BW, DQ, VL).
#[target_feature(
    enable = "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,bmi2,popcnt"
)]
pub(crate) unsafe fn sum_all_i32(v: &[i32]) -> i64 {
    if crate::cpu::sums_vnni() {
        // SAFETY: the CPU has AVX-512 (caller) and VNNI (just checked).
        unsafe { sum_all_i32_vnni(v) }
    } else {
        // SAFETY: AVX-512 (caller).
        unsafe { sum_all_i32_shift(v) }
    }
}

macro_rules! float_sum {
    ($name:ident, $aligned:ident, $t:ty, $lanes:expr, $mt:ty, $set1:ident, $load:ident,
     $add:ident, $loadz:ident, $madd:ident, $store:ident) => {
        /// Sum of the valid values in the documented order.
        ///
        /// # Safety
        /// The CPU supports AVX-512 (F, BW, DQ, VL); `m` covers `v.len()`
        /// rows.
        #[target_feature(
            enable = "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,bmi2,popcnt"
        )]
        pub(crate) unsafe fn $name(v: &[$t], m: RowMask<'_>) -> $t {
            const L: usize = $lanes;
            let n = v.len();
            let off = (v.as_ptr().addr() % 64) / core::mem::size_of::<$t>();
            if m.is_all() && off != 0 && n >= ALIGN_FROM_ROWS {
                // SAFETY: forwarded; `off` is where `v` starts in its line.
                return unsafe { $aligned(v, off) };
            }
            // Blocks in the first run; the second starts at block `k`.
            let k = scalar::sum_split(n) / 64;
            let mut lanes = [<$t as Num>::SUM_ZERO; scalar::MAX_SUM_LANES];
            // SAFETY: loads as in `int_sum`: plain ones only for blocks of 64
            // rows below n, masked ones enabling only rows < n. The stores
            // write 2 * 4 * L <= MAX_SUM_LANES lanes into `lanes`.
            unsafe {
                // Four registers a run; block `i` of the first run and block
                // `k + i` of the second go in the same step, so eight add
                // chains are in flight.
                let mut acc = [[$set1(-0.0); 4]; 2];
                macro_rules! block {
                    ($r:expr, $b:expr) => {{
                        let b = $b;
                        let w = block_word(m, n, b);
                        let base = v.as_ptr().wrapping_add(b * 64);
                        if w == !0 {
                            // Same lanes, no mask register (see `int_sum`).
                            for j in 0..64 / L {
                                let x = $load(base.wrapping_add(L * j));
                                acc[$r][j % 4] = $add(acc[$r][j % 4], x);
                            }
                        } else if w != 0 {
                            for j in 0..64 / L {
                                let m = (w >> (L * j)) as $mt;
                                let x = $loadz(m, base.wrapping_add(L * j));
                                // Masked add: null lanes keep their accumulator.
                                acc[$r][j % 4] = $madd(acc[$r][j % 4], m, acc[$r][j % 4], x);
                            }
                        }
                    }};
                }
                if m.is_all() {
                    // With every row counted, no block word.
                    for i in 0..k {
                        let (a, b) = (v.as_ptr().add(i * 64), v.as_ptr().add((k + i) * 64));
                        for j in 0..64 / L {
                            acc[0][j % 4] = $add(acc[0][j % 4], $load(a.add(L * j)));
                            acc[1][j % 4] = $add(acc[1][j % 4], $load(b.add(L * j)));
                        }
                    }
                } else {
                    for i in 0..k {
                        block!(0, i);
                        block!(1, k + i);
                    }
                }
                // The second run's last blocks (up to two, the partial one
                // masked).
                for b in 2 * k..n.div_ceil(64) {
                    block!(1, b);
                }
                for (r, run) in acc.iter().enumerate() {
                    for (q, a) in run.iter().enumerate() {
                        $store(lanes.as_mut_ptr().add((4 * r + q) * L), *a);
                    }
                }
            }
            scalar::reduce_lanes::<$t>(&mut lanes)
        }

        /// Sum of every value of `v`, whose first row sits `off` rows past
        /// the start of a 64-byte line (`0 < off < L`), in the documented
        /// order, with loads that start at that line: none splits two lines
        /// (a split load costs two). Vector `g` holds rows `g * L - off ..
        /// g * L - off + L`, and goes to register `g % 4` of its run as in
        /// `$name`, so position `q` of register `t` keeps the run's lane
        /// `(t * L + q - off) mod 4L`: the same chains, rotated, and
        /// rotated back at the end. The vector holding row `h` (the second
        /// run's first) is split between the runs by masks.
        ///
        /// # Safety
        /// The CPU supports AVX-512 (F, BW, DQ, VL); `v.len() >=
        /// ALIGN_FROM_ROWS`; `off` is as above.
        #[target_feature(
            enable = "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,bmi2,popcnt"
        )]
        unsafe fn $aligned(v: &[$t], off: usize) -> $t {
            const L: usize = $lanes;
            const RUN: usize = 4 * L;
            let n = v.len();
            let h = scalar::sum_split(n);
            // The vector holding row `h`: a multiple of 4 (h is of 64).
            let s = h / L;
            let a = v.as_ptr().wrapping_sub(off);
            let mut acc = [[$set1(-0.0); 4]; 2];
            // SAFETY: every load is of a vector `g` at `a + g * L`, formed
            // with wrapping_add: `part!` enables only positions whose rows
            // lie in `lo..hi`, inside `0..n` (masked-off lanes are not
            // accessed); `group!` loads four vectors whose rows all lie in
            // `0..n` (the loop bounds below). AVX-512 is enabled.
            unsafe {
                // Vector `g`'s positions whose rows lie in `lo..hi`, into run
                // `r`.
                macro_rules! part {
                    ($r:expr, $g:expr, $lo:expr, $hi:expr) => {{
                        let g: usize = $g;
                        let first = (g * L) as isize - off as isize;
                        let qlo = ($lo as isize - first).clamp(0, L as isize) as u32;
                        let qhi = ($hi as isize - first).clamp(0, L as isize) as u32;
                        if qhi > qlo {
                            let k = (((1u32 << (qhi - qlo)) - 1) << qlo) as $mt;
                            let x = $loadz(k, a.wrapping_add(g * L));
                            // A static register each (an indexed one would
                            // put the accumulators in memory).
                            match g % 4 {
                                0 => acc[$r][0] = $madd(acc[$r][0], k, acc[$r][0], x),
                                1 => acc[$r][1] = $madd(acc[$r][1], k, acc[$r][1], x),
                                2 => acc[$r][2] = $madd(acc[$r][2], k, acc[$r][2], x),
                                _ => acc[$r][3] = $madd(acc[$r][3], k, acc[$r][3], x),
                            }
                        }
                    }};
                }
                // Vectors `g..g + 4` (`g % 4 == 0`), whole, into run `r`.
                macro_rules! group {
                    ($r:expr, $g:expr) => {{
                        let p = a.wrapping_add($g * L);
                        for j in 0..4 {
                            acc[$r][j] = $add(acc[$r][j], $load(p.wrapping_add(j * L)));
                        }
                    }};
                }
                // First run, rows 0..h: vectors 0..4 (0 partial), whole
                // groups from 4 to s, then the low positions of vector s.
                // Second run, rows h..n: the rest of vector s, vectors
                // s + 1..s + 4, whole groups while they lie inside v, then
                // what is left. Each register takes its vectors in
                // increasing order.
                for g in 0..4 {
                    part!(0, g, 0, h);
                }
                for g in s..s + 4 {
                    part!(1, g, h, n);
                }
                let c1 = (s - 4) / 4;
                let c2 = ((n + off) / L).saturating_sub(s + 4) / 4;
                for i in 0..c1.min(c2) {
                    group!(0, 4 + 4 * i);
                    group!(1, s + 4 + 4 * i);
                }
                for i in c2..c1 {
                    group!(0, 4 + 4 * i);
                }
                for i in c1..c2 {
                    group!(1, s + 4 + 4 * i);
                }
                part!(0, s, 0, h);
                for g in s + 4 + 4 * c2..(n + off).div_ceil(L) {
                    part!(1, g, h, n);
                }
            }
            let mut lanes = [<$t as Num>::SUM_ZERO; scalar::MAX_SUM_LANES];
            let mut held = [<$t as Num>::SUM_ZERO; RUN];
            for (r, run) in acc.iter().enumerate() {
                for (t, x) in run.iter().enumerate() {
                    // SAFETY: `held` has 4 * L lanes; AVX-512 is enabled.
                    unsafe { $store(held.as_mut_ptr().add(t * L), *x) };
                }
                for l in 0..RUN {
                    lanes[r * RUN + l] = held[(l + off) % RUN];
                }
            }
            scalar::reduce_lanes::<$t>(&mut lanes)
        }
    };
}

/// Unmasked float sums of at least this many rows whose column starts off
/// a 64-byte line take loads aligned to the lines (`sum_f64_aligned`): at
/// 16 bytes off, 4 Ki rows of `f64` in L1 ran at 0.6 of the aligned speed
/// with every load split (the tests' columns reach it under Miri too).
const ALIGN_FROM_ROWS: usize = 256;

float_sum!(
    sum_f64,
    sum_f64_aligned,
    f64,
    8,
    u8,
    _mm512_set1_pd,
    _mm512_loadu_pd,
    _mm512_add_pd,
    _mm512_maskz_loadu_pd,
    _mm512_mask_add_pd,
    _mm512_storeu_pd
);
float_sum!(
    sum_f32,
    sum_f32_aligned,
    f32,
    16,
    u16,
    _mm512_set1_ps,
    _mm512_loadu_ps,
    _mm512_add_ps,
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

/// One step of `min_max`: two vectors at `p0`, `p1` under masks `m0`, `m1`
/// folded into the named accumulators. Masked min/max: null lanes keep
/// their accumulator.
macro_rules! min_max_step {
    ($mode:ident, $m0:expr, $m1:expr, $p0:expr, $p1:expr, $key:ident, $loadz:ident,
     $mmin:ident, $mmax:ident, $mn0:ident, $mn1:ident, $mx0:ident, $mx1:ident) => {{
        let (m0, m1) = ($m0, $m1);
        let x0 = $key($loadz(m0, $p0.cast()));
        let x1 = $key($loadz(m1, $p1.cast()));
        if $mode & 1 != 0 {
            $mn0 = $mmin($mn0, m0, $mn0, x0);
            $mn1 = $mmin($mn1, m1, $mn1, x1);
        }
        if $mode & 2 != 0 {
            $mx0 = $mmax($mx0, m0, $mx0, x0);
            $mx1 = $mmax($mx1, m1, $mx1, x1);
        }
    }};
}

macro_rules! min_max {
    ($name:ident, $t:tt, $k:ty, $lanes:expr, $mt:ty, $loadz:ident, $key:ident,
     $mmin:ident, $mmax:ident, $rmin:ident, $rmax:ident, $set1:ident, $lo:expr, $hi:expr,
     |$r:ident| $unkey:expr) => {
        /// `(min, max)` of the valid values, as the scalar twin.
        ///
        /// # Safety
        /// The CPU supports AVX-512 (F, BW, DQ, VL); `m` covers `v.len()`
        /// rows.
        #[target_feature(
            enable = "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,bmi2,popcnt"
        )]
        pub(crate) unsafe fn $name<const MODE: u8>(v: &[$t], m: RowMask<'_>) -> ($t, $t) {
            const L: usize = $lanes;
            let n = v.len();
            // SAFETY: loads as in `int_sum`: all lanes only for blocks of 64
            // rows below n, else only lanes of rows < n.
            unsafe {
                // Named accumulators, two of each, two vectors a step, so
                // they stay in registers.
                let (hi, lo) = ($set1($hi), $set1($lo));
                let (mut mn0, mut mn1, mut mx0, mut mx1) = (hi, hi, lo, lo);
                for b in 0..n.div_ceil(64) {
                    let w = block_word(m, n, b);
                    let base = v.as_ptr().wrapping_add(b * 64);
                    for j in (0..64 / L).step_by(2) {
                        let (p0, p1) = (base.wrapping_add(L * j), base.wrapping_add(L * j + L));
                        if w == !0 {
                            // Constant masks: plain loads and min/max, no
                            // mask register to fill (see `int_sum`).
                            min_max_step!(
                                MODE, !0, !0, p0, p1, $key, $loadz, $mmin, $mmax, mn0, mn1, mx0,
                                mx1
                            );
                        } else if w != 0 {
                            let m0 = (w >> (L * j)) as $mt;
                            let m1 = (w >> (L * j + L)) as $mt;
                            min_max_step!(
                                MODE, m0, m1, p0, p1, $key, $loadz, $mmin, $mmax, mn0, mn1, mx0,
                                mx1
                            );
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
