//! AVX-512 filters: 64 rows per output word; each vector's comparison is a
//! mask register, so 8 (or 4) of them are the output word. Eight full
//! blocks a step use constant all-ones masks, which compile to plain loads
//! and compares; the blocks left mask their loads and compares to the rows
//! that exist.

use crate::arch::mask::RowMask;
use crate::arch::scalar::filter::{EQ, GE, GT, LE, LT, NE, WRITE, sink};
use core::arch::x86_64::*;

// The float compares into a mask (`vcmppd`/`vcmpps`): the instructions on a
// real build; under Miri, which has no model of them, a lane-by-lane model
// of the same predicates, so Miri still runs everything around them (the
// masked loads, the bit packing, the `and` form) against the scalar twin.
#[cfg(not(miri))]
use core::arch::x86_64::{_mm512_mask_cmp_pd_mask as cmp_pd, _mm512_mask_cmp_ps_mask as cmp_ps};
#[cfg(miri)]
use miri_model::{cmp_pd, cmp_ps};

#[cfg(miri)]
mod miri_model {
    use core::arch::x86_64::*;

    /// `IMM`'s predicate on one lane pair, for the six predicates the
    /// filters use.
    fn holds<T: PartialOrd>(imm: i32, a: T, b: T) -> bool {
        match imm {
            _CMP_EQ_OQ => a == b,
            _CMP_NEQ_UQ => a != b, // NaN != x, as the unordered form
            _CMP_LT_OQ => a < b,
            _CMP_LE_OQ => a <= b,
            _CMP_GT_OQ => a > b,
            _CMP_GE_OQ => a >= b,
            _ => unreachable!("predicate {imm} is not used by the filters"),
        }
    }

    /// Model of `_mm512_mask_cmp_pd_mask`.
    pub(super) fn cmp_pd<const IMM: i32>(k: __mmask8, a: __m512d, b: __m512d) -> __mmask8 {
        // SAFETY: __m512d and [f64; 8] have the same size, every bit
        // pattern valid.
        let (a, b): ([f64; 8], [f64; 8]) =
            unsafe { (core::mem::transmute(a), core::mem::transmute(b)) };
        (0..8).fold(0, |r, i| r | (u8::from(holds(IMM, a[i], b[i])) << i)) & k
    }

    /// Model of `_mm512_mask_cmp_ps_mask`.
    pub(super) fn cmp_ps<const IMM: i32>(k: __mmask16, a: __m512, b: __m512) -> __mmask16 {
        // SAFETY: as above, with [f32; 16].
        let (a, b): ([f32; 16], [f32; 16]) =
            unsafe { (core::mem::transmute(a), core::mem::transmute(b)) };
        (0..16).fold(0, |r, i| r | (u16::from(holds(IMM, a[i], b[i])) << i)) & k
    }
}

/// Columns of at least this many bytes write their output words with
/// non-temporal stores (`movnti`, then one `sfence`): from here on the
/// column streams through and evicts the caches anyway, and a plain store
/// first reads each output line from DRAM (a read-for-ownership), which for
/// a u8 column is an eighth more traffic on top of the column's own read.
/// Under Miri 128 bytes, so the tests' short columns run both paths.
const STREAM_MIN_BYTES: usize = if cfg!(miri) { 128 } else { 16 << 20 };

/// Writes output word `blk` with a non-temporal store (a plain store under
/// Miri, which has no model of the cache hint).
///
/// # Safety
/// The CPU supports SSE2 (any x86-64).
#[inline(always)]
unsafe fn stream_word(out: &mut [u64], blk: usize, w: u64) {
    let p: *mut u64 = &mut out[blk];
    #[cfg(not(miri))]
    // SAFETY: `p` is a valid, aligned `u64` of `out` (bounds-checked just
    // above); `movnti` is SSE2, which every x86-64 has.
    unsafe {
        _mm_stream_si64(p.cast(), w as i64)
    };
    #[cfg(miri)]
    // SAFETY: as above.
    unsafe {
        p.write(w)
    };
}

/// Orders the non-temporal stores before anything later (their results
/// must be visible to whoever reads the bitmap next, on any thread).
#[inline(always)]
fn stream_fence() {
    #[cfg(not(miri))]
    // SAFETY: `sfence` is SSE, which every x86-64 has.
    unsafe {
        _mm_sfence()
    };
    #[cfg(miri)]
    core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst);
}

