//! Bitmaps of `u64` words: bit `i % 64` of word `i / 64` is row `i`.
//! And, or, and-not, popcount, and bitmap to selected row indices.

use crate::{Error, Kernels, bitmap_words};

impl Kernels {
    /// Popcount of the first `rows` bits; the caller checked the words cover
    /// them.
    pub(crate) fn popcount_unchecked(self, words: &[u64], rows: usize) -> usize {
        let full = rows / 64;
        let mut n = crate::arch::scalar::bitmap::popcount(&words[..full]);
        if !rows.is_multiple_of(64) {
            n += (words[full] & ((1u64 << (rows % 64)) - 1)).count_ones() as usize;
        }
        n
    }

    /// [`popcount`] at this level.
    pub fn popcount(self, words: &[u64], rows: usize) -> Result<usize, Error> {
        crate::check_bitmap("bitmap", rows, Some(words))?;
        Ok(self.popcount_unchecked(words, rows))
    }
}

/// Number of set bits among the first `rows` bits of `words`. Errors if
/// `words` has fewer than `rows.div_ceil(64)` words.
///
/// ```
/// assert_eq!(keel_kernels::bitmap::popcount(&[u64::MAX, 0b111], 66)?, 66);
/// # Ok::<(), keel_kernels::Error>(())
/// ```
pub fn popcount(words: &[u64], rows: usize) -> Result<usize, Error> {
    Kernels::current().popcount(words, rows)
}

/// Words a bitmap of `rows` bits needs (re-exported for convenience).
pub const fn words_for(rows: usize) -> usize {
    bitmap_words(rows)
}
