//! `#[global_allocator]` support.

use core::alloc::{GlobalAlloc, Layout};

/// keel-heap as the global allocator: each thread allocates from its own
/// heap through [`raw`](crate::raw).
///
/// ```
/// use keel_heap::KeelAlloc;
/// use core::alloc::{GlobalAlloc, Layout};
///
/// // In a binary: `#[global_allocator] static A: KeelAlloc = KeelAlloc;`
/// let a = KeelAlloc;
/// let l = Layout::from_size_align(256, 32).unwrap();
/// // SAFETY: the layout has a non-zero size; freed with the same layout.
/// unsafe {
///     let p = a.alloc(l);
///     assert!(!p.is_null() && p as usize % 32 == 0);
///     a.dealloc(p, l);
/// }
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct KeelAlloc;

// SAFETY: raw::alloc returns null or a block of at least `size` bytes at
// `align`, unique until freed; dealloc/realloc forward to raw::free/realloc,
// which accept any live block.
unsafe impl GlobalAlloc for KeelAlloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        crate::raw::alloc(layout.size(), layout.align())
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        crate::raw::alloc_zeroed(layout.size(), layout.align())
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: GlobalAlloc's contract: `ptr` is a live block from us.
        unsafe { crate::raw::free(ptr) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as above; on failure `ptr` stays valid.
        unsafe { crate::raw::realloc(ptr, new_size, layout.align()) }
    }
}
