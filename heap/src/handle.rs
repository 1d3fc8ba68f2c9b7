//! [`Heap`]: a heap an engine holds per worker.

use crate::error::{AllocError, BadPointer, InvalidHeap};
use crate::ops::realloc_with;
use crate::report::report_bad_free;
use crate::stats::Stats;
use crate::sync::plain::Ordering;
use crate::{gc, heap, pool, stats, valid};
use core::alloc::Layout;
use core::marker::PhantomData;
use core::ptr::{self, NonNull};

/// A heap handle an engine can create per worker.
///
/// The handle owns one heap: allocation and freeing of its own blocks need no
/// lock. It can move to another thread (`Send`) but not be shared (`!Sync`).
/// Blocks may be freed through any handle or [`raw::free`](crate::raw::free), from any thread;
/// a block of another heap goes to that heap's foreign list. Dropping the
/// handle abandons the heap: its blocks stay valid, frees still work, and the
/// next new heap adopts it.
pub struct Heap {
    core: NonNull<heap::HeapCore>,
    _not_sync: PhantomData<core::cell::Cell<()>>,
}

// SAFETY: a heap is owned by whoever holds the handle; moving the handle
// moves ownership (the adopt protocol's release/acquire is not needed because
// moving a value between threads already synchronizes).
unsafe impl Send for Heap {}

impl Heap {
    /// Adopts an abandoned heap or creates a new one.
    pub fn new() -> Result<Heap, AllocError> {
        let p = heap::acquire();
        NonNull::new(p.cast_mut())
            .map(|core| Heap {
                core,
                _not_sync: PhantomData,
            })
            .ok_or(AllocError)
    }

    /// An identifier of the underlying heap (stable across abandon/adopt),
    /// so a caller can see which heap it adopted.
    ///
    /// ```
    /// use keel_heap::Heap;
    /// let (a, b) = (Heap::new()?, Heap::new()?);
    /// assert_ne!(a.id(), b.id()); // two live handles never share a heap
    /// assert!(format!("{a:?}").contains(&format!("{:#x}", a.id())));
    /// # Ok::<(), keel_heap::AllocError>(())
    /// ```
    pub fn id(&self) -> usize {
        self.core.as_ptr().addr()
    }

    #[inline]
    fn core(&self) -> &heap::HeapCore {
        // SAFETY: heaps are never unmapped.
        unsafe { self.core.as_ref() }
    }

    /// Allocates `size` bytes aligned to `align`; null on failure (or if
    /// `align` is not a power of two). Size 0 gives a unique pointer.
    #[inline]
    pub fn alloc(&self, size: usize, align: usize) -> *mut u8 {
        if !align.is_power_of_two() {
            return ptr::null_mut();
        }
        // SAFETY: the handle owns the heap and is !Sync.
        unsafe { self.core().alloc(size, align, false) }
    }

    /// As [`alloc`](Self::alloc), with the memory zeroed.
    ///
    /// ```
    /// let heap = keel_heap::Heap::new()?;
    /// let p = heap.alloc_zeroed(100_000, 64);
    /// assert!(!p.is_null() && p as usize % 64 == 0);
    /// // SAFETY: 100_000 zeroed bytes were asked for; `p` is freed once.
    /// unsafe {
    ///     assert!((0..100_000).all(|i| *p.add(i) == 0));
    ///     heap.free(p);
    /// }
    /// # Ok::<(), keel_heap::AllocError>(())
    /// ```
    #[inline]
    pub fn alloc_zeroed(&self, size: usize, align: usize) -> *mut u8 {
        if !align.is_power_of_two() {
            return ptr::null_mut();
        }
        // SAFETY: the handle owns the heap.
        unsafe { self.core().alloc(size, align, true) }
    }

    /// Allocates for `layout`, or `Err(AllocError)`.
    ///
    /// ```
    /// let heap = keel_heap::Heap::new().unwrap();
    /// let l = core::alloc::Layout::from_size_align(64, 64).unwrap();
    /// let p = heap.allocate(l).unwrap();
    /// assert_eq!(p.as_ptr() as usize % 64, 0);
    /// // SAFETY: from this heap, freed once.
    /// unsafe { heap.free(p.as_ptr()) };
    /// ```
    pub fn allocate(&self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        NonNull::new(self.alloc(layout.size(), layout.align())).ok_or(AllocError)
    }

