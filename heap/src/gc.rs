//! The GC passes, in order:
//!
//! 1. flush foreign frees (blocks other threads freed into this heap);
//! 2. flush slab caches (empty slabs go back to the buddy lists);
//! 3. return cached blocks to the free lists, coalescing buddies;
//! 4. reclaim the oversized pool beyond its byte budget;
//! 5. release pages of free blocks with `madvise(MADV_DONTNEED)`.
//!
//! Pass 5 is amortized (seed 004: releasing on every GC cost 21% of query
//! time, because the next query re-faults the very pages it just freed). It
//! runs on one GC in `purge_every`, only on blocks that have stayed free for
//! at least `min_free_gcs` GCs, within `release_budget` bytes per call, and
//! keeps each free block's first page, where its links live. Entirely free
//! regions beyond the first are unmapped instead. `Release::All` (behind
//! `release_pages` and idle decay) runs it now, on everything, unbounded.

use crate::buddy::{F_RELEASED, F_ZERO, FreeBlock, NODE_BYTES};
use crate::heap::HeapCore;
use crate::region::{ORDERS, Region};
use crate::stats::{HeapCounters, global};
use crate::sync::plain::Ordering;
use crate::{PAGE, direct, os};

/// How much pass 5 does.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Release {
    /// On one call in `purge_every`, aged blocks, within the budget.
    Amortized,
    /// Now, everything free, no budget.
    All,
}

/// Runs the GC passes on `h`.
///
/// # Safety
/// The caller owns `h`.
pub(crate) unsafe fn run(h: &HeapCore, release: Release) {
    // SAFETY: forwarded ownership.
    unsafe { run_scoped(h, release, true) }
}

/// Idle decay of a heap that an exited thread abandoned, adopted for this
/// call by a sweep: drains what other threads freed into it and, once it has
/// been quiet for `decay_ms` with something to release, releases its free
/// memory in full. Nothing else: nobody allocates from it, so an amortized
/// GC would only age its blocks, and the process-wide direct-map pool and
/// GC epoch are left to the owners' own GCs, so that one sweep does not age
/// or flush them once per abandoned heap.
///
/// # Safety
/// The caller owns `h` (adopted it).
pub(crate) unsafe fn decay_abandoned(h: &HeapCore) {
    let decay = crate::options().decay_ms;
    if decay == 0 {
        return;
    }
    // SAFETY: owner-only state.
    unsafe {
        h.drain_foreign();
        let l = h.local();
        if l.dirty && os::now_ms().saturating_sub(l.last_active_ms) >= decay {
            run_scoped(h, Release::All, false);
        }
    }
}

/// [`run`], with `pool` false leaving out the process-wide work: the GC
/// epoch, pass 4 and the direct-map pool's share of pass 5.
///
/// # Safety
/// The caller owns `h`.
unsafe fn run_scoped(h: &HeapCore, release: Release, pool: bool) {
    let o = crate::options();
    if cfg!(debug_assertions) || o.checker {
        // SAFETY: owner-only.
        if let Err(e) = unsafe { crate::valid::check(h) } {
            crate::report_invalid(e);
        }
    }
    // SAFETY: owner-only state throughout.
    unsafe {
        let epoch = {
            let l = h.local();
            l.epoch = l.epoch.wrapping_add(1);
            l.epoch
        };
        let gepoch = if pool {
            global().gc_epoch.fetch_add(1, Ordering::Relaxed) + 1
        } else {
            0
        };
        h.drain_foreign(); // 1
        h.flush_empty_slabs(); // 2
        h.local().buddy.flush_cache(epoch); // 3
        if pool {
            direct::reclaim_beyond_budget(); // 4
        }
        let every = o.purge_every.max(1);
        if release == Release::All || epoch % every == 0 {
            let (min_age, budget) = match release {
                Release::All => (0, usize::MAX),
                Release::Amortized => (o.min_free_gcs, o.release_budget),
            };
            // One budget for the call: the pool gets what the heap's own
            // free blocks left of it.
            let used = release_pass(h, epoch, min_age, budget);
            if pool {
                let left = budget.saturating_sub(used);
                let (bytes, calls) = direct::release_aged(gepoch, min_age as u64, left);
                global().released.fetch_add(bytes as u64, Ordering::Relaxed);
                global().madvise_calls.fetch_add(calls, Ordering::Relaxed);
            }
            HeapCounters::bump(&h.counters().release_passes, 1);
        }
        HeapCounters::bump(&h.counters().gc_passes, 1);
        let l = h.local();
        l.last_gc_ms = os::now_ms();
        if release == Release::All {
            l.dirty = false;
        }
        let live = l.counters.allocated.saturating_sub(l.counters.freed);
        h.publish();
        crate::stats::sample_peak(live);
    }
}

