//! Scalar twins of the HyperLogLog kernels: the oracle every other level
//! must equal register for register.

use crate::hash::hash_u64;

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
pub fn add_u64(regs: &mut [u8], p: u32, seed: u64, keys: &[u64]) {
    for &k in keys {
        let (i, r) = index_rank(hash_u64(k, seed), p);
        if r > regs[i] {
            regs[i] = r;
        }
    }
}

/// Adds pre-computed hashes to the registers.
pub fn add_hashes(regs: &mut [u8], p: u32, hashes: &[u64]) {
    for &h in hashes {
        let (i, r) = index_rank(h, p);
        if r > regs[i] {
            regs[i] = r;
        }
    }
}

/// Applies packed `(index << 8) | rank` updates (what the SIMD leaves
/// compute a block at a time) to the registers.
#[inline(always)]
pub(crate) fn apply_packed(regs: &mut [u8], packed: &[u32]) {
    for &pk in packed {
        let slot = &mut regs[(pk >> 8) as usize];
        // Branch-free max: once the sketch fills, most ranks lose, and a
        // data-dependent branch would mispredict on fresh sketches.
        *slot = (*slot).max(pk as u8);
    }
}

/// `dst[i] = max(dst[i], src[i])`; equal lengths are checked by the caller.
pub fn merge(dst: &mut [u8], src: &[u8]) {
    for (d, &s) in dst.iter_mut().zip(src) {
        *d = (*d).max(s);
    }
}
