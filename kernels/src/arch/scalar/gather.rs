//! Portable gather with software prefetch: the oracle's twin and the kernel
//! that wins wherever the hardware gather instructions do not (see the
//! crate README).

use crate::gather::raw::{Dst, Idx, Src};

/// How many indices ahead the prefetch reaches: far enough to cover a DRAM
/// miss at a few ns per row, near enough that the line is still in L1 when
/// its row is copied.
pub(crate) const DISTANCE: usize = 32;

/// An index that addresses a row.
pub(crate) trait Row: Copy {
    fn row(self) -> usize;
}

impl Row for u32 {
    #[inline(always)]
    fn row(self) -> usize {
        self as usize
    }
}

impl Row for u64 {
    #[inline(always)]
    fn row(self) -> usize {
        // Callers guarantee the index is below a slice length, so it fits.
        self as usize
    }
}

/// Hints that the line holding `p` will be read soon. Never faults, so `p`
/// may be any address (it is computed with wrapping arithmetic).
#[inline(always)]
pub(crate) fn prefetch<T>(p: *const T) {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse", not(miri)))]
    // SAFETY: prefetch is a hint; it never dereferences or faults on `p`.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>())
    };
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse", not(miri))))]
    let _ = p;
}

/// Gathers `out.len()` rows of `src` by `idx`; indices past `out.len()` are
/// read only as prefetch hints.
///
/// # Safety
///
/// `idx.len() >= out.len()` and `idx[i] < src.len()` for every `i < out.len()`.
#[inline]
pub(crate) unsafe fn take<R: Copy, I: Row>(
    src: &[R],
    idx: &[I],
    out: &mut [R],
    prefetch_ahead: bool,
) {
    let n = out.len();
    debug_assert!(idx.len() >= n);
    let s = src.as_ptr();
    let o = out.as_mut_ptr();
    let mut i = 0;
    if prefetch_ahead {
        // Rows whose prefetch target lies inside `idx`.
        let with_hint = n.min(idx.len().saturating_sub(DISTANCE));
        while i < with_hint {
            // SAFETY: i + DISTANCE < idx.len() (by `with_hint`); prefetching an
            // unchecked row is harmless since prefetch never faults.
            let ahead = unsafe { *idx.get_unchecked(i + DISTANCE) };
            prefetch(s.wrapping_add(ahead.row()));
            // SAFETY: i < n <= idx.len(), idx[i] < src.len() by contract, and
            // i < out.len().
            unsafe { *o.add(i) = *s.add(idx.get_unchecked(i).row()) };
            i += 1;
        }
    }
    while i < n {
        // SAFETY: as above.
        unsafe { *o.add(i) = *s.add(idx.get_unchecked(i).row()) };
        i += 1;
    }
}

/// Dispatches one block on element width and index width.
///
/// # Safety
///
/// As [`take`]; `src` and `out` have the same width.
pub(crate) unsafe fn block(src: &Src<'_>, idx: Idx<'_>, out: Dst<'_>, prefetch_ahead: bool) {
    // SAFETY: forwarded contract.
    unsafe {
        match (src, out, idx) {
            (Src::W1(s), Dst::W1(o), Idx::U32(i)) => take(s, i, o, prefetch_ahead),
            (Src::W1(s), Dst::W1(o), Idx::U64(i)) => take(s, i, o, prefetch_ahead),
            (Src::W4(s), Dst::W4(o), Idx::U32(i)) => take(s, i, o, prefetch_ahead),
            (Src::W4(s), Dst::W4(o), Idx::U64(i)) => take(s, i, o, prefetch_ahead),
            (Src::W8(s), Dst::W8(o), Idx::U32(i)) => take(s, i, o, prefetch_ahead),
            (Src::W8(s), Dst::W8(o), Idx::U64(i)) => take(s, i, o, prefetch_ahead),
            // Widths always match: `Element` and the frame's type check pair them.
            _ => debug_assert!(false, "gather: source and output widths differ"),
        }
    }
}
