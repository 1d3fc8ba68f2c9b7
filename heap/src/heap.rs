//! Per-thread heaps: the fast paths, abandonment and adoption.
//!
//! A `HeapCore` lives in its own small mapping and is never unmapped. Its
//! `local` part (bins, buddy lists, regions) is touched only by the thread
//! that currently owns it, without locks or atomic read-modify-writes. Other
//! threads touch only the shared part: the foreign list (to free blocks they
//! do not own), the ownership word (to adopt an abandoned heap) and the
//! published counters.
//!
//! Ownership protocol: the owner does all its local work, then stores
//! `ABANDONED` with release ordering. An adopter's acquire CAS from
//! `ABANDONED` to `OWNED` therefore sees the heap's local state as the
//! previous owner left it. Foreign frees keep landing on the foreign list
//! whatever the state; the adopter drains them on its first slow path.
//!
//! A block freed into an abandoned heap goes onto its foreign list too, and
//! makes the sweep of abandoned heaps due: the next slow path of any heap
//! borrows each abandoned heap (`ABANDONED` to `BORROWED` with an acquire
//! CAS, back to `ABANDONED` with a release store), drains its foreign list
//! in place and runs its decay, so no memory waits for an owner that may
//! never come. A new thread looking for a heap waits out a borrow (a
//! sweep's few microseconds) rather than map a new heap.

use crate::buddy::{BlockFlags, Buddy, Since};
use crate::foreign::ForeignList;
use crate::gc::{self, NEVER};
use crate::region::{
    Bad, CHUNK_REGION, Loc, Region, SLAB, SLAB_ORDER, SlabMeta, chunk_map_fits, locate, mark_chunks,
};
use crate::size_class::{CLASSES, class_for, class_size};
use crate::stats::{HeapCounters, LocalCounters, global};
use crate::sync::plain::{self, Ordering as POrd};
use crate::sync::{AtomicU8, Ordering};
use crate::{MEDIUM_MAX, PAGE, REGION, direct, os, slab};
use core::cell::UnsafeCell;
use core::ptr;

pub(crate) const OWNED: u8 = 1;
pub(crate) const ABANDONED: u8 = 2;
pub(crate) const BORROWED: u8 = 3;

/// The ownership word of a heap (see the module docs for the protocol).
pub(crate) struct Ownership {
    state: AtomicU8,
}

impl Ownership {
    #[inline]
    pub(crate) fn new_owned() -> Self {
        Ownership {
            state: AtomicU8::new(OWNED),
        }
    }

    /// Gives the heap up; everything the owner did before is visible to the
    /// next adopter.
    #[inline]
    pub(crate) fn abandon(&self) {
        self.state.store(ABANDONED, Ordering::Release);
    }

