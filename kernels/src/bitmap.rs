//! Bitmaps of `u64` words: bit `i % 64` of word `i / 64` is row `i`.
//! In-place and, or, and-not; popcount of the first `rows` bits; and the
//! selection vector (indices of set bits).
//!
//! ```
//! use keel_kernels::bitmap;
//! let mut a = [0b1111u64];
//! bitmap::and(&mut a, &[0b0110])?;
//! bitmap::or(&mut a, &[0b1000_0000])?;
//! bitmap::andnot(&mut a, &[0b0010])?;
//! assert_eq!(a, [0b1000_0100]);
//! assert_eq!(bitmap::popcount(&a, 8)?, 2);
//! let mut rows = [0u32; 8];
//! assert_eq!(bitmap::select_into(&a, 8, &mut rows)?, 2);
//! assert_eq!(&rows[..2], &[2, 7]);
//! # Ok::<(), keel_kernels::Error>(())
//! ```

use crate::mask::{Bits, Mask, Resolved};
use crate::{Error, Kernels, bitmap_words, check_bitmap};

/// The operations [`Kernels::bitmap_op`] applies word by word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    And,
    Or,
    AndNot,
}

fn check_pair(dst: &[u64], src: &[u64]) -> Result<(), Error> {
    if dst.len() != src.len() {
        return Err(Error::LengthMismatch {
            what: "source bitmap",
            expected: dst.len(),
            actual: src.len(),
        });
    }
    Ok(())
}

impl Kernels {
    fn bitmap_op(self, op: Op, dst: &mut [u64], src: &[u64]) -> Result<(), Error> {
        check_pair(dst, src)?;
        #[cfg(target_arch = "aarch64")]
        use crate::arch::aarch64::neon::bitmap as ne;
        use crate::arch::dispatch;
        use crate::arch::scalar::bitmap as sc;
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        use crate::arch::x86_64::{avx2::bitmap as a2, avx512::bitmap as a5};
        match op {
            Op::And => dispatch!(self.level(), sc::and, a2::and, a5::and, ne::and, (dst, src)),
            Op::Or => dispatch!(self.level(), sc::or, a2::or, a5::or, ne::or, (dst, src)),
            Op::AndNot => {
                dispatch!(
                    self.level(),
                    sc::andnot,
                    a2::andnot,
                    a5::andnot,
                    ne::andnot,
                    (dst, src)
                )
            }
        }
        Ok(())
    }

    /// [`and`] at this level.
    ///
    /// ```
    /// use keel_kernels::Kernels;
    /// for k in Kernels::supported() {
    ///     let mut a = [0b1100u64, !0];
    ///     k.and(&mut a, &[0b1010, 1])?;
    ///     assert_eq!(a, [0b1000, 1]);
    /// }
    /// assert!(Kernels::scalar().and(&mut [0u64; 2], &[0]).is_err());
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn and(self, dst: &mut [u64], src: &[u64]) -> Result<(), Error> {
        self.bitmap_op(Op::And, dst, src)
    }

    /// [`or`] at this level.
    ///
    /// ```
    /// use keel_kernels::Kernels;
    /// for k in Kernels::supported() {
    ///     let mut a = [0b1100u64, 0];
    ///     k.or(&mut a, &[0b1010, 1 << 63])?;
    ///     assert_eq!(a, [0b1110, 1 << 63]);
    /// }
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn or(self, dst: &mut [u64], src: &[u64]) -> Result<(), Error> {
        self.bitmap_op(Op::Or, dst, src)
    }

    /// [`andnot`] at this level.
    ///
    /// ```
    /// use keel_kernels::Kernels;
    /// for k in Kernels::supported() {
    ///     let mut a = [0b1100u64, !0];
    ///     k.andnot(&mut a, &[0b1010, 1])?;
    ///     assert_eq!(a, [0b0100, !1]);
    /// }
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn andnot(self, dst: &mut [u64], src: &[u64]) -> Result<(), Error> {
        self.bitmap_op(Op::AndNot, dst, src)
    }

    /// Popcount of the first `rows` bits; the caller checked the words cover
    /// them.
    pub(crate) fn popcount_unchecked(self, words: &[u64], rows: usize) -> usize {
        use crate::arch::scalar::bitmap as sc;
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        use crate::arch::x86_64::{avx2::bitmap as a2, avx512::bitmap as a5};
        let full = rows / 64;
        let w = &words[..full];
        #[cfg(target_arch = "aarch64")]
        use crate::arch::aarch64::neon::bitmap as ne;
        let mut n = crate::arch::dispatch!(
            self.level(),
            sc::popcount,
            a2::popcount,
            a5::popcount,
            ne::popcount,
            (w)
        );
        if !rows.is_multiple_of(64) {
            n += (words[full] & ((1u64 << (rows % 64)) - 1)).count_ones() as usize;
        }
        n
    }

