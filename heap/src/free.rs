//! The free paths of a heap, and the checks every free makes: a block of
//! the thread's own heap goes back to its slab (small) or the buddy cache
//! (medium); another heap's block to that heap's foreign list; a direct map
//! to the pool. The always-on double- and interior-free checks are
//! described on `free_local_in`.

use crate::buddy::Since;
use crate::chunk_map::CHUNK_REGION;
use crate::decay;
use crate::heap::HeapCore;
use crate::layout::{PAGE, REGION};
use crate::locate::{Bad, Loc, locate};
use crate::region::{Region, SLAB, SlabMeta};
use crate::size_class::CLASSES;
use crate::{direct, slab};
use core::ptr;

/// The word of a small block after its first: the foreign free mark. A
/// thread that frees a block of another heap writes the process's free key
/// ([`crate::free_key`]) here, and the block waits on the owner's foreign
/// list (whose link is its first word); the owner clears the word when it
/// takes the block back, and an allocation from fresh memory clears it, so
/// the key here means "on a foreign list".
#[inline(always)]
pub(crate) fn key_slot(p: *mut u8) -> *mut u64 {
    p.cast::<u64>().wrapping_add(1)
}

/// The first word of a block on its slab's free list: the next block's
/// address (or 0) xor the free key, glibc's safe-linking with the whole key.
/// The key is odd and blocks are 16-byte aligned, so a link is an odd word,
/// never one of the foreign list's links, and the link is the block's free
/// mark: [`link_target`] knows a free block by it, with no second word to
/// write at the free. An allocation that pops the block clears the word.
#[inline(always)]
pub(crate) fn encode_link(next: *mut u8, key: u64) -> usize {
    next.addr() ^ key as usize
}

/// What the first word `w` of object `p` of a slab says: `Some(next)` when
/// it is a free-list link (decoded with `key`, null or an address in `p`'s
/// own slab, where a slab's list stays), `None` when it is anything else (a
/// live block's word: cleared when it was handed out, or data). A word that
/// is a link by chance needs the key, a random word set at start-up.
#[inline(always)]
pub(crate) fn link_target(p: *mut u8, w: usize, key: u64) -> Option<*mut u8> {
    let d = w ^ key as usize;
    // `with_addr` keeps `p`'s provenance (the region), null included, so
    // the link needs no pointer stored in memory.
    is_link(p, d).then(|| p.with_addr(d))
}

/// Whether `d`, the decoded first word of object `p` of a slab, is a link:
/// null (the list's end) or an address in `p`'s slab. (The allocation's
/// pop makes the two tests in the other order, [`in_slab`] first, so that a
/// link inside the list takes one compare and the end goes off the line
/// with the slab's `full` test: `HeapCore::take_from`.)
#[inline(always)]
pub(crate) fn is_link(p: *mut u8, d: usize) -> bool {
    if d == 0 {
        crate::alloc::cold_path();
        return true;
    }
    in_slab(p, d)
}

/// Whether address `d` lies in the slab of object `p` (one compare).
#[inline(always)]
pub(crate) fn in_slab(p: *mut u8, d: usize) -> bool {
    (d ^ p.addr()) < SLAB
}

/// Whether small block `p` carries a free mark: a free-list link in its
/// first word, or the foreign mark in its second (it waits on a foreign
/// list). Reads the block.
///
/// # Safety
/// `p` is an object address in a live slab.
#[inline(always)]
pub(crate) unsafe fn looks_free(p: *mut u8, key: u64) -> bool {
    // SAFETY: an object of a live slab is at least 16 mapped bytes.
    unsafe { key_slot(p).read() == key || link_target(p, p.cast::<usize>().read(), key).is_some() }
}

/// The heap's `free_check_below`: a free into a slab with fewer live
/// blocks than this takes the checked path. 2 normally (the slab's last
/// block, or none: a double free); with the checker on (`full`) every free,
/// so it is looked up at no cost to the fast path.
pub(crate) const fn free_check_below(full: bool) -> u16 {
    if full { u16::MAX } else { 2 }
}

