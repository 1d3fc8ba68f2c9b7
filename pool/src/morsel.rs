//! Morsels: ranges of a length claimed from one atomic counter, so a faster
//! hand simply claims more of them.

use crate::sync::{AtomicUsize, Ordering};
use std::ops::Range;

/// The claim counter of one morsel loop.
pub(crate) struct Morsels {
    next: AtomicUsize,
    len: usize,
    morsel: usize,
    count: usize,
}

impl Morsels {
    /// Morsels of `morsel` items (at least 1) over `0..len`.
    pub(crate) fn new(len: usize, morsel: usize) -> Self {
        let morsel = morsel.max(1);
        Morsels {
            next: AtomicUsize::new(0),
            len,
            morsel,
            count: len.div_ceil(morsel),
        }
    }

    /// How many morsels there are.
    pub(crate) fn count(&self) -> usize {
        self.count
    }

    /// Claims the next morsel. The counter counts morsels, not items, and
    /// each hand stops at its first failed claim, so it never passes
    /// `count + hands` (the pool keeps that below `usize::MAX`).
    /// Returns the morsel's index (`0..count`) and its range.
    #[inline]
    pub(crate) fn claim(&self) -> Option<(usize, Range<usize>)> {
        // Relaxed: the RMW alone gives each morsel to one hand.
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        if i >= self.count {
            return None;
        }
        let start = i * self.morsel; // < len: i < count = ceil(len / morsel)
        Some((i, start..start + (self.len - start).min(self.morsel)))
    }

    /// Whether every morsel was claimed (read after the batch completed).
    pub(crate) fn all_claimed(&self) -> bool {
        self.next.load(Ordering::Relaxed) >= self.count
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_cover_exactly_once() {
        for len in 0..50 {
            for morsel in 0..7 {
                let m = Morsels::new(len, morsel);
                let mut seen = vec![0u8; len];
                let mut next = 0;
                while let Some((i, r)) = m.claim() {
                    assert_eq!(i, next);
                    next += 1;
                    assert!(!r.is_empty());
                    for i in r {
                        seen[i] += 1;
                    }
                }
                assert!(seen.iter().all(|&n| n == 1), "len {len} morsel {morsel}");
                assert!(m.claim().is_none());
            }
        }
    }

    #[test]
    fn huge_len_does_not_overflow() {
        let m = Morsels::new(usize::MAX, usize::MAX / 2);
        assert_eq!(m.count(), 3);
        assert_eq!(m.claim(), Some((0, 0..usize::MAX / 2)));
        assert_eq!(m.claim(), Some((1, usize::MAX / 2..usize::MAX - 1)));
        assert_eq!(m.claim(), Some((2, usize::MAX - 1..usize::MAX)));
        assert_eq!(m.claim(), None);
    }
}
