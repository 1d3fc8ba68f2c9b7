//! The calling thread's heap behind plain functions: the contract the C
//! `malloc` family (keel-malloc) and [`KeelAlloc`](crate::KeelAlloc) build on.
//!
//! Each thread adopts or creates a heap on its first allocation and abandons
//! it when it exits. The lookup is re-entrancy safe: registering the exit
//! hook can itself allocate (glibc's `__cxa_thread_atexit_impl` calls
//! `calloc`), and destructors of other thread-locals may allocate or free
//! after ours ran. Every call made while this thread's heap is being set up
//! or is already gone uses a shared fallback heap under a spin lock instead,
//! so nothing recurses or touches a dead heap. Nothing here aborts on failure.
//!
//! ```
//! let p = keel_heap::raw::alloc(100, 16);
//! assert!(!p.is_null() && keel_heap::raw::owns(p));
//! // SAFETY: `p` is live and freed once.
//! unsafe {
//!     assert!(keel_heap::raw::usable_size(p) >= 100);
//!     keel_heap::raw::free(p);
//! }
//! keel_heap::raw::gc();
//! ```
//!
//! The fork handlers go around `fork(2)` as `pthread_atfork` calls them:
//! [`prepare_fork`] before it, [`parent_after_fork`] in the parent and
//! [`child_after_fork`] in the child, which can then allocate.
//!
//! ```standalone_crate
//! use keel_heap::raw;
//! raw::prepare_fork();
//! // SAFETY: the child only allocates and frees, then `_exit`s, as a threaded program's may.
//! let pid = unsafe { libc::fork() };
//! if pid == 0 {
//!     // SAFETY: in the child, once, after the parent's `prepare_fork`.
//!     unsafe { raw::child_after_fork() };
//!     let p = raw::alloc(100, 8);
//!     // SAFETY: `p` is null or live, freed once; `_exit` runs no atexit handler.
//!     unsafe { raw::free(p); libc::_exit(p.is_null() as i32) };
//! }
//! // SAFETY: once, on the thread that called `prepare_fork`.
//! unsafe { raw::parent_after_fork() };
//! let mut status = 0;
//! // SAFETY: `pid` is this process's child, waited for once.
//! assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
//! assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
//! ```

use crate::heap::{self, HeapCore};

/// The thread's heap slot (`os/tls.rs`), typed.
mod cur {
    use crate::heap::HeapCore;
    use crate::os::tls;

    #[inline(always)]
    pub(super) fn get() -> *const HeapCore {
        tls::get().cast()
    }

    #[inline]
    pub(super) fn set(p: *const HeapCore) {
        tls::set(p.cast())
    }

    /// Sets the heap and returns the previous one.
    pub(super) fn replace(p: *const HeapCore) -> *const HeapCore {
        tls::replace(p.cast()).cast()
    }
}
use crate::sync::{Locked, plain};
use crate::{Options, Stats, gc};
use core::cell::Cell;
use core::ptr;

const UNINIT: u8 = 0;
const INITIALIZING: u8 = 1;
const READY: u8 = 2;
const DESTROYED: u8 = 3;

std::thread_local! {
    static STATE: Cell<u8> = const { Cell::new(UNINIT) };
    /// Its destructor abandons the heap; registered on first use.
    static EXIT: ExitHook = const { ExitHook };
}

struct ExitHook;

impl Drop for ExitHook {
    fn drop(&mut self) {
        let h = cur::replace(ptr::null());
        STATE.with(|s| s.set(DESTROYED));
        if !h.is_null() {
            // SAFETY: this thread owned the heap and will not use it again
            // (the slot is cleared, STATE is DESTROYED: later calls use the fallback).
            unsafe { (*h).abandon() };
        }
    }
}

/// The calling thread's heap, set up on first use; `None` while it is being
/// set up or after it was torn down (then the fallback heap serves).
#[inline]
fn current() -> Option<&'static HeapCore> {
    let h = cur::get();
    if !h.is_null() {
        // SAFETY: heaps are never unmapped; the slot is non-null only while this thread owns it.
        return Some(unsafe { &*h });
    }
    init_slow()
}

