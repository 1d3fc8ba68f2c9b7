//! AVX-512 HyperLogLog leaves. Hashing, register index and rank are
//! computed eight keys per vector into a packed `(index << 8) | rank` block
//! (the rank with `vplzcntq`); the register updates then run as a scalar loop
//! over the block: a byte scatter-max would need conflict detection and
//! scatters, which are slower than scalar stores on current cores.

use core::arch::x86_64::*;

use super::hash::Mixer;
use crate::arch::mask::RowMask;
use crate::arch::scalar::hll as scalar;

/// Keys per block: 1 KiB of packed updates on the stack.
const BLOCK: usize = 256;

/// Keys the masked add stages before hashing them: a block's worth (so
/// the flush hashes whole blocks), or under Miri a few, so that short test
/// columns cross a flush.
const MASKED_FLUSH: usize = if cfg!(miri) { 16 } else { BLOCK };

/// Eight hashes to eight packed `(index << 8) | rank` dwords.
///
/// # Safety
///
/// The CPU supports AVX-512 F and CD (called from an AVX-512 leaf);
/// `1 <= p <= 63`.
#[inline(always)]
unsafe fn pack(h: __m512i, p: u32) -> __m256i {
    // SAFETY: AVX-512 F/CD register ops; the caller guarantees them.
    unsafe {
        // Per-lane shifts by a splatted count (`vpsrlvq`, one uop) rather
        // than a count in an xmm register (`vpsrlq`, two on some cores).
        let idx = _mm512_srlv_epi64(h, _mm512_set1_epi64(64 - p as i64));
        let w = _mm512_or_si512(
            _mm512_sllv_epi64(h, _mm512_set1_epi64(p as i64)),
            _mm512_set1_epi64(1i64 << (p - 1)),
        );
        // The guard bit keeps `w` nonzero, so the rank is its leading zero
        // count plus one (`vplzcntq`, AVX-512 CD).
        let rank = _mm512_add_epi64(_mm512_lzcnt_epi64(w), _mm512_set1_epi64(1));
        _mm512_cvtepi64_epi32(_mm512_or_si512(_mm512_slli_epi64::<8>(idx), rank))
    }
}

/// AVX-512 twin of `arch::scalar::hll::add_u64`.
///
/// # Safety
///
/// The CPU supports AVX-512; `4 <= p <= 18`; `regs.len() == 1 << p`.
#[target_feature(
    enable = "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,bmi2,popcnt"
)]
pub(crate) unsafe fn add_u64(regs: &mut [u8], p: u32, seed: u64, keys: &[u64]) {
    // SAFETY: AVX-512 is enabled on this leaf (caller contract).
    let mx = unsafe { Mixer::new() };
    let s = _mm512_set1_epi64(seed as i64);
    let mut packed = [0u32; BLOCK];
    let mut chunks = keys.chunks_exact(BLOCK);
    for chunk in &mut chunks {
        for (j, q) in chunk.chunks_exact(8).enumerate() {
            // SAFETY: q has 8 keys (64 bytes); packed[8j..8j+8] is in bounds
            // since 8j + 8 <= BLOCK; the CPU supports AVX-512 (caller
            // contract), as `mix` and `pack` need, and 4 <= p <= 18.
            unsafe {
                let k = _mm512_loadu_si512(q.as_ptr().cast());
                let v = pack(mx.mix(_mm512_xor_si512(k, s)), p);
                _mm256_storeu_si256(packed.as_mut_ptr().add(8 * j).cast(), v);
            }
        }
        scalar::apply_packed(regs, &packed);
    }
    scalar::add_u64(regs, p, seed, chunks.remainder());
}

/// Eight keys with the lanes of `k` moved to the front (`vpcompressq`,
/// register form: the memory form is microcoded on Zen 4). Under Miri,
/// which has no model of it, a lane-by-lane model.
///
/// # Safety
///
/// The CPU supports AVX-512 F.
#[inline(always)]
unsafe fn compress8(k: u8, v: __m512i) -> __m512i {
    #[cfg(not(miri))]
    // SAFETY: AVX-512 F, the caller's contract.
    unsafe {
        _mm512_maskz_compress_epi64(k, v)
    }
    #[cfg(miri)]
    {
        // SAFETY: __m512i and [u64; 8] have the same size, every bit
        // pattern valid.
        let a: [u64; 8] = unsafe { core::mem::transmute(v) };
        let mut r = [0u64; 8];
        let mut n = 0;
        for (i, &x) in a.iter().enumerate() {
            if k >> i & 1 == 1 {
                r[n] = x;
                n += 1;
            }
        }
        // SAFETY: as above.
        unsafe { core::mem::transmute::<[u64; 8], __m512i>(r) }
    }
}