/// Mask of the rows of block `blk` that exist in a column of `n` rows.
#[inline(always)]
fn rows_mask(n: usize, blk: usize) -> u64 {
    let rows = n - blk * 64;
    if rows >= 64 { !0 } else { (1u64 << rows) - 1 }
}

/// The output word of one 64-row block at `base`: each vector `j` loaded
/// and compared under the mask `$mask`, its compare mask placed at bit
/// `L * j`.
macro_rules! filter_word {
    ($op:ident, $lanes:expr, $mt:ty, |$j:ident| $mask:expr, $base:ident, $loadz:ident,
     $cmp:ident, $a:ident, $b:ident, [$eq:expr, $ne:expr, $lt:expr, $le:expr, $gt:expr,
     $ge:expr]) => {{
        let mut w = 0u64;
        for $j in 0..64 / $lanes {
            let m: $mt = $mask;
            let x = $loadz(m, $base.wrapping_add($lanes * $j).cast());
            let r: $mt = match $op {
                EQ => $cmp::<{ $eq }>(m, x, $a),
                NE => $cmp::<{ $ne }>(m, x, $a),
                LT => $cmp::<{ $lt }>(m, x, $a),
                LE => $cmp::<{ $le }>(m, x, $a),
                GT => $cmp::<{ $gt }>(m, x, $a),
                GE => $cmp::<{ $ge }>(m, x, $a),
                _ => $cmp::<{ $le }>($cmp::<{ $ge }>(m, x, $a), x, $b),
            };
            w |= (r as u64) << ($lanes * $j);
        }
        w
    }};
}

macro_rules! filter_leaf {
    ($name:ident, $t:ty, $lanes:expr, $mt:ty, $set1:ident, $loadz:ident, $cmp:ident,
     [$eq:expr, $ne:expr, $lt:expr, $le:expr, $gt:expr, $ge:expr]) => {
        /// Filter leaf: `OP` and `SINK` as the scalar twin's
        /// `filter_code`.
        ///
        /// # Safety
        /// The CPU supports AVX-512 (F, BW, DQ, VL);
        /// `out.len() == v.len().div_ceil(64)`.
        #[target_feature(
            enable = "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,bmi2,popcnt"
        )]
        pub(crate) unsafe fn $name<const OP: u8, const SINK: u8>(
            v: &[$t],
            c1: $t,
            c2: $t,
            out: &mut [u64],
            m: RowMask<'_>,
        ) -> usize {
            const L: usize = $lanes;
            let n = v.len();
            let mut count = 0;
            let stream = SINK == WRITE && core::mem::size_of_val(v) >= STREAM_MIN_BYTES;
            // SAFETY: masked loads and compares enable only rows < n; the
            // addresses are formed with wrapping_add; out has a word per
            // block (caller contract); AVX-512 is enabled.
            unsafe {
                let a = $set1(c1 as _);
                let b = $set1(c2 as _);
                // Eight full blocks a step: eight words' loads in flight
                // and one loop branch per 512 rows (a block a step, u8 read
                // one vector an iteration and ran well under the read pass
                // from DRAM).
                let full = n / 64;
                let mut first = 0;
                while first + 8 <= full {
                    let mut ws = [0u64; 8];
                    for (k, w) in ws.iter_mut().enumerate() {
                        let base = v.as_ptr().wrapping_add((first + k) * 64);
                        *w = filter_word!(
                            OP,
                            L,
                            $mt,
                            |j| !0,
                            base,
                            $loadz,
                            $cmp,
                            a,
                            b,
                            [$eq, $ne, $lt, $le, $gt, $ge]
                        );
                    }
                    for (k, &w) in ws.iter().enumerate() {
                        if stream {
                            stream_word(out, first + k, w);
                        } else {
                            count += sink::<SINK>(out, first + k, w, m);
                        }
                    }
                    first += 8;
                }
                for blk in first..n.div_ceil(64) {
                    let lim = rows_mask(n, blk);
                    let base = v.as_ptr().wrapping_add(blk * 64);
                    // The blocks left (fewer than eight, the last maybe
                    // partial): each load masked to the rows that exist.
                    let w = filter_word!(
                        OP,
                        L,
                        $mt,
                        |j| (lim >> (L * j)) as $mt,
                        base,
                        $loadz,
                        $cmp,
                        a,
                        b,
                        [$eq, $ne, $lt, $le, $gt, $ge]
                    );
                    if stream {
                        stream_word(out, blk, w);
                    } else {
                        count += sink::<SINK>(out, blk, w, m);
                    }
                }
                if stream {
                    stream_fence();
                }
            }
            count
        }
    };
}