#[cold]
fn init_slow() -> Option<&'static HeapCore> {
    if STATE.with(|s| s.get()) != UNINIT {
        return None;
    }
    STATE.with(|s| s.set(INITIALIZING));
    let h = heap::acquire();
    if h.is_null() {
        STATE.with(|s| s.set(UNINIT));
        return None;
    }
    // Registering the destructor may allocate: that call sees INITIALIZING
    // and is served by the fallback heap.
    if EXIT.try_with(|_| ()).is_err() {
        // The thread is already tearing down its thread-locals.
        // SAFETY: we own `h` and let go of it at once.
        unsafe { (*h).abandon() };
        STATE.with(|s| s.set(DESTROYED));
        return None;
    }
    cur::set(h);
    STATE.with(|s| s.set(READY));
    // SAFETY: as in `current`.
    Some(unsafe { &*h })
}

struct Fallback(*const HeapCore);
// SAFETY: the pointer is only used under the lock.
unsafe impl Send for Fallback {}

static FALLBACK: Locked<Fallback> = Locked::new(Fallback(ptr::null()));

/// The fallback heap once created (set under the lock, read without it), so
/// that a free from a thread without a heap can tell whether it needs the lock.
static FALLBACK_HEAP: plain::AtomicPtr<HeapCore> = plain::AtomicPtr::new(ptr::null_mut());

/// Runs `f` on the shared fallback heap under its lock (created on first use).
fn with_fallback<R>(f: impl FnOnce(Option<&HeapCore>) -> R) -> R {
    FALLBACK.with(|fb| {
        if fb.0.is_null() {
            fb.0 = heap::acquire();
            if !fb.0.is_null() {
                // SAFETY: a new heap, ours under the lock.
                unsafe { (*fb.0).local().locked = true };
            }
            FALLBACK_HEAP.store(fb.0.cast_mut(), plain::Ordering::Release);
        }
        // SAFETY: heaps are never unmapped; the lock makes us its only user.
        f(unsafe { fb.0.as_ref() })
    })
}

/// An allocation on the fallback heap under its lock: out of line, so the
/// thread-heap path keeps no lock code.
#[cold]
#[inline(never)]
fn alloc_on_fallback(size: usize, align: usize, zero: bool) -> *mut u8 {
    with_fallback(|h| match h {
        // SAFETY: exclusive use of the fallback heap under its lock.
        Some(h) => unsafe { h.alloc(size, align, zero) },
        None => ptr::null_mut(),
    })
}

/// Runs `f` on this thread's heap, or on the fallback heap under its lock.
#[inline]
fn with_heap<R>(f: impl FnOnce(&HeapCore) -> R, oom: R) -> R {
    match current() {
        Some(h) => f(h),
        None => with_fallback(|h| match h {
            Some(h) => f(h),
            None => oom,
        }),
    }
}

/// Allocates `size` bytes aligned to `align` (a power of two, else null).
/// Null on failure; size 0 gives a unique non-null pointer.
#[inline]
pub fn alloc(size: usize, align: usize) -> *mut u8 {
    if !align.is_power_of_two() {
        return ptr::null_mut();
    }
    // SAFETY: `with_heap` gives us exclusive use of a heap.
    with_heap(|h| unsafe { h.alloc(size, align, false) }, ptr::null_mut())
}

/// The allocation fast path alone: a small block from this thread's heap
/// when one is at hand with no slow work at all (the size's class has a
/// slab with room and no slow-path check is due), else null. It counts the
/// call toward the heap's slow-path check (on a thread with a heap), which
/// keeps idle decay going for a program that only ever makes small
/// allocations. It makes no call, so the caller's fast path stays a leaf;
/// on null, call [`alloc_after_fast`] with the same arguments.
///
/// ```
/// use keel_heap::raw;
/// let mut p = raw::alloc_fast(100, 16);
/// if p.is_null() {
///     p = raw::alloc_after_fast(100, 16, false);
/// }
/// assert!(!p.is_null());
/// // SAFETY: a live block, freed once.
/// unsafe { raw::free(p) };
/// ```
#[inline(always)]
pub fn alloc_fast(size: usize, align: usize) -> *mut u8 {
    let h = cur::get();
    if h.is_null() || !align.is_power_of_two() {
        return ptr::null_mut();
    }
    match crate::size_class::class_for(size, align) {
        // SAFETY: the slot is non-null only while this thread owns the heap.
        Some(c) => unsafe { (*h).try_alloc_small(c) },
        None => ptr::null_mut(),
    }
}