    /// Claims an abandoned heap.
    #[inline]
    pub(crate) fn try_adopt(&self) -> bool {
        self.state.load(Ordering::Relaxed) == ABANDONED
            && self
                .state
                .compare_exchange(ABANDONED, OWNED, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }

    /// Whether the heap has no owner (abandoned, or borrowed for a moment).
    #[inline]
    pub(crate) fn is_abandoned(&self) -> bool {
        self.state.load(Ordering::Relaxed) != OWNED
    }

    /// Whether a borrow is under way (it ends shortly).
    #[inline]
    pub(crate) fn is_borrowed(&self) -> bool {
        self.state.load(Ordering::Relaxed) == BORROWED
    }

    /// Borrows an abandoned heap for a short operation; everything the
    /// previous owner or borrower did is visible.
    #[inline]
    pub(crate) fn try_borrow(&self) -> bool {
        self.state.load(Ordering::Relaxed) == ABANDONED
            && self
                .state
                .compare_exchange(ABANDONED, BORROWED, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }

    /// Ends a borrow: the heap is abandoned again, with the borrower's
    /// writes visible to the next adopter or borrower.
    #[inline]
    pub(crate) fn end_borrow(&self) {
        self.state.store(ABANDONED, Ordering::Release);
    }
}

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
    /// The options generation the deadline was computed under.
    pub(crate) opt_gen: u32,
    /// Allocations counted by [`HeapCore::tick`] (wraps); a check is due
    /// when the bits of `tick_mask` are clear.
    pub(crate) ticks: u32,
    pub(crate) tick_mask: u32,
    /// The clock at the last check a count made due.
    pub(crate) tick_ms: u64,
    /// The process's free mark ([`crate::free_key`]), kept here where the
    /// free path reads it from a line it touches anyway.
    pub(crate) free_key: u64,
    /// All ones, or 0 to look every free up in full (the checker):
    /// refreshed when the options change.
    pub(crate) key_mask: u64,
}

/// One heap.
pub(crate) struct HeapCore {
    pub(crate) foreign: ForeignList,
    pub(crate) ownership: Ownership,
    /// The process's free mark, read by threads that free into this heap
    /// (beside the ownership word they read anyway).
    pub(crate) free_key: u64,
    next: plain::AtomicPtr<HeapCore>,
    counters: HeapCounters,
    local: UnsafeCell<Local>,
}

// ---- the registry of every heap (append-only, lock-free) ----

static HEAPS: plain::AtomicPtr<HeapCore> = plain::AtomicPtr::new(ptr::null_mut());

/// Calls `f` on every heap with whether it is abandoned.
pub(crate) fn for_each_heap(mut f: impl FnMut(&HeapCore, bool)) {
    let mut h = HEAPS.load(POrd::Acquire);
    while !h.is_null() {
        // SAFETY: heaps are never unmapped and `next` is set before publication.
        unsafe {
            f(&*h, (*h).ownership.is_abandoned());
            h = (*h).next.load(POrd::Acquire);
        }
    }
}

/// Adopts an abandoned heap or creates one. Null when out of memory.
pub(crate) fn acquire() -> *const HeapCore {
    crate::init_free_key();
    // A heap borrowed for a free is abandoned again within a few hundred
    // nanoseconds: wait a little for one rather than map a new heap.
    for _ in 0..64 {
        let mut found: *const HeapCore = ptr::null();
        let mut borrowed = false;
        for_each_heap(|h, abandoned| {
            if found.is_null() && abandoned {
                if h.ownership.try_adopt() {
                    found = h;
                } else {
                    borrowed |= h.ownership.is_borrowed();
                }
            }
        });
        if !found.is_null() {
            return found;
        }
        if !borrowed {
            break;
        }
        crate::sync::spin_wait();
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
            foreign: ForeignList::new(),
            ownership: Ownership::new_owned(),
            free_key: crate::free_key(),
            next: plain::AtomicPtr::new(ptr::null_mut()),
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
                opt_gen: crate::options_generation(),
                ticks: 0,
                // Small at first: the check adapts it to the allocation rate.
                tick_mask: 15,
                tick_ms: now,
                free_key: crate::free_key(),
                key_mask: if crate::full_checks() { 0 } else { u64::MAX },
            }),
        });
        let mut head = HEAPS.load(POrd::Relaxed);
        loop {
            (*p).next.store(head, POrd::Relaxed);
            match HEAPS.compare_exchange_weak(head, p, POrd::Release, POrd::Relaxed) {
                Ok(_) => break,
                Err(h) => head = h,
            }
        }
    }
    p
}

/// The word of a small block after its free-list link: holds the process's
/// free mark ([`crate::free_key`]) while the block is free, anything else
/// while it is live.
#[inline(always)]
pub(crate) fn key_slot(p: *mut u8) -> *mut u64 {
    p.cast::<u64>().wrapping_add(1)
}

/// The buddy order holding `need` bytes (`need <= MEDIUM_MAX`).
#[inline]
fn order_for(need: usize) -> u8 {
    let pages = need.div_ceil(PAGE).max(1);
    (usize::BITS - (pages - 1).leading_zeros()) as u8
}

impl HeapCore {
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
    /// allocation in `tick_mask + 1`, a period [`gc::on_slow_path`] adapts).
    ///
    /// # Safety
    /// The caller owns the heap.
    #[inline(always)]
    pub(crate) unsafe fn tick(&self) -> bool {
        // SAFETY: owner-only field.
        let l = unsafe { self.local() };
        l.ticks = l.ticks.wrapping_add(1);
        l.ticks & l.tick_mask == 0
    }

    pub(crate) fn counters(&self) -> &HeapCounters {
        &self.counters
    }

    /// Allocates `size` bytes at `align` (a power of two). Null when out of memory.
    ///
    /// # Safety
    /// The caller owns the heap.
    #[inline(always)]
    pub(crate) unsafe fn alloc(&self, size: usize, align: usize, zero: bool) -> *mut u8 {
        debug_assert!(align.is_power_of_two());
        match class_for(size, align) {
            // SAFETY: forwarded ownership.
            Some(c) => unsafe { self.alloc_small(c, zero) },
            // SAFETY: forwarded ownership.
            None => unsafe { self.alloc_large(size, align, zero) },
        }
    }

