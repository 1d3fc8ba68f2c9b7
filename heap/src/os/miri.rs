//! The Miri backend: Miri has no `mmap`, so mappings come from the global
//! allocator (zeroed, with the alignment asked for) and `release` zeroes the
//! range, which is what `MADV_DONTNEED` makes a private anonymous range read as.

extern crate alloc;
use alloc::alloc::{Layout, alloc_zeroed, dealloc};
use core::ptr;

pub(crate) fn map(len: usize, align: usize) -> *mut u8 {
    // Miri stops on an allocation it cannot back instead of returning null,
    // so refuse what a test would only ask for to see a failure.
    if len > 1 << 30 {
        return ptr::null_mut();
    }
    match Layout::from_size_align(len, align.max(crate::layout::PAGE)) {
        // SAFETY: the layout has a non-zero size (callers map whole pages).
        Ok(l) if len > 0 => unsafe { alloc_zeroed(l) },
        _ => ptr::null_mut(),
    }
}

/// As [`map`] (Miri commits nothing ahead of use anyway).
pub(crate) fn map_from(len: usize, align: usize, _commit_from: usize) -> *mut u8 {
    map(len, align)
}

/// # Safety
/// `ptr` came from [`map`] with the same `len` and `align`.
pub(crate) unsafe fn unmap(ptr: *mut u8, len: usize, align: usize) {
    // SAFETY: the caller passes back exactly what `map` returned.
    unsafe {
        dealloc(
            ptr,
            Layout::from_size_align_unchecked(len, align.max(crate::layout::PAGE)),
        )
    }
}

/// Miri cannot move pages: the pool maps fresh instead of growing.
pub(crate) const CAN_GROW: bool = false;

/// Never called (see [`CAN_GROW`]); refuses.
///
/// # Safety
/// As the unix backend's `grow`.
pub(crate) unsafe fn grow(_base: *mut u8, _old: usize, _new: usize, _align: usize) -> *mut u8 {
    ptr::null_mut()
}

/// # Safety
/// The range is inside a live mapping and holds nothing anyone needs.
pub(crate) unsafe fn release(ptr: *mut u8, len: usize) -> bool {
    // SAFETY: the caller guarantees the range is ours and dead.
    unsafe { ptr.write_bytes(0, len) };
    true
}

pub(crate) fn now_ms() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the struct we own (Miri emulates it).
    unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
    }
    ts.tv_sec as u64 * 1000 + ts.tv_nsec as u64 / 1_000_000
}

/// Varies from run to run where Miri's clock does; a fixed word otherwise.
pub(crate) fn random_u64() -> u64 {
    let x = now_ms() ^ 0x6b65_656c_6672_6565;
    let x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^ (x >> 31)
}

/// Miri's pages are keel-heap's unit.
pub(crate) fn page_size() -> usize {
    crate::layout::PAGE
}
