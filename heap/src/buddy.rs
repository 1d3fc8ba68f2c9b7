//! Power-of-two blocks inside regions, with splitting and coalescing.
//!
//! Invariants (checked by `valid.rs`):
//! - every page of a region belongs to exactly one block; a block of order k
//!   starts at a page index that is a multiple of 2^k, and its first page's
//!   page-map byte holds its state and order, the others `PM_INTERIOR`;
//! - a `PM_FREE` block is on `free[k]` (doubly linked through its first
//!   bytes) and never has a `PM_FREE` buddy of the same order (they would
//!   have been merged);
//! - a `PM_CACHED` block is on `cache[k]`: freed but not yet coalesced, so
//!   that a query that frees and re-allocates the same sizes reuses blocks
//!   without split/merge work. GC and the allocation slow path coalesce them;
//! - on each free list the resident blocks come before the released ones
//!   (`F_RELEASED`), and an allocation takes resident memory first: an exact
//!   cached block, else the smallest resident free or cached block to split,
//!   and only then released pages, so a heap reuses the pages it already
//!   has instead of touching new ones.

use crate::layout::PAGE;
use crate::region::{ORDERS, Page, Region};
use core::ptr;

/// Bytes at the start of a free block used for its links.
pub(crate) const NODE_BYTES: usize = 32;

bitflags::bitflags! {
    /// What is known of a free block's bytes.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) struct BlockFlags: u8 {
        /// Bytes after the first `NODE_BYTES` read as zero.
        const ZERO = 1;
        /// Pages after the first have been released to the OS.
        const RELEASED = 2;
    }
}

/// The links at the start of a free (or cached) block.
#[repr(C)]
pub(crate) struct FreeBlock {
    pub(crate) next: *mut FreeBlock,
    pub(crate) prev: *mut FreeBlock,
    /// The heap's GC epoch when the block became free.
    pub(crate) since: u32,
    /// The coarse clock (ms, wrapping) when the block became free: idle
    /// decay releases blocks by this age.
    pub(crate) since_ms: u32,
    pub(crate) order: u8,
    pub(crate) flags: BlockFlags,
}

static_assertions::const_assert!(core::mem::size_of::<FreeBlock>() <= NODE_BYTES);

/// When a block became free: the heap's GC epoch (the amortized release
/// pass ages blocks in GCs) and the coarse clock in ms, wrapping (idle decay
/// ages them in time).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Since {
    pub(crate) gc: u32,
    pub(crate) ms: u32,
}

/// The later of two wrapping ms stamps (ages stay far below 2^31 ms).
#[inline]
pub(crate) fn later(a: u32, b: u32) -> u32 {
    if (a.wrapping_sub(b) as i32) > 0 { a } else { b }
}

/// A heap's buddy free lists and its cache of recently freed blocks.
pub(crate) struct Buddy {
    pub(crate) free: [*mut FreeBlock; ORDERS],
    /// The last block of each free list (the released ones are at the end).
    pub(crate) tail: [*mut FreeBlock; ORDERS],
    pub(crate) cache: [*mut FreeBlock; ORDERS],
    /// Bytes on the free lists and in the cache.
    pub(crate) free_bytes: usize,
}

impl Buddy {
    pub(crate) const fn new() -> Self {
        Buddy {
            free: [ptr::null_mut(); ORDERS],
            tail: [ptr::null_mut(); ORDERS],
            cache: [ptr::null_mut(); ORDERS],
            free_bytes: 0,
        }
    }

    /// Puts block `b` (start of a free block of `order`) on `free[order]`:
    /// at the front if resident, at the end if released.
    ///
    /// # Safety
    /// `b` is a block of this heap not on any list, its page-map byte is set
    /// by the caller.
    unsafe fn link(&mut self, b: *mut FreeBlock, order: u8, since: Since, flags: BlockFlags) {
        // SAFETY: the block is ours and at least a page long.
        unsafe {
            b.write(FreeBlock {
                next: ptr::null_mut(),
                prev: ptr::null_mut(),
                since: since.gc,
                since_ms: since.ms,
                order,
                flags,
            });
            self.insert(b, order as usize);
        }
    }

    /// Links `b` (its fields other than the links set) by its flags.
    ///
    /// # Safety
    /// As [`link`](Self::link).
    unsafe fn insert(&mut self, b: *mut FreeBlock, o: usize) {
        // SAFETY: list nodes are free blocks of this heap.
        unsafe {
            if !(*b).flags.contains(BlockFlags::RELEASED) || self.tail[o].is_null() {
                let head = self.free[o];
                (*b).prev = ptr::null_mut();
                (*b).next = head;
                if head.is_null() {
                    self.tail[o] = b;
                } else {
                    (*head).prev = b;
                }
                self.free[o] = b;
            } else {
                let t = self.tail[o];
                (*b).next = ptr::null_mut();
                (*b).prev = t;
                (*t).next = b;
                self.tail[o] = b;
            }
        }
    }