impl crate::heap::Local {
    /// Whether the checker is on for this heap (every free looked up).
    #[inline(always)]
    pub(crate) fn checker(&self) -> bool {
        self.free_check_below > 2
    }
}

/// Which way a free leaves `free_local_in`'s common path (see
/// [`HeapCore::off_path`]).
#[derive(Clone, Copy)]
#[repr(u8)]
enum OffPath {
    /// The interior test failed: a medium block, or an interior free.
    NotSmall,
    /// The free list's head: perhaps an immediate double free.
    Suspect,
    /// The slab's last live block, none, or the checker on.
    PushSlow,
}

/// The slab metadata of the slot holding `p` (no check that it is a slab),
/// as `&raw mut (*Region::of(p)).slabs[slot]` but summed in this order
/// (the slot's offset into the array first, the array's offset last), so
/// the compiler folds the array's and each field's offset into the loads'
/// and stores' displacements instead of computing the pointer (two
/// instructions, `lea` and `add`). The off-path calls take `p` alone and
/// find the metadata again here, so the common path passes no pointer on.
#[inline(always)]
fn meta_of(p: *mut u8) -> *mut SlabMeta {
    let r = Region::of(p);
    let slot = (p.addr() & (REGION - 1)) / SLAB;
    // SAFETY-free: address arithmetic inside the region's header.
    r.cast::<u8>()
        .wrapping_add(slot * core::mem::size_of::<SlabMeta>())
        .wrapping_add(core::mem::offset_of!(Region, slabs))
        .cast()
}

/// Every call off the reporting free path (`free_local_in::<true, _>`,
/// the path of `raw::free_or_else`) is this one: `extern "C"`, so it cannot
/// unwind (a panic in it aborts here). A caller that itself must not unwind
/// (the C and C++ `free` symbols) then needs no abort guard around the
/// call, and makes it as a tail call with no stack frame of its own. The
/// block comes first, in the register the caller received it in, so
/// neither the path nor its calls copy it.
///
/// # Safety
/// As `free_local_in`: owner only, `p` in one of our regions, and the tests
/// that chose `what` passed as described on [`HeapCore::off_path`].
#[cold]
#[inline(never)]
unsafe extern "C" fn off_path_reporting(p: *mut u8, h: &HeapCore, what: OffPath) {
    // SAFETY: forwarded; with `REPORT` each reports a bad pointer itself,
    // so the result is `Ok`.
    let _ = unsafe { h.off_path::<true>(p, meta_of(p), what) };
}

/// Puts the slab holding `p`, full until `p` was freed into it, back at the
/// end of its class's bin. `extern "C"` (cannot unwind) for the reason
/// given on [`off_path_reporting`].
///
/// # Safety
/// Owner only; `p` is in a slab of ours of a small class, on no bin.
#[cold]
#[inline(never)]
unsafe extern "C" fn rebin(p: *mut u8, h: &HeapCore) {
    // SAFETY: owner-only state; the slab is ours and on no bin.
    unsafe {
        let m = meta_of(p);
        let l = h.local();
        slab::push_back(&mut l.bins[((*m).class1 - 1) as usize % CLASSES], m);
    }
}

impl HeapCore {
    /// Frees `p`, a pointer from any heap. Blocks of another heap go to that
    /// heap's foreign list; direct maps go to the pool.
    ///
    /// # Safety
    /// The caller owns this heap; `p` is a live block from keel-heap (or a
    /// pointer the debug detector will report).
    #[inline]
    pub(crate) unsafe fn free(&self, p: *mut u8) -> Result<(), Bad> {
        // SAFETY: forwarded.
        unsafe { self.free_in::<false>(p, crate::chunk_map::chunk_kind(p.addr())) }
    }

