//! A heap: its owner-only state and the shared part other threads touch,
//! how a thread gets one (adopting an abandoned heap or making one), and
//! its regions. The allocation paths are in `alloc.rs`, the free paths in
//! `free.rs`, the GC, decay and giving a heap up in `gc.rs`; the ownership
//! protocol in `ownership/README.md`.
//!
//! A `HeapCore` lives in its own small mapping and is never unmapped. Its
//! `local` part (bins, buddy lists, regions) is touched only by the thread
//! that currently owns (or borrows) it, without locks or atomic
//! read-modify-writes. Other threads touch only the shared part: the
//! foreign list (to free blocks they do not own), the ownership word and
//! the published counters.

use crate::buddy::{Buddy, Since};
use crate::chunk_map::{CHUNK_NONE, CHUNK_REGION, chunk_map_fits, mark_chunks};
use crate::decay::NEVER;
use crate::foreign::ForeignList;
use crate::layout::{PAGE, REGION};
use crate::nudge::Nudge;
use crate::os;
use crate::ownership::{self, Ownership, Registration};
use crate::region::{Region, SlabMeta};
use crate::size_class::CLASSES;
use crate::stats::{HeapCounters, LocalCounters, global};
use crate::sync::plain::Ordering as POrd;
use core::cell::UnsafeCell;
use core::ptr;

/// The owner-only part of a heap.
pub(crate) struct Local {
    pub(crate) bins: [*mut SlabMeta; CLASSES],
    /// Empty slabs taken off their bins: resident 64 KiB blocks any class
    /// reuses before new memory is touched (the decay releases them by age).
    pub(crate) parked: *mut SlabMeta,
    pub(crate) buddy: Buddy,
    pub(crate) regions: *mut Region,
    pub(crate) epoch: u32,
    pub(crate) counters: LocalCounters,
    /// The coarse clock at this heap's last slow-path check: the stamp of
    /// what it frees until the next one.
    pub(crate) now_ms: u64,
    pub(crate) last_gc_ms: u64,
    /// When the next decay pass is due ([`NEVER`] when nothing free is
    /// waiting to age), and when the last one ran.
    pub(crate) decay_due: u64,
    pub(crate) decay_last: u64,
    /// Until this time (ms) the heap decays on the shorter clock of
    /// [`crate::decay::adopted_decay`]: its owner adopted it from an exited
    /// thread less than `decay_ms` ago (0: made fresh for its owner).
    pub(crate) short_until: u64,
    /// The options generation the deadline was computed under.
    pub(crate) opt_gen: u32,
    /// Used under a lock (the fallback heap): its slow paths never start
    /// the decay thread, whose creation may allocate and would come back
    /// for the lock this thread holds.
    pub(crate) locked: bool,
    /// A counted check comes every `tick_mask + 1` allocations (the count
    /// itself is in [`HeapCore::nudge`], where the decay thread can zero it).
    pub(crate) tick_mask: u32,
    /// The clock at the last check a count made due.
    pub(crate) tick_ms: u64,
    /// The process's free key ([`crate::free_key`]), kept here where the
    /// free path reads it from a line it touches anyway.
    pub(crate) free_key: u64,
    /// A free into a slab with fewer live blocks takes the checked path
    /// (`free::free_check_below`; every free with the checker on):
    /// refreshed when the options change.
    pub(crate) free_check_below: u16,
}

/// One heap. `repr(C)` with its registration first, so the registry's
/// entries are heaps.
#[repr(C)]
pub(crate) struct HeapCore {
    reg: Registration,
    /// The process's free key, read by threads that free into this heap
    /// (beside the ownership word they read anyway).
    pub(crate) free_key: u64,
    pub(crate) foreign: ForeignList,
    pub(crate) counters: HeapCounters,
    local: UnsafeCell<Local>,
    /// The allocation count and the published decay deadline, the two
    /// words the decay thread touches (`nudge.rs`): after the owner's
    /// state, away from the line other threads' frees write.
    pub(crate) nudge: Nudge,
}