    /// Frees `ptr` (null is a no-op). The block may come from any heap.
    ///
    /// A double free or a pointer inside a block (not its start) is caught
    /// by checks that are always on, and ends the process with one line on
    /// stderr (`keel-heap: double free of 0x…`); a pointer keel-heap does
    /// not own is ignored. The checks here read no freed block: a small
    /// block freed twice with other frees of its slab between is caught at
    /// the allocation that would hand it out again, before it does
    /// (`keel-heap: free block at 0x… was changed: …`).
    /// [`try_free`](Self::try_free) returns these as errors instead.
    ///
    /// # Safety
    /// `ptr` is null or a live block from keel-heap, not used afterwards.
    #[inline]
    pub unsafe fn free(&self, ptr: *mut u8) {
        if ptr.is_null() {
            return;
        }
        // SAFETY: the handle owns the heap; the caller vouches for `ptr`.
        if let Err(e) = unsafe { self.core().free(ptr) } {
            report_bad_free(e);
        }
    }

    /// Frees `ptr` if it is a live block; otherwise changes nothing and
    /// says why: a double free, a pointer inside a block, or one keel-heap
    /// does not own. The checks are those of [`free`](Self::free) (always
    /// on: a small block's offset, a medium block's page map, a direct
    /// map's header) and a small block's free marks, read here (a marked
    /// block is looked up on its slab's free list), or the full ones with
    /// the checker on; a
    /// double free of another heap's medium block is found when its owner
    /// takes it back, and then ends the process.
    ///
    /// ```
    /// use keel_heap::{BadPointer, Heap};
    /// let heap = Heap::new().unwrap();
    /// let p = heap.alloc(64, 8);
    /// // SAFETY: `p` is live, then freed once; the later calls only look.
    /// unsafe {
    ///     assert!(matches!(heap.try_free(p.add(16)), Err(BadPointer::Interior { .. })));
    ///     assert_eq!(heap.try_free(p), Ok(()));
    ///     assert_eq!(heap.try_free(p), Err(BadPointer::DoubleFree(p as usize)));
    /// }
    /// ```
    ///
    /// # Safety
    /// `ptr` is null, a pointer keel-heap does not own, or points into
    /// memory keel-heap handed out that is still mapped (a live block, or
    /// one freed but not unmapped); a live block is not used afterwards.
    pub unsafe fn try_free(&self, ptr: *mut u8) -> Result<(), BadPointer> {
        if ptr.is_null() {
            return Ok(());
        }
        // SAFETY: the handle owns the heap; forwarded contract. An error
        // is described before anything changes.
        unsafe { self.core().free_looking(ptr).map_err(|e| e.describe()) }
    }

    /// Resizes `ptr` to `new_size` at `align`; null `ptr` allocates. On
    /// failure returns null and `ptr` stays valid.
    ///
    /// ```
    /// let heap = keel_heap::Heap::new()?;
    /// let p = heap.alloc(8, 8);
    /// // SAFETY: `p` holds 8 bytes; `realloc` takes it over and `q` is freed once.
    /// unsafe {
    ///     p.cast::<u64>().write(0x6b65_656c);
    ///     let q = heap.realloc(p, 3 << 20, 8); // from a small block to a direct map
    ///     assert!(!q.is_null() && keel_heap::usable_size(q) >= 3 << 20);
    ///     assert_eq!(q.cast::<u64>().read(), 0x6b65_656c);
    ///     heap.free(q);
    /// }
    /// # Ok::<(), keel_heap::AllocError>(())
    /// ```
    ///
    /// # Safety
    /// `ptr` is null or a live block from keel-heap.
    pub unsafe fn realloc(&self, ptr: *mut u8, new_size: usize, align: usize) -> *mut u8 {
        // SAFETY: forwarded.
        unsafe {
            realloc_with(
                ptr,
                new_size,
                align,
                |s, a| self.alloc(s, a),
                |p| self.free(p),
            )
        }
    }

    /// Runs the GC passes (page release amortized, see [`Options`](crate::Options)).
    pub fn gc(&self) {
        // SAFETY: the handle owns the heap.
        unsafe { gc::run(self.core(), gc::Release::Amortized) }
    }

    /// Releases every free page of this heap now, and unmaps the direct-map
    /// pool's maps.
    ///
    /// ```standalone_crate
    /// let heap = keel_heap::Heap::new()?;
    /// let p = heap.alloc(16 << 20, 8); // a direct map
    /// assert!(!p.is_null());
    /// // SAFETY: `p` is live and freed once; its map may go to the pool.
    /// unsafe { heap.free(p) };
    /// heap.release_pages();
    /// assert_eq!(heap.stats().pool_bytes, 0);
    /// # Ok::<(), keel_heap::AllocError>(())
    /// ```
    pub fn release_pages(&self) {
        // SAFETY: the handle owns the heap.
        unsafe { gc::run(self.core(), gc::Release::All) }
    }