    /// [`popcount`] at this level.
    ///
    /// ```
    /// use keel_kernels::Kernels;
    /// let words = [!0u64, 0b111];
    /// for k in Kernels::supported() {
    ///     assert_eq!(k.popcount(&words, 66)?, 66);
    ///     assert_eq!(k.popcount(&words, 65)?, 65);
    ///     assert!(k.popcount(&words, 129).is_err());
    /// }
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn popcount(self, words: &[u64], rows: usize) -> Result<usize, Error> {
        check_bitmap("bitmap", rows, Some(words))?;
        Ok(self.popcount_unchecked(words, rows))
    }

    /// [`select_into`] at this level.
    ///
    /// ```
    /// use keel_kernels::Kernels;
    /// let bits = [0b1001u64, 1 << 3];
    /// let mut rows = [0u32; 3];
    /// for k in Kernels::supported() {
    ///     assert_eq!(k.select_into(&bits, 128, &mut rows)?, 3);
    ///     assert_eq!(rows, [0, 3, 67]);
    ///     assert!(k.select_into(&bits, 128, &mut [0u32; 2]).is_err());
    /// }
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn select_into(self, words: &[u64], rows: usize, out: &mut [u32]) -> Result<usize, Error> {
        check_bitmap("bitmap", rows, Some(words))?;
        // In u64: on 32-bit targets `u32::MAX as usize + 1` overflows.
        if rows as u64 > u64::from(u32::MAX) + 1 {
            return Err(Error::InvalidArgument {
                what: "rows: selection vectors index with u32, so at most 2^32 rows",
            });
        }
        let set = self.popcount_unchecked(words, rows);
        if out.len() < set {
            return Err(Error::OutputTooShort {
                what: "selection vector",
                needed: set,
                actual: out.len(),
            });
        }
        let w = &words[..bitmap_words(rows)];
        use crate::arch::scalar::bitmap as sc;
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        use crate::arch::x86_64::{avx2::bitmap as a2, avx512::bitmap as a5};
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        if self.level() == crate::cpu::Level::Avx512 && crate::cpu::vbmi2() {
            // SAFETY: this handle's level is AVX-512, so the CPU has it,
            // and VBMI2 where `cpu::vbmi2` says so; `out` has room for the
            // `set` bits (checked above).
            return Ok(unsafe { a5::select_vbmi2(w, rows, set, out) });
        }
        // The AVX2 table form also serves AVX-512 CPUs without VBMI2
        // (Skylake-SP, Cascade Lake).
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        if matches!(
            self.level(),
            crate::cpu::Level::Avx2 | crate::cpu::Level::Avx512
        ) && set * 16 >= rows
        {
            // SAFETY: this handle's level is AVX2 or AVX-512, so the CPU
            // has AVX2; `out[..set]` holds exactly the set bits among the
            // first `rows` of `w`, which has `bitmap_words(rows)` words.
            return Ok(unsafe { a2::select_lut(w, rows, &mut out[..set]) });
        }
        Ok(crate::arch::dispatch!(
            self.level(),
            sc::select,
            a2::select,
            a5::select,
            (w, rows, out)
        ))
    }

    /// [`compact`] at this level.
    ///
    /// ```
    /// use keel_kernels::{mask::{Bits, Selection}, Kernels};
    /// let validity = [0b1101_0110u64];
    /// let picked = Selection::Bitmap(Bits::new(&[0b1111_0000]));
    /// let mut out = [0u64; 1];
    /// for k in Kernels::supported() {
    ///     assert_eq!(k.compact(Bits::new(&validity), 8, picked, &mut out)?, 4);
    ///     assert_eq!(out, [0b1101]);
    /// }
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn compact<'a>(
        self,
        src: Bits<'_>,
        rows: usize,
        mask: impl Into<Mask<'a>>,
        out: &mut [u64],
    ) -> Result<usize, Error> {
        src.check("source bitmap", rows)?;
        let room = |count: usize| {
            let needed = count.div_ceil(64);
            if out.len() < needed {
                return Err(Error::OutputTooShort {
                    what: "compacted bitmap",
                    needed,
                    actual: out.len(),
                });
            }
            Ok(())
        };
        match mask.into().resolve(rows)? {
            Resolved::Rows(r, m) => {
                let counted = || r.iter().map(|&i| i as usize).filter(|&i| m.get(i));
                let count = counted().count();
                room(count)?;
                out[..count.div_ceil(64)].fill(0);
                for (k, i) in counted().enumerate() {
                    out[k / 64] |= u64::from(src.0.get(i)) << (k % 64);
                }
                Ok(count)
            }
            Resolved::Bits(m) => {
                let count = self.count_bits(m, rows);
                room(count)?;
                let out = &mut out[..count.div_ceil(64)];
                #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
                if matches!(
                    self.level(),
                    crate::cpu::Level::Avx2 | crate::cpu::Level::Avx512
                ) && crate::cpu::fast_pext()
                {
                    // SAFETY: this handle's level is AVX2 or AVX-512, so the
                    // CPU has BMI2; `out` holds the bits `m` counts
                    // (checked above).
                    return Ok(unsafe {
                        crate::arch::x86_64::avx2::bitmap::compact(src.0, m, rows, out)
                    });
                }
                Ok(crate::arch::scalar::bitmap::compact(src.0, m, rows, out))
            }
        }
    }

    /// [`select`] at this level.
    ///
    /// ```
    /// use keel_kernels::Kernels;
    /// let bits = [0b1001u64, 1 << 3];
    /// for k in Kernels::supported() {
    ///     assert_eq!(k.select(&bits, 128)?, vec![0, 3, 67]);
    ///     assert_eq!(k.select(&bits, 64)?, vec![0, 3]);
    /// }
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    #[cfg(feature = "alloc")]
    pub fn select(self, words: &[u64], rows: usize) -> Result<alloc::vec::Vec<u32>, Error> {
        check_bitmap("bitmap", rows, Some(words))?;
        let mut out = alloc::vec![0u32; self.popcount_unchecked(words, rows)];
        let n = self.select_into(words, rows, &mut out)?;
        debug_assert_eq!(n, out.len());
        Ok(out)
    }
}

