//! The GC passes, in order:
//!
//! 1. flush foreign frees (blocks other threads freed into this heap);
//! 2. flush slab caches (empty slabs go back to the buddy lists);
//! 3. return cached blocks to the free lists, coalescing buddies;
//! 4. reclaim the oversized pool beyond its byte budget (a full release
//!    unmaps all of it);
//! 5. release pages of free blocks with `madvise(MADV_DONTNEED)`.
//!
//! Pass 5 is amortized (releasing on every GC cost 21% of the repeated query's
//! time, because the next query re-faults the very pages it just freed). It
//! runs on one GC in `purge_every`, only on blocks that have stayed free for
//! at least `min_free_gcs` GCs, within `release_budget` bytes per call, and
//! keeps each free block's first page, where its links live. Entirely free
//! regions beyond the first are unmapped instead. `Release::All` (behind
//! `release_pages`) runs it now, on everything, unbounded.
//!
//! Idle decay is separate from the GC and needs no call: every free block,
//! empty slab and pooled direct map carries the time it became free, and the
//! allocator's own slow paths (slab refills, medium and large allocations,
//! and a check every few allocations whose period adapts to the allocation
//! rate, see [`on_slow_path`]) release what has stayed free for `decay_ms`,
//! whatever else the thread allocates (jemalloc's `dirty_decay_ms`,
//! mimalloc's purge delay). A pass releases everything free for at least
//! 7/8 of `decay_ms` and passes are at least 1/8 of it apart, so memory
//! comes back between 7/8 and 1 `decay_ms` after it was freed, plus the
//! wait for the heap's next allocation (the decay thread zeroes the count
//! of a heap whose deadline passed, `nudge.rs`), at a bounded number of
//! passes per heap.

use crate::buddy::{BlockFlags, FreeBlock, NODE_BYTES};
use crate::decay::{self, NEVER, aged_at, decay_age, decay_step, is_aged};
use crate::heap::HeapCore;
use crate::layout::PAGE;
use crate::region::{ORDERS, Region};
use crate::size_class::CLASSES;
use crate::stats::{HeapCounters, global};
use crate::sync::plain::Ordering;
use crate::{os, pool, slab};

/// Drains the foreign lists of abandoned heaps that have frees waiting
/// (for a statistics snapshot, which then counts them freed). A heap
/// another thread has borrowed (the decay thread's sweep) is waited for:
/// its borrow is short, and until it ends the heap's published counters
/// may miss frees the borrower already took off the list.
pub(crate) fn drain_abandoned() {
    crate::heap::for_each_heap(|a, abandoned| {
        if !abandoned {
            return;
        }
        // Bounded: a borrower descheduled for longer leaves its frees to
        // the next snapshot.
        for _ in 0..1024 {
            if a.ownership().is_borrowed() {
                os::yield_now();
                continue;
            }
            // Acquire: the borrow that just ended published its counters
            // before ending (`give_back`).
            core::sync::atomic::fence(Ordering::Acquire);
            if a.foreign.is_empty() || !a.ownership().is_abandoned() {
                return; // nothing waits, or adopted: its owner drains it
            }
            if a.ownership().try_borrow() {
                // SAFETY: borrowed just now, given back right after.
                unsafe {
                    a.drain_foreign();
                    a.give_back();
                }
                return;
            }
        }
    });
}

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
    let o = crate::options::options();
    if cfg!(debug_assertions) || o.checker {
        // SAFETY: owner-only.
        if let Err(e) = unsafe { crate::valid::check(h) } {
            crate::report::report_invalid(e);
        }
    }
    // SAFETY: owner-only state throughout.
    unsafe {
        let epoch = {
            let l = h.local();
            l.epoch = l.epoch.wrapping_add(1);
            l.epoch
        };
        let gepoch = global().gc_epoch.fetch_add(1, Ordering::Relaxed) + 1;
        h.drain_foreign(); // 1
        h.flush_empty_slabs(); // 2
        h.local().buddy.flush_cache(epoch); // 3
        if release == Release::All {
            pool::unmap_all(); // 4, the whole pool
        } else {
            pool::reclaim_beyond_budget(); // 4
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
            let left = budget.saturating_sub(used);
            let (bytes, calls) = pool::release_aged(gepoch, min_age as u64, left);
            global().released.fetch_add(bytes as u64, Ordering::Relaxed);
            global().madvise_calls.fetch_add(calls, Ordering::Relaxed);
            HeapCounters::bump(&h.counters().release_passes, 1);
        }
        HeapCounters::bump(&h.counters().gc_passes, 1);
        let now = os::now_ms();
        let l = h.local();
        l.last_gc_ms = now;
        l.now_ms = now;
        // Passes 2 and 3 keep every block's stamp (a merged block takes the
        // later one), so a pending deadline stays a lower bound; a full
        // release leaves nothing to decay.
        if release == Release::All {
            l.decay_due = NEVER;
            h.publish_due(NEVER);
        }
        let live = l.counters.live();
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
            if free && (kept_one || min_age == 0) && left >= crate::layout::REGION {
                h.drop_region(r);
                left -= crate::layout::REGION;
                released += crate::layout::REGION as u64;
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
                // Resident blocks come first: the first released one ends
                // the list's work.
                if (*b).flags.contains(BlockFlags::RELEASED) {
                    break;
                }
                let next = (*b).next;
                if aged((*b).since) {
                    calls += 1;
                    if release_block(b) {
                        l.buddy.mark_released(b, o as u8);
                        left -= len;
                        released += len as u64;
                    }
                }
                b = next;
            }
        }
    }
    let c = h.counters();
    HeapCounters::bump(&c.released, released);
    HeapCounters::bump(&c.madvise_calls, calls);
    budget - left
}

