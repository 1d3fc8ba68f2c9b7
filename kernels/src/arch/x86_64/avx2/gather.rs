//! AVX2 gather leaves (`vpgatherdd`, `vpgatherdq`, `vpgatherqd`,
//! `vpgatherqq`), with the same software prefetch as the scalar twin.
//!
//! There is no byte gather: 1-byte columns run the scalar twin. The 32-bit
//! index forms sign-extend their indices, so columns longer than
//! `i32::MAX` rows also run the scalar twin for `u32` indices.

use crate::arch::scalar::gather::{DISTANCE, prefetch};
use crate::gather::raw::{Dst, Idx, Src};
use core::arch::x86_64::*;

/// Prefetches the rows `LANES` indices starting `DISTANCE` ahead of `i`.
///
/// # Safety
///
/// `i + DISTANCE + LANES <= idx.len()`.
#[inline(always)]
pub(crate) unsafe fn prefetch_rows<R, I: Copy + Into<u64>, const LANES: usize>(
    src: *const R,
    idx: &[I],
    i: usize,
) {
    for k in 0..LANES {
        // SAFETY: in bounds by contract; prefetch never faults.
        let ahead: u64 = unsafe { *idx.get_unchecked(i + DISTANCE + k) }.into();
        prefetch(src.wrapping_add(ahead as usize));
    }
}

/// Where the prefetching loop must stop so its hints stay inside `idx`.
#[inline(always)]
pub(crate) fn hinted(n: usize, idx_len: usize, prefetch_ahead: bool) -> usize {
    if prefetch_ahead {
        n.min(idx_len.saturating_sub(DISTANCE))
    } else {
        0
    }
}

/// One gather leaf: a prefetching main loop, a plain loop for the last
/// `DISTANCE` rows, and the scalar twin for the tail shorter than a vector.
/// Shared with the AVX-512 leaves, which differ only in feature set,
/// vector width and intrinsics.
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
        pub(crate) unsafe fn $name(src: &[$raw], idx: &[$ix], out: &mut [$raw], prefetch_ahead: bool) {
            const LANES: usize = $lanes;
            let n = out.len();
            let $s = src.as_ptr();
            let ip = idx.as_ptr();
            let op = out.as_mut_ptr();
            let mut i = 0;
            let hint_end = $crate::arch::x86_64::avx2::gather::hinted(n, idx.len(), prefetch_ahead);
            while i + LANES <= hint_end {
                // SAFETY: i + LANES <= idx.len() - DISTANCE.
                unsafe { $crate::arch::x86_64::avx2::gather::prefetch_rows::<_, _, LANES>($s, idx, i) };
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
            while i + LANES <= n {
                // SAFETY: as above.
                unsafe {
                    let $p = ip.add(i);
                    let $v = $gather;
                    let $o = op.add(i);
                    $store;
                }
                i += LANES;
            }
            // SAFETY: the remaining indices are in range by contract.
            unsafe { $crate::arch::scalar::gather::take(src, &idx[i..], &mut out[i..], false) };
        }
    };
}
pub(crate) use leaf;

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
pub(crate) unsafe fn block(src: &Src<'_>, idx: Idx<'_>, out: Dst<'_>, prefetch_ahead: bool) {
    // 32-bit gather offsets are signed.
    let dword_ok = src.len() <= i32::MAX as usize + 1;
    // SAFETY: forwarded contract; the 32-bit forms only see indices < 2^31.
    unsafe {
        match (src, out, idx) {
            (Src::W4(s), Dst::W4(o), Idx::U32(i)) if dword_ok => w4_u32(s, i, o, prefetch_ahead),
            (Src::W8(s), Dst::W8(o), Idx::U32(i)) if dword_ok => w8_u32(s, i, o, prefetch_ahead),
            (Src::W4(s), Dst::W4(o), Idx::U64(i)) => w4_u64(s, i, o, prefetch_ahead),
            (Src::W8(s), Dst::W8(o), Idx::U64(i)) => w8_u64(s, i, o, prefetch_ahead),
            (s, o, i) => crate::arch::scalar::gather::block(s, i, o, prefetch_ahead),
        }
    }
}