/// Calls `f` on every heap with whether it has no owner.
pub(crate) fn for_each_heap(mut f: impl FnMut(&HeapCore, bool)) {
    ownership::for_each(|r, abandoned| {
        // SAFETY: every registration is the first field of a `HeapCore`
        // (`repr(C)`), and heaps are never unmapped.
        f(unsafe { &*r.cast::<HeapCore>() }, abandoned)
    });
}

/// Adopts an abandoned heap or creates one. Null when out of memory.
pub(crate) fn acquire() -> *const HeapCore {
    crate::report::init_free_key();
    // A borrowed heap (the sweep draining and decaying it, a statistics
    // snapshot) is abandoned again shortly: wait for it rather than map a
    // new heap, spinning at first, then yielding for up to about 20 ms (a
    // sweep beside a new thread is the common case since the decay thread
    // runs it; under emulation it takes milliseconds).
    let mut waited_from = None;
    for i in 0u32.. {
        let mut found: *const HeapCore = ptr::null();
        let mut borrowed = false;
        for_each_heap(|h, abandoned| {
            if found.is_null() && abandoned {
                if h.ownership().try_adopt() {
                    found = h;
                } else {
                    borrowed |= h.ownership().is_borrowed();
                }
            }
        });
        if !found.is_null() {
            // SAFETY: adopted just now, so ours.
            unsafe { (*found).note_adopted() };
            return found;
        }
        if !borrowed {
            break;
        }
        if i < 64 {
            crate::sync::spin_wait();
            continue;
        }
        let now = os::now_ms();
        if now.saturating_sub(*waited_from.get_or_insert(now)) > 20 {
            break;
        }
        os::yield_now();
    }
    let len = core::mem::size_of::<HeapCore>().next_multiple_of(PAGE);
    let p: *mut HeapCore = os::map(len, PAGE).cast();
    if p.is_null() {
        return p;
    }
    global().mapped.fetch_add(len as u64, POrd::Relaxed);
    let now = os::now_ms();
    // SAFETY: a fresh page-aligned mapping large enough for a HeapCore.
    unsafe {
        p.write(HeapCore {
            reg: Registration::new_owned(),
            foreign: ForeignList::new(),
            free_key: crate::report::free_key(),
            counters: HeapCounters::default(),
            local: UnsafeCell::new(Local {
                bins: [ptr::null_mut(); CLASSES],
                parked: ptr::null_mut(),
                buddy: Buddy::new(),
                regions: ptr::null_mut(),
                epoch: 0,
                counters: LocalCounters::default(),
                now_ms: now,
                last_gc_ms: now,
                decay_due: NEVER,
                decay_last: 0,
                short_until: 0,
                opt_gen: crate::options::options_generation(),
                locked: false,
                // Small at first: the check adapts it to the allocation rate.
                tick_mask: 15,
                tick_ms: now,
                free_key: crate::report::free_key(),
                free_check_below: crate::free::free_check_below(crate::report::full_checks()),
            }),
            nudge: Nudge::new(),
        });
        ownership::register(&raw mut (*p).reg);
    }
    p
}

impl HeapCore {
    /// The heap owning region `r` (written once before the region is
    /// published, never changed).
    ///
    /// # Safety
    /// `r` is a live region.
    #[inline(always)]
    pub(crate) unsafe fn owner_of(r: *const Region) -> *const HeapCore {
        // SAFETY: a live region's header.
        unsafe { (*r).owner.cast() }
    }

    /// The ownership word (see `ownership/README.md`).
    #[inline(always)]
    pub(crate) fn ownership(&self) -> &Ownership {
        &self.reg.ownership
    }

    /// The owner-only state.
    ///
    /// # Safety
    /// The caller owns the heap, and no other reference from `local` is live.
    #[inline]
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn local(&self) -> &mut Local {
        // SAFETY: exclusive by the caller's contract.
        unsafe { &mut *self.local.get() }
    }

    /// Counts one allocation; true when the slow-path check is due (one
    /// allocation in `tick_mask + 1`, a period [`gc::on_slow_path`] adapts):
    /// a count down, one decrement and its sign on the fast path. The
    /// decay thread may zero the count ([`crate::nudge`]).
    ///
    /// # Safety
    /// The caller owns the heap.
    #[inline(always)]
    pub(crate) unsafe fn tick(&self) -> bool {
        self.nudge.tick()
    }