/// Pass 5 over one heap's free blocks and regions; returns the bytes of
/// `budget` it used.
///
/// # Safety
/// Owner only.
unsafe fn release_pass(h: &HeapCore, epoch: u32, min_age: u32, budget: usize) -> usize {
    let aged = |since: u32| epoch.wrapping_sub(since) >= min_age;
    let mut left = budget;
    let mut released = 0u64;
    let mut calls = 0u64;
    // SAFETY: owner-only state; every block touched is on our free lists.
    unsafe {
        // Entirely free regions beyond the first (or all of them on a full
        // release) are unmapped: that returns their header and link pages too.
        let mut r = h.local().regions;
        let mut kept_one = false;
        while !r.is_null() {
            let next = (*r).next;
            let l = h.local();
            let free = l.buddy.region_is_free(r)
                && (0..ORDERS)
                    .all(|k| aged((*Region::page_ptr(r, 1 << k).cast::<FreeBlock>()).since));
            if free && (kept_one || min_age == 0) && left >= crate::REGION {
                h.drop_region(r);
                left -= crate::REGION;
                released += crate::REGION as u64;
            } else {
                kept_one = true;
            }
            r = next;
        }
        let l = h.local();
        // Largest blocks first: most pages per madvise call.
        for o in (1..ORDERS).rev() {
            let len = (PAGE << o) - PAGE;
            let mut b = l.buddy.free[o];
            while !b.is_null() {
                if left < len {
                    break;
                }
                if (*b).flags & F_RELEASED == 0 && aged((*b).since) {
                    let start = b.cast::<u8>().add(PAGE);
                    calls += 1;
                    if os::release(start, len) {
                        // Zero the rest of the first page so the block reads
                        // as zero beyond its links (calloc skips the memset).
                        b.cast::<u8>()
                            .add(NODE_BYTES)
                            .write_bytes(0, PAGE - NODE_BYTES);
                        (*b).flags |= F_RELEASED | F_ZERO;
                        left -= len;
                        released += len as u64;
                    }
                }
                b = (*b).next;
            }
        }
    }
    let c = h.counters();
    HeapCounters::bump(&c.released, released);
    HeapCounters::bump(&c.madvise_calls, calls);
    budget - left
}

/// Idle decay and the GC deadline: cheap to call from any slow path.
/// Returns whether a GC ran.
///
/// # Safety
/// The caller owns `h`.
pub(crate) unsafe fn maybe_collect(h: &HeapCore) -> bool {
    let decay = crate::options().decay_ms;
    if decay == 0 {
        return false;
    }
    let now = os::now_ms();
    // SAFETY: owner-only.
    let (idle, since_gc, dirty) = unsafe {
        let l = h.local();
        // Allocations since the last look make the heap active, fast paths
        // too: a heap churning medium blocks through its cache takes no slow
        // path, and without this looked idle, so every call after `decay_ms`
        // flushed the cache and released the very blocks it was reusing.
        // They count as made at the last look (a lower bound, so a heap that
        // looks seldom may decay one look early; keel-malloc looks before
        // every large allocation). Frees alone do not count: drained frees
        // from other threads, or a thread tearing down what it built, are no
        // reason to keep memory. Counting, not a clock read per free.
        if l.counters.allocated != l.allocated_seen {
            l.allocated_seen = l.counters.allocated;
            l.last_active_ms = l.last_active_ms.max(l.looked_ms);
        }
        l.looked_ms = now;
        (
            now.saturating_sub(l.last_active_ms),
            now.saturating_sub(l.last_gc_ms),
            l.dirty,
        )
    };
    if idle >= decay && dirty {
        // SAFETY: forwarded ownership.
        unsafe { run(h, Release::All) };
    } else if since_gc >= decay {
        // SAFETY: forwarded ownership.
        unsafe { run(h, Release::Amortized) };
    } else {
        return false;
    }
    true
}

/// Marks the heap active now (slow paths), for idle decay.
///
/// # Safety
/// The caller owns `h`.
pub(crate) unsafe fn touch(h: &HeapCore) {
    // SAFETY: owner-only.
    let l = unsafe { h.local() };
    l.last_active_ms = os::now_ms();
    l.dirty = true;
}