/// Releases the pages of free block `b` after its first and zeroes the
/// rest of its first page, so it reads as zero beyond its links (calloc
/// skips the memset); the caller marks it released.
///
/// # Safety
/// `b` is a free block of the caller's heap, of order at least 1.
unsafe fn release_block(b: *mut FreeBlock) -> bool {
    // SAFETY: the block is free and ours; its first page keeps the links.
    unsafe {
        let len = (PAGE << (*b).order) - PAGE;
        if !os::release(b.cast::<u8>().add(PAGE), len) {
            return false;
        }
        b.cast::<u8>()
            .add(NODE_BYTES)
            .write_bytes(0, PAGE - NODE_BYTES);
        true
    }
}

/// The slow-path check, cheap enough for every slow path: reads the coarse
/// clock once, adapts the allocation count between checks to the rate at
/// which this heap allocates (so that a check comes at least about every
/// 1/8 of `decay_ms` while the thread allocates at all, and seldom when it
/// allocates fast), and runs what is due: this heap's decay pass, the
/// direct-map pool's, the sweep of abandoned heaps, and the GC deadline for
/// a program that never calls `gc()` (drains foreign frees once per
/// `decay_ms`). Returns whether that GC ran.
///
/// # Safety
/// The caller owns `h`.
pub(crate) unsafe fn on_slow_path(h: &HeapCore, ticked: bool) -> bool {
    let decay = crate::options::options_decay_ms();
    let now = os::now_ms();
    // SAFETY: owner-only state.
    let l = unsafe { h.local() };
    l.now_ms = now;
    if decay == 0 {
        l.tick_mask = TICK_MAX;
        return false;
    }
    // A new owner of an adopted heap runs it on a shorter clock for a while
    // (see `HeapCore::note_adopted`).
    let young = now < l.short_until;
    let own = if young {
        decay::adopted_decay(decay)
    } else {
        decay
    };
    if ticked {
        // Fewer allocations between counted checks when they are slow to
        // come, more when they come fast (other slow paths do not count:
        // a burst of large allocations says nothing about the rate later).
        let since = now.saturating_sub(l.tick_ms);
        l.tick_ms = now;
        if since > own / 8 {
            l.tick_mask >>= 1;
        } else if since < own / 32 && l.tick_mask < TICK_MAX {
            l.tick_mask = l.tick_mask << 1 | 1;
        }
    }
    let generation = crate::options::options_generation();
    if l.opt_gen != generation {
        // The options changed: recompute the deadline from the stamps.
        l.opt_gen = generation;
        l.free_check_below = crate::free::free_check_below(crate::report::full_checks());
        l.decay_due = l.decay_due.min(now);
        h.publish_due(l.decay_due);
    }
    if young {
        // A free's deadline was set on the long clock: a step after the
        // last pass is the short one's.
        if l.decay_due != NEVER && now >= l.decay_due.min(l.decay_last + decay_step(own)) {
            // SAFETY: forwarded ownership.
            unsafe { decay_pass(h, now, own) };
        }
    } else if now >= l.decay_due {
        // SAFETY: forwarded ownership.
        unsafe { decay_pass(h, now, decay) };
    }
    pool::decay(now, decay);
    sweep_abandoned(now, decay);
    if ticked {
        // A nudge took this heap's deadline off the board; if the pass did
        // not run (this clock read lagged the decay thread's), put it back.
        // SAFETY: owner-only state.
        let d = unsafe { h.local() }.decay_due;
        if d != NEVER && crate::nudge::board_due() > d {
            h.publish_due(d);
        }
    }
    // A deadline waits (this heap's or another's): the decay thread must
    // run to nudge it. Started here, where no borrow of the heap is live
    // and no block is in flight, since creating a thread may allocate (on
    // this heap, unless it is the fallback heap, whose lock we hold).
    // SAFETY: owner-only state.
    let l = unsafe { h.local() };
    if !l.locked
        && crate::options::decay_thread_on()
        && (l.decay_due != NEVER || crate::nudge::board_due() != NEVER)
    {
        crate::pool::thread::ensure_started();
    }
    // SAFETY: owner-only state.
    if now.saturating_sub(unsafe { h.local() }.last_gc_ms) >= decay {
        // SAFETY: forwarded ownership.
        unsafe { run(h, Release::Amortized) };
        return true;
    }
    false
}

