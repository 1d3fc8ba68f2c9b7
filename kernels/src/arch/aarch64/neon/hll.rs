//! NEON HyperLogLog merge: the element-wise max of the registers, 64 per
//! iteration (`umax` on four 16-byte vectors). Adding keys stays scalar at
//! this level: NEON has no 64-bit lane multiply for the hash.

use crate::arch::scalar::hll as scalar;
use core::arch::aarch64::*;

/// NEON twin of `arch::scalar::hll::merge`.
///
/// # Safety
///
/// The CPU supports NEON; `dst.len() == src.len()`.
#[target_feature(enable = "neon")]
pub(crate) unsafe fn merge(dst: &mut [u8], src: &[u8]) {
    let n = dst.len().min(src.len());
    let mut i = 0;
    while i + 64 <= n {
        // SAFETY: i + 64 <= n bounds the four 16-byte accesses to each slice;
        // NEON is enabled.
        unsafe {
            let d = dst.as_mut_ptr().add(i);
            let s = src.as_ptr().add(i);
            for k in 0..4 {
                let a = vld1q_u8(d.add(16 * k));
                let b = vld1q_u8(s.add(16 * k));
                vst1q_u8(d.add(16 * k), vmaxq_u8(a, b));
            }
        }
        i += 64;
    }
    scalar::merge(&mut dst[i..n], &src[i..n]);
}