    /// Removes `b` from `free[order]`.
    ///
    /// # Safety
    /// `b` is on `free[order]`.
    pub(crate) unsafe fn unlink(&mut self, b: *mut FreeBlock, order: u8) {
        // SAFETY: `b` and its neighbours are free blocks on this list.
        unsafe {
            let (n, p) = ((*b).next, (*b).prev);
            if n.is_null() {
                self.tail[order as usize] = p;
            } else {
                (*n).prev = p;
            }
            if p.is_null() {
                self.free[order as usize] = n;
            } else {
                (*p).next = n;
            }
        }
    }

    /// Marks free block `b` of `order` released (its pages after the first
    /// were just given back) and moves it behind the resident blocks.
    ///
    /// # Safety
    /// `b` is on `free[order]` and not released.
    pub(crate) unsafe fn mark_released(&mut self, b: *mut FreeBlock, order: u8) {
        // SAFETY: forwarded.
        unsafe {
            self.unlink(b, order);
            (*b).flags |= BlockFlags::RELEASED | BlockFlags::ZERO;
            self.insert(b, order as usize);
        }
    }

    /// Takes a block of `order`, from the cache or by splitting a larger
    /// free block, resident memory first; released pages only if
    /// `released_ok`. Returns the block and whether its bytes read as zero.
    ///
    /// # Safety
    /// The lists belong to the calling heap's owner.
    pub(crate) unsafe fn alloc(&mut self, order: u8, released_ok: bool) -> Option<(*mut u8, bool)> {
        let o = order as usize;
        let c = self.cache[o];
        if !c.is_null() {
            // SAFETY: cached blocks are ours; their first bytes hold the link.
            unsafe {
                self.cache[o] = (*c).next;
                let r = Region::of(c.cast());
                (*r).pagemap[Region::page_of(c.cast())] = Page::block(Page::USED, order);
            }
            self.free_bytes -= PAGE << order;
            return Some((c.cast(), false));
        }
        // The smallest resident block to split: a free list's head (resident
        // ones come first), or a larger cached block; else released pages.
        let mut j = o;
        let mut from_cache = false;
        let resident = |b: *mut FreeBlock| {
            // SAFETY: list heads are free blocks of this heap.
            !b.is_null() && !unsafe { (*b).flags }.contains(BlockFlags::RELEASED)
        };
        while j < ORDERS && !resident(self.free[j]) {
            if j > o && !self.cache[j].is_null() {
                from_cache = true;
                break;
            }
            j += 1;
        }
        if j == ORDERS {
            if !released_ok {
                return None;
            }
            j = o;
            while j < ORDERS && self.free[j].is_null() {
                j += 1;
            }
            if j == ORDERS {
                return None;
            }
        }
        // SAFETY: `b` heads `free[j]` or `cache[j]`; its halves lie inside
        // its own region.
        unsafe {
            let b = if from_cache {
                let c = self.cache[j];
                self.cache[j] = (*c).next;
                c
            } else {
                let b = self.free[j];
                self.unlink(b, j as u8);
                b
            };
            let since = Since {
                gc: (*b).since,
                ms: (*b).since_ms,
            };
            let flags = (*b).flags;
            let r = Region::of(b.cast());
            let page = Region::page_of(b.cast());
            while j > o {
                j -= 1;
                let upper = page + (1 << j);
                (*r).pagemap[upper] = Page::block(Page::FREE, j as u8);
                // The upper half's pages were all released too when the
                // parent's were (all but the parent's first page).
                self.link(Region::page_ptr(r, upper).cast(), j as u8, since, flags);
            }
            (*r).pagemap[page] = Page::block(Page::USED, order);
            self.free_bytes -= PAGE << order;
            let zero = flags.contains(BlockFlags::ZERO);
            if zero {
                // The links were the only non-zero bytes.
                b.cast::<u8>().write_bytes(0, NODE_BYTES);
            }
            Some((b.cast(), zero))
        }
    }

    /// Whether any block is cached.
    pub(crate) fn has_cached(&self) -> bool {
        self.cache.iter().any(|c| !c.is_null())
    }

    /// Puts a freed block on the cache (no coalescing), freed at `since`.
    ///
    /// # Safety
    /// `p` is a live `PM_USED` block of this heap of `order`.
    pub(crate) unsafe fn cache_push(&mut self, p: *mut u8, order: u8, since: Since) {
        let b: *mut FreeBlock = p.cast();
        // SAFETY: the block is ours and dead.
        unsafe {
            let r = Region::of(p);
            (*r).pagemap[Region::page_of(p)] = Page::block(Page::CACHED, order);
            (*b).next = self.cache[order as usize];
            (*b).since = since.gc;
            (*b).since_ms = since.ms;
            (*b).order = order;
            (*b).flags = BlockFlags::empty();
        }
        self.cache[order as usize] = b;
        self.free_bytes += PAGE << order;
    }

