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

use crate::buddy::{Buddy, F_ZERO};
use crate::foreign::ForeignList;
use crate::region::{
    BadPointer, CHUNK_REGION, Loc, Region, SLAB_ORDER, SlabMeta, chunk_map_fits, locate,
    mark_chunks,
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

/// The ownership word of a heap (see the module docs for the protocol).
pub(crate) struct Ownership {
    state: AtomicU8,
}

impl Ownership {
    pub(crate) fn new_owned() -> Self {
        Ownership {
            state: AtomicU8::new(OWNED),
        }
    }

    /// Gives the heap up; everything the owner did before is visible to the
    /// next adopter.
    pub(crate) fn abandon(&self) {
        self.state.store(ABANDONED, Ordering::Release);
    }

    /// Claims an abandoned heap.
    pub(crate) fn try_adopt(&self) -> bool {
        self.state.load(Ordering::Relaxed) == ABANDONED
            && self
                .state
                .compare_exchange(ABANDONED, OWNED, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }

    pub(crate) fn is_abandoned(&self) -> bool {
        self.state.load(Ordering::Relaxed) == ABANDONED
    }
}

/// The owner-only part of a heap.
pub(crate) struct Local {
    pub(crate) bins: [*mut SlabMeta; CLASSES],
    pub(crate) buddy: Buddy,
    pub(crate) regions: *mut Region,
    pub(crate) epoch: u32,
    pub(crate) counters: LocalCounters,
    pub(crate) last_active_ms: u64,
    /// `counters.allocated` and the time when idle decay last looked: if
    /// the count moved, the heap allocated since (fast paths included).
    pub(crate) allocated_seen: u64,
    pub(crate) looked_ms: u64,
    pub(crate) last_gc_ms: u64,
    /// Something was freed or mapped since the last full release.
    pub(crate) dirty: bool,
    /// Allocations counted by [`HeapCore::tick`] (wraps).
    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    pub(crate) ticks: u32,
}

/// One heap.
pub(crate) struct HeapCore {
    pub(crate) foreign: ForeignList,
    pub(crate) ownership: Ownership,
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
    let mut found: *const HeapCore = ptr::null();
    for_each_heap(|h, abandoned| {
        if found.is_null() && abandoned && h.ownership.try_adopt() {
            found = h;
        }
    });
    if !found.is_null() {
        return found;
    }
    let len = core::mem::size_of::<HeapCore>().next_multiple_of(PAGE);
    let p: *mut HeapCore = os::map(len, PAGE).cast();
    if p.is_null() {
        return p;
    }
    global().mapped.fetch_add(len as u64, POrd::Relaxed);
    // SAFETY: a fresh page-aligned mapping large enough for a HeapCore.
    unsafe {
        p.write(HeapCore {
            foreign: ForeignList::new(),
            ownership: Ownership::new_owned(),
            next: plain::AtomicPtr::new(ptr::null_mut()),
            counters: HeapCounters::default(),
            local: UnsafeCell::new(Local {
                bins: [ptr::null_mut(); CLASSES],
                buddy: Buddy::new(),
                regions: ptr::null_mut(),
                epoch: 0,
                counters: LocalCounters::default(),
                last_active_ms: os::now_ms(),
                allocated_seen: 0,
                looked_ms: os::now_ms(),
                last_gc_ms: os::now_ms(),
                dirty: false,
                ticks: 0,
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

    /// Counts one call; true on every call whose count has the bits of
    /// `mask` clear (one in `mask + 1` for a mask of low bits).
    ///
    /// # Safety
    /// The caller owns the heap.
    #[inline(always)]
    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    pub(crate) unsafe fn tick(&self, mask: u32) -> bool {
        // SAFETY: owner-only field.
        let l = unsafe { self.local() };
        l.ticks = l.ticks.wrapping_add(1);
        l.ticks & mask == 0
    }

    /// Whether the last [`tick`](Self::tick) was a due one (no count).
    ///
    /// # Safety
    /// The caller owns the heap.
    #[inline]
    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    pub(crate) unsafe fn tick_due(&self, mask: u32) -> bool {
        // SAFETY: owner-only field.
        unsafe { self.local().ticks & mask == 0 }
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

    /// The small fast path, inlined into every caller; refills go to the
    /// out-of-line slow path.
    #[inline(always)]
    unsafe fn alloc_small(&self, c: usize, zero: bool) -> *mut u8 {
        // SAFETY: owner-only state.
        let s = unsafe { self.local().bins[c] };
        if s.is_null() {
            // SAFETY: forwarded ownership.
            return unsafe { self.alloc_small_slow(c, zero) };
        }
        // SAFETY: `s` is the first slab of class `c`'s bin.
        unsafe { self.take_from(c, s, zero) }
    }

    /// An object of class `c` when the class's first slab has one, else
    /// null with nothing changed: no call at all, so a caller that keeps
    /// its own slow path out of line gets a leaf function.
    ///
    /// # Safety
    /// The caller owns the heap.
    #[inline(always)]
    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    pub(crate) unsafe fn try_alloc_small(&self, c: usize) -> *mut u8 {
        // SAFETY: owner-only state.
        let s = unsafe { self.local().bins[c] };
        if s.is_null() {
            return ptr::null_mut();
        }
        // SAFETY: `s` is the first slab of class `c`'s bin; no zeroing, so
        // no memset call.
        unsafe { self.take_from(c, s, false) }
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
            let p;
            if !m.free.is_null() {
                p = m.free;
                m.free = p.cast::<*mut u8>().read();
                if zero {
                    p.write_bytes(0, size);
                }
            } else {
                p = slab::base_of(s).add(m.bump as usize * size);
                m.bump += 1;
                if zero && !m.zero_tail {
                    p.write_bytes(0, size);
                }
            }
            m.used += 1;
            if m.free.is_null() && m.bump == m.cap {
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
            if !self.foreign.is_empty() {
                self.drain_foreign();
                if !self.local().bins[c].is_null() {
                    return self.alloc_small(c, zero);
                }
            }
            crate::gc::touch(self);
            let Some((b, z)) = self.block(SLAB_ORDER) else {
                return ptr::null_mut();
            };
            let m = slab::init(b, c, z);
            let l = self.local();
            slab::push_front(&mut l.bins[c], m);
            let p = self.alloc_small(c, zero);
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
        unsafe { crate::gc::touch(self) };
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
    unsafe fn block(&self, order: u8) -> Option<(*mut u8, bool)> {
        // SAFETY: owner-only state.
        unsafe {
            if let Some(x) = self.local().buddy.alloc(order) {
                return Some(x);
            }
            // Drain foreign frees and coalesce before mapping new memory.
            self.drain_foreign();
            let epoch = self.local().epoch;
            self.local().buddy.flush_cache(epoch);
            self.flush_empty_slabs();
            if let Some(x) = self.local().buddy.alloc(order) {
                return Some(x);
            }
            self.add_region()?;
            self.local().buddy.alloc(order)
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
            l.buddy.add_region(r, l.epoch);
            (*r).next = l.regions;
            l.regions = r;
            l.dirty = true;
            l.last_active_ms = os::now_ms();
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
    pub(crate) unsafe fn free(&self, p: *mut u8) -> Result<(), BadPointer> {
        // SAFETY: forwarded.
        unsafe { self.free_in(p, crate::region::chunk_kind(p.addr())) }
    }

    /// As [`free`](Self::free), with `kind` the chunk map's entry for `p`
    /// already read by the caller.
    ///
    /// # Safety
    /// As `free`; `kind == chunk_kind(p)`.
    #[inline(always)]
    pub(crate) unsafe fn free_in(&self, p: *mut u8, kind: u8) -> Result<(), BadPointer> {
        if kind == CHUNK_REGION {
            let r = Region::of(p);
            // SAFETY: a region chunk has a live header; `owner` never changes.
            let owner = unsafe { (*r).owner };
            if ptr::eq(owner, self) {
                // SAFETY: our own block.
                return unsafe { self.free_local(p) };
            }
            // SAFETY: the block is dead and at least 16 bytes, 16-aligned.
            unsafe { (*owner).foreign.push(p) };
            return Ok(());
        }
        // SAFETY: forwarded.
        unsafe { Self::free_direct(p) }
    }

    /// Frees a direct map (or reports a pointer that is none of ours): out
    /// of line, so the small paths stay short.
    ///
    /// # Safety
    /// As `free`; `p` is not in a region.
    #[inline(never)]
    unsafe fn free_direct(p: *mut u8) -> Result<(), BadPointer> {
        // SAFETY: chunk map says direct, or nothing (then locate errs).
        match unsafe { locate(p) }? {
            // SAFETY: a live direct map.
            Loc::Direct(h) => unsafe { direct::free(h) },
            _ => return Err(BadPointer::Foreign(p.addr())),
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
    #[inline(always)]
    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    pub(crate) unsafe fn free_unowned(
        p: *mut u8,
        kind: u8,
        fallback: *const HeapCore,
    ) -> Option<Result<(), BadPointer>> {
        if kind == CHUNK_REGION {
            // SAFETY: a region chunk has a live header; `owner` never changes.
            let owner = unsafe { (*Region::of(p)).owner };
            if ptr::eq(owner, fallback) {
                return None;
            }
            // SAFETY: the block is dead and at least 16 bytes, 16-aligned.
            unsafe { (*owner).foreign.push(p) };
            return Some(Ok(()));
        }
        // SAFETY: forwarded; not a region block.
        Some(unsafe { Self::free_direct(p) })
    }

    /// Frees one of our own region blocks.
    ///
    /// # Safety
    /// Owner only; `p` is in one of our regions.
    #[inline(always)]
    pub(crate) unsafe fn free_local(&self, p: *mut u8) -> Result<(), BadPointer> {
        // SAFETY: owner-only state; `p` is in our region.
        unsafe {
            let r = Region::of(p);
            let off = p.addr() & (REGION - 1);
            let slot = off / crate::region::SLAB;
            let m: *mut SlabMeta = &raw mut (*r).slabs[slot];
            let l = self.local();
            if (*m).class1 != 0 {
                if cfg!(debug_assertions) {
                    self.check_small(p, m)?;
                }
                let c = (*m).class1 as usize - 1;
                p.cast::<*mut u8>().write((*m).free);
                (*m).free = p;
                (*m).used -= 1;
                if !(*m).in_bin {
                    slab::push_front(&mut l.bins[c], m);
                }
                l.counters.freed += class_size(c) as u64;
                return Ok(());
            }
            self.free_medium(p)
        }
    }

    /// Frees one of our own medium (buddy) blocks: out of line.
    ///
    /// # Safety
    /// Owner only; `p` is in one of our regions, not in a slab.
    #[inline(never)]
    unsafe fn free_medium(&self, p: *mut u8) -> Result<(), BadPointer> {
        // SAFETY: owner-only state; `p` is in our region.
        unsafe {
            match locate(p)? {
                Loc::Medium { order, .. } => {
                    let l = self.local();
                    l.buddy.cache_push(p, order);
                    l.counters.freed += (PAGE << order) as u64;
                    l.dirty = true;
                    Ok(())
                }
                _ => Err(BadPointer::Interior(p.addr())),
            }
        }
    }

    unsafe fn check_small(&self, p: *mut u8, m: *mut SlabMeta) -> Result<(), BadPointer> {
        // SAFETY: our slab.
        unsafe {
            let size = class_size((*m).class1 as usize - 1);
            if (p.addr() - slab::base_of(m).addr()) % size != 0 {
                return Err(BadPointer::Interior(p.addr()));
            }
            if slab::is_free(m, p) {
                return Err(BadPointer::DoubleFree(p.addr()));
            }
        }
        Ok(())
    }

    /// The debug detector: whether `p` is a live block of this heap or a
    /// direct map (reports double frees, interior and foreign pointers).
    ///
    /// # Safety
    /// Owner only.
    pub(crate) unsafe fn check_free(&self, p: *mut u8) -> Result<(), BadPointer> {
        // SAFETY: locate only reads mapped memory per the chunk map.
        let loc = unsafe { locate(p) }?;
        if let Loc::Small { r, slot } = loc {
            // SAFETY: a live region; the slab's lists are ours if we own it.
            unsafe {
                if ptr::eq((*r).owner, self) {
                    self.check_small(p, &raw mut (*r).slabs[slot])?;
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
            // SAFETY: drained nodes are dead blocks of our regions.
            unsafe {
                let next = ForeignList::next(n);
                if let Err(e) = self.free_local(n) {
                    crate::report_bad_free(e);
                }
                n = next;
            }
            count += 1;
        }
        if count > 0 {
            HeapCounters::bump(&self.counters.foreign_frees, count);
            // SAFETY: owner-only state.
            unsafe { self.local().dirty = true };
        }
    }

    /// Returns every empty slab to the buddy lists (GC pass 2).
    ///
    /// # Safety
    /// Owner only.
    pub(crate) unsafe fn flush_empty_slabs(&self) {
        // SAFETY: owner-only state.
        unsafe {
            let l = self.local();
            for c in 0..CLASSES {
                let mut m = l.bins[c];
                while !m.is_null() {
                    let next = (*m).next;
                    if (*m).used == 0 {
                        slab::unlink(&mut l.bins[c], m);
                        let fresh = (*m).zero_tail && (*m).bump == 0;
                        (*m).class1 = 0;
                        let base = slab::base_of(m);
                        l.buddy
                            .free(base, SLAB_ORDER, l.epoch, if fresh { F_ZERO } else { 0 });
                    }
                    m = next;
                }
            }
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
            // Its allocations are behind it: idle decay counts an abandoned
            // heap idle from its last slow path, not from its first look.
            let l = self.local();
            l.allocated_seen = l.counters.allocated;
        }
        self.ownership.abandon();
    }
}