/// AVX-512 twin of `arch::scalar::hll::add_u64_masked`: the counted keys
/// of every 8 rows are loaded (masked: only counted rows are read) and
/// compressed to the front of a stage, which is hashed and applied a
/// block at a time by [`add_u64`]. So only counted keys are hashed, and
/// no bit is extracted one at a time nor any selection vector written.
///
/// # Safety
///
/// As [`add_u64`]; `m` covers `keys.len()` rows.
#[target_feature(
    enable = "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,bmi2,popcnt"
)]
pub(crate) unsafe fn add_u64_masked(
    regs: &mut [u8],
    p: u32,
    seed: u64,
    keys: &[u64],
    m: RowMask<'_>,
) {
    let n = keys.len();
    // Room for one more 64-row block past a flush point.
    let mut stage = [0u64; BLOCK + 64];
    let mut fill = 0;
    for b in 0..n.div_ceil(64) {
        let rows = n - b * 64;
        let lim = if rows >= 64 { !0 } else { (1u64 << rows) - 1 };
        let w = m.word(b) & lim;
        if w == 0 {
            continue;
        }
        // No branch on an empty group of 8: at sparse selections it would
        // mispredict often, and an empty group stores nothing that counts.
        for j in 0..8 {
            let k = (w >> (8 * j)) as u8;
            // SAFETY: the masked load enables only lanes of counted rows,
            // all below n (`lim`), at an address formed with wrapping_add.
            // A block starts with fill < MASKED_FLUSH (flushed at >=) and
            // each group adds at most 8, so this 8-lane store ends below
            // MASKED_FLUSH + 64 <= stage.len(). AVX-512 is enabled.
            unsafe {
                let q = keys.as_ptr().wrapping_add(64 * b + 8 * j);
                let x = _mm512_maskz_loadu_epi64(k, q.cast());
                _mm512_storeu_si512(stage.as_mut_ptr().add(fill).cast(), compress8(k, x));
            }
            fill += k.count_ones() as usize;
        }
        if fill >= MASKED_FLUSH {
            // SAFETY: forwarded contract.
            unsafe { add_u64(regs, p, seed, &stage[..fill]) };
            fill = 0;
        }
    }
    // SAFETY: forwarded contract.
    unsafe { add_u64(regs, p, seed, &stage[..fill]) };
}

/// AVX-512 twin of `arch::scalar::hll::add_hashes`.
///
/// # Safety
///
/// As [`add_u64`].
#[target_feature(
    enable = "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,bmi2,popcnt"
)]
pub(crate) unsafe fn add_hashes(regs: &mut [u8], p: u32, hashes: &[u64]) {
    let mut packed = [0u32; BLOCK];
    let mut chunks = hashes.chunks_exact(BLOCK);
    for chunk in &mut chunks {
        for (j, q) in chunk.chunks_exact(8).enumerate() {
            // SAFETY: as in add_u64 (`pack` only).
            unsafe {
                let h = _mm512_loadu_si512(q.as_ptr().cast());
                _mm256_storeu_si256(packed.as_mut_ptr().add(8 * j).cast(), pack(h, p));
            }
        }
        scalar::apply_packed(regs, &packed);
    }
    scalar::add_hashes(regs, p, chunks.remainder());
}

/// AVX-512 twin of `arch::scalar::hll::merge`: 256 registers per iteration.
///
/// # Safety
///
/// The CPU supports AVX-512; `dst.len() == src.len()`.
#[target_feature(
    enable = "avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,bmi2,popcnt"
)]
pub(crate) unsafe fn merge(dst: &mut [u8], src: &[u8]) {
    let n = dst.len().min(src.len());
    let mut i = 0;
    while i + 256 <= n {
        // SAFETY: i + 256 <= n bounds the four 64-byte accesses to each slice.
        unsafe {
            let d = dst.as_mut_ptr().add(i);
            let s = src.as_ptr().add(i);
            for k in 0..4 {
                let a = _mm512_loadu_si512(d.add(64 * k).cast());
                let b = _mm512_loadu_si512(s.add(64 * k).cast());
                _mm512_storeu_si512(d.add(64 * k).cast(), _mm512_max_epu8(a, b));
            }
        }
        i += 256;
    }
    scalar::merge(&mut dst[i..n], &src[i..n]);
}