    /// Returns a block to the free lists, merging it with free buddies. A
    /// merged block is as young as its youngest part.
    ///
    /// # Safety
    /// `p` is a block of this heap of `order` on no list (its page-map byte
    /// may say used or cached).
    pub(crate) unsafe fn free(&mut self, p: *mut u8, order: u8, since: Since, flags: BlockFlags) {
        // SAFETY: all blocks touched are inside `p`'s region, owned by us.
        unsafe {
            let r = Region::of(p);
            let mut page = Region::page_of(p);
            let mut order = order;
            let mut flags = flags;
            let mut since = since;
            while (order as usize) < ORDERS - 1 {
                let bp = page ^ (1 << order);
                if (*r).pagemap[bp] != Page::block(Page::FREE, order) {
                    break;
                }
                let bb: *mut FreeBlock = Region::page_ptr(r, bp).cast();
                self.unlink(bb, order);
                flags &= (*bb).flags;
                since.ms = later((*bb).since_ms, since.ms);
                let (lo, hi) = (page.min(bp), page.max(bp));
                (*r).pagemap[hi] = Page::INTERIOR;
                if flags.contains(BlockFlags::ZERO) {
                    // Keep "zero beyond the links" true for the merged block.
                    Region::page_ptr(r, hi).write_bytes(0, NODE_BYTES);
                }
                self.free_bytes -= PAGE << order;
                page = lo;
                order += 1;
            }
            (*r).pagemap[page] = Page::block(Page::FREE, order);
            self.link(Region::page_ptr(r, page).cast(), order, since, flags);
            self.free_bytes += PAGE << order;
        }
    }

    /// Adds a fresh region's free blocks (pages 2^k of order k).
    ///
    /// # Safety
    /// `r` was just initialized by `Region::init`.
    pub(crate) unsafe fn add_region(&mut self, r: *mut Region, since: Since) {
        for k in 0..ORDERS {
            let page = 1usize << k;
            // SAFETY: every page 2^k of a fresh region starts a free block of order k.
            unsafe {
                (*r).pagemap[page] = Page::block(Page::FREE, k as u8);
                // Fresh pages are not resident: nothing for pass 5 to release.
                self.link(
                    Region::page_ptr(r, page).cast(),
                    k as u8,
                    since,
                    BlockFlags::ZERO | BlockFlags::RELEASED,
                );
            }
            self.free_bytes += PAGE << k;
        }
    }

    /// Whether region `r` is entirely free (all its top blocks are on the lists).
    ///
    /// # Safety
    /// `r` is a region of this heap.
    pub(crate) unsafe fn region_is_free(&self, r: *mut Region) -> bool {
        // SAFETY: reading our own region's page map.
        (0..ORDERS).all(|k| unsafe { (*r).pagemap[1 << k] } == Page::block(Page::FREE, k as u8))
    }

    /// Removes an entirely free region's blocks from the lists.
    ///
    /// # Safety
    /// `region_is_free(r)` holds.
    pub(crate) unsafe fn remove_region(&mut self, r: *mut Region) {
        for k in 0..ORDERS {
            // SAFETY: the block at page 2^k is on free[k].
            unsafe { self.unlink(Region::page_ptr(r, 1 << k).cast(), k as u8) };
            self.free_bytes -= PAGE << k;
        }
    }

    /// Moves every cached block to the free lists, coalescing; each keeps
    /// the time it was freed, and takes GC epoch `epoch`.
    ///
    /// # Safety
    /// Owner only.
    pub(crate) unsafe fn flush_cache(&mut self, epoch: u32) {
        // SAFETY: forwarded.
        unsafe { self.flush_cache_if(epoch, |_| true) };
    }

    /// Moves the cached blocks for which `pick(freed_at_ms)` holds to the
    /// free lists, as [`flush_cache`](Self::flush_cache); the others stay.
    ///
    /// # Safety
    /// Owner only.
    pub(crate) unsafe fn flush_cache_if(&mut self, epoch: u32, mut pick: impl FnMut(u32) -> bool) {
        for o in 0..ORDERS {
            let mut c = core::mem::replace(&mut self.cache[o], ptr::null_mut());
            while !c.is_null() {
                // SAFETY: cached blocks are ours; read the link before reuse.
                unsafe {
                    let next = (*c).next;
                    let ms = (*c).since_ms;
                    if pick(ms) {
                        self.free_bytes -= PAGE << o;
                        self.free(
                            c.cast(),
                            o as u8,
                            Since { gc: epoch, ms },
                            BlockFlags::empty(),
                        );
                    } else {
                        (*c).next = self.cache[o];
                        self.cache[o] = c;
                    }
                    c = next;
                }
            }
        }
    }
}
