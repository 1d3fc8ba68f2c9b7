//! keel-heap: a multi-heap allocator for analytical engines.
//!
//! Engines allocate large column buffers and many small objects, free them at
//! the end of every query, and do it again. keel-heap gives each thread (or
//! each [`Heap`] handle) its own heap:
//!
//! - small sizes (up to [`SMALL_MAX`]) come from 64 KiB slabs of 32 size
//!   classes; medium sizes (up to [`MEDIUM_MAX`]) are power-of-two buddy
//!   blocks inside [`REGION`]-aligned regions, so a block's region and owner
//!   are found from its address; larger requests are direct maps kept in a
//!   reuse pool under a byte budget;
//! - the allocation and local-free fast paths take no lock and no atomic
//!   read-modify-write; a block freed by another thread goes onto its owner's
//!   lock-free foreign list and is drained on the owner's slow path or GC;
//! - a heap whose thread exits is abandoned, not unmapped, and adopted by the
//!   next new heap;
//! - `gc()` runs its passes in order and releases pages with `madvise` only on
//!   one call in N (default 16), only for blocks free across several GCs,
//!   within a budget (see [`Options`]).
//!
//! ```
//! use keel_heap::Heap;
//!
//! let heap = Heap::new().expect("a heap");
//! let p = heap.alloc(1000, 8);
//! assert!(!p.is_null());
//! // SAFETY: `p` holds 1000 writable bytes.
//! unsafe { p.write_bytes(7, 1000) };
//! assert!(unsafe { keel_heap::usable_size(p) } >= 1000);
//! // SAFETY: `p` came from keel-heap and is freed once.
//! unsafe { heap.free(p) };
//! heap.gc();
//! assert!(heap.is_valid().is_ok());
//! ```
//!
//! With the `std` feature (default), [`raw`] backs the calling thread's heap
//! by a thread-local and [`KeelAlloc`] plugs it in as `#[global_allocator]`.
#![no_std]

#[cfg(any(feature = "std", test))]
extern crate std;

mod buddy;
mod direct;
mod foreign;
mod gc;
mod heap;
mod os;
mod placement;
mod region;
mod size_class;
mod slab;
mod stats;
mod sync;
mod valid;

#[cfg(feature = "std")]
mod global;
#[cfg(feature = "std")]
pub mod raw;

#[cfg(all(test, keel_loom))]
mod loom_models;

/// The README's examples, run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

#[cfg(feature = "std")]
pub use global::KeelAlloc;
pub use placement::{
    Decision, FallbackReason, NoOpReason, NodeMask, Placement, PlacementOutcome, Policy,
    current_policy, decide, place,
};
pub use region::BadPointer;
pub use stats::Stats;
pub use valid::InvalidHeap;

use core::alloc::Layout;
use core::marker::PhantomData;
use core::ptr::{self, NonNull};
use sync::plain::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// The page size keel-heap assumes (and the alignment every class gives at least).
pub const PAGE: usize = 4096;
pub(crate) const REGION_SHIFT: u32 = if cfg!(miri) { 18 } else { 22 };
/// Region size and alignment (4 MiB; 256 KiB under Miri to keep it fast).
pub const REGION: usize = 1 << REGION_SHIFT;
/// The largest slab-backed size.
pub const SMALL_MAX: usize = 8192;
/// The largest buddy-backed size (and alignment); larger ones are direct maps.
pub const MEDIUM_MAX: usize = {
    let half = REGION / 4;
    if half < (1 << 20) { half } else { 1 << 20 }
};

/// The largest size keel-heap can ever serve: a quarter of the address
/// space, page-rounded (no system maps more). Larger requests return null
/// at once, without first collecting memory the program may reuse.
pub const MAX_SIZE: usize = (isize::MAX as usize / 2) & !(PAGE - 1);
/// The largest alignment keel-heap serves (2^60 on 64-bit targets); larger
/// ones return null at once, as [`MAX_SIZE`] does.
pub const MAX_ALIGN: usize = 1 << (usize::BITS - 4);

/// Tuning knobs; see [`configure`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// The page-release pass runs on one GC in this many (default 16; 1 =
    /// release on every GC, the behaviour seed 004 measured as 21% slower).
    pub purge_every: u32,
    /// A free block's pages are released only after it stayed free across
    /// this many GCs (default 3).
    pub min_free_gcs: u32,
    /// Bytes released per GC call at most (default 64 MiB).
    pub release_budget: usize,
    /// Bytes of freed direct maps kept for reuse (default 256 MiB).
    pub pool_budget: usize,
    /// Idle decay: memory that has stayed free this long (empty slabs, free
    /// buddy blocks, pooled direct maps) is returned to the OS by the
    /// allocator's next slow path, whatever else the thread allocates; no
    /// `gc()` call is needed (default 1000 ms; 0 disables decay). Times come
    /// from the coarse monotonic clock (a few ms granularity).
    pub decay_ms: u64,
    /// The full checker in release builds too (debug builds always run
    /// it): the heap checker at every GC entry, every free looked up on
    /// its slab's free list, and a line for each pointer freed that
    /// keel-heap does not own. (The cheap double- and interior-free checks
    /// are always on.)
    pub checker: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            purge_every: 16,
            min_free_gcs: 3,
            release_budget: 64 << 20,
            pool_budget: 256 << 20,
            decay_ms: 1000,
            checker: false,
        }
    }
}