    /// The small fast path, inlined into every caller; refills and the due
    /// slow-path check go to the out-of-line slow path.
    #[inline(always)]
    unsafe fn alloc_small(&self, c: usize, zero: bool) -> *mut u8 {
        // SAFETY: owner-only state.
        unsafe {
            let s = self.local().bins[c];
            if self.tick() || s.is_null() {
                return self.alloc_small_slow(c, zero);
            }
            // SAFETY: `s` is the first slab of class `c`'s bin.
            self.take_from(c, s, zero)
        }
    }

    /// An object of class `c` when the class's first slab has one and no
    /// check is due, else null with only the count taken: no call at all,
    /// so a caller that keeps its own slow path out of line gets a leaf
    /// function. On null the caller goes on with [`alloc_counted`](Self::alloc_counted).
    ///
    /// # Safety
    /// The caller owns the heap.
    #[inline(always)]
    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    pub(crate) unsafe fn try_alloc_small(&self, c: usize) -> *mut u8 {
        // SAFETY: owner-only state.
        unsafe {
            let s = self.local().bins[c];
            if self.tick() || s.is_null() {
                return ptr::null_mut();
            }
            // SAFETY: `s` is the first slab of class `c`'s bin; no zeroing,
            // so no memset call.
            self.take_from(c, s, false)
        }
    }

    /// An allocation whose count [`try_alloc_small`](Self::try_alloc_small)
    /// already took (it returned null): runs the check if that count made
    /// it due, then allocates on any path.
    ///
    /// # Safety
    /// The caller owns the heap.
    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    pub(crate) unsafe fn alloc_counted(&self, size: usize, align: usize, zero: bool) -> *mut u8 {
        // SAFETY: owner-only state.
        unsafe {
            let l = self.local();
            if l.ticks & l.tick_mask == 0 {
                gc::on_slow_path(self, true);
            }
            match class_for(size, align) {
                Some(c) => {
                    let s = self.local().bins[c];
                    if s.is_null() {
                        self.refill(c, zero)
                    } else {
                        self.take_from(c, s, zero)
                    }
                }
                None => self.alloc_large(size, align, zero),
            }
        }
    }

    /// Takes an object from slab `s` of class `c` (on the bin, so it has
    /// room), unlinking the slab once it is full.
    ///
    /// # Safety
    /// Owner only; `s` is on class `c`'s bin.
    #[inline(always)]
    unsafe fn take_from(&self, c: usize, s: *mut SlabMeta, zero: bool) -> *mut u8 {
        // SAFETY: owner-only state; slab metadata of our own regions.
        unsafe {
            let l = self.local();
            let m = &mut *s;
            let size = class_size(c);
            let (p, fresh);
            if !m.free.is_null() {
                p = m.free;
                m.free = p.cast::<*mut u8>().read();
                fresh = false;
            } else {
                p = slab::base_of(s).add(m.bump as usize);
                m.bump += size as u32;
                fresh = m.zero_tail();
            }
            // Live now: no free mark (an object bumped out of reused memory
            // may hold an old one).
            key_slot(p).write(0);
            if zero && !fresh {
                p.write_bytes(0, size);
            }
            m.used += 1;
            if m.free.is_null() && m.bump as usize + size > SLAB {
                // `s` is the bin's head: the callers took it from there.
                slab::pop_front(&mut l.bins[c], s);
            }
            l.counters.allocated += size as u64;
            l.counters.slab_hits = l.counters.slab_hits.wrapping_add(1);
            p
        }
    }

    #[cold]
    #[inline(never)]
    unsafe fn alloc_small_slow(&self, c: usize, zero: bool) -> *mut u8 {
        // SAFETY: owner-only state.
        unsafe {
            let l = self.local();
            gc::on_slow_path(self, l.ticks & l.tick_mask == 0);
            let s = self.local().bins[c];
            if !s.is_null() {
                return self.take_from(c, s, zero);
            }
            self.refill(c, zero)
        }
    }

