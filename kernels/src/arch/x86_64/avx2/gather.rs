//! AVX2 gather leaves (`vpgatherdd`, `vpgatherdq`, `vpgatherqd`,
//! `vpgatherqq`) for columns that fit in L2, and the unsigned index max the
//! checked gathers use at the AVX2 and AVX-512 levels.
//!
//! There is no byte gather: 1-byte columns run the scalar twin. The 32-bit
//! index forms sign-extend their indices, so columns longer than
//! `i32::MAX` rows also run the scalar twin for `u32` indices.

use crate::arch::scalar::gather::{Dst, Idx, Src};
use core::arch::x86_64::*;

/// One gather leaf: whole vectors, then the scalar twin for the tail. No
/// prefetch: the hardware gathers are only used for columns that sit in L2
/// (`HW_GATHER_MAX_BYTES`). The AVX-512 level runs these leaves too.
macro_rules! leaf {
    ($feat:literal, $level:literal, $(#[$doc:meta])* $name:ident, $raw:ty, $ix:ty, $lanes:expr, |$s:ident, $p:ident| $gather:expr, |$o:ident, $v:ident| $store:expr) => {
        $(#[$doc])*
        ///
        /// # Safety
        ///
        #[doc = concat!("The CPU supports ", $level, "; `idx.len() >= out.len()` and the first")]
        /// `out.len()` indices are below `src.len()` (and below 2^31 for
        /// 32-bit indices).
        #[target_feature(enable = $feat)]
        pub(crate) unsafe fn $name(
            src: &[$raw],
            idx: &[$ix],
            out: &mut [core::mem::MaybeUninit<$raw>],
        ) {
            const LANES: usize = $lanes;
            let n = out.len();
            let $s = src.as_ptr();
            let ip = idx.as_ptr();
            let op = out.as_mut_ptr().cast::<$raw>();
            let mut i = 0;
            while i + LANES <= n {
                // SAFETY: i + LANES <= n <= idx.len(): the lane indices are
                // readable and below src.len() by contract; out has n slots.
                unsafe {
                    let $p = ip.add(i);
                    let $v = $gather;
                    let $o = op.add(i);
                    $store;
                }
                i += LANES;
            }
            // SAFETY: the remaining indices are in range by contract.
            unsafe {
                $crate::arch::scalar::gather::take(src, &idx[i..], &mut out[i..], false)
            };
        }
    };
}

leaf!(
    "avx2,bmi1,bmi2,popcnt,fma", "AVX2",
    /// 4-byte rows by 32-bit indices, 8 per `vpgatherdd`.
    w4_u32, u32, u32, 8,
    |s, p| _mm256_i32gather_epi32::<4>(s.cast::<i32>(), _mm256_loadu_si256(p.cast())),
    |o, v| _mm256_storeu_si256(o.cast(), v)
);

leaf!(
    "avx2,bmi1,bmi2,popcnt,fma", "AVX2",
    /// 8-byte rows by 32-bit indices, 4 per `vpgatherdq`.
    w8_u32, u64, u32, 4,
    |s, p| _mm256_i32gather_epi64::<8>(s.cast::<i64>(), _mm_loadu_si128(p.cast())),
    |o, v| _mm256_storeu_si256(o.cast(), v)
);

leaf!(
    "avx2,bmi1,bmi2,popcnt,fma", "AVX2",
    /// 4-byte rows by 64-bit indices, 4 per `vpgatherqd`.
    w4_u64, u32, u64, 4,
    |s, p| _mm256_i64gather_epi32::<4>(s.cast::<i32>(), _mm256_loadu_si256(p.cast())),
    |o, v| _mm_storeu_si128(o.cast(), v)
);

leaf!(
    "avx2,bmi1,bmi2,popcnt,fma", "AVX2",
    /// 8-byte rows by 64-bit indices, 4 per `vpgatherqq`.
    w8_u64, u64, u64, 4,
    |s, p| _mm256_i64gather_epi64::<8>(s.cast::<i64>(), _mm256_loadu_si256(p.cast())),
    |o, v| _mm256_storeu_si256(o.cast(), v)
);

/// Dispatches one block on element width and index width.
///
/// # Safety
///
/// The CPU supports AVX2; `idx.len() >= out.len()`, the first `out.len()`
/// indices are below `src.len()`; `src` and `out` have the same width.
pub(crate) unsafe fn block(src: &Src<'_>, idx: Idx<'_>, out: Dst<'_>) {
    // 32-bit gather offsets are signed.
    let dword_ok = src.len() <= i32::MAX as usize + 1;
    // SAFETY: forwarded contract; the 32-bit forms only see indices < 2^31.
    unsafe {
        match (src, out, idx) {
            (Src::W4(s), Dst::W4(o), Idx::U32(i)) if dword_ok => w4_u32(s, i, o),
            (Src::W8(s), Dst::W8(o), Idx::U32(i)) if dword_ok => w8_u32(s, i, o),
            (Src::W4(s), Dst::W4(o), Idx::U64(i)) => w4_u64(s, i, o),
            (Src::W8(s), Dst::W8(o), Idx::U64(i)) => w8_u64(s, i, o),
            (s, o, i) => crate::arch::scalar::gather::block(s, i, o, false),
        }
    }
}

/// Largest value in `s` (0 if empty), 16 lanes of `vpmaxud` at a time.
///
/// # Safety
///
/// The CPU supports AVX2.
#[target_feature(enable = "avx2,bmi1,bmi2,popcnt,fma")]
pub(crate) unsafe fn max_u32(s: &[u32]) -> u32 {
    let mut a = _mm256_setzero_si256();
    let mut b = _mm256_setzero_si256();
    let mut chunks = s.chunks_exact(16);
    for c in &mut chunks {
        // SAFETY: `c` has 16 readable u32s: two unaligned 256-bit loads.
        unsafe {
            a = _mm256_max_epu32(a, _mm256_loadu_si256(c.as_ptr().cast()));
            b = _mm256_max_epu32(b, _mm256_loadu_si256(c.as_ptr().add(8).cast()));
        }
    }
    let mut lanes = [0u32; 8];
    // SAFETY: `lanes` has room for 8 u32s.
    unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), _mm256_max_epu32(a, b)) };
    let tail = chunks.remainder().iter().copied();
    lanes.into_iter().chain(tail).max().unwrap_or(0)
}

/// Largest value in `s` (0 if empty), 4 lanes at a time (unsigned compare
/// through a sign flip: AVX2 has no `vpmaxuq`).
///
/// # Safety
///
/// The CPU supports AVX2.
#[target_feature(enable = "avx2,bmi1,bmi2,popcnt,fma")]
pub(crate) unsafe fn max_u64(s: &[u64]) -> u64 {
    let flip = _mm256_set1_epi64x(i64::MIN);
    // The running max, sign-flipped so a signed compare orders it unsigned.
    let mut m = flip;
    let mut chunks = s.chunks_exact(4);
    for c in &mut chunks {
        // SAFETY: `c` has 4 readable u64s.
        let x = _mm256_xor_si256(unsafe { _mm256_loadu_si256(c.as_ptr().cast()) }, flip);
        m = _mm256_blendv_epi8(m, x, _mm256_cmpgt_epi64(x, m));
    }
    let mut lanes = [0u64; 4];
    // SAFETY: `lanes` has room for 4 u64s.
    unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), _mm256_xor_si256(m, flip)) };
    let tail = chunks.remainder().iter().copied();
    lanes.into_iter().chain(tail).max().unwrap_or(0)
}
