//! Scalar twins of the bitmap kernels.

/// Set bits in all of `words`.
pub(crate) fn popcount(words: &[u64]) -> usize {
    words.iter().map(|w| w.count_ones() as usize).sum()
}