/// The rest of an allocation after [`alloc_fast`] returned null (or in its
/// place, for a zeroed block): runs the slow-path check if the count made
/// it due, then allocates on any path. Null on failure.
///
/// ```
/// let p = keel_heap::raw::alloc_after_fast(40, 16, true);
/// assert!(!p.is_null() && p as usize % 16 == 0);
/// // SAFETY: 40 zeroed bytes were asked for; `p` is freed once.
/// unsafe {
///     assert!((0..40).all(|i| *p.add(i) == 0));
///     keel_heap::raw::free(p);
/// }
/// ```
#[inline(never)]
pub fn alloc_after_fast(size: usize, align: usize, zero: bool) -> *mut u8 {
    if !align.is_power_of_two() {
        return ptr::null_mut();
    }
    match current() {
        // SAFETY: this thread owns `h`.
        Some(h) => unsafe {
            if zero {
                // `alloc_fast` was skipped: count this call here.
                h.alloc(size, align, true)
            } else {
                h.alloc_counted(size, align, false)
            }
        },
        None => alloc_on_fallback(size, align, zero),
    }
}

/// As [`alloc`], with the memory zeroed (no memset when the pages are known
/// fresh from the OS).
///
/// ```
/// use keel_heap::raw;
/// let p = raw::alloc(3000, 64);
/// // SAFETY: `p` holds 3000 writable bytes; it is freed once.
/// unsafe { p.write_bytes(0xff, 3000); raw::free(p) };
/// let z = raw::alloc_zeroed(3000, 64); // may be `p`'s block again
/// assert!(!z.is_null() && z as usize % 64 == 0);
/// // SAFETY: 3000 zeroed bytes were asked for; `z` is freed once.
/// unsafe {
///     assert!((0..3000).all(|i| *z.add(i) == 0));
///     raw::free(z);
/// }
/// ```
#[inline]
pub fn alloc_zeroed(size: usize, align: usize) -> *mut u8 {
    if !align.is_power_of_two() {
        return ptr::null_mut();
    }
    // SAFETY: exclusive use of a heap.
    with_heap(|h| unsafe { h.alloc(size, align, true) }, ptr::null_mut())
}

/// Frees `ptr` (null is a no-op), from any thread, including after the
/// owning thread exited. A pointer keel-heap does not own is reported and
/// aborts in debug builds, and is ignored in release builds.
///
/// # Safety
/// `ptr` is null or a live block from keel-heap, not used afterwards.
#[inline]
pub unsafe fn free(ptr: *mut u8) {
    if ptr.is_null() {
        return;
    }
    // SAFETY: forwarded contract.
    unsafe { free_kind(ptr, crate::chunk_map::chunk_kind(ptr.addr())) }
}

/// As [`free`] for a pointer that may not be keel-heap's at all (a C
/// `free` of memory from before a preload took effect, or a program bug):
/// returns `false`, without touching or reporting `ptr`, when it lies in no
/// memory keel-heap manages ([`owns`] is false), so the caller reports it
/// its own way; otherwise frees it and returns `true`. One chunk-map lookup
/// serves both the check and the free.
///
/// ```
/// let p = keel_heap::raw::alloc(24, 8);
/// let mut local = 0u64;
/// // SAFETY: `p` is a live block freed once; `local` is not keel-heap's.
/// unsafe {
///     assert!(keel_heap::raw::free_if_owned(p));
///     assert!(!keel_heap::raw::free_if_owned((&raw mut local).cast()));
/// }
/// ```
///
/// # Safety
/// `ptr` is not owned by keel-heap (then nothing happens), or a live block
/// from keel-heap not used afterwards.
#[inline]
pub unsafe fn free_if_owned(ptr: *mut u8) -> bool {
    let kind = crate::chunk_map::chunk_kind(ptr.addr());
    // SAFETY: forwarded contract; `kind` is `ptr`'s entry.
    if unsafe { free_own(ptr, kind) } {
        return true;
    }
    // SAFETY: forwarded contract; `kind` is `ptr`'s entry.
    unsafe { free_if_owned_other(ptr, kind) }
}