const INT: [i32; 6] = [
    _MM_CMPINT_EQ,
    _MM_CMPINT_NE,
    _MM_CMPINT_LT,
    _MM_CMPINT_LE,
    _MM_CMPINT_NLE,
    _MM_CMPINT_NLT,
];
const FLT: [i32; 6] = [
    _CMP_EQ_OQ,
    _CMP_NEQ_UQ,
    _CMP_LT_OQ,
    _CMP_LE_OQ,
    _CMP_GT_OQ,
    _CMP_GE_OQ,
];

filter_leaf!(
    filter_i64,
    i64,
    8,
    u8,
    _mm512_set1_epi64,
    _mm512_maskz_loadu_epi64,
    _mm512_mask_cmp_epi64_mask,
    [INT[0], INT[1], INT[2], INT[3], INT[4], INT[5]]
);
filter_leaf!(
    filter_u64,
    u64,
    8,
    u8,
    _mm512_set1_epi64,
    _mm512_maskz_loadu_epi64,
    _mm512_mask_cmp_epu64_mask,
    [INT[0], INT[1], INT[2], INT[3], INT[4], INT[5]]
);
filter_leaf!(
    filter_i32,
    i32,
    16,
    u16,
    _mm512_set1_epi32,
    _mm512_maskz_loadu_epi32,
    _mm512_mask_cmp_epi32_mask,
    [INT[0], INT[1], INT[2], INT[3], INT[4], INT[5]]
);
filter_leaf!(
    filter_u32,
    u32,
    16,
    u16,
    _mm512_set1_epi32,
    _mm512_maskz_loadu_epi32,
    _mm512_mask_cmp_epu32_mask,
    [INT[0], INT[1], INT[2], INT[3], INT[4], INT[5]]
);
filter_leaf!(
    filter_f64,
    f64,
    8,
    u8,
    _mm512_set1_pd,
    _mm512_maskz_loadu_pd,
    cmp_pd,
    [FLT[0], FLT[1], FLT[2], FLT[3], FLT[4], FLT[5]]
);
filter_leaf!(
    filter_f32,
    f32,
    16,
    u16,
    _mm512_set1_ps,
    _mm512_maskz_loadu_ps,
    cmp_ps,
    [FLT[0], FLT[1], FLT[2], FLT[3], FLT[4], FLT[5]]
);

// 8- and 16-bit columns (AVX-512 BW): 64 or 32 lanes a vector, so one or
// two compares make the block's output word.
filter_leaf!(
    filter_i16,
    i16,
    32,
    u32,
    _mm512_set1_epi16,
    _mm512_maskz_loadu_epi16,
    _mm512_mask_cmp_epi16_mask,
    [INT[0], INT[1], INT[2], INT[3], INT[4], INT[5]]
);
filter_leaf!(
    filter_u16,
    u16,
    32,
    u32,
    _mm512_set1_epi16,
    _mm512_maskz_loadu_epi16,
    _mm512_mask_cmp_epu16_mask,
    [INT[0], INT[1], INT[2], INT[3], INT[4], INT[5]]
);
filter_leaf!(
    filter_i8,
    i8,
    64,
    u64,
    _mm512_set1_epi8,
    _mm512_maskz_loadu_epi8,
    _mm512_mask_cmp_epi8_mask,
    [INT[0], INT[1], INT[2], INT[3], INT[4], INT[5]]
);
filter_leaf!(
    filter_u8,
    u8,
    64,
    u64,
    _mm512_set1_epi8,
    _mm512_maskz_loadu_epi8,
    _mm512_mask_cmp_epu8_mask,
    [INT[0], INT[1], INT[2], INT[3], INT[4], INT[5]]
);
