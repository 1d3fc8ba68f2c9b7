//! AVX2 bitmap kernels. and/or/and-not are plain loops compiled with AVX2
//! (the compiler emits 256-bit `vpand`/`vpor`/`vpandn`); popcount uses the
//! nibble-lookup method (`vpshufb` + `vpsadbw`); select is the scalar loop
//! compiled with BMI1 (`tzcnt`, `blsr`).

use crate::arch::scalar::bitmap as scalar;
use core::arch::x86_64::*;

macro_rules! binop {
    ($name:ident) => {
        /// As the scalar twin, compiled for AVX2.
        ///
        /// # Safety
        /// The CPU supports AVX2; `dst.len() == src.len()`.
        #[target_feature(enable = "avx2,bmi1,bmi2,popcnt,fma")]
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
/// The CPU supports AVX2.
#[target_feature(enable = "avx2,bmi1,bmi2,popcnt,fma")]
pub(crate) unsafe fn popcount(words: &[u64]) -> usize {
    let chunks = words.len() / 4;
    // SAFETY: each load reads 4 words of chunk `c < chunks`, inside `words`;
    // AVX2 is enabled.
    let simd = unsafe {
        let lut = _mm256_setr_epi8(
            0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2,
            3, 3, 4,
        );
        let low = _mm256_set1_epi8(0x0f);
        let mut acc = _mm256_setzero_si256();
        for c in 0..chunks {
            let v = _mm256_loadu_si256(words.as_ptr().add(4 * c).cast());
            let lo = _mm256_shuffle_epi8(lut, _mm256_and_si256(v, low));
            let hi = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16::<4>(v), low));
            let bytes = _mm256_add_epi8(lo, hi);
            acc = _mm256_add_epi64(acc, _mm256_sad_epu8(bytes, _mm256_setzero_si256()));
        }
        let mut l = [0u64; 4];
        _mm256_storeu_si256(l.as_mut_ptr().cast(), acc);
        l.iter().sum::<u64>() as usize
    };
    simd + scalar::popcount(&words[chunks * 4..])
}

/// As the scalar twin, compiled with BMI1.
///
/// # Safety
/// The CPU supports AVX2 (and BMI1); arguments as the scalar twin's.
#[target_feature(enable = "avx2,bmi1,bmi2,popcnt,fma")]
pub(crate) unsafe fn select(words: &[u64], rows: usize, out: &mut [u32]) -> usize {
    scalar::select(words, rows, out)
}

/// Rows among the first `rows` that `m` counts: one word-aligned bitmap
/// through [`popcount`] (as the AVX-512 leaf does with `vpopcntq`; word by
/// word it ran at 0.34-0.41 of arrow's count of the same bitmap), anything
/// else as the scalar twin, compiled with `popcnt`.
///
/// # Safety
/// The CPU supports this level.
#[target_feature(enable = "avx2,bmi1,bmi2,popcnt,fma")]
pub(crate) unsafe fn count_mask(m: crate::arch::mask::RowMask<'_>, rows: usize) -> usize {
    if let Some(w) = m.aligned_words() {
        // SAFETY: AVX2 is enabled.
        return scalar::count_words(w, rows, |full| unsafe { popcount(full) });
    }
    scalar::count_mask(m, rows)
}