/// As [`free_if_owned`], with `not_ours` called (in tail position) on a
/// pointer that lies in no memory keel-heap manages, null included,
/// instead of a result to test: the free fast path (a small or medium
/// block of this thread's own heap: one chunk-map load, one compare of its
/// region's owner with the thread's heap, the block's checks and its push)
/// makes no call, and everything else is one call away, so a caller's
/// `free` built on it keeps nothing live across a call.
///
/// ```
/// use core::sync::atomic::{AtomicUsize, Ordering};
/// static SEEN: AtomicUsize = AtomicUsize::new(0);
/// unsafe fn not_ours(p: *mut u8) {
///     SEEN.store(p as usize, Ordering::Relaxed);
/// }
/// let p = keel_heap::raw::alloc(24, 8);
/// let mut local = 0u64;
/// // SAFETY: `p` is a live block freed once; `local` is not keel-heap's.
/// unsafe {
///     keel_heap::raw::free_or_else(p, not_ours);
///     assert_eq!(SEEN.load(Ordering::Relaxed), 0);
///     keel_heap::raw::free_or_else((&raw mut local).cast(), not_ours);
///     assert_eq!(SEEN.load(Ordering::Relaxed), (&raw mut local) as usize);
/// }
/// ```
///
/// # Safety
/// As [`free_if_owned`]; `not_ours` may be called with any such pointer.
#[inline(always)]
pub unsafe fn free_or_else(ptr: *mut u8, not_ours: unsafe fn(*mut u8)) {
    let kind = crate::chunk_map::chunk_kind(ptr.addr());
    if kind == crate::chunk_map::CHUNK_REGION {
        // SAFETY: a region chunk has a live header; `owner` never changes.
        let owner = unsafe { HeapCore::owner_of(crate::region::Region::of(ptr)) };
        let h = cur::get();
        if ptr::eq(owner, h) {
            // SAFETY: as in `free_own`.
            return unsafe { (*h).free_local_reporting(ptr) };
        }
    }
    // SAFETY: forwarded contract.
    unsafe { free_other_or_else(ptr, not_ours) }
}

/// [`free_or_else`] for anything but this thread's own region blocks. It
/// reads the chunk map again rather than take the entry, so the fast path
/// keeps nothing live for it. `extern "C"`, so it cannot unwind (a panic
/// in it aborts here): a caller that must not unwind itself (the C `free`
/// symbol) then makes the call as a tail call, with no abort guard around
/// it and no stack frame.
///
/// # Safety
/// As [`free_or_else`].
#[inline(never)]
// A Rust-to-Rust call: `extern "C"` is for the unwinding rule only, so the
// Rust-ABI function pointer is fine here.
#[allow(improper_ctypes_definitions)]
unsafe extern "C" fn free_other_or_else(ptr: *mut u8, not_ours: unsafe fn(*mut u8)) {
    let kind = crate::chunk_map::chunk_kind(ptr.addr());
    if kind == crate::chunk_map::CHUNK_NONE {
        // SAFETY: forwarded contract.
        return unsafe { not_ours(ptr) };
    }
    // SAFETY: forwarded contract.
    unsafe { free_kind_other(ptr, kind, cur::get()) }
}

/// [`free_if_owned`] for anything but this thread's own region blocks:
/// `false` for memory keel-heap does not manage (null included).
///
/// # Safety
/// As [`free_if_owned`]; `kind == chunk_kind(ptr)`.
#[inline(never)]
unsafe fn free_if_owned_other(ptr: *mut u8, kind: u8) -> bool {
    if kind == crate::chunk_map::CHUNK_NONE {
        return false;
    }
    // SAFETY: forwarded contract.
    unsafe { free_kind_other(ptr, kind, cur::get()) };
    true
}

