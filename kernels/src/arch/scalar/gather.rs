//! Portable gather with software prefetch: the oracle's twin and the kernel
//! that wins wherever the hardware gather instructions do not; and the
//! width-only descriptors every gather leaf works on.

use core::mem::MaybeUninit;

/// A source column as raw words.
pub enum Src<'a> {
    /// 1-byte elements.
    W1(&'a [u8]),
    /// 4-byte elements.
    W4(&'a [u32]),
    /// 8-byte elements.
    W8(&'a [u64]),
}

/// An output column as raw words, possibly uninitialised (a take-style
/// gather writes into a fresh allocation): the leaves only write to it.
pub enum Dst<'a> {
    /// 1-byte elements.
    W1(&'a mut [MaybeUninit<u8>]),
    /// 4-byte elements.
    W4(&'a mut [MaybeUninit<u32>]),
    /// 8-byte elements.
    W8(&'a mut [MaybeUninit<u64>]),
}

/// Indices of either width.
#[derive(Clone, Copy)]
pub enum Idx<'a> {
    /// 32-bit indices.
    U32(&'a [u32]),
    /// 64-bit indices.
    U64(&'a [u64]),
}

impl Src<'_> {
    pub(crate) fn len(&self) -> usize {
        match self {
            Src::W1(s) => s.len(),
            Src::W4(s) => s.len(),
            Src::W8(s) => s.len(),
        }
    }

    pub(crate) fn bytes(&self) -> usize {
        match self {
            Src::W1(s) => s.len(),
            Src::W4(s) => s.len() * 4,
            Src::W8(s) => s.len() * 8,
        }
    }
}

impl Dst<'_> {
    pub(crate) fn len(&self) -> usize {
        match self {
            Dst::W1(s) => s.len(),
            Dst::W4(s) => s.len(),
            Dst::W8(s) => s.len(),
        }
    }

    /// The sub-range `start..start + n` of this output, reborrowed.
    pub(crate) fn range(&mut self, start: usize, n: usize) -> Dst<'_> {
        match self {
            Dst::W1(s) => Dst::W1(&mut s[start..start + n]),
            Dst::W4(s) => Dst::W4(&mut s[start..start + n]),
            Dst::W8(s) => Dst::W8(&mut s[start..start + n]),
        }
    }
}

impl<'a> Idx<'a> {
    pub(crate) fn len(&self) -> usize {
        match self {
            Idx::U32(s) => s.len(),
            Idx::U64(s) => s.len(),
        }
    }

    /// Whether `start..end` looks sorted or clustered: its first and last
    /// index ascend and lie less than `rows_per_index` rows apart per
    /// index. O(1): it reads two indices.
    pub(crate) fn looks_dense(&self, start: usize, end: usize, rows_per_index: u64) -> bool {
        if end <= start + 1 {
            return true;
        }
        let (a, b) = match self {
            Idx::U32(s) => (u64::from(s[start]), u64::from(s[end - 1])),
            Idx::U64(s) => (s[start], s[end - 1]),
        };
        b >= a && b - a < (end - start) as u64 * rows_per_index
    }

    /// Hints that the indices in `start..end` (clamped to the slice)
    /// will be read soon, one prefetch per 64-byte line.
    pub(crate) fn prefetch(&self, start: usize, end: usize) {
        let (p, bytes) = match self {
            Idx::U32(s) => {
                let r = &s[start.min(s.len())..end.min(s.len())];
                (r.as_ptr().cast::<u8>(), r.len() * 4)
            }
            Idx::U64(s) => {
                let r = &s[start.min(s.len())..end.min(s.len())];
                (r.as_ptr().cast::<u8>(), r.len() * 8)
            }
        };
        for off in (0..bytes).step_by(64) {
            prefetch(p.wrapping_add(off));
        }
    }

    /// Indices from `start` on.
    pub(crate) fn tail(self, start: usize) -> Idx<'a> {
        match self {
            Idx::U32(s) => Idx::U32(&s[start..]),
            Idx::U64(s) => Idx::U64(&s[start..]),
        }
    }

    /// The first index in `start..end` that is not below `len`, as
    /// (position, index).
    pub(crate) fn first_out_of_range(
        &self,
        start: usize,
        end: usize,
        len: usize,
    ) -> Option<(usize, u64)> {
        let len = len as u64;
        match self {
            Idx::U32(s) => s[start..end]
                .iter()
                .position(|&x| u64::from(x) >= len)
                .map(|p| (start + p, u64::from(s[start + p]))),
            Idx::U64(s) => s[start..end]
                .iter()
                .position(|&x| x >= len)
                .map(|p| (start + p, s[start + p])),
        }
    }
}

/// Largest index in `s` (0 if empty): the scalar twin of the SIMD index
/// max, over eight independent lanes and branch-free so it vectorizes.
pub(crate) fn max_u32(s: &[u32]) -> u32 {
    max8(s)
}

/// As [`max_u32`], for 64-bit indices.
pub(crate) fn max_u64(s: &[u64]) -> u64 {
    max8(s)
}

#[inline(always)]
fn max8<T: Copy + Ord + Default>(s: &[T]) -> T {
    let mut acc = [T::default(); 8];
    let mut chunks = s.chunks_exact(8);
    for c in &mut chunks {
        for (a, &x) in acc.iter_mut().zip(c) {
            *a = (*a).max(x);
        }
    }
    for (a, &x) in acc.iter_mut().zip(chunks.remainder()) {
        *a = (*a).max(x);
    }
    acc.into_iter().fold(T::default(), T::max)
}

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
    out: &mut [MaybeUninit<R>],
    prefetch_ahead: bool,
) {
    let n = out.len();
    debug_assert!(idx.len() >= n);
    let s = src.as_ptr();
    let o = out.as_mut_ptr().cast::<R>();
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
