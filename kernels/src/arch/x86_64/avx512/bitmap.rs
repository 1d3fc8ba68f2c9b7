//! AVX-512 bitmap kernels. and/or/and-not are plain loops compiled with
//! AVX-512 (512-bit `vpandq`/`vporq`/`vpandnq`); popcount is `vpopcntq`
//! (VPOPCNTDQ) over plain loads, with a masked load for the tail; select is
//! a byte compress a word on CPUs with VBMI2, else the AVX2 level's table
//! form or the scalar loop compiled with BMI (`tzcnt`, `blsr`).

use super::compress::{positions64_exact, skips_empty};
use crate::arch::scalar::bitmap as scalar;
use core::arch::x86_64::*;

macro_rules! binop {
    ($name:ident) => {
        /// As the scalar twin, compiled for AVX-512.
        ///
        /// # Safety
        /// The CPU supports AVX-512 (F, BW, DQ, VL); `dst.len() == src.len()`.
        #[target_feature(
            enable = "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,bmi2,popcnt"
        )]
        pub(crate) unsafe fn $name(dst: &mut [u64], src: &[u64]) {
            scalar::$name(dst, src)
        }
    };
}
binop!(and);
binop!(or);
binop!(andnot);

/// Set bits in `words`.
///
/// # Safety
/// The CPU supports AVX-512 F and VPOPCNTDQ.
#[target_feature(
    enable = "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,bmi2,popcnt"
)]
pub(crate) unsafe fn popcount(words: &[u64]) -> usize {
    let n = words.len();
    let p = words.as_ptr();
    // SAFETY: the plain loads read words i..i + 16 with i + 16 <= n; the
    // masked load of the tail enables only words < n (masked-off lanes are
    // not read) at an address formed with wrapping_add. AVX-512 is enabled.
    unsafe {
        // Two named accumulators, two vectors a step: they stay in
        // registers (an array indexed by a running counter lived on the
        // stack, one store-to-load round trip per vector).
        let (mut a0, mut a1) = (_mm512_setzero_si512(), _mm512_setzero_si512());
        let mut i = 0;
        while i + 16 <= n {
            let v0 = _mm512_loadu_si512(p.add(i).cast());
            let v1 = _mm512_loadu_si512(p.add(i + 8).cast());
            a0 = _mm512_add_epi64(a0, _mm512_popcnt_epi64(v0));
            a1 = _mm512_add_epi64(a1, _mm512_popcnt_epi64(v1));
            i += 16;
        }
        while i < n {
            let left = n - i;
            let m: u8 = if left >= 8 { !0 } else { (1u8 << left) - 1 };
            let v = _mm512_maskz_loadu_epi64(m, p.wrapping_add(i).cast());
            a0 = _mm512_add_epi64(a0, _mm512_popcnt_epi64(v));
            i += 8;
        }
        _mm512_reduce_add_epi64(_mm512_add_epi64(a0, a1)) as usize
    }
}

/// As the scalar twin, compiled with BMI.
///
/// # Safety
/// The CPU supports AVX-512 (and BMI2); arguments as the scalar twin's.
#[target_feature(
    enable = "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,bmi2,popcnt"
)]
pub(crate) unsafe fn select(words: &[u64], rows: usize, out: &mut [u32]) -> usize {
    scalar::select(words, rows, out)
}

/// Rows among the first `rows` that `m` counts: over one word-aligned
/// bitmap, [`popcount`] of its full words (`vpopcntq`) and the last partial
/// word's bits; otherwise the scalar twin compiled with `popcnt` (a word
/// at a time, shifting and and-ing as the mask needs).
///
/// # Safety
/// The CPU supports this level.
#[target_feature(
    enable = "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,bmi2,popcnt"
)]
pub(crate) unsafe fn count_mask(m: crate::arch::mask::RowMask<'_>, rows: usize) -> usize {
    if let Some(w) = m.aligned_words() {
        // SAFETY: AVX-512 F and VPOPCNTDQ are enabled.
        return scalar::count_words(w, rows, |full| unsafe { popcount(full) });
    }
    scalar::count_mask(m, rows)
}

/// As the scalar twin, on a CPU with AVX-512 VBMI2: the set bits of a
/// word are taken at once by a byte compress of the row numbers 0..64
/// ([`positions64_exact`]), where the twin loops once per set bit. On
/// Zen 4 (family 25 model 17) 1.9-9.3x the loop from 1 in 10 rows set; at
/// 1 in 64, 1.4x from 16 Mi rows, level in cache
/// (`bench/results/2026-12-06-kernels-select-vbmi2-zen4.md`). Words with
/// no bit set are skipped only where `set` makes them most of the words
/// ([`skips_empty`]): at one bit a word a third of them are empty, at
/// random, and the branch's misses cost more than compressing them
/// (1.5-1.8x faster without it at 1 in 64 rows, from 1 Mi rows, on an
/// Intel model 167,
/// `bench/results/2026-12-07-kernels-select-branchless-intel.md`).
///
/// # Safety
/// The CPU supports AVX-512 (and BMI2) and VBMI2; arguments as the scalar
/// twin's (`out` has room for every set bit among the first `rows`); `set`
/// is the count of those bits (only the speed depends on it).
#[target_feature(
    enable = "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,bmi2,popcnt,avx512vbmi2"
)]
pub(crate) unsafe fn select_vbmi2(
    words: &[u64],
    rows: usize,
    set: usize,
    out: &mut [u32],
) -> usize {
    let full = rows / 64;
    // Two loops, so that neither tests the choice a word.
    let mut n = if skips_empty::<2>(set, full) {
        // SAFETY: as this function (the features are enabled here).
        unsafe { select_full::<true>(&words[..full], out) }
    } else {
        // SAFETY: as above.
        unsafe { select_full::<false>(&words[..full], out) }
    };
    if !rows.is_multiple_of(64) {
        let w = words[full] & ((1u64 << (rows % 64)) - 1);
        n = scalar::select_word(w, (full * 64) as u32, out, n);
    }
    n
}

/// [`select_vbmi2`]'s walk over whole words, skipping the words with no
/// bit set where `SKIP`.
///
/// # Safety
/// As [`select_vbmi2`], over `words` whole words.
#[target_feature(
    enable = "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,bmi2,popcnt,avx512vbmi2"
)]
#[inline(never)]
unsafe fn select_full<const SKIP: bool>(words: &[u64], out: &mut [u32]) -> usize {
    let p = out.as_mut_ptr();
    let mut n = 0;
    for (i, &w) in words.iter().enumerate() {
        let cnt = w.count_ones();
        if SKIP && cnt == 0 {
            continue;
        }
        debug_assert!(n + cnt as usize <= out.len());
        // SAFETY: AVX-512 F and VBMI2 are enabled in the caller; `out` has
        // room for every set bit (its contract), so for this word's `cnt`
        // past the `n` written.
        unsafe { positions64_exact(w, cnt, (i * 64) as u32, p.add(n)) };
        n += cnt as usize;
    }
    n
}