/// Frees non-null `ptr` whose chunk-map entry is `kind`.
///
/// # Safety
/// As [`free`]; `kind == chunk_kind(ptr)`.
#[inline(always)]
unsafe fn free_kind(ptr: *mut u8, kind: u8) {
    // SAFETY: forwarded contract.
    if !unsafe { free_own(ptr, kind) } {
        // SAFETY: forwarded contract.
        unsafe { free_kind_other(ptr, kind, cur::get()) }
    }
}

/// The one free path kept inline: a small or medium block of this thread's
/// own heap, freed here (true); anything else is left to the caller
/// (false), a call away, so this path saves few registers. A region's
/// owner is never null, so a thread without a heap (a null slot) never
/// matches, and a null `ptr` (chunk 0 is never a region) falls through.
///
/// # Safety
/// `ptr` is null, not keel-heap's, or a live keel-heap block not used
/// afterwards; `kind == chunk_kind(ptr)`.
#[inline(always)]
unsafe fn free_own(ptr: *mut u8, kind: u8) -> bool {
    if kind != crate::chunk_map::CHUNK_REGION {
        return false;
    }
    // SAFETY: a region chunk has a live header; `owner` never changes.
    let owner = unsafe { HeapCore::owner_of(crate::region::Region::of(ptr)) };
    let h = cur::get();
    if !ptr::eq(owner, h) {
        return false;
    }
    // SAFETY: the slot is non-null (it equals a region's owner) only while
    // this thread owns `h`, and `ptr` is in its region.
    unsafe { (*h).free_local_reporting(ptr) };
    true
}

/// [`free_kind`] for anything but this thread's own region blocks.
///
/// # Safety
/// As [`free_kind`]; `h` is this thread's heap slot.
#[inline(never)]
unsafe fn free_kind_other(ptr: *mut u8, kind: u8, h: *const HeapCore) {
    let r = if h.is_null() {
        // No heap of ours (set-up, teardown, or a thread that never
        // allocated): other heaps' blocks go to their foreign lists and
        // direct maps to the pool, without the fallback lock; only the
        // fallback heap's own blocks are freed under its lock. (Were the
        // load stale, a fallback block would go to the fallback's foreign
        // list, which its next slow path drains: still correct.)
        let fb = FALLBACK_HEAP.load(plain::Ordering::Acquire);
        // SAFETY: forwarded contract.
        match unsafe { HeapCore::free_unowned(ptr, kind, fb) } {
            Some(r) => r,
            // SAFETY: forwarded contract.
            None => unsafe { free_on_fallback(ptr) },
        }
    } else if kind == crate::chunk_map::CHUNK_REGION {
        // SAFETY: another heap's region block (the caller checked ours);
        // a region chunk has a live header whose owner never changes.
        unsafe { HeapCore::free_other(HeapCore::owner_of(crate::region::Region::of(ptr)), ptr) }
    } else {
        // SAFETY: this thread owns `h`; `kind` is `ptr`'s entry.
        unsafe { (*h).free_in::<false>(ptr, kind) }
    };
    if let Err(e) = r {
        crate::report::report_bad_free(e);
    }
}

/// Frees a block of the fallback heap under its lock (out of line).
///
/// # Safety
/// `ptr` is a live block of the fallback heap.
#[cold]
#[inline(never)]
unsafe fn free_on_fallback(ptr: *mut u8) -> Result<(), crate::locate::Bad> {
    with_fallback(|fb| match fb {
        // SAFETY: exclusive use of the fallback heap under its lock.
        Some(fb) => unsafe { fb.free(ptr) },
        None => Ok(()),
    })
}

