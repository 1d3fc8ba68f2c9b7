//! The allocation paths of a heap: the small fast path (a slab with room,
//! one load and a pop), refills (foreign frees, parked empty slabs, a new
//! slab), medium buddy blocks and direct maps, with the slow-path check of
//! idle decay counted in.

use crate::direct;
use crate::free::{in_slab, key_slot};
use crate::gc;
use crate::heap::HeapCore;
use crate::layout::{MEDIUM_MAX, PAGE};
use crate::region::{SLAB, SLAB_ORDER, SlabMeta};
use crate::size_class::{class_excess, class_for, class_size};
use crate::slab;
use core::ptr;

/// A call marks its path unlikely: `core::hint::cold_path` (Rust 1.95)
/// within this crate's older minimum Rust version.
#[cold]
#[inline(always)]
pub(crate) fn cold_path() {}

/// Starts loading the line of `p`, the block the class's next pop will
/// read: a slab's free list runs in the order the program freed, so in a
/// program that frees at random each pop's read of the block would miss
/// (`bench/results/2026-12-06-heap-pop-prefetch-zen4.md`). A hint: it
/// never faults, null included.
#[inline(always)]
fn prefetch(p: *mut u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint that reads nothing architecturally and
    // never faults, whatever the address.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>());
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: `prfm` is a hint: it never faults, whatever the address, and
    // writes no register, memory or flag.
    unsafe {
        core::arch::asm!("prfm pldl1keep, [{0}]", in(reg) p, options(nostack, readonly, preserves_flags));
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    let _ = p;
}

/// The buddy order holding `need` bytes (`need <= MEDIUM_MAX`).
#[inline]
fn order_for(need: usize) -> u8 {
    let pages = need.div_ceil(PAGE).max(1);
    (usize::BITS - (pages - 1).leading_zeros()) as u8
}

impl HeapCore {
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
                // Cold, so LLVM keeps the two tests as two predicted
                // branches rather than merge them with two `setcc`s and an
                // `or` (two instructions more).
                cold_path();
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
            if self.ticks_due() {
                self.counted_check();
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
            // One increment, by class: `LocalCounters::allocated` sums
            // them in bytes on the slow paths that read it.
            l.counters.allocated_small[c] += 1;
            m.used += 1;
            let p;
            if !m.free.is_null() {
                p = m.free;
                let key = l.free_key;
                // The block's link is its free mark (`free::encode_link`):
                // decoded, it is null or an address in this slab. A block
                // on the list twice lost it at its first hand-out, which
                // clears the word; a write after the free changed it.
                // Both words are read before the clear, so the key stays
                // in its register (the store might alias it otherwise).
                let d = p.cast::<usize>().read() ^ key as usize;
                let mark = key_slot(p).read();
                p.cast::<usize>().write(0);
                // `p`'s provenance (the region), null included.
                let next = p.with_addr(d);
                m.free = next;
                if in_slab(p, d) && mark != key {
                    // Start the next pop's read now: a miss there would
                    // hold up that pop's checks and every instruction
                    // behind them.
                    prefetch(next);
                } else {
                    // The list's end (null, once a list), a changed link
                    // (`free::is_link` in the other order: a link inside
                    // the list takes one compare, and this branch, laid out
                    // off the line, takes the slab's `full` test), or the
                    // foreign mark: on a foreign list too, its owner freed
                    // it again after another thread did, and the list's
                    // drain would free it once more while it is live.
                    crate::alloc::cold_path();
                    // `next` and the mark read again, not `d` and `mark`:
                    // the two are then dead on the path above, which fits
                    // in the registers a call may clobber.
                    if !next.is_null() || key_slot(p).read() == key {
                        // A tail call that never returns: the path makes
                        // no call, so it needs no stack frame (with one,
                        // larsonN ran 3.6% slower on Intel:
                        // `bench/results/2026-12-07-heap-pop-frameless-intel.md`).
                        return self.refuse_popped(p).as_ptr();
                    }
                    // The class's size is loaded here and in the bump branch,
                    // not once above: loaded above, it stayed on the pop's
                    // path, two loads that path never uses (larsonN 1-2%
                    // faster without them on Intel model 167).
                    if m.bump as usize + class_size(c) > SLAB {
                        // `s` is the bin's head: the callers took it from there.
                        slab::pop_front(&mut l.bins[c], s);
                    }
                }
                if zero {
                    p.write_bytes(0, class_size(c));
                }
            } else {
                let size = class_size(c);
                p = slab::base_of(s).add(m.bump as usize);
                m.bump += size as u32;
                m.limit += class_excess(c);
                let fresh = m.zero_tail();
                // Live now: no free mark of either kind (an object bumped
                // out of reused memory may hold an old one).
                p.cast::<[u64; 2]>().write([0, 0]);
                if m.bump as usize + size > SLAB {
                    slab::pop_front(&mut l.bins[c], s);
                }
                if zero && !fresh {
                    p.write_bytes(0, size);
                }
            }
            // A block of a mapped region: never null, which lets a caller's
            // null test (the fast path's "not served") fold away.
            core::hint::assert_unchecked(!p.is_null());
            p
        }
    }

    /// Reports popped block `p`, whose words showed a double free or a
    /// write after free, and ends the process. Declared to return the
    /// block, and `extern "C"` (which cannot unwind), so that
    /// [`take_from`](Self::take_from)'s call is a tail call even in a
    /// caller that must not unwind, and the allocation path needs no frame.
    ///
    /// # Safety
    /// Owner only; `p` was just popped from its slab's free list by
    /// `take_from`, which cleared its link word.
    #[cold]
    #[inline(never)]
    unsafe extern "C" fn refuse_popped(&self, p: *mut u8) -> ptr::NonNull<u8> {
        // SAFETY: owner-only state; `p` is an object of our slab, at least
        // 16 bytes.
        if unsafe { key_slot(p).read() == self.local().free_key } {
            crate::report::report_fatal(crate::locate::Bad::double_free(p));
        }
        crate::report::report_changed(p)
    }

    /// The slow-path check an allocation count made due, then the next count.
    ///
    /// # Safety
    /// The caller owns the heap.
    #[inline(never)]
    unsafe fn counted_check(&self) {
        // SAFETY: forwarded ownership.
        unsafe {
            gc::on_slow_path(self, true);
            self.rearm_ticks();
        }
    }

    #[cold]
    #[inline(never)]
    unsafe fn alloc_small_slow(&self, c: usize, zero: bool) -> *mut u8 {
        // SAFETY: owner-only state.
        unsafe {
            if self.ticks_due() {
                self.counted_check();
            } else {
                gc::on_slow_path(self, false);
            }
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
                // An empty slab of any class: its pages are resident. One of
                // this class (among the first few) is taken back as it is,
                // its free list's blocks checked as they go out; another is
                // checked whole and made over.
                let mut m = l.parked;
                let mut n = m;
                for _ in 0..8 {
                    if n.is_null() || (*n).class1 as usize == c + 1 {
                        break;
                    }
                    n = (*n).next;
                }
                if !n.is_null() {
                    m = n;
                }
                slab::unpark(&mut l.parked, m);
                if (*m).class1 as usize == c + 1 {
                    m
                } else {
                    self.check_emptied(m);
                    let fresh = (*m).zero_tail() && (*m).bump == 0;
                    slab::init(slab::base_of(m), c, fresh)
                }
            } else {
                let Some((b, z)) = self.block(SLAB_ORDER) else {
                    return ptr::null_mut();
                };
                slab::init(b, c, z)
            };
            let l = self.local();
            slab::push_front(&mut l.bins[c], m);
            let p = self.take_from(c, m, zero);
            // That allocation needed a new slab, so it was no slab hit:
            // counted as a miss after `take_from` counted it, so the
            // published hits never go below zero.
            let l = self.local();
            l.counters.slab_misses += 1;
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
                    self.counted_check();
                }
                let Some((p, z)) = self.block(order) else {
                    return ptr::null_mut();
                };
                if zero && !z {
                    p.write_bytes(0, PAGE << order);
                }
                self.local().counters.allocated_bytes += (PAGE << order) as u64;
                return p;
            }
        }
        // No mapping can serve these: fail before the retry below collects
        // (a full release of this heap) for nothing.
        if size > crate::layout::MAX_SIZE || align > crate::layout::MAX_ALIGN {
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
                crate::stats::sample_peak(l.counters.live());
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
    pub(crate) unsafe fn block(&self, order: u8) -> Option<(*mut u8, bool)> {
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
}