/// The largest tick mask: a check at least every 4096 allocations.
pub(crate) const TICK_MAX: u32 = 4095;

/// Releases what has been free for at least 7/8 of `decay` ms: empty slabs
/// go back to the buddy lists, cached blocks to the free lists (coalescing),
/// entirely free regions are unmapped and free blocks' pages released.
/// Sets the next deadline from what is left.
///
/// # Safety
/// The caller owns `h`.
pub(crate) unsafe fn decay_pass(h: &HeapCore, now: u64, decay: u64) {
    let age = decay_age(decay);
    let mut next = NEVER;
    let mut released = 0u64;
    let mut calls = 0u64;
    // SAFETY: owner-only state; every block touched is ours.
    unsafe {
        let l = h.local();
        let epoch = l.epoch;
        let mut m = l.parked;
        while !m.is_null() {
            let nm = (*m).next;
            let ms = (*m).empty_ms;
            if is_aged(now, ms, age) {
                slab::unpark(&mut h.local().parked, m);
                h.dissolve(m);
            } else {
                next = next.min(aged_at(now, ms, age));
            }
            m = nm;
        }
        // A bin's only slab stays on its bin when it empties.
        for c in 0..CLASSES {
            let l = h.local();
            let m = l.bins[c];
            if !m.is_null() && (*m).used == 0 && (*m).next.is_null() {
                let ms = (*m).empty_ms;
                if is_aged(now, ms, age) {
                    slab::unlink(&mut l.bins[c], m);
                    h.dissolve(m);
                } else {
                    next = next.min(aged_at(now, ms, age));
                }
            }
        }
        let l = h.local();
        l.buddy.flush_cache_if(epoch, |ms| {
            let aged = is_aged(now, ms, age);
            if !aged {
                next = next.min(aged_at(now, ms, age));
            }
            aged
        });
        let mut r = l.regions;
        while !r.is_null() {
            let nr = (*r).next;
            let l = h.local();
            if l.buddy.region_is_free(r)
                && (0..ORDERS).all(|k| {
                    is_aged(
                        now,
                        (*Region::page_ptr(r, 1 << k).cast::<FreeBlock>()).since_ms,
                        age,
                    )
                })
            {
                h.drop_region(r);
                released += crate::layout::REGION as u64;
            }
            r = nr;
        }
        let l = h.local();
        for o in 1..ORDERS {
            let len = (PAGE << o) - PAGE;
            let mut b = l.buddy.free[o];
            // Resident blocks come first: the first released one ends the
            // list's work.
            while !b.is_null() && !(*b).flags.contains(BlockFlags::RELEASED) {
                let nb = (*b).next;
                let ms = (*b).since_ms;
                if is_aged(now, ms, age) {
                    calls += 1;
                    if release_block(b) {
                        l.buddy.mark_released(b, o as u8);
                        released += len as u64;
                    }
                } else {
                    next = next.min(aged_at(now, ms, age));
                }
                b = nb;
            }
        }
        let l = h.local();
        l.decay_last = now;
        l.decay_due = if next == NEVER {
            NEVER
        } else {
            next.max(now + decay_step(decay))
        };
        h.publish_due(l.decay_due);
        let c = h.counters();
        HeapCounters::bump(&c.released, released);
        HeapCounters::bump(&c.madvise_calls, calls);
        HeapCounters::bump(&c.decay_passes, 1);
        h.publish();
    }
}