/// Resizes `ptr` to `new_size` at `align`; null `ptr` allocates. On failure
/// returns null and leaves `ptr` valid.
///
/// ```
/// use keel_heap::raw;
/// let p = raw::alloc(16, 8);
/// // SAFETY: `p` holds 16 bytes; `realloc` takes it over and `q` is freed once.
/// unsafe {
///     p.copy_from_nonoverlapping(b"keel-heap column".as_ptr(), 16);
///     let q = raw::realloc(p, 100_000, 8); // small to medium: the block moves
///     assert!(!q.is_null() && raw::usable_size(q) >= 100_000);
///     assert_eq!(core::slice::from_raw_parts(q, 16), b"keel-heap column");
///     raw::free(q);
/// }
/// ```
///
/// # Safety
/// `ptr` is null or a live block from keel-heap.
pub unsafe fn realloc(ptr: *mut u8, new_size: usize, align: usize) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { crate::ops::realloc_with(ptr, new_size, align, alloc, |p| free(p)) }
}

/// The usable size of a live block (>= the size asked for); 0 for null.
///
/// # Safety
/// `ptr` is null, not owned by keel-heap, or a live keel-heap block.
pub unsafe fn usable_size(ptr: *const u8) -> usize {
    // SAFETY: forwarded contract.
    unsafe { crate::usable_size(ptr) }
}

/// Whether `ptr` lies in memory keel-heap manages (one atomic load).
#[inline]
pub fn owns(ptr: *const u8) -> bool {
    crate::owns(ptr)
}

/// Runs this thread's GC passes (page release amortized).
pub fn gc() {
    // SAFETY: exclusive use of a heap.
    with_heap(|h| unsafe { gc::run(h, gc::Release::Amortized) }, ())
}

/// Releases everything free now: this thread's heap, heaps abandoned by
/// exited threads, the fallback heap, and the direct-map pool, whose maps
/// are unmapped. (Heaps of other live threads are theirs to release.)
///
/// ```standalone_crate
/// use keel_heap::raw;
/// let p = raw::alloc(16 << 20, 8); // a direct map
/// assert!(!p.is_null());
/// // SAFETY: `p` is live and freed once; its map may go to the pool.
/// unsafe { raw::free(p) };
/// raw::release_pages();
/// assert_eq!(raw::stats().pool_bytes, 0);
/// ```
pub fn release_pages() {
    // SAFETY: exclusive use of a heap.
    with_heap(|h| unsafe { gc::run(h, gc::Release::All) }, ());
    heap::for_each_heap(|h, abandoned| {
        if abandoned && h.ownership().try_borrow() {
            // SAFETY: borrowed just now; given back right after.
            unsafe {
                gc::run(h, gc::Release::All);
                h.give_back();
            }
        }
    });
    with_fallback(|fb| {
        if let Some(fb) = fb {
            // SAFETY: exclusive use of the fallback heap under its lock.
            unsafe { gc::run(fb, gc::Release::All) }
        }
    });
}

/// Runs this thread's slow-path check now: the idle decay of its heap, of
/// the direct-map pool and of heaps exited threads abandoned, and the GC
/// deadline, each if due. The allocator's own slow paths (and a check every
/// few allocations) run it too, so a program need never call it.
///
/// ```
/// use keel_heap::raw;
/// let p = raw::alloc(200_000, 8);
/// // SAFETY: `p` holds 200_000 writable bytes.
/// unsafe { p.write_bytes(1, 200_000) };
/// raw::maybe_collect(); // releases only what has stayed free long enough
/// // SAFETY: `p` is still live; it is freed once.
/// unsafe {
///     assert!((0..200_000).all(|i| *p.add(i) == 1));
///     raw::free(p);
/// }
/// ```
pub fn maybe_collect() {
    // SAFETY: the slot is null or this thread's live heap.
    if let Some(h) = unsafe { cur::get().as_ref() } {
        // SAFETY: this thread owns `h`.
        unsafe { gc::maybe_collect(h) };
    }
}

