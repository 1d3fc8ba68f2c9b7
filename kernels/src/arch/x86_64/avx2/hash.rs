//! AVX2 hash leaves: four keys per vector. AVX2 has no 64-bit multiply, so
//! each `x * c` is built from three 32 × 32 → 64 `vpmuludq`.

use core::arch::x86_64::*;

use crate::arch::scalar::hash::{M1, M2};

/// `x * c mod 2^64` per lane, `c` a constant split as `c_lo` (any vector
/// whose low 32 bits per lane are `c`'s) and `c_hi` (`c >> 32` per lane):
/// `lo(x)·lo(c) + ((hi(x)·lo(c) + lo(x)·hi(c)) << 32)`.
///
/// # Safety
///
/// The CPU supports AVX2 (called from an AVX2 leaf, into which it inlines).
#[inline(always)]
pub(crate) unsafe fn mul_const(x: __m256i, c_lo: __m256i, c_hi: __m256i) -> __m256i {
    // SAFETY: AVX2 register ops; the caller guarantees AVX2.
    unsafe {
        let lo = _mm256_mul_epu32(x, c_lo);
        let t1 = _mm256_mul_epu32(_mm256_srli_epi64::<32>(x), c_lo);
        let t2 = _mm256_mul_epu32(x, c_hi);
        let cross = _mm256_slli_epi64::<32>(_mm256_add_epi64(t1, t2));
        _mm256_add_epi64(lo, cross)
    }
}

/// The Moremur constants, pre-split for [`mul_const`].
#[derive(Clone, Copy)]
pub(crate) struct Mixer {
    m1: __m256i,
    m1_hi: __m256i,
    m2: __m256i,
    m2_hi: __m256i,
}

impl Mixer {
    /// # Safety
    ///
    /// The CPU supports AVX2 (called from an AVX2 leaf).
    #[inline(always)]
    pub(crate) unsafe fn new() -> Mixer {
        // SAFETY: AVX register ops; the caller guarantees AVX2.
        unsafe {
            Mixer {
                m1: _mm256_set1_epi64x(M1 as i64),
                m1_hi: _mm256_set1_epi64x((M1 >> 32) as i64),
                m2: _mm256_set1_epi64x(M2 as i64),
                m2_hi: _mm256_set1_epi64x((M2 >> 32) as i64),
            }
        }
    }

    /// `crate::hash::mix` on four lanes.
    ///
    /// # Safety
    ///
    /// The CPU supports AVX2 (called from an AVX2 leaf).
    #[inline(always)]
    pub(crate) unsafe fn mix(self, mut x: __m256i) -> __m256i {
        // SAFETY: AVX2 register ops; the caller guarantees AVX2.
        unsafe {
            x = _mm256_xor_si256(x, _mm256_srli_epi64::<27>(x));
            x = mul_const(x, self.m1, self.m1_hi);
            x = _mm256_xor_si256(x, _mm256_srli_epi64::<33>(x));
            x = mul_const(x, self.m2, self.m2_hi);
            _mm256_xor_si256(x, _mm256_srli_epi64::<27>(x))
        }
    }
}

/// AVX2 twin of `arch::scalar::hash::hash_u64_column`.
///
/// # Safety
///
/// The CPU supports AVX2 (`Level::Avx2`); `keys.len() == out.len()`.
#[target_feature(enable = "avx2,bmi1,bmi2,popcnt,fma")]
pub(crate) unsafe fn hash_u64_column(keys: &[u64], seed: u64, out: &mut [u64]) {
    let n = keys.len().min(out.len());
    // SAFETY: AVX2 is enabled on this leaf (caller contract).
    let mx = unsafe { Mixer::new() };
    let s = _mm256_set1_epi64x(seed as i64);
    let mut i = 0;
    while i + 4 <= n {
        // SAFETY: i + 4 <= n bounds both 32-byte unaligned accesses; the
        // CPU supports AVX2 (caller contract), as `mix` needs.
        unsafe {
            let k = _mm256_loadu_si256(keys.as_ptr().add(i).cast());
            let h = mx.mix(_mm256_xor_si256(k, s));
            _mm256_storeu_si256(out.as_mut_ptr().add(i).cast(), h);
        }
        i += 4;
    }
    crate::arch::scalar::hash::hash_u64_column(&keys[i..n], seed, &mut out[i..n]);
}

/// AVX2 twin of `arch::scalar::hash::combine_u64_column`.
///
/// # Safety
///
/// The CPU supports AVX2 (`Level::Avx2`); `keys.len() == acc.len()`.
#[target_feature(enable = "avx2,bmi1,bmi2,popcnt,fma")]
pub(crate) unsafe fn combine_u64_column(keys: &[u64], acc: &mut [u64]) {
    let n = keys.len().min(acc.len());
    // SAFETY: AVX2 is enabled on this leaf (caller contract).
    let mx = unsafe { Mixer::new() };
    let mut i = 0;
    while i + 4 <= n {
        // SAFETY: i + 4 <= n bounds all three 32-byte unaligned accesses;
        // the CPU supports AVX2 (caller contract), as `mix` needs.
        unsafe {
            let k = _mm256_loadu_si256(keys.as_ptr().add(i).cast());
            let a = _mm256_loadu_si256(acc.as_ptr().add(i).cast());
            let h = mx.mix(_mm256_xor_si256(k, a));
            _mm256_storeu_si256(acc.as_mut_ptr().add(i).cast(), h);
        }
        i += 4;
    }
    crate::arch::scalar::hash::combine_u64_column(&keys[i..n], &mut acc[i..n]);
}
