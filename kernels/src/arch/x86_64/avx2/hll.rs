//! AVX2 HyperLogLog leaves. Hashing, register index and rank are computed
//! four keys per vector into a packed `(index << 8) | rank` block; the
//! register updates then run as a scalar loop over the block (a byte
//! scatter-max has no AVX2 form, and the block split lets the out-of-order
//! core overlap the next block's hashing with this block's updates).

use core::arch::x86_64::*;

use super::hash::Mixer;
use crate::arch::scalar::hll as scalar;

/// Keys per block: 1 KiB of packed updates on the stack.
const BLOCK: usize = 256;

/// Rank (one plus leading zeros) of each 64-bit lane `w`, every lane
/// non-zero. AVX2 has neither a 64-bit `lzcnt` nor a vector popcount, and
/// float tricks would not build for soft-float targets: smear the top set
/// bit down (`w | w >> 1 | ...`), so the lane holds `64 - lz` ones, and
/// count them with the nibble-table `vpshufb` popcount summed by `vpsadbw`.
#[inline(always)]
fn rank(mut w: __m256i) -> __m256i {
    // SAFETY: only ever inlined into leaves compiled with AVX2 enabled.
    unsafe {
        w = _mm256_or_si256(w, _mm256_srli_epi64::<1>(w));
        w = _mm256_or_si256(w, _mm256_srli_epi64::<2>(w));
        w = _mm256_or_si256(w, _mm256_srli_epi64::<4>(w));
        w = _mm256_or_si256(w, _mm256_srli_epi64::<8>(w));
        w = _mm256_or_si256(w, _mm256_srli_epi64::<16>(w));
        w = _mm256_or_si256(w, _mm256_srli_epi64::<32>(w));
        let table = _mm256_setr_epi8(
            0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2,
            3, 3, 4,
        );
        let nib = _mm256_set1_epi8(0x0F);
        let lo = _mm256_shuffle_epi8(table, _mm256_and_si256(w, nib));
        let hi = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16::<4>(w), nib));
        let ones = _mm256_sad_epu8(_mm256_add_epi8(lo, hi), _mm256_setzero_si256());
        // lz = 64 - ones; rank = lz + 1.
        _mm256_sub_epi64(_mm256_set1_epi64x(65), ones)
    }
}

/// Four hashes to four packed `(index << 8) | rank` lanes in the low 128 bits.
#[inline(always)]
fn pack(h: __m256i, p: u32) -> __m128i {
    // SAFETY: only ever inlined into leaves compiled with AVX2 enabled.
    unsafe {
        let idx = _mm256_srl_epi64(h, _mm_cvtsi32_si128(64 - p as i32));
        let w = _mm256_or_si256(
            _mm256_sll_epi64(h, _mm_cvtsi32_si128(p as i32)),
            _mm256_set1_epi64x(1i64 << (p - 1)),
        );
        let packed = _mm256_or_si256(_mm256_slli_epi64::<8>(idx), rank(w));
        // Gather the low dwords of the four lanes into the low 128 bits.
        let lo = _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6));
        _mm256_castsi256_si128(lo)
    }
}

/// AVX2 twin of `arch::scalar::hll::add_u64`.
///
/// # Safety
///
/// The CPU supports AVX2; `4 <= p <= 18`; `regs.len() == 1 << p`.
#[target_feature(enable = "avx2,bmi1,bmi2,popcnt,fma")]
pub(crate) unsafe fn add_u64(regs: &mut [u8], p: u32, seed: u64, keys: &[u64]) {
    let mx = Mixer::new();
    let s = _mm256_set1_epi64x(seed as i64);
    let mut packed = [0u32; BLOCK];
    let mut chunks = keys.chunks_exact(BLOCK);
    for chunk in &mut chunks {
        for (j, q) in chunk.chunks_exact(4).enumerate() {
            // SAFETY: q has 4 keys (32 bytes); packed[4j..4j+4] is in bounds
            // since 4j + 4 <= BLOCK.
            unsafe {
                let k = _mm256_loadu_si256(q.as_ptr().cast());
                let v = pack(mx.mix(_mm256_xor_si256(k, s)), p);
                _mm_storeu_si128(packed.as_mut_ptr().add(4 * j).cast(), v);
            }
        }
        scalar::apply_packed(regs, &packed);
    }
    scalar::add_u64(regs, p, seed, chunks.remainder());
}

/// AVX2 twin of `arch::scalar::hll::add_hashes`.
///
/// # Safety
///
/// As [`add_u64`].
#[target_feature(enable = "avx2,bmi1,bmi2,popcnt,fma")]
pub(crate) unsafe fn add_hashes(regs: &mut [u8], p: u32, hashes: &[u64]) {
    let mut packed = [0u32; BLOCK];
    let mut chunks = hashes.chunks_exact(BLOCK);
    for chunk in &mut chunks {
        for (j, q) in chunk.chunks_exact(4).enumerate() {
            // SAFETY: as in add_u64.
            unsafe {
                let h = _mm256_loadu_si256(q.as_ptr().cast());
                _mm_storeu_si128(packed.as_mut_ptr().add(4 * j).cast(), pack(h, p));
            }
        }
        scalar::apply_packed(regs, &packed);
    }
    scalar::add_hashes(regs, p, chunks.remainder());
}

/// AVX2 twin of `arch::scalar::hll::merge`: 128 registers per iteration.
///
/// # Safety
///
/// The CPU supports AVX2; `dst.len() == src.len()`.
#[target_feature(enable = "avx2,bmi1,bmi2,popcnt,fma")]
pub(crate) unsafe fn merge(dst: &mut [u8], src: &[u8]) {
    let n = dst.len().min(src.len());
    let mut i = 0;
    while i + 128 <= n {
        // SAFETY: i + 128 <= n bounds the four 32-byte accesses to each slice.
        unsafe {
            let d = dst.as_mut_ptr().add(i);
            let s = src.as_ptr().add(i);
            for k in 0..4 {
                let a = _mm256_loadu_si256(d.add(32 * k).cast());
                let b = _mm256_loadu_si256(s.add(32 * k).cast());
                _mm256_storeu_si256(d.add(32 * k).cast(), _mm256_max_epu8(a, b));
            }
        }
        i += 128;
    }
    scalar::merge(&mut dst[i..n], &src[i..n]);
}