/// A process-wide statistics snapshot.
///
/// ```
/// use keel_heap::raw;
/// let p = raw::alloc(5000, 8);
/// let s = raw::stats(); // this thread's heap publishes its counters first
/// assert!(s.in_use >= 5000 && s.peak >= s.in_use && s.heaps >= 1);
/// // SAFETY: `p` is live and freed once.
/// unsafe { raw::free(p) };
/// ```
pub fn stats() -> Stats {
    // Frees waiting on abandoned heaps' foreign lists are counted as freed.
    gc::drain_abandoned();
    // SAFETY: the slot is null or this thread's live heap.
    if let Some(h) = unsafe { cur::get().as_ref() } {
        // SAFETY: this thread owns `h`.
        unsafe { h.publish() };
    }
    crate::stats()
}

/// Sets the options (see [`Options`]); any time.
///
/// ```standalone_crate
/// use keel_heap::{Options, raw};
/// let old = keel_heap::options();
/// raw::configure(Options { pool_budget: 64 << 20, ..old });
/// assert_eq!(keel_heap::options().pool_budget, 64 << 20);
/// raw::configure(old);
/// ```
pub fn configure(opts: Options) {
    crate::configure(opts)
}

/// `pthread_atfork` prepare handler: takes every global lock so that no lock
/// is held by a thread that will not exist in the child.
///
/// Here [`parent_after_fork`] follows at once; the [module example](self)
/// forks between them.
///
/// ```
/// use keel_heap::raw;
/// raw::prepare_fork();
/// // SAFETY: once, on the thread that called `prepare_fork`.
/// unsafe { raw::parent_after_fork() };
/// let p = raw::alloc(8 << 20, 8); // the pool's lock is free again
/// assert!(!p.is_null());
/// // SAFETY: `p` is live and freed once.
/// unsafe { raw::free(p) };
/// ```
pub fn prepare_fork() {
    FALLBACK.hold();
    crate::direct::hold_pool();
}

/// `pthread_atfork` parent handler: releases what [`prepare_fork`] took.
/// The [module example](self) forks between the three handlers.
///
/// # Safety
/// Called once after each [`prepare_fork`] on the same thread (as
/// `pthread_atfork` calls its handlers): it releases locks it does not
/// otherwise check are held.
pub unsafe fn parent_after_fork() {
    // SAFETY: `prepare_fork` took both; nothing else is inside them.
    unsafe {
        crate::direct::release_pool();
        FALLBACK.release_held();
    }
}

/// `pthread_atfork` child handler: releases the locks in the child. Heaps of
/// threads that do not exist in the child stay owned (their state may be
/// mid-update), so their memory is leaked there rather than reused; so does
/// a heap one of them had borrowed (the decay thread's sweep, a statistics
/// snapshot), which no thread here would give back.
/// The [module example](self) forks between the three handlers.
///
/// # Safety
/// As [`parent_after_fork`], in the child.
pub unsafe fn child_after_fork() {
    // SAFETY: the parent's `prepare_fork` took both before forking; the
    // child's copies are held by no thread that exists here.
    unsafe {
        crate::direct::release_pool();
        FALLBACK.release_held();
    }
    crate::ownership::orphan_borrows();
}