/// The decay of heaps that exited threads abandoned, which have no owner to
/// run it: once their earliest deadline passed, borrows each abandoned heap
/// in turn, drains what other threads freed into it and runs its decay pass
/// (under [`abandoned_decay`]) if due. Runs from any heap's slow path, at
/// most once per deadline and [`decay::sweep_gap`].
pub(crate) fn sweep_abandoned(now: u64, decay: u64) {
    if decay::abandoned_due() > now || !decay::sweep_allowed(now, decay) {
        return;
    }
    if !decay::take_abandoned_due(now) {
        return;
    }
    crate::stats::global()
        .sweeps
        .fetch_add(1, crate::sync::plain::Ordering::Relaxed);
    let decay = decay::abandoned_decay(decay);
    crate::heap::for_each_heap(|a, abandoned| {
        if abandoned && a.ownership().try_borrow() {
            // SAFETY: borrowed just now, given back right after.
            unsafe {
                a.drain_foreign();
                let l = a.local();
                l.now_ms = now;
                if now >= l.decay_due.min(l.decay_last + decay_step(decay)) {
                    decay_pass(a, now, decay);
                }
                a.give_back();
            }
        }
    });
}

/// Runs the slow-path check now (the public `maybe_collect`). Returns
/// whether the GC deadline ran a GC.
///
/// # Safety
/// The caller owns `h`.
pub(crate) unsafe fn maybe_collect(h: &HeapCore) -> bool {
    // SAFETY: forwarded ownership.
    unsafe { on_slow_path(h, false) }
}

impl HeapCore {
    /// Abandons the heap: drains its foreign frees and flushes its block
    /// cache, then lets go (making the sweep due if a free that found the
    /// heap owned landed after the drain).
    ///
    /// Its empty slabs stay as they are (parked, or on their bins), unread:
    /// each is checked whole (`check_emptied`) only where it is dissolved
    /// or made over, by the heap's adopter or the sweep of abandoned heaps
    /// (`sweep_abandoned`), the only ways slab memory reaches the buddy
    /// lists or another class. A thread that exits no longer reads every
    /// object it freed (a process whose threads exit at its end never
    /// reads them), and no memory is reused unchecked.
    ///
    /// # Safety
    /// Owner only; the caller never touches the heap's local state again.
    pub(crate) unsafe fn abandon(&self) {
        // SAFETY: owner-only.
        unsafe {
            self.drain_foreign();
            let epoch = self.local().epoch;
            self.local().buddy.flush_cache(epoch);
            self.publish();
            let l = self.local();
            decay::note_abandoned(l.decay_due, l.now_ms);
        }
        crate::ownership::let_go(self.ownership(), &self.foreign, false);
    }

    /// Ends a borrow: publishes the borrower's counters, hands the decay
    /// deadline to the sweep of abandoned heaps, and lets go (making the
    /// sweep due again if a free landed after the borrower's drain: the
    /// sweep that free made due may have found the heap borrowed).
    ///
    /// # Safety
    /// The caller borrowed the heap and never touches its local state again.
    pub(crate) unsafe fn give_back(&self) {
        // SAFETY: borrowed, so ours until the store below.
        unsafe {
            self.publish();
            let l = self.local();
            decay::note_abandoned(l.decay_due, l.now_ms);
        }
        crate::ownership::let_go(self.ownership(), &self.foreign, true);
    }
}
