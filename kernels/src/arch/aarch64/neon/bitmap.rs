//! NEON bitmap kernels: and/or/and-not two words per vector (`and`, `orr`,
//! `bic`); popcount counts bits per byte (`cnt`) and widens the byte counts
//! into 16-bit lanes as it adds (`uadalp`), folding them every 2048 vectors
//! (at most 16 bits per lane per vector, so a lane stays below 2^15).
//! Odd trailing words run the scalar twin.

use crate::arch::scalar::bitmap as scalar;
use core::arch::aarch64::*;

macro_rules! binop {
    ($name:ident, $op:ident) => {
        /// As the scalar twin, two words per vector.
        ///
        /// # Safety
        /// The CPU supports NEON; `dst.len() == src.len()`.
        #[target_feature(enable = "neon")]
        pub(crate) unsafe fn $name(dst: &mut [u64], src: &[u64]) {
            let pairs = dst.len() / 2;
            // SAFETY: pair `i < pairs` reads and writes words 2i, 2i+1,
            // inside `dst` and inside `src` (equal lengths, caller
            // contract); NEON is enabled.
            unsafe {
                for i in 0..pairs {
                    let d = dst.as_mut_ptr().add(2 * i);
                    let s = vld1q_u64(src.as_ptr().add(2 * i));
                    vst1q_u64(d, $op(vld1q_u64(d), s));
                }
            }
            scalar::$name(&mut dst[2 * pairs..], &src[2 * pairs..]);
        }
    };
}
binop!(and, vandq_u64);
binop!(or, vorrq_u64);
binop!(andnot, vbicq_u64);

/// Set bits in `words`.
///
/// # Safety
/// The CPU supports NEON.
#[target_feature(enable = "neon")]
pub(crate) unsafe fn popcount(words: &[u64]) -> usize {
    const FOLD: usize = 2048;
    let pairs = words.len() / 2;
    let mut n = 0usize;
    let mut i = 0;
    while i < pairs {
        let end = pairs.min(i + FOLD);
        // SAFETY: pair `i < pairs` reads words 2i, 2i+1, inside `words`;
        // NEON is enabled.
        unsafe {
            let mut acc = vdupq_n_u16(0);
            while i < end {
                let x = vld1q_u8(words.as_ptr().add(2 * i).cast());
                acc = vpadalq_u8(acc, vcntq_u8(x));
                i += 1;
            }
            n += vaddlvq_u16(acc) as usize;
        }
    }
    n + scalar::popcount(&words[2 * pairs..])
}