#[cfg(all(test, not(keel_loom)))]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;
    use std::vec::Vec;

    struct Blocks(Vec<*mut u8>);
    // SAFETY: the blocks are handed over whole to the freeing thread.
    unsafe impl Send for Blocks {}

    /// `alloc_fast` serves a warm class without help and returns null
    /// exactly on the due counts (every 4th call here, with the period
    /// pinned), and `alloc_after_fast` serves those calls and starts the
    /// next count; nothing is lost or handed out twice.
    #[test]
    fn fast_path_defers_due_counts_to_the_slow_path() {
        std::thread::spawn(|| {
            // Warm class 48: a slab with room is on the bin.
            let w = alloc(48, 16);
            assert!(!w.is_null());
            let h = cur::get();
            assert!(!h.is_null());
            // SAFETY: this thread owns `h`; the fields are read and set
            // between calls.
            let l = || unsafe { (*h).local() };
            // SAFETY: as above; the count is an atomic beside the state.
            let n = || unsafe { &(*h).nudge };
            let mut got = Vec::new();
            let (mut due, mut other_nulls) = (0, 0);
            // Pinned at every period's start, so the slow-path check's
            // adaptation does not move it: four calls a period.
            l().tick_mask = 3;
            n().rearm(4);
            for _ in 0..64 {
                let before = n().ticks();
                let is_due = before.wrapping_sub(1) as i32 <= 0;
                let mut p = alloc_fast(48, 16);
                assert_eq!(n().ticks(), before.wrapping_sub(1), "every call is counted");
                if is_due {
                    assert!(p.is_null(), "a due count goes to the slow path");
                    due += 1;
                } else if p.is_null() {
                    // The slab just filled up (possible on an adopted heap).
                    other_nulls += 1;
                }
                if p.is_null() {
                    p = alloc_after_fast(48, 16, false);
                }
                if is_due {
                    // One read at a time: each `l()` is a fresh `&mut`.
                    let (ticks, mask) = (n().ticks(), l().tick_mask);
                    assert_eq!(ticks, mask + 1, "the check starts the next count");
                    l().tick_mask = 3;
                    n().rearm(4);
                }
                assert!(!p.is_null() && p.addr().is_multiple_of(16));
                got.push(p);
            }
            assert_eq!(due, 16);
            assert!(other_nulls <= 2, "{other_nulls} refills for 64 blocks");
            let mut sorted = got.clone();
            sorted.sort();
            sorted.dedup();
            assert_eq!(sorted.len(), got.len(), "a block was handed out twice");
            for p in got.into_iter().chain([w]) {
                // SAFETY: live blocks, each freed once.
                unsafe { free(p) };
            }
        })
        .join()
        .unwrap();
    }

    /// `free_if_owned` frees our blocks (they come back) and leaves memory
    /// that is not keel-heap's alone.
    #[test]
    fn free_if_owned_tells_ours_from_foreign() {
        let mut local = [0u64; 4];
        let foreign = local.as_mut_ptr().cast::<u8>();
        // SAFETY: `foreign` is not keel-heap's: nothing happens to it.
        assert!(!unsafe { free_if_owned(foreign) });
        assert_eq!(local, [0; 4]);
        for size in [16usize, 3000, 100 << 10, 3 << 20] {
            let p = alloc(size, 16);
            assert!(!p.is_null());
            // SAFETY: a live block, freed once.
            assert!(unsafe { free_if_owned(p) }, "size {size}");
        }
    }

    /// A thread that never allocated frees small, medium and direct-mapped
    /// blocks of another heap while the fallback lock is held: the frees
    /// must not wait for that lock.
    #[test]
    fn free_from_heapless_thread_takes_no_fallback_lock() {
        let sizes = [24usize, 4000, 300 << 10, 2 << 20];
        let blocks = Blocks(sizes.iter().map(|&n| alloc(n, 16)).collect());
        assert!(blocks.0.iter().all(|b| !b.is_null()));
        // Region blocks (the rest are direct maps; which depends on the
        // region size, smaller under Miri).
        let in_regions = blocks
            .0
            .iter()
            .filter(|b| crate::chunk_map::chunk_kind(b.addr()) == crate::chunk_map::CHUNK_REGION)
            .count() as u64;
        assert!(in_regions >= 2, "the small blocks come from regions");
        let before = stats().foreign_frees;
        FALLBACK.hold();
        let (tx, rx) = mpsc::channel();
        let t = std::thread::spawn(move || {
            let blocks = blocks;
            for &b in &blocks.0 {
                // SAFETY: live keel-heap blocks, freed once; this thread has no heap.
                unsafe { free(b) };
            }
            tx.send(()).unwrap();
        });
        let done = rx.recv_timeout(Duration::from_secs(20));
        // SAFETY: taken just above; the freeing thread never takes it.
        unsafe { FALLBACK.release_held() };
        t.join().unwrap();
        assert!(
            done.is_ok(),
            "a heapless thread's free waited for the fallback lock"
        );
        // The region blocks reached this heap's foreign list; GC takes them back.
        gc();
        assert!(stats().foreign_frees >= before + in_regions);
    }
}