    /// Runs the slow-path check now: the idle decay of this heap, of the
    /// direct-map pool and of heaps exited threads abandoned, and the GC
    /// deadline, each if due. The allocator's own slow paths run it too, so
    /// a program need never call it.
    ///
    /// ```
    /// let heap = keel_heap::Heap::new()?;
    /// let p = heap.alloc(200_000, 8);
    /// // SAFETY: `p` holds 200_000 writable bytes.
    /// unsafe { p.write_bytes(1, 200_000) };
    /// heap.maybe_collect(); // releases only what has stayed free long enough
    /// // SAFETY: `p` is still live; it is freed once.
    /// unsafe {
    ///     assert!((0..200_000).all(|i| *p.add(i) == 1));
    ///     heap.free(p);
    /// }
    /// assert!(heap.is_valid().is_ok());
    /// # Ok::<(), keel_heap::AllocError>(())
    /// ```
    pub fn maybe_collect(&self) {
        // SAFETY: the handle owns the heap.
        unsafe { gc::maybe_collect(self.core()) };
    }

    /// Checks every invariant of this heap's structures.
    pub fn is_valid(&self) -> Result<(), InvalidHeap> {
        // SAFETY: the handle owns the heap.
        unsafe { valid::check(self.core()) }
    }

    /// The detector on demand: `Ok` if `ptr` is a live block (of this heap,
    /// another heap, or a direct map), else what is wrong with it. Nothing
    /// changes (but this heap's foreign frees are taken in).
    ///
    /// ```
    /// use keel_heap::{BadPointer, Heap};
    /// let heap = Heap::new()?;
    /// let p = heap.alloc(64, 8);
    /// let local = 0u64;
    /// let foreign = (&raw const local).cast::<u8>().cast_mut();
    /// // SAFETY: `p` is live (freed once, at the end); `local` is not keel-heap's.
    /// unsafe {
    ///     assert_eq!(heap.check_free(p), Ok(()));
    ///     let inside = BadPointer::Interior { addr: p as usize + 8, block: p as usize, size: 64 };
    ///     assert_eq!(heap.check_free(p.add(8)), Err(inside));
    ///     assert_eq!(heap.check_free(foreign), Err(BadPointer::Foreign(foreign as usize)));
    ///     heap.free(p);
    /// }
    /// # Ok::<(), keel_heap::AllocError>(())
    /// ```
    ///
    /// # Safety
    /// `ptr` is null, not owned by keel-heap, or points into live keel-heap memory.
    pub unsafe fn check_free(&self, ptr: *mut u8) -> Result<(), BadPointer> {
        // SAFETY: the handle owns the heap.
        unsafe { self.core().check_free(ptr).map_err(|e| e.describe()) }
    }

    /// This heap's statistics (`in_use` counts its own small and medium
    /// blocks; `mapped`, `pool_bytes` and `sweeps` are process-wide).
    ///
    /// ```
    /// let heap = keel_heap::Heap::new()?;
    /// let before = heap.stats().in_use; // an adopted heap may hold blocks
    /// let p = heap.alloc(1000, 8);
    /// let s = heap.stats();
    /// assert!(s.in_use >= before + 1000 && s.heaps == 1);
    /// // SAFETY: `p` is live and freed once.
    /// unsafe { heap.free(p) };
    /// assert_eq!(heap.stats().in_use, before);
    /// # Ok::<(), keel_heap::AllocError>(())
    /// ```
    pub fn stats(&self) -> Stats {
        // SAFETY: the handle owns the heap.
        unsafe { self.core().publish() };
        let mut s = self.core().counters().snapshot();
        s.mapped = stats::global().mapped.load(Ordering::Relaxed);
        s.pool_bytes = pool::pool_bytes() as u64;
        s.sweeps = stats::global().sweeps.load(Ordering::Relaxed);
        s.heaps = 1;
        s
    }
}

impl core::fmt::Debug for Heap {
    /// The heap's identity and its statistics, as [`Heap::stats`] reports
    /// them.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Heap")
            .field("id", &format_args!("{:#x}", self.id()))
            .field("stats", &self.stats())
            .finish()
    }
}

impl Drop for Heap {
    fn drop(&mut self) {
        // SAFETY: the handle owns the heap and is going away.
        unsafe { self.core().abandon() }
    }
}
