//! AVX-512 gather leaves: the AVX2 leaves' loop at twice the width
//! (`vpgatherdd` zmm: 16 rows, the others 8), for columns that fit in L2.
//!
//! 1-byte columns run the scalar twin (no byte gather); `u32` indices into
//! columns longer than `i32::MAX` rows do too (the offsets are signed).

use crate::arch::x86_64::avx2::gather::leaf;
use crate::gather::raw::{Dst, Idx, Src};
use core::arch::x86_64::*;

leaf!(
    "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,bmi2,popcnt", "AVX-512",
    /// 4-byte rows by 32-bit indices, 16 per `vpgatherdd`.
    w4_u32, u32, u32, 16,
    |s, p| _mm512_i32gather_epi32::<4>(_mm512_loadu_si512(p.cast()), s.cast::<i32>()),
    |o, v| _mm512_storeu_si512(o.cast(), v)
);

leaf!(
    "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,bmi2,popcnt", "AVX-512",
    /// 8-byte rows by 32-bit indices, 8 per `vpgatherdq`.
    w8_u32, u64, u32, 8,
    |s, p| _mm512_i32gather_epi64::<8>(_mm256_loadu_si256(p.cast()), s.cast::<i64>()),
    |o, v| _mm512_storeu_si512(o.cast(), v)
);

leaf!(
    "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,bmi2,popcnt", "AVX-512",
    /// 4-byte rows by 64-bit indices, 8 per `vpgatherqd`.
    w4_u64, u32, u64, 8,
    |s, p| _mm512_i64gather_epi32::<4>(_mm512_loadu_si512(p.cast()), s.cast::<i32>()),
    |o, v| _mm256_storeu_si256(o.cast(), v)
);

leaf!(
    "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,bmi2,popcnt", "AVX-512",
    /// 8-byte rows by 64-bit indices, 8 per `vpgatherqq`.
    w8_u64, u64, u64, 8,
    |s, p| _mm512_i64gather_epi64::<8>(_mm512_loadu_si512(p.cast()), s.cast::<i64>()),
    |o, v| _mm512_storeu_si512(o.cast(), v)
);

/// Dispatches one block on element width and index width.
///
/// # Safety
///
/// The CPU supports AVX-512 (F, BW, CD, DQ, VL, VPOPCNTDQ); `idx.len() >=
/// out.len()`, the first `out.len()` indices are below `src.len()`; `src` and
/// `out` have the same width.
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