static OPT_PURGE: AtomicU64 = AtomicU64::new(16);
static OPT_MIN_AGE: AtomicU64 = AtomicU64::new(3);
static OPT_BUDGET: AtomicUsize = AtomicUsize::new(64 << 20);
static OPT_POOL: AtomicUsize = AtomicUsize::new(256 << 20);
static OPT_DECAY: AtomicU64 = AtomicU64::new(1000);
static OPT_CHECKER: AtomicBool = AtomicBool::new(false);
/// Bumped by every [`configure`], so heaps recompute deadlines taken under
/// older options.
static OPT_GEN: AtomicU32 = AtomicU32::new(0);

#[inline]
pub(crate) fn options_decay_ms() -> u64 {
    OPT_DECAY.load(Ordering::Relaxed)
}

#[inline]
pub(crate) fn options_generation() -> u32 {
    OPT_GEN.load(Ordering::Relaxed)
}

/// Sets the process-wide options (any time; GCs read them on entry).
///
/// ```
/// keel_heap::configure(keel_heap::Options { purge_every: 8, ..keel_heap::options() });
/// assert_eq!(keel_heap::options().purge_every, 8);
/// # keel_heap::configure(keel_heap::Options::default());
/// ```
pub fn configure(o: Options) {
    OPT_PURGE.store(o.purge_every.max(1) as u64, Ordering::Relaxed);
    OPT_MIN_AGE.store(o.min_free_gcs as u64, Ordering::Relaxed);
    OPT_BUDGET.store(o.release_budget, Ordering::Relaxed);
    OPT_POOL.store(o.pool_budget, Ordering::Relaxed);
    OPT_DECAY.store(o.decay_ms, Ordering::Relaxed);
    OPT_CHECKER.store(o.checker, Ordering::Relaxed);
    OPT_GEN.fetch_add(1, Ordering::Relaxed);
}

/// The current options.
pub fn options() -> Options {
    Options {
        purge_every: OPT_PURGE.load(Ordering::Relaxed) as u32,
        min_free_gcs: OPT_MIN_AGE.load(Ordering::Relaxed) as u32,
        release_budget: OPT_BUDGET.load(Ordering::Relaxed),
        pool_budget: OPT_POOL.load(Ordering::Relaxed),
        decay_ms: OPT_DECAY.load(Ordering::Relaxed),
        checker: OPT_CHECKER.load(Ordering::Relaxed),
    }
}

/// Allocation failed (out of memory or an impossible size/alignment).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AllocError;

impl core::fmt::Display for AllocError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("keel-heap: allocation failed")
    }
}

/// A process-wide statistics snapshot (sums every heap's published counters).
pub fn stats() -> Stats {
    // Frees waiting on abandoned heaps' foreign lists are counted as freed.
    gc::drain_abandoned();
    stats::snapshot()
}

/// Whether `ptr` lies in memory keel-heap manages (a region, or the start
/// chunk of a direct map). Cheap (one atomic load), never dereferences `ptr`.
#[inline]
pub fn owns(ptr: *const u8) -> bool {
    region::chunk_kind(ptr.addr()) != region::CHUNK_NONE
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
    match unsafe { region::locate(ptr) } {
        // SAFETY: located a live block.
        Ok(loc) => unsafe { region::usable(loc) },
        Err(_) => 0,
    }
}

/// The free mark: a random word written into every free small block (its
/// second word) and cleared on allocation, set once before the first heap
/// exists. See `HeapCore::free_local_in`.
static FREE_KEY: AtomicU64 = AtomicU64::new(0);

#[inline(always)]
pub(crate) fn free_key() -> u64 {
    FREE_KEY.load(Ordering::Relaxed)
}

/// Sets the free mark once (before any block exists; racing first heaps
/// agree on one value).
pub(crate) fn init_free_key() {
    if FREE_KEY.load(Ordering::Relaxed) == 0 {
        // Never 0 (a fresh page's word) and odd (no aligned pointer).
        let k = os::random_u64() | 1;
        let _ = FREE_KEY.compare_exchange(0, k, Ordering::Relaxed, Ordering::Relaxed);
    }
}

/// Whether every free is looked up in full (the checker: debug builds, or
/// [`Options::checker`]).
#[inline(always)]
pub(crate) fn full_checks() -> bool {
    cfg!(debug_assertions) || OPT_CHECKER.load(Ordering::Relaxed)
}

/// Reports a double free or an interior pointer and ends the process.
#[cold]
#[inline(never)]
pub(crate) fn report_fatal(e: region::Bad) -> ! {
    report_bad_free(e);
    // A foreign pointer is no fatal error: callers never pass one.
    abort()
}