    /// Finds class `c` a slab with room (the frees other threads made, else
    /// a new slab) and allocates from it.
    ///
    /// # Safety
    /// The caller owns the heap; class `c`'s bin is empty.
    #[inline(never)]
    unsafe fn refill(&self, c: usize, zero: bool) -> *mut u8 {
        // SAFETY: owner-only state.
        unsafe {
            if !self.foreign.is_empty() {
                self.drain_foreign();
                let s = self.local().bins[c];
                if !s.is_null() {
                    return self.take_from(c, s, zero);
                }
            }
            let l = self.local();
            let m = if !l.parked.is_null() {
                // An empty slab of any class: its pages are resident.
                let m = l.parked;
                slab::unpark(&mut l.parked, m);
                let fresh = (*m).zero_tail() && (*m).bump == 0;
                slab::init(slab::base_of(m), c, fresh)
            } else {
                let Some((b, z)) = self.block(SLAB_ORDER) else {
                    return ptr::null_mut();
                };
                slab::init(b, c, z)
            };
            let l = self.local();
            slab::push_front(&mut l.bins[c], m);
            let p = self.take_from(c, m, zero);
            // That allocation needed a new slab, so it was no slab hit: take
            // back the hit alloc_small counted, after it counted it, so the
            // published figure never goes below zero.
            let l = self.local();
            l.counters.slab_hits = l.counters.slab_hits.wrapping_sub(1);
            self.counters.publish(&l.counters);
            p
        }
    }

    #[inline(never)]
    unsafe fn alloc_large(&self, size: usize, align: usize, zero: bool) -> *mut u8 {
        let need = size.max(align).max(1);
        if need <= MEDIUM_MAX {
            let order = order_for(need);
            // SAFETY: owner-only state.
            unsafe {
                // Medium blocks count toward the check as small ones do.
                if self.tick() {
                    gc::on_slow_path(self, true);
                }
                let Some((p, z)) = self.block(order) else {
                    return ptr::null_mut();
                };
                if zero && !z {
                    p.write_bytes(0, PAGE << order);
                }
                self.local().counters.allocated += (PAGE << order) as u64;
                return p;
            }
        }
        // No mapping can serve these: fail before the retry below collects
        // (a full release of this heap) for nothing.
        if size > crate::MAX_SIZE || align > crate::MAX_ALIGN {
            return ptr::null_mut();
        }
        // SAFETY: owner-only state.
        unsafe { gc::on_slow_path(self, false) };
        let got = direct::alloc(size, align).or_else(|| {
            // Out of address space or memory: give back what we can and retry once.
            // SAFETY: owner-only.
            unsafe { crate::gc::run(self, crate::gc::Release::All) };
            direct::alloc(size, align)
        });
        match got {
            Some((p, z)) => {
                if zero && !z {
                    // SAFETY: the map holds at least `size` bytes.
                    unsafe { p.write_bytes(0, size) };
                }
                // SAFETY: owner-only state.
                let l = unsafe { self.local() };
                crate::stats::sample_peak(l.counters.allocated.saturating_sub(l.counters.freed));
                p
            }
            None => ptr::null_mut(),
        }
    }

    /// A buddy block of `order`, mapping a new region if needed.
    ///
    /// # Safety
    /// The caller owns the heap.
    ///
    /// Resident memory first: a block whose pages are still in memory, then
    /// (after draining foreign frees and coalescing the cache and the empty
    /// slabs) again, then released pages, and only then a new region.
    unsafe fn block(&self, order: u8) -> Option<(*mut u8, bool)> {
        // SAFETY: owner-only state.
        unsafe {
            if let Some(x) = self.local().buddy.alloc(order, false) {
                return Some(x);
            }
            self.drain_foreign();
            let l = self.local();
            if l.buddy.has_cached() || !l.parked.is_null() {
                let epoch = l.epoch;
                l.buddy.flush_cache(epoch);
                self.flush_parked();
                if let Some(x) = self.local().buddy.alloc(order, false) {
                    return Some(x);
                }
            }
            if let Some(x) = self.local().buddy.alloc(order, true) {
                return Some(x);
            }
            self.add_region()?;
            self.local().buddy.alloc(order, true)
        }
    }

