//! What a heap handle and the thread's heap share: a block's usable size,
//! ownership, and the realloc policy.

use crate::locate::{Bad, Loc, locate, usable};
use crate::report::{free_key, report_bad_free};
use core::ptr;

/// Whether `ptr` lies in memory keel-heap manages (a region, or the start
/// chunk of a direct map). Cheap (one atomic load), never dereferences `ptr`.
///
/// ```
/// let heap = keel_heap::Heap::new()?;
/// let (small, large) = (heap.alloc(64, 8), heap.alloc(8 << 20, 8));
/// let on_stack = 0u64;
/// assert!(keel_heap::owns(small) && keel_heap::owns(large));
/// assert!(!keel_heap::owns((&raw const on_stack).cast()));
/// // SAFETY: both are live, and freed once.
/// unsafe { heap.free(small); heap.free(large) };
/// # Ok::<(), keel_heap::AllocError>(())
/// ```
#[inline]
pub fn owns(ptr: *const u8) -> bool {
    crate::chunk_map::chunk_kind(ptr.addr()) != crate::chunk_map::CHUNK_NONE
}

/// The usable size of a live block (at least what was asked); 0 for null or
/// a pointer keel-heap does not own.
///
/// # Safety
/// `ptr` is null, not owned by keel-heap, or a live block from keel-heap.
pub unsafe fn usable_size(ptr: *const u8) -> usize {
    if ptr.is_null() {
        return 0;
    }
    // SAFETY: per the contract, `ptr` is live if keel-heap owns it.
    match unsafe { locate(ptr) } {
        // SAFETY: located a live block.
        Ok(loc) => unsafe { usable(loc) },
        Err(_) => 0,
    }
}

/// Shared realloc policy: keep the block when it already fits and is not
/// more than twice too big, else move.
///
/// # Safety
/// `ptr` is null or a live keel-heap block; `alloc`/`free` are matching.
pub(crate) unsafe fn realloc_with(
    ptr: *mut u8,
    new_size: usize,
    align: usize,
    alloc: impl FnOnce(usize, usize) -> *mut u8,
    free: impl FnOnce(*mut u8),
) -> *mut u8 {
    if ptr.is_null() {
        return alloc(new_size, align);
    }
    if !align.is_power_of_two() {
        return ptr::null_mut();
    }
    // SAFETY: live block per the contract (or a pointer the checks reject).
    let usable = match unsafe { live_usable(ptr) } {
        Ok(u) => u,
        Err(e) => {
            report_bad_free(e);
            return ptr::null_mut();
        }
    };
    if new_size <= usable
        && usable <= new_size.max(16).saturating_mul(2)
        && ptr.addr().is_multiple_of(align)
    {
        return ptr;
    }
    let n = alloc(new_size, align);
    if n.is_null() {
        return n;
    }
    // SAFETY: both blocks are live and distinct; copy what both hold.
    unsafe { ptr::copy_nonoverlapping(ptr, n, usable.min(new_size)) };
    free(ptr);
    n
}

/// The usable size of `ptr` if it is a live block, with the always-on
/// checks of a free (a small block carrying the free mark counts as freed).
///
/// # Safety
/// As [`usable_size`].
unsafe fn live_usable(ptr: *mut u8) -> Result<usize, Bad> {
    // SAFETY: per the contract, `ptr` is live if keel-heap owns it.
    let loc = unsafe { locate(ptr) }?;
    if let Loc::Small { .. } = loc {
        // SAFETY: a located small block's memory is mapped.
        if unsafe { crate::free::looks_free(ptr, free_key()) } {
            return Err(Bad::double_free(ptr));
        }
    }
    // SAFETY: located a live block.
    Ok(unsafe { usable(loc) })
}