/// Reports a bad free. A double free or an interior pointer is one line on
/// stderr and an abort, in every build: going on would hand the block out
/// twice. A pointer keel-heap does not own is ignored (the safe choice for
/// a C `free` of memory that is not ours), with a line when the checker is
/// on.
#[cold]
pub(crate) fn report_bad_free(e: region::Bad) {
    let mut buf = [0u8; 160];
    // SAFETY: reported where it was found, nothing changed since.
    let e = unsafe { e.describe() };
    match e {
        BadPointer::Foreign(_) => {
            if full_checks() {
                os::write_stderr(fmt_into(
                    &mut buf,
                    format_args!("keel-heap: {e}; ignored\n"),
                ));
            }
        }
        _ => {
            os::write_stderr(fmt_into(&mut buf, format_args!("keel-heap: {e}\n")));
            abort();
        }
    }
}

#[cold]
pub(crate) fn report_invalid(e: InvalidHeap) {
    let mut buf = [0u8; 160];
    let msg = fmt_into(&mut buf, format_args!("keel-heap: {e}\n"));
    os::write_stderr(msg);
    abort();
}

fn fmt_into<'a>(buf: &'a mut [u8], args: core::fmt::Arguments<'_>) -> &'a [u8] {
    struct W<'b> {
        buf: &'b mut [u8],
        n: usize,
    }
    impl core::fmt::Write for W<'_> {
        fn write_str(&mut self, s: &str) -> core::fmt::Result {
            let k = s.len().min(self.buf.len() - self.n);
            self.buf[self.n..self.n + k].copy_from_slice(&s.as_bytes()[..k]);
            self.n += k;
            Ok(())
        }
    }
    let mut w = W { buf, n: 0 };
    let _ = core::fmt::write(&mut w, args);
    let n = w.n;
    &w.buf[..n]
}

fn abort() -> ! {
    // SAFETY: abort has no preconditions.
    unsafe { libc::abort() }
}

/// A heap handle an engine can create per worker.
///
/// The handle owns one heap: allocation and freeing of its own blocks need no
/// lock. It can move to another thread (`Send`) but not be shared (`!Sync`).
/// Blocks may be freed through any handle or [`raw::free`], from any thread;
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
    /// not own is ignored. [`try_free`](Self::try_free) returns these as
    /// errors instead.
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
    /// on: a small block's offset and free mark, a medium block's page map,
    /// a direct map's header), or the full ones with the checker on; a
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
        unsafe { self.core().free(ptr).map_err(|e| e.describe()) }
    }

    /// Resizes `ptr` to `new_size` at `align`; null `ptr` allocates. On
    /// failure returns null and `ptr` stays valid.
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

    /// Runs the GC passes (page release amortized, see [`Options`]).
    pub fn gc(&self) {
        // SAFETY: the handle owns the heap.
        unsafe { gc::run(self.core(), gc::Release::Amortized) }
    }

    /// Releases every free page of this heap and of the direct-map pool now.
    pub fn release_pages(&self) {
        // SAFETY: the handle owns the heap.
        unsafe { gc::run(self.core(), gc::Release::All) }
    }

    /// Runs the slow-path check now: the idle decay of this heap, of the
    /// direct-map pool and of heaps exited threads abandoned, and the GC
    /// deadline, each if due. The allocator's own slow paths run it too, so
    /// a program need never call it.
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
    /// # Safety
    /// `ptr` is null, not owned by keel-heap, or points into live keel-heap memory.
    pub unsafe fn check_free(&self, ptr: *mut u8) -> Result<(), BadPointer> {
        // SAFETY: the handle owns the heap.
        unsafe { self.core().check_free(ptr).map_err(|e| e.describe()) }
    }

    /// This heap's statistics (`in_use` counts its own small and medium
    /// blocks; `mapped` and `pool_bytes` are process-wide).
    pub fn stats(&self) -> Stats {
        // SAFETY: the handle owns the heap.
        unsafe { self.core().publish() };
        let mut s = self.core().counters().snapshot();
        s.mapped = stats::global().mapped.load(Ordering::Relaxed);
        s.pool_bytes = direct::pool_bytes() as u64;
        s.heaps = 1;
        s
    }
}

impl Drop for Heap {
    fn drop(&mut self) {
        // SAFETY: the handle owns the heap and is going away.
        unsafe { self.core().abandon() }
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
    if new_size <= usable && usable <= new_size.max(16).saturating_mul(2) && ptr.addr() % align == 0
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
unsafe fn live_usable(ptr: *mut u8) -> Result<usize, region::Bad> {
    // SAFETY: per the contract, `ptr` is live if keel-heap owns it.
    let loc = unsafe { region::locate(ptr) }?;
    if let region::Loc::Small { .. } = loc {
        // SAFETY: a located small block's memory is mapped.
        if unsafe { heap::key_slot(ptr).read() } == free_key() {
            return Err(region::Bad::double_free(ptr));
        }
    }
    // SAFETY: located a live block.
    Ok(unsafe { region::usable(loc) })
}