    unsafe fn add_region(&self) -> Option<()> {
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
            Region::init(r, self);
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
            crate::stats::sample_peak(l.counters.allocated.saturating_sub(l.counters.freed));
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
            mark_chunks(
                r.addr(),
                REGION,
                crate::region::CHUNK_NONE,
                crate::region::CHUNK_NONE,
            );
            os::unmap(r.cast(), REGION, REGION);
            global().mapped.fetch_sub(REGION as u64, POrd::Relaxed);
        }
    }

    /// Frees `p`, a pointer from any heap. Blocks of another heap go to that
    /// heap's foreign list; direct maps go to the pool.
    ///
    /// # Safety
    /// The caller owns this heap; `p` is a live block from keel-heap (or a
    /// pointer the debug detector will report).
    #[inline]
    pub(crate) unsafe fn free(&self, p: *mut u8) -> Result<(), Bad> {
        // SAFETY: forwarded.
        unsafe { self.free_in(p, crate::region::chunk_kind(p.addr())) }
    }

    /// As [`free`](Self::free), with `kind` the chunk map's entry for `p`
    /// already read by the caller.
    ///
    /// # Safety
    /// As `free`; `kind == chunk_kind(p)`.
    #[inline(always)]
    pub(crate) unsafe fn free_in(&self, p: *mut u8, kind: u8) -> Result<(), Bad> {
        if kind == CHUNK_REGION {
            let r = Region::of(p);
            // SAFETY: a region chunk has a live header; `owner` never changes.
            let owner = unsafe { (*r).owner };
            if ptr::eq(owner, self) {
                // SAFETY: our own block.
                return unsafe { self.free_local(p) };
            }
            // SAFETY: another heap's live block.
            return unsafe { Self::free_other(owner, p) };
        }
        // SAFETY: forwarded.
        unsafe { Self::free_direct(p) }
    }

    /// Frees `p`, a block of `owner`'s regions, from a thread that does not
    /// own that heap: in place if the heap is abandoned and can be borrowed
    /// (so no memory waits for an owner that will not come), else onto its
    /// foreign list.
    ///
    /// # Safety
    /// `p` is a live block of `owner` (or a pointer the detector reports).
    #[inline(always)]
    pub(crate) unsafe fn free_other(owner: *const HeapCore, p: *mut u8) -> Result<(), Bad> {
        // SAFETY: heaps are never unmapped.
        let o = unsafe { &*owner };
        if o.ownership.is_abandoned() {
            // SAFETY: forwarded.
            return unsafe { Self::free_abandoned(o, p) };
        }
        // SAFETY: `p` is in a live region of `o`; see `mark_foreign_free`.
        unsafe {
            Self::mark_foreign_free(p)?;
            o.foreign.push(p);
        }
        Ok(())
    }

    /// The always-on checks for a small block freed by a thread that does
    /// not own its heap (medium blocks are checked when the owner drains
    /// them): its offset must be a multiple of its class size and it must not
    /// carry the free mark; then it is marked free.
    ///
    /// # Safety
    /// `p` is in a live region; if it is a live block, the caller owns it.
    #[inline(always)]
    unsafe fn mark_foreign_free(p: *mut u8) -> Result<(), Bad> {
        // SAFETY: a live region's header; a slot's magic changes only when
        // the whole slab is free; the owner heap is never unmapped.
        unsafe {
            let r = Region::of(p);
            let magic = (*r).magics[(p.addr() & (REGION - 1)) / SLAB];
            if magic != 0 {
                if ((p.addr() & (SLAB - 1)) as u32).wrapping_mul(magic) >= magic {
                    return Err(Bad::interior(p));
                }
                let key = (*(*r).owner).free_key;
                if key_slot(p).read() == key {
                    return Err(Bad::double_free(p));
                }
                key_slot(p).write(key);
            }
        }
        Ok(())
    }

    /// [`free_other`](Self::free_other) for an abandoned owner: out of line.
    /// The block goes onto the foreign list like any other (one CAS; a
    /// thread freeing the 5 000 blocks its exited predecessor left, as in
    /// Larson's benchmark, pays no more), and the sweep of abandoned heaps
    /// is made due, so the next slow path of any heap drains the list.
    ///
    /// # Safety
    /// As `free_other`.
    #[cold]
    #[inline(never)]
    unsafe fn free_abandoned(o: &HeapCore, p: *mut u8) -> Result<(), Bad> {
        // SAFETY: as in `free_other`.
        unsafe {
            Self::mark_foreign_free(p)?;
            o.foreign.push(p);
        }
        gc::note_abandoned_foreign();
        Ok(())
    }

    /// Frees a direct map (or reports a pointer that is none of ours): out
    /// of line, so the small paths stay short.
    ///
    /// # Safety
    /// As `free`; `p` is not in a region.
    #[inline(never)]
    unsafe fn free_direct(p: *mut u8) -> Result<(), Bad> {
        // SAFETY: chunk map says direct, or nothing (then locate errs).
        match unsafe { locate(p) }? {
            // SAFETY: a live direct map.
            Loc::Direct(h) => unsafe { direct::free(h) },
            _ => return Err(Bad::foreign(p)),
        }
        Ok(())
    }

    /// Frees `p` for a thread that owns no heap, without any lock, unless
    /// `p` is a block of `fallback` (then returns `None`: the caller frees it
    /// on `fallback` under its lock). Region blocks of other heaps go to
    /// their owner's foreign list; direct maps go to the pool.
    ///
    /// # Safety
    /// `p` is a live block from keel-heap (or a pointer the detector reports).
    /// `kind` is the chunk map's entry for `p`, read by the caller.
    #[inline]
    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    pub(crate) unsafe fn free_unowned(
        p: *mut u8,
        kind: u8,
        fallback: *const HeapCore,
    ) -> Option<Result<(), Bad>> {
        if kind == CHUNK_REGION {
            // SAFETY: a region chunk has a live header; `owner` never changes.
            let owner = unsafe { (*Region::of(p)).owner };
            if ptr::eq(owner, fallback) {
                return None;
            }
            // SAFETY: another heap's live block.
            return Some(unsafe { Self::free_other(owner, p) });
        }
        // SAFETY: forwarded; not a region block.
        Some(unsafe { Self::free_direct(p) })
    }

    /// Frees one of our own region blocks, with the always-on checks.
    ///
    /// # Safety
    /// Owner only; `p` is in one of our regions.
    #[inline(always)]
    pub(crate) unsafe fn free_local(&self, p: *mut u8) -> Result<(), Bad> {
        // SAFETY: forwarded.
        unsafe { self.free_local_in::<false>(p) }
    }

    /// [`free_local`](Self::free_local) that reports a bad pointer itself
    /// (and ends the process): no result to pass back on the hot path.
    ///
    /// # Safety
    /// As `free_local`.
    #[inline(always)]
    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    pub(crate) unsafe fn free_local_reporting(&self, p: *mut u8) {
        // SAFETY: forwarded.
        let _ = unsafe { self.free_local_in::<true>(p) };
    }

    /// [`free_local`](Self::free_local); `drained` for a block taken from
    /// the foreign list, which its freer already checked and marked.
    ///
    /// The always-on checks of a small block (cheap enough for every free,
    /// as glibc's tcache key): its offset in the slab is a multiple of the
    /// class size (one multiply) and below the objects ever handed out, and
    /// its second word does not hold the process's free mark, which every
    /// free writes there and every allocation clears. A block carrying the
    /// mark is looked up on the slab's free list (after draining the foreign
    /// list) before it is called a double free, so live data that happens
    /// to equal the mark is not. With the checker on, every free is looked
    /// up that way.
    ///
    /// # Safety
    /// Owner only; `p` is in one of our regions.
    /// With `REPORT`, a bad pointer is reported here (ending the process)
    /// and the result is always `Ok`.
    #[inline(always)]
    unsafe fn free_local_in<const REPORT: bool>(&self, p: *mut u8) -> Result<(), Bad> {
        // SAFETY: owner-only state; `p` is in our region. Every call off the
        // common path is in tail position, so nothing lives across one and
        // the inlined path needs few saved registers.
        unsafe {
            let r = Region::of(p);
            let slot = (p.addr() & (REGION - 1)) / SLAB;
            let m: *mut SlabMeta = &raw mut (*r).slabs[slot];
            let class1 = (*m).class1;
            if class1 == 0 {
                let r = self.free_medium(p);
                if REPORT && let Err(e) = r {
                    crate::report_bad_free(e);
                }
                return r;
            }
            let c = (class1 - 1) as usize % CLASSES;
            let soff = p.addr() & (SLAB - 1);
            if !(*m).is_object_offset(soff) || soff >= (*m).bump as usize {
                if REPORT {
                    crate::report_fatal(Bad::interior(p));
                }
                return Err(Bad::interior(p));
            }
            let l = self.local();
            // `key_mask` is 0 with the checker on: every block is looked up.
            if (key_slot(p).read() ^ l.free_key) & l.key_mask == 0 {
                let r = self.free_small_checked(p, m, c);
                if REPORT && let Err(e) = r {
                    crate::report_fatal(e);
                }
                return r;
            }
            key_slot(p).write(l.free_key);
            self.push_small(p, m, c)
        }
    }

    /// Frees a block taken from the foreign list. Its freer checked a small
    /// block's shape and marked it free; what it could not read without
    /// owning the heap is checked here: that the object was ever handed out
    /// (and, with the checker on, that it is not on the free list already).
    ///
    /// # Safety
    /// Owner only; `p` came off our foreign list.
    #[inline(always)]
    unsafe fn free_drained(&self, p: *mut u8) -> Result<(), Bad> {
        // SAFETY: owner-only state; `p` is in our region.
        unsafe {
            let r = Region::of(p);
            let m: *mut SlabMeta = &raw mut (*r).slabs[(p.addr() & (REGION - 1)) / SLAB];
            let class1 = (*m).class1;
            if class1 == 0 {
                return self.free_medium(p);
            }
            let c = (class1 - 1) as usize % CLASSES;
            if p.addr() & (SLAB - 1) >= (*m).bump as usize {
                return Err(Bad::interior(p));
            }
            if self.local().key_mask == 0 {
                // A block pushed twice by racing freers.
                self.confirm_small_free(p, m, false)?;
            }
            self.push_small(p, m, c)
        }
    }

    /// Puts checked small block `p` of our slab `m` (class `c`) on the
    /// slab's free list.
    ///
    /// # Safety
    /// Owner only; `p` is a live object of `m`, marked free.
    #[inline(always)]
    unsafe fn push_small(&self, p: *mut u8, m: *mut SlabMeta, c: usize) -> Result<(), Bad> {
        // SAFETY: owner-only state; `m` is our slab.
        unsafe {
            let l = self.local();
            p.cast::<*mut u8>().write((*m).free);
            (*m).free = p;
            (*m).used -= 1;
            if !(*m).in_bin() {
                slab::push_front(&mut l.bins[c], m);
            }
            l.counters.freed += class_size(c) as u64;
            if (*m).used == 0 {
                return self.slab_emptied(m, c);
            }
            Ok(())
        }
    }

    /// [`free_local_in`](Self::free_local_in) for a block carrying the free
    /// mark, or any block with the checker on: looks it up before freeing.
    ///
    /// # Safety
    /// As `free_local_in`, with the shape checks passed.
    #[cold]
    #[inline(never)]
    unsafe fn free_small_checked(&self, p: *mut u8, m: *mut SlabMeta, c: usize) -> Result<(), Bad> {
        // SAFETY: owner-only state.
        unsafe {
            self.confirm_small_free(p, m, true)?;
            key_slot(p).write(self.local().free_key);
            self.push_small(p, m, c)
        }
    }

    /// Whether small block `p` of our slab `m` is free already: drains the
    /// foreign list first if `drain` (`p` may wait there), then looks for
    /// `p` on the slab's free list. Out of line: reached only for a block
    /// carrying the free mark, or with the checker on.
    ///
    /// # Safety
    /// Owner only; `p` is an object address of our slab `m`.
    #[cold]
    #[inline(never)]
    unsafe fn confirm_small_free(
        &self,
        p: *mut u8,
        m: *mut SlabMeta,
        drain: bool,
    ) -> Result<(), Bad> {
        // SAFETY: owner-only state.
        unsafe {
            if drain {
                self.drain_foreign();
            }
            if (*m).class1 != 0 && slab::is_free(m, p) {
                return Err(Bad::double_free(p));
            }
        }
        Ok(())
    }

    /// A slab of class `c` just became empty: stamped with the heap's clock
    /// (no clock read here) and parked, unless it is its bin's only slab
    /// (kept, so one object allocated and freed in turn does not move it).
    ///
    /// # Safety
    /// Owner only; `m` is on class `c`'s bin with `used == 0`.
    #[cold]
    #[inline(never)]
    unsafe fn slab_emptied(&self, m: *mut SlabMeta, c: usize) -> Result<(), Bad> {
        // SAFETY: owner-only state; `m` is our slab.
        unsafe {
            let l = self.local();
            (*m).empty_ms = l.now_ms as u32;
            if !(ptr::eq(l.bins[c], m) && (*m).next.is_null()) {
                slab::park(&mut l.bins[c], &mut l.parked, m);
            }
            gc::note_free(l, l.now_ms);
        }
        Ok(())
    }

    /// Frees one of our own medium (buddy) blocks: out of line.
    ///
    /// # Safety
    /// Owner only; `p` is in one of our regions, not in a slab.
    #[inline(never)]
    unsafe fn free_medium(&self, p: *mut u8) -> Result<(), Bad> {
        // SAFETY: owner-only state; `p` is in our region.
        unsafe {
            match locate(p)? {
                Loc::Medium { order, .. } => {
                    let l = self.local();
                    let since = Since {
                        gc: l.epoch,
                        ms: l.now_ms as u32,
                    };
                    l.buddy.cache_push(p, order, since);
                    gc::note_free(l, l.now_ms);
                    l.counters.freed += (PAGE << order) as u64;
                    Ok(())
                }
                _ => Err(Bad::interior(p)),
            }
        }
    }

    /// The detector on demand: whether `p` is a live block of this heap,
    /// another heap, or a direct map (double frees, interior and foreign
    /// pointers), changing nothing but draining this heap's foreign list.
    ///
    /// # Safety
    /// Owner only; `p` is null, not keel-heap's, or points into live
    /// keel-heap memory.
    pub(crate) unsafe fn check_free(&self, p: *mut u8) -> Result<(), Bad> {
        // SAFETY: locate only reads mapped memory per the chunk map.
        let loc = unsafe { locate(p) }?;
        if let Loc::Small { r, slot } = loc {
            // SAFETY: a live region; the slab's lists are ours if we own it.
            unsafe {
                let m: *mut SlabMeta = &raw mut (*r).slabs[slot];
                if ptr::eq((*r).owner, self) {
                    if p.addr() & (SLAB - 1) >= (*m).bump as usize {
                        return Err(Bad::interior(p));
                    }
                    self.confirm_small_free(p, m, true)?;
                } else if key_slot(p).read() == crate::free_key() {
                    return Err(Bad::double_free(p));
                }
            }
        }
        Ok(())
    }

    /// Takes every foreign free and frees it locally.
    ///
    /// # Safety
    /// Owner only.
    pub(crate) unsafe fn drain_foreign(&self) {
        let mut n = self.foreign.take_all();
        let mut count = 0u64;
        while !n.is_null() {
            // SAFETY: drained nodes are dead blocks of our regions, checked
            // and marked by their freers.
            unsafe {
                let next = ForeignList::next(n);
                if let Err(e) = self.free_drained(n) {
                    crate::report_bad_free(e);
                }
                n = next;
            }
            count += 1;
        }
        if count > 0 {
            HeapCounters::bump(&self.counters.foreign_frees, count);
        }
    }

    /// Returns every empty slab to the buddy lists (GC pass 2).
    ///
    /// # Safety
    /// Owner only.
    pub(crate) unsafe fn flush_empty_slabs(&self) {
        // SAFETY: owner-only state.
        unsafe {
            self.flush_parked();
            for c in 0..CLASSES {
                let mut m = self.local().bins[c];
                while !m.is_null() {
                    let next = (*m).next;
                    if (*m).used == 0 {
                        slab::unlink(&mut self.local().bins[c], m);
                        self.dissolve(m);
                    }
                    m = next;
                }
            }
        }
    }

    /// Returns the parked empty slabs to the buddy lists.
    ///
    /// # Safety
    /// Owner only.
    pub(crate) unsafe fn flush_parked(&self) {
        // SAFETY: owner-only state.
        unsafe {
            loop {
                let l = self.local();
                let m = l.parked;
                if m.is_null() {
                    break;
                }
                slab::unpark(&mut l.parked, m);
                self.dissolve(m);
            }
        }
    }

    /// Returns empty slab `m`, on no list, to the buddy lists, as old as
    /// it has been empty.
    ///
    /// # Safety
    /// Owner only; `m` is an empty slab of ours on no list.
    pub(crate) unsafe fn dissolve(&self, m: *mut SlabMeta) {
        // SAFETY: owner-only state.
        unsafe {
            let l = self.local();
            let fresh = (*m).zero_tail() && (*m).bump == 0;
            slab::clear(m);
            let since = Since {
                gc: l.epoch,
                ms: (*m).empty_ms,
            };
            let flags = if fresh {
                BlockFlags::ZERO
            } else {
                BlockFlags::empty()
            };
            l.buddy.free(slab::base_of(m), SLAB_ORDER, since, flags);
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

    /// Abandons the heap: flushes what can be flushed, then lets go.
    ///
    /// # Safety
    /// Owner only; the caller never touches the heap's local state again.
    pub(crate) unsafe fn abandon(&self) {
        // SAFETY: owner-only.
        unsafe {
            self.drain_foreign();
            let epoch = self.local().epoch;
            self.local().buddy.flush_cache(epoch);
            self.flush_empty_slabs();
            self.publish();
            gc::note_abandoned(self.local());
        }
        self.ownership.abandon();
    }

    /// Ends a borrow: publishes the borrower's counters, hands the decay
    /// deadline to the sweep of abandoned heaps, and lets go.
    ///
    /// # Safety
    /// The caller borrowed the heap and never touches its local state again.
    pub(crate) unsafe fn give_back(&self) {
        // SAFETY: borrowed, so ours until the store below.
        unsafe {
            self.publish();
            gc::note_abandoned(self.local());
        }
        self.ownership.end_borrow();
    }
}