    /// Whether the count has made the check due (see [`tick`](Self::tick)).
    ///
    /// # Safety
    /// The caller owns the heap.
    #[inline(always)]
    pub(crate) unsafe fn ticks_due(&self) -> bool {
        self.nudge.is_due()
    }

    /// Starts the next count after a counted check.
    ///
    /// # Safety
    /// The caller owns the heap.
    #[inline]
    pub(crate) unsafe fn rearm_ticks(&self) {
        // SAFETY: owner-only field.
        let n = unsafe { self.local() }.tick_mask + 1;
        self.nudge.rearm(n);
    }

    /// Publishes decay deadline `d` (the owner's `decay_due`, just changed)
    /// for the decay thread's nudge, waking the thread when the deadline
    /// came nearer. It does not start one: a free publishes, and creating a
    /// thread may allocate (glibc's `pthread_create` does), which inside a
    /// free could hand the block just freed to the thread's setup before
    /// the free returns (a double free would then go unseen); the slow-path
    /// check starts it ([`gc::on_slow_path`]).
    pub(crate) fn publish_due(&self, d: u64) {
        if self.nudge.publish(crate::nudge::board(), d) {
            crate::pool::thread::wake();
        }
    }

    /// Starts a new owner's tenure of an adopted heap: until it has held
    /// the heap for `decay_ms`, the heap decays on the shorter clock of
    /// [`crate::decay::adopted_decay`]. A program whose short-lived threads
    /// pass heaps on to each other (each exits before its blocks are freed)
    /// would otherwise keep every heap's free memory for the full
    /// `decay_ms`, though no owner lives that long.
    ///
    /// # Safety
    /// The caller just adopted the heap.
    unsafe fn note_adopted(&self) {
        let now = os::now_ms();
        // SAFETY: ours since the adoption.
        let l = unsafe { self.local() };
        l.now_ms = now;
        l.short_until = now.saturating_add(crate::options::options_decay_ms());
    }

    pub(crate) fn counters(&self) -> &HeapCounters {
        &self.counters
    }

    pub(crate) unsafe fn add_region(&self) -> Option<()> {
        let r: *mut Region = os::map(REGION, REGION).cast();
        if r.is_null() {
            return None;
        }
        if !chunk_map_fits(r.addr(), REGION) {
            // SAFETY: just mapped.
            unsafe { os::unmap(r.cast(), REGION, REGION) };
            return None;
        }
        // SAFETY: a fresh zeroed aligned region; owner-only local state.
        unsafe {
            Region::init(r, ptr::from_ref(self).cast());
            mark_chunks(r.addr(), REGION, CHUNK_REGION, CHUNK_REGION);
            let l = self.local();
            let since = Since {
                gc: l.epoch,
                ms: l.now_ms as u32,
            };
            l.buddy.add_region(r, since);
            (*r).next = l.regions;
            l.regions = r;
            global().mapped.fetch_add(REGION as u64, POrd::Relaxed);
            self.counters.publish(&l.counters);
            crate::stats::sample_peak(l.counters.live());
        }
        Some(())
    }

    /// Unmaps a region whose blocks are all free.
    ///
    /// # Safety
    /// Owner only; `buddy.region_is_free(r)` holds and `r` is on our list.
    pub(crate) unsafe fn drop_region(&self, r: *mut Region) {
        // SAFETY: owner-only; the region is entirely free so nothing points in.
        unsafe {
            let l = self.local();
            l.buddy.remove_region(r);
            let mut pp: *mut *mut Region = &mut l.regions;
            while *pp != r {
                pp = &raw mut (**pp).next;
            }
            *pp = (*r).next;
            (*r).magic = 0;
            mark_chunks(r.addr(), REGION, CHUNK_NONE, CHUNK_NONE);
            os::unmap(r.cast(), REGION, REGION);
            global().mapped.fetch_sub(REGION as u64, POrd::Relaxed);
        }
    }

    /// Publishes the owner's counters.
    ///
    /// # Safety
    /// Owner only.
    pub(crate) unsafe fn publish(&self) {
        // SAFETY: owner-only.
        let l = unsafe { self.local() };
        self.counters.publish(&l.counters);
    }
}
