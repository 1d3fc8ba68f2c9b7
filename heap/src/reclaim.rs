//! What a heap's slow path and GC do with freed small blocks: drain the
//! foreign list into the slabs, give back the slabs that emptied, and
//! dissolve a slab for another class. The free paths themselves are in
//! `free.rs`.

use crate::buddy::{BlockFlags, Since};
use crate::foreign::ForeignList;
use crate::free::link_target;
use crate::heap::HeapCore;
use crate::region::{SLAB_ORDER, SlabMeta};
use crate::size_class::{CLASSES, class_size};
use crate::slab;
use crate::stats::HeapCounters;

impl HeapCore {
    /// Takes every foreign free and frees it locally.
    ///
    /// # Safety
    /// Owner only.
    pub(crate) unsafe fn drain_foreign(&self) {
        let mut chains = self.foreign.take_all();
        let mut count = 0u64;
        // The lanes' chains a step each in turn: their links' loads (misses
        // where another core wrote the block last) do not wait on each
        // other, as one chain's do.
        loop {
            let mut any = false;
            for n in chains.iter_mut() {
                if n.is_null() {
                    continue;
                }
                any = true;
                // SAFETY: drained nodes are dead blocks of our regions,
                // checked and marked by their freers.
                unsafe {
                    let node = *n;
                    let next = ForeignList::next(node);
                    // A foreign link is a block's address (even) or null;
                    // an odd word is a slab's free-list link
                    // (`encode_link`): `node` was freed by its owner too
                    // while it waited here, and its link to the rest of the
                    // chain is gone.
                    if next.addr() & 1 != 0 {
                        crate::report::report_fatal(crate::locate::Bad::double_free(node));
                    }
                    if let Err(e) = self.free_drained(node) {
                        crate::report::report_bad_free(e);
                    }
                    *n = next;
                }
                count += 1;
            }
            if !any {
                break;
            }
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
            self.check_emptied(m);
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

    /// Checks empty slab `m` before it is made over or given back, ending
    /// the process if it is broken: every object it ever handed out must be
    /// free, which a free block shows by its free-list link in its first
    /// word (`free::link_target`; a live one holds 0 from its hand-out or
    /// the program's data). A
    /// double free that no check at free time caught can make a slab count
    /// no live block while one is still in use; this check is what keeps
    /// such a block from being handed out again from a fresh slab. Once
    /// the slab is made over or given back its free list is dropped, so
    /// only the objects' state matters, not the list's shape. It reads the
    /// objects in address order, independent loads at a fixed stride that
    /// the core overlaps and prefetches, rather than walking the list, one
    /// dependent load per object in free order (the walk was 5.6% of
    /// `small_random`'s time, whose last phase empties every slab). An
    /// empty slab taken back by its own class keeps its free list, whose
    /// blocks the allocations check one by one.
    ///
    /// # Safety
    /// Owner only; `m` is an empty slab of ours.
    pub(crate) unsafe fn check_emptied(&self, m: *mut SlabMeta) {
        // SAFETY: owner-only state; every object below the bump was handed
        // out, so its first word was written (0 at the hand-out, its link
        // at the free). In a correct program each is free and ours; in one
        // that freed a block twice, reading a live one is what finds it.
        unsafe {
            if (*m).class1 == 0 {
                return;
            }
            let size = class_size(((*m).class1 - 1) as usize % CLASSES);
            let base = slab::base_of(m);
            let key = self.local().free_key;
            let mut off = 0;
            while off < (*m).bump as usize {
                // Eight objects a step with one branch: the loads do not
                // wait on each other.
                let mut live = false;
                let end = ((*m).bump as usize).min(off + 8 * size);
                while off < end {
                    let p = base.add(off);
                    live |= link_target(p, p.cast::<usize>().read(), key).is_none();
                    off += size;
                }
                if live {
                    self.report_live_in_emptied(m, size);
                }
            }
        }
    }

    /// Names the first object of empty slab `m` that is not free (see
    /// [`check_emptied`](Self::check_emptied)) and ends the process.
    ///
    /// # Safety
    /// As `check_emptied`.
    #[cold]
    #[inline(never)]
    unsafe fn report_live_in_emptied(&self, m: *mut SlabMeta, size: usize) -> ! {
        // SAFETY: as in `check_emptied`.
        unsafe {
            let base = slab::base_of(m);
            let key = self.local().free_key;
            let mut off = 0;
            while off < (*m).bump as usize {
                let p = base.add(off);
                if link_target(p, p.cast::<usize>().read(), key).is_none() {
                    break;
                }
                off += size;
            }
            crate::report::report_invalid(crate::InvalidHeap {
                what: "empty slab's block is not free (double free or write after free?)",
                addr: base.addr() + off,
            })
        }
    }
}
