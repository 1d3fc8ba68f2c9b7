//! Scalar twins of the HyperLogLog kernels: the oracle every other level
//! must equal register for register.

use crate::arch::mask::RowMask;
use crate::arch::scalar::hash::hash_u64;

/// Register index and rank of hash `h` at precision `p` (4..=18): the index
/// is the top `p` bits; the rank is one plus the leading zeros of the
/// remaining `64 - p` bits, capped at `65 - p` by a guard bit.
#[inline(always)]
pub(crate) fn index_rank(h: u64, p: u32) -> (usize, u8) {
    let idx = (h >> (64 - p)) as usize;
    let w = (h << p) | (1u64 << (p - 1));
    (idx, w.leading_zeros() as u8 + 1)
}

/// Adds each key of `keys`, hashed with `seed`, to the registers.
/// `regs.len() == 1 << p` is checked by the caller.
pub(crate) fn add_u64(regs: &mut [u8], p: u32, seed: u64, keys: &[u64]) {
    for &k in keys {
        let (i, r) = index_rank(hash_u64(k, seed), p);
        if r > regs[i] {
            regs[i] = r;
        }
    }
}

/// Adds each key of `keys` whose row `m` counts, hashed with `seed`.
/// `regs.len() == 1 << p` is checked by the caller; `m` covers the rows.
pub(crate) fn add_u64_masked(regs: &mut [u8], p: u32, seed: u64, keys: &[u64], m: RowMask<'_>) {
    let n = keys.len();
    for b in 0..n.div_ceil(64) {
        let rows = (n - b * 64).min(64);
        let mut w = m.word(b) & (!0u64 >> (64 - rows));
        while w != 0 {
            let k = keys[b * 64 + w.trailing_zeros() as usize];
            let (i, r) = index_rank(hash_u64(k, seed), p);
            if r > regs[i] {
                regs[i] = r;
            }
            w &= w - 1;
        }
    }
}

/// Adds pre-computed hashes to the registers.
pub(crate) fn add_hashes(regs: &mut [u8], p: u32, hashes: &[u64]) {
    for &h in hashes {
        let (i, r) = index_rank(h, p);
        if r > regs[i] {
            regs[i] = r;
        }
    }
}

/// Applies packed `(index << 8) | rank` updates (what the SIMD leaves
/// compute a block at a time) to the registers.
#[cfg_attr(
    not(all(target_arch = "x86_64", target_feature = "sse2")),
    allow(dead_code) // only the SIMD leaves call it
)]
#[inline(always)]
pub(crate) fn apply_packed(regs: &mut [u8], packed: &[u32]) {
    // regs.len() is 2^p and every index is below it, so the mask changes
    // nothing; it bounds the index without a per-update check.
    let Some(mask) = regs.len().checked_sub(1) else {
        return;
    };
    for &pk in packed {
        // SAFETY: x & mask <= mask = regs.len() - 1 for any x.
        let slot = unsafe { regs.get_unchecked_mut((pk >> 8) as usize & mask) };
        // Always store the maximum, with no branch on a new one: while a
        // sketch holds fewer than a few times m keys, a new maximum is
        // frequent and unpredictable (32 keys a register: one update in
        // about ten stores), and the mispredicted branch cost more than the
        // stores it saved (masked add on Intel, 1 in 2 of 1 Mi rows into a
        // fresh p = 14 sketch: 1.66 ns a row with the branch, 1.17 without).
        *slot = (*slot).max(pk as u8);
    }
}

/// [`apply_packed`] for updates whose indexes and ranks a SIMD leaf wrote
/// apart (register `idx[i]` takes at least `rank[i]`, a rank below 256):
/// per update two loads and the register's read-modify-write, no shift or
/// mask. On Zen 4 the AVX-512 column add ran 0.91x its time with it
/// (`bench/results/2026-12-08-kernels-hll-split-zen4.md`).
///
/// # Safety
///
/// Every `idx[i]` is below `regs.len()`; `rank` is as long as `idx`.
#[cfg_attr(
    not(all(target_arch = "x86_64", target_feature = "sse2")),
    allow(dead_code) // only the SIMD leaves call it
)]
#[inline(always)]
pub(crate) unsafe fn apply_split(regs: &mut [u8], idx: &[u32], rank: &[u32]) {
    debug_assert_eq!(idx.len(), rank.len());
    let r = regs.as_mut_ptr();
    for (&i, &k) in idx.iter().zip(rank) {
        debug_assert!((i as usize) < regs.len());
        // SAFETY: `i` is below `regs.len()` (the contract).
        unsafe {
            let slot = r.add(i as usize);
            *slot = (*slot).max(k as u8);
        }
    }
}

/// `dst[i] = max(dst[i], src[i])`; equal lengths are checked by the caller.
pub(crate) fn merge(dst: &mut [u8], src: &[u8]) {
    for (d, &s) in dst.iter_mut().zip(src) {
        *d = (*d).max(s);
    }
}