    /// As [`free`](Self::free), but a small block of this heap is also
    /// checked for the free mark (a read of the block), so a double free
    /// that is not immediate is refused here rather than at the
    /// allocation that would hand the block out again: `Heap::try_free`.
    ///
    /// # Safety
    /// As `free`.
    #[inline]
    pub(crate) unsafe fn free_looking(&self, p: *mut u8) -> Result<(), Bad> {
        // SAFETY: forwarded.
        unsafe { self.free_in::<true>(p, crate::chunk_map::chunk_kind(p.addr())) }
    }

    /// As [`free`](Self::free) (or [`free_looking`](Self::free_looking)
    /// with `LOOK`), with `kind` the chunk map's entry for `p` already read
    /// by the caller.
    ///
    /// # Safety
    /// As `free`; `kind == chunk_kind(p)`.
    #[inline(always)]
    pub(crate) unsafe fn free_in<const LOOK: bool>(&self, p: *mut u8, kind: u8) -> Result<(), Bad> {
        if kind == CHUNK_REGION {
            let r = Region::of(p);
            // SAFETY: a region chunk has a live header; `owner` never changes.
            let owner = unsafe { HeapCore::owner_of(r) };
            if ptr::eq(owner, self) {
                // SAFETY: our own block.
                return unsafe { self.free_local_in::<false, LOOK>(p) };
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
        if o.ownership().is_abandoned() {
            // SAFETY: forwarded.
            return unsafe { Self::free_abandoned(o, p) };
        }
        // SAFETY: `p` is in a live region of `o`; see `mark_foreign_free`.
        unsafe {
            Self::mark_foreign_free(p)?;
            crate::ownership::push_to_owned(o.ownership(), &o.foreign, p);
        }
        Ok(())
    }

    /// The always-on checks for a block freed by a thread that does not own
    /// its heap, made before the block goes onto the owner's foreign list
    /// (whose link is the block's first word: a pointer into a live block
    /// that went there unchecked would have live memory written). A small
    /// block: its offset must be a multiple of its class size and it must
    /// not carry a free mark ([`looks_free`]: on its slab's free list, or on
    /// a foreign list already). A medium block: the page map must mark a
    /// block in use starting at `p` (`locate`, as the owner's free checks;
    /// a live block's page-map byte is stable) and it must not carry the
    /// foreign mark. Then it is given the foreign mark, which the owner
    /// clears when it drains the block ([`free_drained`](Self::free_drained)).
    ///
    /// # Safety
    /// `p` is in a live region; if it is a live block, the caller owns it.
    #[inline(always)]
    unsafe fn mark_foreign_free(p: *mut u8) -> Result<(), Bad> {
        // SAFETY: a live region's header; a slot's magic changes only when
        // the whole slab is free; the owner heap is never unmapped; a block
        // that passes the shape check is at least 16 mapped bytes.
        unsafe {
            let r = Region::of(p);
            let magic = (*r).magics[(p.addr() & (REGION - 1)) / SLAB];
            let key = (*HeapCore::owner_of(r)).free_key;
            if magic != 0 {
                if ((p.addr() & (SLAB - 1)) as u32).wrapping_mul(magic) >= magic {
                    return Err(Bad::interior(p));
                }
                if looks_free(p, key) {
                    return Err(Bad::double_free(p));
                }
            } else {
                Self::check_medium_foreign(p, key)?;
            }
            key_slot(p).write(key);
        }
        Ok(())
    }

    /// [`mark_foreign_free`](Self::mark_foreign_free)'s checks of a medium
    /// block, out of line (the small path stays short).
    ///
    /// # Safety
    /// As `mark_foreign_free`; `p`'s slot is no slab.
    #[cold]
    #[inline(never)]
    unsafe fn check_medium_foreign(p: *mut u8, key: u64) -> Result<(), Bad> {
        // SAFETY: as the caller's; `locate` reads the page map only.
        unsafe {
            match locate(p)? {
                Loc::Medium { .. } if key_slot(p).read() == key => Err(Bad::double_free(p)),
                Loc::Medium { .. } => Ok(()),
                // The slot became a slab since the caller read its magic:
                // `p` was no live block of it.
                _ => Err(Bad::interior(p)),
            }
        }
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
        decay::note_abandoned_foreign();
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
            let owner = unsafe { HeapCore::owner_of(Region::of(p)) };
            if ptr::eq(owner, fallback) {
                return None;
            }
            // SAFETY: another heap's live block.
            return Some(unsafe { Self::free_other(owner, p) });
        }
        // SAFETY: forwarded; not a region block.
        Some(unsafe { Self::free_direct(p) })
    }

    /// Frees one of our own region blocks, with the always-on checks, and
    /// reports a bad pointer itself (ending the process): no result to pass
    /// back on the hot path.
    ///
    /// # Safety
    /// Owner only; `p` is in one of our regions.
    #[inline(always)]
    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    pub(crate) unsafe fn free_local_reporting(&self, p: *mut u8) {
        // SAFETY: forwarded.
        let _ = unsafe { self.free_local_in::<true, false>(p) };
    }

    /// Frees one of our own region blocks, with the always-on checks of a
    /// small block, all on the slab's metadata (hot lines; the freed block
    /// itself, long untouched in a program like Larson's, is only written,
    /// and a store does not wait for its line):
    ///
    /// - its offset in the slab starts one of the objects ever handed out
    ///   (one multiply by the slot's magic and one compare against the
    ///   slab's limit, `size_class::compute_magic`): else an interior free;
    /// - it is not the head of the slab's free list (glibc's "fasttop"
    ///   check): an immediate double free;
    /// - the slab has a live block at all (read with its count, in
    ///   `push_small`): a free into a slab whose blocks are all free is a
    ///   double free.
    ///
    /// Then the block is linked, its link encoded with the process's free
    /// key (the free mark, [`encode_link`]): one word written, none read
    /// (`link_small`). Any other double free is caught at the allocation
    /// that would hand the block out again: the allocation decodes the
    /// popped block's link, which it reads anyway, and refuses a block whose
    /// word is no link (see `take_from`), and a slab is checked whole before
    /// it is made over or given back (see `check_emptied`).
    ///
    /// With `LOOK` (`Heap::try_free`) the marks are read too
    /// ([`looks_free`]), and a marked block is looked up on the slab's free
    /// list (after draining the foreign list) before it is called a double
    /// free, so live data that happens to look like a mark is not. With the
    /// checker on, every free is looked up that way.
    ///
    /// # Safety
    /// Owner only; `p` is in one of our regions.
    /// With `REPORT`, a bad pointer is reported here (ending the process)
    /// and the result is always `Ok`.
    #[inline(always)]
    unsafe fn free_local_in<const REPORT: bool, const LOOK: bool>(
        &self,
        p: *mut u8,
    ) -> Result<(), Bad> {
        // SAFETY: owner-only state; `p` is in our region. Every call off the
        // common path is in tail position, so nothing lives across one and
        // the inlined path needs few saved registers.
        unsafe {
            let r = Region::of(p);
            let slot = (p.addr() & (REGION - 1)) / SLAB;
            let m = meta_of(p);
            // One compare for both: a slot that is no slab has magic 0 and
            // limit 0 (`slab::clear`), so its blocks (medium ones) fail it.
            let soff = (p.addr() & (SLAB - 1)) as u32;
            if soff.wrapping_mul((*r).magics[slot]) >= (*m).limit {
                return self.leave::<REPORT>(p, m, OffPath::NotSmall);
            }
            let l = self.local();
            let head = (*m).free;
            let suspect = if LOOK {
                looks_free(p, l.free_key) || (*m).used == 0 || l.checker()
            } else {
                // The checker needs no test here: it sends every free to
                // `push_slow` (see `free_check_below`).
                ptr::eq(p, head)
            };
            if suspect {
                return self.leave::<REPORT>(p, m, OffPath::Suspect);
            }
            self.push_small::<REPORT>(p, m, head)
        }
    }

    /// Leaves `free_local_in`'s common path `what` way: with `REPORT` by a
    /// tail call of [`off_path_reporting`] (which finds `m` again from `p`),
    /// else by [`off_path`](Self::off_path) inline.
    ///
    /// # Safety
    /// As [`off_path`](Self::off_path).
    #[inline(always)]
    unsafe fn leave<const REPORT: bool>(
        &self,
        p: *mut u8,
        m: *mut SlabMeta,
        what: OffPath,
    ) -> Result<(), Bad> {
        if REPORT {
            // SAFETY: forwarded.
            unsafe { off_path_reporting(p, self, what) };
            return Ok(());
        }
        // SAFETY: forwarded.
        unsafe { self.off_path::<false>(p, m, what) }
    }

    /// The rest of a free that left `free_local_in`'s common path:
    /// `NotSmall` (the interior test failed) frees a medium block (the slot
    /// is no slab) or refuses an interior pointer; `Suspect` (the free
    /// list's head, or with `LOOK` a block that looks free) looks the block
    /// up first; `PushSlow` (the slab has fewer live blocks than the heap's
    /// `free_check_below`) takes the checked push.
    ///
    /// # Safety
    /// Owner only; `p` is in one of our regions and `m == meta_of(p)`; for
    /// `Suspect` and `PushSlow` the interior test passed. With `REPORT`, a
    /// bad pointer is reported here (ending the process) and the result is
    /// always `Ok`.
    #[inline(always)]
    unsafe fn off_path<const REPORT: bool>(
        &self,
        p: *mut u8,
        m: *mut SlabMeta,
        what: OffPath,
    ) -> Result<(), Bad> {
        // SAFETY: forwarded.
        unsafe {
            match what {
                OffPath::NotSmall if (*m).class1 == 0 => self.free_medium_in::<REPORT>(p),
                OffPath::NotSmall => Self::bad_free::<REPORT>(Bad::interior(p)),
                OffPath::Suspect => self.free_suspect::<REPORT>(p, m),
                OffPath::PushSlow => self.push_slow::<REPORT>(p, m),
            }
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
    pub(crate) unsafe fn free_drained(&self, p: *mut u8) -> Result<(), Bad> {
        // SAFETY: owner-only state; `p` is in our region.
        unsafe {
            let r = Region::of(p);
            let m: *mut SlabMeta = &raw mut (*r).slabs[(p.addr() & (REGION - 1)) / SLAB];
            if (*m).class1 == 0 {
                // Off the foreign list: no longer marked.
                key_slot(p).write(0);
                return self.free_medium(p);
            }
            if p.addr() & (SLAB - 1) >= (*m).bump as usize {
                return Err(Bad::interior(p));
            }
            if self.local().checker() {
                // A block pushed twice by racing freers.
                self.confirm_small_free(p, m, false)?;
            }
            self.push_checked(p, m)
        }
    }

    /// Puts checked small block `p` of our slab `m` on the slab's free list
    /// (`head`, its free list as read by the caller). A slab with fewer
    /// live blocks than the heap's `free_check_below` goes to
    /// [`push_slow`](Self::push_slow): its last block, none (a double free,
    /// found here where the count is read anyway), or, with the checker on,
    /// any, so the checker costs the fast path no test of its own.
    ///
    /// # Safety
    /// Owner only; `p` is an object of `m`; `head == (*m).free`.
    /// With `REPORT`, a bad pointer is reported (ending the process).
    #[inline(always)]
    unsafe fn push_small<const REPORT: bool>(
        &self,
        p: *mut u8,
        m: *mut SlabMeta,
        head: *mut u8,
    ) -> Result<(), Bad> {
        // SAFETY: owner-only state; `m` is our slab.
        unsafe {
            let used = (*m).used;
            if used < self.local().free_check_below {
                return self.leave::<REPORT>(p, m, OffPath::PushSlow);
            }
            self.link_small::<false>(p, m, head, used);
            Ok(())
        }
    }

    /// [`push_small`](Self::push_small) for a slab with at most one live
    /// block, or any free with the checker on (then looked up first).
    ///
    /// # Safety
    /// As `push_small`.
    #[cold]
    #[inline(never)]
    unsafe fn push_slow<const REPORT: bool>(
        &self,
        p: *mut u8,
        m: *mut SlabMeta,
    ) -> Result<(), Bad> {
        // SAFETY: forwarded.
        let r = unsafe {
            if self.local().checker() {
                self.free_small_checked(p, m)
            } else {
                self.push_checked(p, m)
            }
        };
        if REPORT && let Err(e) = r {
            crate::report::report_fatal(e);
        }
        r
    }

    /// Puts small block `p` of our slab `m`, checked in full, on the slab's
    /// free list: refuses it if the slab has no live block (a double free),
    /// and parks the slab if `p` was its last.
    ///
    /// # Safety
    /// Owner only; `p` is an object of `m`.
    #[inline]
    unsafe fn push_checked(&self, p: *mut u8, m: *mut SlabMeta) -> Result<(), Bad> {
        // SAFETY: owner-only state; `m` is our slab, of a small class.
        unsafe {
            let used = (*m).used;
            if used == 0 {
                return Err(Bad::double_free(p));
            }
            self.link_small::<true>(p, m, (*m).free, used);
            if used == 1 {
                return self.slab_emptied(m, ((*m).class1 - 1) as usize % CLASSES);
            }
            Ok(())
        }
    }

    /// Links `p` onto slab `m`'s free list (`head`), its link encoded (the
    /// free mark, [`encode_link`]), and counts it freed. With `CLEAR` the
    /// block's foreign mark is cleared too (a block taken back from the
    /// foreign list, or one on a checked path). A slab that was full gets
    /// its room back at the end of its bin.
    ///
    /// # Safety
    /// As `push_small`; `used == (*m).used > 0`, `head == (*m).free`.
    #[inline(always)]
    unsafe fn link_small<const CLEAR: bool>(
        &self,
        p: *mut u8,
        m: *mut SlabMeta,
        head: *mut u8,
        used: u16,
    ) {
        // SAFETY: owner-only state; `m` is our slab; `p` is one of its
        // objects, of a small class: at least 16 bytes, 16-aligned, so the
        // two words are inside it.
        unsafe {
            let l = self.local();
            // The class from the region's copy, and the flags before `used`
            // is written: the slab's class byte and flags share `used`'s
            // word, and a load of bytes beside a store in flight waits for
            // that store to complete, behind the store into the block (a
            // miss in a program like larson's): a tenth of larsonN-sized's
            // time on Zen 4 (`bench/results/2026-12-07-heap-free-count-zen4.md`).
            let class1 = (*Region::of(p)).classes[(p.addr() & (REGION - 1)) / SLAB];
            let in_bin = (*m).in_bin();
            // One store into the block, which a program like larson frees
            // long after it last touched it: the encoded link is the free
            // mark, so no second word is written beside it
            // (`bench/results/2026-12-06-heap-link-mark-zen4.md`).
            if CLEAR {
                p.cast::<[usize; 2]>()
                    .write([encode_link(head, l.free_key), 0]);
            } else {
                p.cast::<usize>().write(encode_link(head, l.free_key));
            }
            (*m).free = p;
            (*m).used = used - 1;
            l.counters.freed_small[class1 as usize] += 1;
            // Last, so the re-bin (a slab that was full: rare in churn) is
            // a tail call off the path.
            if !in_bin {
                rebin(p, self);
            }
        }
    }

    /// [`free_medium`](Self::free_medium) for `free_local_in`, reporting
    /// with `REPORT`. Every call off `free_local_in`'s common path is a
    /// tail call of such a function, so that path sets up no stack frame.
    ///
    /// # Safety
    /// As `free_medium`.
    #[inline(never)]
    unsafe fn free_medium_in<const REPORT: bool>(&self, p: *mut u8) -> Result<(), Bad> {
        // SAFETY: forwarded.
        let r = unsafe { self.free_medium(p) };
        if REPORT && let Err(e) = r {
            crate::report::report_bad_free(e);
        }
        r
    }

    /// A bad free found on `free_local_in`'s path: reported with `REPORT`
    /// (ending the process), else returned.
    #[cold]
    #[inline(never)]
    fn bad_free<const REPORT: bool>(e: Bad) -> Result<(), Bad> {
        if REPORT {
            crate::report::report_fatal(e);
        }
        Err(e)
    }

    /// [`free_small_checked`](Self::free_small_checked) for
    /// `free_local_in`, reporting with `REPORT`.
    ///
    /// # Safety
    /// As `free_small_checked`.
    #[cold]
    #[inline(never)]
    unsafe fn free_suspect<const REPORT: bool>(
        &self,
        p: *mut u8,
        m: *mut SlabMeta,
    ) -> Result<(), Bad> {
        // SAFETY: forwarded.
        let r = unsafe { self.free_small_checked(p, m) };
        if REPORT && let Err(e) = r {
            crate::report::report_fatal(e);
        }
        r
    }

    /// [`free_local_in`](Self::free_local_in) for a suspect block (the
    /// free list's head, one carrying the free mark, one of a slab with no
    /// live block, with `LOOK`) or any block with the checker on: looks it
    /// up before freeing.
    ///
    /// # Safety
    /// As `free_local_in`, with the shape checks passed.
    #[cold]
    #[inline(never)]
    unsafe fn free_small_checked(&self, p: *mut u8, m: *mut SlabMeta) -> Result<(), Bad> {
        // SAFETY: owner-only state.
        unsafe {
            self.confirm_small_free(p, m, true)?;
            // The drain in `confirm_small_free` may have just made every
            // block of the slab free: then this is a double free too.
            self.push_checked(p, m)
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
            if decay::note_free(&mut l.decay_due, l.decay_last, l.now_ms) {
                self.publish_due(l.decay_due);
            }
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
                // Freed by another thread before, and waiting on our foreign
                // list (`mark_foreign_free`): draining it would free it again.
                // Its mark is read only while a block waits there, so a free
                // reads no cold block line in a program without foreign
                // frees pending (reading it at every free made one thread's
                // churn of 2000 live 16-256 KiB blocks 1-9% slower,
                // `bench/malloc/medium.c` and a variant of it; level now).
                Loc::Medium { .. }
                    if self.foreign.waiting_for(p) && key_slot(p).read() == self.free_key =>
                {
                    Err(Bad::double_free(p))
                }
                Loc::Medium { order, .. } => {
                    let l = self.local();
                    let since = Since {
                        gc: l.epoch,
                        ms: l.now_ms as u32,
                    };
                    l.buddy.cache_push(p, order, since);
                    let set = decay::note_free(&mut l.decay_due, l.decay_last, l.now_ms);
                    l.counters.freed_bytes += (PAGE << order) as u64;
                    if set {
                        self.publish_due(l.decay_due);
                    }
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
                if ptr::eq(HeapCore::owner_of(r), self) {
                    if p.addr() & (SLAB - 1) >= (*m).bump as usize {
                        return Err(Bad::interior(p));
                    }
                    self.confirm_small_free(p, m, true)?;
                } else if looks_free(p, crate::report::free_key()) {
                    return Err(Bad::double_free(p));
                }
            }
        }
        Ok(())
    }
}
