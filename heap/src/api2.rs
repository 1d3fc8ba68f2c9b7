//! `&Heap` as an [`allocator_api2::alloc::Allocator`] (feature
//! `allocator-api2`): `allocator_api2::vec::Vec`, hashbrown's tables (with
//! its `allocator-api2` feature) and anything else written against the
//! trait allocate from one [`Heap`], and free into it.
//!
//! The blocks are ordinary keel-heap blocks: a collection may be dropped on
//! another thread than the heap's (its frees then go to the heap's foreign
//! list), and the heap may be dropped after its collections. Zero-size
//! requests get a real, unique block of the asked alignment, as
//! [`Heap::alloc`] gives; a request keel-heap cannot serve is
//! [`AllocError`](allocator_api2::alloc::AllocError), never a panic.

use crate::handle::Heap;
use allocator_api2::alloc::{AllocError, Allocator};
use core::alloc::Layout;
use core::ptr::{self, NonNull};

/// The block `p` of `len` bytes, or the trait's error for null.
#[inline]
fn block(p: *mut u8, len: usize) -> Result<NonNull<[u8]>, AllocError> {
    NonNull::new(p)
        .map(|p| NonNull::slice_from_raw_parts(p, len))
        .ok_or(AllocError)
}

/// `grow` and `shrink`: keel-heap's realloc, which keeps the block when it
/// still fits and moves it otherwise.
///
/// # Safety
/// `ptr` is a live block of keel-heap's; on failure it stays valid.
unsafe fn resize(heap: &Heap, ptr: NonNull<u8>, new: Layout) -> Result<NonNull<[u8]>, AllocError> {
    // SAFETY: forwarded.
    block(
        unsafe { heap.realloc(ptr.as_ptr(), new.size(), new.align()) },
        new.size(),
    )
}

/// ```
/// use allocator_api2::vec::Vec;
/// use keel_heap::Heap;
///
/// let heap = Heap::new().unwrap();
/// let before = heap.stats().in_use; // an adopted heap may hold blocks
/// let mut v = Vec::new_in(&heap);
/// v.extend(0..1000u32);
/// assert_eq!(v.iter().sum::<u32>(), 499_500);
/// drop(v);
/// assert_eq!(heap.stats().in_use, before);
/// ```
// SAFETY: blocks come from `Heap::alloc` with the layout's size and
// alignment and stay valid until freed, whatever happens to the handle (a
// dropped heap is abandoned, never unmapped); `deallocate` and the resizes
// accept any block of keel-heap's, so copies of `&Heap` (the same heap)
// share their blocks, as the trait requires.
unsafe impl Allocator for &Heap {
    #[inline]
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        block(self.alloc(layout.size(), layout.align()), layout.size())
    }

    #[inline]
    fn allocate_zeroed(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        block(
            self.alloc_zeroed(layout.size(), layout.align()),
            layout.size(),
        )
    }

    #[inline]
    unsafe fn deallocate(&self, ptr: NonNull<u8>, _layout: Layout) {
        // SAFETY: the trait's caller gives a block this allocator (any
        // keel-heap heap) handed out, freed once.
        unsafe { self.free(ptr.as_ptr()) }
    }

    unsafe fn grow(
        &self,
        ptr: NonNull<u8>,
        _old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, AllocError> {
        // SAFETY: forwarded trait contract.
        unsafe { resize(self, ptr, new) }
    }

    unsafe fn grow_zeroed(
        &self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, AllocError> {
        // SAFETY: forwarded trait contract.
        let b = unsafe { resize(self, ptr, new) }?;
        // SAFETY: the block holds `new.size()` bytes and the trait's caller
        // guarantees `old.size() <= new.size()`.
        unsafe {
            let tail = b.cast::<u8>().as_ptr().add(old.size());
            ptr::write_bytes(tail, 0, new.size() - old.size());
        }
        Ok(b)
    }

    unsafe fn shrink(
        &self,
        ptr: NonNull<u8>,
        _old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, AllocError> {
        // SAFETY: forwarded trait contract.
        unsafe { resize(self, ptr, new) }
    }
}
