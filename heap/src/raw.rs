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

use crate::heap::{self, HeapCore};
use crate::sync::{Locked, plain};
use crate::{Options, Stats, gc};
use core::cell::Cell;
use core::ptr;

const UNINIT: u8 = 0;
const INITIALIZING: u8 = 1;
const READY: u8 = 2;
const DESTROYED: u8 = 3;

std::thread_local! {
    /// The thread's heap once READY (null otherwise): the fast path reads only this.
    static CUR: Cell<*const HeapCore> = const { Cell::new(ptr::null()) };
    static STATE: Cell<u8> = const { Cell::new(UNINIT) };
    /// Its destructor abandons the heap; registered on first use.
    static EXIT: ExitHook = const { ExitHook };
}

struct ExitHook;

impl Drop for ExitHook {
    fn drop(&mut self) {
        let h = CUR.with(|c| c.replace(ptr::null()));
        STATE.with(|s| s.set(DESTROYED));
        if !h.is_null() {
            // SAFETY: this thread owned the heap and will not use it again
            // (CUR is cleared, STATE is DESTROYED: later calls use the fallback).
            unsafe { (*h).abandon() };
        }
    }
}

/// The calling thread's heap, set up on first use; `None` while it is being
/// set up or after it was torn down (then the fallback heap serves).
#[inline]
fn current() -> Option<&'static HeapCore> {
    let h = CUR.with(|c| c.get());
    if !h.is_null() {
        // SAFETY: heaps are never unmapped; CUR is non-null only while this thread owns it.
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
    CUR.with(|c| c.set(h));
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
            FALLBACK_HEAP.store(fb.0.cast_mut(), plain::Ordering::Release);
        }
        // SAFETY: heaps are never unmapped; the lock makes us its only user.
        f(unsafe { fb.0.as_ref() })
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

/// As [`alloc`], with the memory zeroed (no memset when the pages are known
/// fresh from the OS).
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
    let h = CUR.with(|c| c.get());
    let r = if h.is_null() {
        // No heap of ours (set-up, teardown, or a thread that never
        // allocated): other heaps' blocks go to their foreign lists and
        // direct maps to the pool, without the fallback lock; only the
        // fallback heap's own blocks are freed under its lock. (Were the
        // load stale, a fallback block would go to the fallback's foreign
        // list, which its next slow path drains: still correct.)
        let fb = FALLBACK_HEAP.load(plain::Ordering::Acquire);
        // SAFETY: forwarded contract.
        match unsafe { HeapCore::free_unowned(ptr, fb) } {
            Some(r) => r,
            None => with_fallback(|fb| match fb {
                // SAFETY: exclusive use of the fallback heap under its lock.
                Some(fb) => unsafe { fb.free(ptr) },
                None => Ok(()),
            }),
        }
    } else {
        // SAFETY: this thread owns `h`.
        unsafe { (*h).free(ptr) }
    };
    if let Err(e) = r {
        crate::report_bad_free(e);
    }
}

/// Resizes `ptr` to `new_size` at `align`; null `ptr` allocates. On failure
/// returns null and leaves `ptr` valid.
///
/// # Safety
/// `ptr` is null or a live block from keel-heap.
pub unsafe fn realloc(ptr: *mut u8, new_size: usize, align: usize) -> *mut u8 {
    // SAFETY: forwarded contract.
    unsafe { crate::realloc_with(ptr, new_size, align, alloc, |p| free(p)) }
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
/// exited threads, the fallback heap and the direct-map pool. (Heaps of other
/// live threads are theirs to release.)
pub fn release_pages() {
    // SAFETY: exclusive use of a heap.
    with_heap(|h| unsafe { gc::run(h, gc::Release::All) }, ());
    heap::for_each_heap(|h, abandoned| {
        if abandoned && h.ownership.try_adopt() {
            // SAFETY: adopted just now; abandoned again right after.
            unsafe {
                gc::run(h, gc::Release::All);
                h.abandon();
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

/// Cheap check for slow paths: runs the idle decay (release everything after
/// `decay_ms` of quiet) or the GC when its deadline passed.
pub fn maybe_collect() {
    // SAFETY: CUR is null or this thread's live heap.
    if let Some(h) = CUR.with(|c| unsafe { c.get().as_ref() }) {
        // SAFETY: this thread owns `h`.
        unsafe { gc::maybe_collect(h) }
    }
}

/// A process-wide statistics snapshot.
pub fn stats() -> Stats {
    // SAFETY: CUR is null or this thread's live heap.
    if let Some(h) = CUR.with(|c| unsafe { c.get().as_ref() }) {
        // SAFETY: this thread owns `h`.
        unsafe { h.publish() };
    }
    crate::stats::snapshot()
}

/// Sets the options (see [`Options`]); any time.
pub fn configure(opts: Options) {
    crate::configure(opts)
}

/// `pthread_atfork` prepare handler: takes every global lock so that no lock
/// is held by a thread that will not exist in the child.
pub fn prepare_fork() {
    FALLBACK.raw_lock().lock();
    crate::direct::pool_lock().lock();
}

/// `pthread_atfork` parent handler: releases what [`prepare_fork`] took.
pub fn parent_after_fork() {
    crate::direct::pool_lock().unlock();
    FALLBACK.raw_lock().unlock();
}

/// `pthread_atfork` child handler: releases the locks in the child. Heaps of
/// threads that do not exist in the child stay owned (their state may be
/// mid-update), so their memory is leaked there rather than reused.
pub fn child_after_fork() {
    crate::direct::pool_lock().reset();
    FALLBACK.raw_lock().reset();
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
            .filter(|b| crate::region::chunk_kind(b.addr()) == crate::region::CHUNK_REGION)
            .count() as u64;
        assert!(in_regions >= 2, "the small blocks come from regions");
        let before = stats().foreign_frees;
        FALLBACK.raw_lock().lock();
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
        FALLBACK.raw_lock().unlock();
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
