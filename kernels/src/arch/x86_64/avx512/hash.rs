//! AVX-512 hash leaves: eight keys per vector, two `vpmullq` (AVX-512 DQ)
//! per mix.

use core::arch::x86_64::*;

use crate::arch::scalar::hash::{M1, M2};

/// The Moremur constants in vectors.
#[derive(Clone, Copy)]
pub(crate) struct Mixer {
    m1: __m512i,
    m2: __m512i,
}

impl Mixer {
    /// # Safety
    ///
    /// The CPU supports AVX-512 (called from an AVX-512 leaf).
    #[inline(always)]
    pub(crate) unsafe fn new() -> Mixer {
        // SAFETY: AVX-512F register ops; the caller guarantees AVX-512.
        unsafe {
            Mixer {
                m1: _mm512_set1_epi64(M1 as i64),
                m2: _mm512_set1_epi64(M2 as i64),
            }
        }
    }

    /// `crate::hash::mix` on eight lanes.
    ///
    /// # Safety
    ///
    /// The CPU supports AVX-512 F and DQ (called from an AVX-512 leaf).
    #[inline(always)]
    pub(crate) unsafe fn mix(self, mut x: __m512i) -> __m512i {
        // SAFETY: AVX-512 F/DQ register ops; the caller guarantees them.
        unsafe {
            x = _mm512_xor_si512(x, _mm512_srli_epi64::<27>(x));
            x = _mm512_mullo_epi64(x, self.m1);
            x = _mm512_xor_si512(x, _mm512_srli_epi64::<33>(x));
            x = _mm512_mullo_epi64(x, self.m2);
            _mm512_xor_si512(x, _mm512_srli_epi64::<27>(x))
        }
    }
}

/// AVX-512 twin of `arch::scalar::hash::hash_u64_column`.
///
/// # Safety
///
/// The CPU supports AVX-512 (`Level::Avx512`); `keys.len() == out.len()`.
#[target_feature(
    enable = "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,bmi2,popcnt"
)]
pub(crate) unsafe fn hash_u64_column(keys: &[u64], seed: u64, out: &mut [u64]) {
    let n = keys.len().min(out.len());
    // SAFETY: AVX-512 is enabled on this leaf (caller contract).
    let mx = unsafe { Mixer::new() };
    let s = _mm512_set1_epi64(seed as i64);
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: i + 8 <= n bounds both 64-byte unaligned accesses; the
        // CPU supports AVX-512 (caller contract), as `mix` needs.
        unsafe {
            let k = _mm512_loadu_si512(keys.as_ptr().add(i).cast());
            let h = mx.mix(_mm512_xor_si512(k, s));
            _mm512_storeu_si512(out.as_mut_ptr().add(i).cast(), h);
        }
        i += 8;
    }
    crate::arch::scalar::hash::hash_u64_column(&keys[i..n], seed, &mut out[i..n]);
}

/// AVX-512 twin of `arch::scalar::hash::combine_u64_column`.
///
/// # Safety
///
/// The CPU supports AVX-512 (`Level::Avx512`); `keys.len() == acc.len()`.
#[target_feature(
    enable = "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,bmi2,popcnt"
)]
pub(crate) unsafe fn combine_u64_column(keys: &[u64], acc: &mut [u64]) {
    let n = keys.len().min(acc.len());
    // SAFETY: AVX-512 is enabled on this leaf (caller contract).
    let mx = unsafe { Mixer::new() };
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: i + 8 <= n bounds all three 64-byte unaligned accesses;
        // the CPU supports AVX-512 (caller contract), as `mix` needs.
        unsafe {
            let k = _mm512_loadu_si512(keys.as_ptr().add(i).cast());
            let a = _mm512_loadu_si512(acc.as_ptr().add(i).cast());
            let h = mx.mix(_mm512_xor_si512(k, a));
            _mm512_storeu_si512(acc.as_mut_ptr().add(i).cast(), h);
        }
        i += 8;
    }
    crate::arch::scalar::hash::combine_u64_column(&keys[i..n], &mut acc[i..n]);
}