/// The bits of `src` at the rows among its first `rows` that `mask`
/// counts, packed in order from bit 0 of `out`; returns how many. The
/// bitmap form of [`gather_masked`](crate::gather::gather_masked): a
/// filter's compaction of a validity bitmap, say, so that the nulls follow
/// the values. `src` and a mask's bitmaps may start at any bit offset; a
/// selection vector packs its counted rows in its order. The word holding
/// the last bit has zeros above it, and nothing past it is written. Errors
/// if a bitmap is shorter than `rows` or `out` holds fewer bits than are
/// counted. At the AVX2 and AVX-512 levels each 64-row word is one BMI2
/// `pext` (where it is fast: Intel, and AMD from Zen 3), otherwise a loop
/// over the mask's runs of set bits.
///
/// ```
/// use keel_kernels::bitmap;
/// use keel_kernels::mask::{Bits, Mask, Selection};
/// let validity = [0b1101_0110u64];
/// let picked = Mask::from(Selection::Bitmap(Bits::new(&[0b1111_0000])));
/// let mut out = [0u64; 1];
/// assert_eq!(bitmap::compact(Bits::new(&validity), 8, picked, &mut out)?, 4);
/// assert_eq!(out, [0b1101]);
/// let rows = Selection::Rows(&[7, 0, 1]);
/// assert_eq!(bitmap::compact(Bits::new(&validity), 8, rows, &mut out)?, 3);
/// assert_eq!(out, [0b101]);
/// # Ok::<(), keel_kernels::Error>(())
/// ```
pub fn compact<'a>(
    src: Bits<'_>,
    rows: usize,
    mask: impl Into<Mask<'a>>,
    out: &mut [u64],
) -> Result<usize, Error> {
    Kernels::current().compact(src, rows, mask, out)
}

/// `dst[i] &= src[i]`. Errors if the lengths differ.
pub fn and(dst: &mut [u64], src: &[u64]) -> Result<(), Error> {
    Kernels::current().and(dst, src)
}

/// `dst[i] |= src[i]`. Errors if the lengths differ.
pub fn or(dst: &mut [u64], src: &[u64]) -> Result<(), Error> {
    Kernels::current().or(dst, src)
}

/// `dst[i] &= !src[i]`. Errors if the lengths differ.
pub fn andnot(dst: &mut [u64], src: &[u64]) -> Result<(), Error> {
    Kernels::current().andnot(dst, src)
}

/// Number of set bits among the first `rows` bits of `words`. Errors if
/// `words` has fewer than `rows.div_ceil(64)` words.
pub fn popcount(words: &[u64], rows: usize) -> Result<usize, Error> {
    Kernels::current().popcount(words, rows)
}

/// Writes the indices of the set bits among the first `rows` bits, in
/// increasing order, to the front of `out`, and returns how many. Errors if
/// `words` is too short, `out` has less room than the set bits, or `rows`
/// exceeds 2^32.
pub fn select_into(words: &[u64], rows: usize, out: &mut [u32]) -> Result<usize, Error> {
    Kernels::current().select_into(words, rows, out)
}

/// [`select_into`] into a vector of exactly the set bits.
///
/// ```
/// use keel_kernels::bitmap;
/// let bits = [0b1010_0001u64, 1];
/// assert_eq!(bitmap::select(&bits, 65)?, vec![0, 5, 7, 64]);
/// assert_eq!(bitmap::select(&bits, 64)?, vec![0, 5, 7]);
/// assert!(bitmap::select(&bits, 129).is_err());
/// # Ok::<(), keel_kernels::Error>(())
/// ```
#[cfg(feature = "alloc")]
pub fn select(words: &[u64], rows: usize) -> Result<alloc::vec::Vec<u32>, Error> {
    Kernels::current().select(words, rows)
}
