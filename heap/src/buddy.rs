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
//!   without split/merge work. GC and the allocation slow path coalesce them.

use crate::PAGE;
use crate::region::{ORDERS, PM_CACHED, PM_FREE, PM_INTERIOR, PM_USED, Region};
use core::ptr;

/// Bytes at the start of a free block used for its links.
pub(crate) const NODE_BYTES: usize = 32;

/// Bytes after the first `NODE_BYTES` read as zero.
pub(crate) const F_ZERO: u8 = 1;
/// Pages after the first have been released to the OS.
pub(crate) const F_RELEASED: u8 = 2;

/// The links at the start of a free (or cached) block.
#[repr(C)]
pub(crate) struct FreeBlock {
    pub(crate) next: *mut FreeBlock,
    pub(crate) prev: *mut FreeBlock,
    /// The heap's GC epoch when the block became free.
    pub(crate) since: u32,
    pub(crate) order: u8,
    pub(crate) flags: u8,
}

static_assertions::const_assert!(core::mem::size_of::<FreeBlock>() <= NODE_BYTES);

/// A heap's buddy free lists and its cache of recently freed blocks.
pub(crate) struct Buddy {
    pub(crate) free: [*mut FreeBlock; ORDERS],
    pub(crate) cache: [*mut FreeBlock; ORDERS],
    /// Bytes on the free lists and in the cache.
    pub(crate) free_bytes: usize,
}

impl Buddy {
    pub(crate) const fn new() -> Self {
        Buddy {
            free: [ptr::null_mut(); ORDERS],
            cache: [ptr::null_mut(); ORDERS],
            free_bytes: 0,
        }
    }

    /// Pushes block `b` (start of a free block of `order`) onto `free[order]`.
    ///
    /// # Safety
    /// `b` is a block of this heap not on any list, its page-map byte is set
    /// by the caller.
    unsafe fn link(&mut self, b: *mut FreeBlock, order: u8, since: u32, flags: u8) {
        // SAFETY: the block is ours and at least a page long.
        unsafe {
            let head = self.free[order as usize];
            b.write(FreeBlock {
                next: head,
                prev: ptr::null_mut(),
                since,
                order,
                flags,
            });
            if !head.is_null() {
                (*head).prev = b;
            }
        }
        self.free[order as usize] = b;
    }

    /// Removes `b` from `free[order]`.
    ///
    /// # Safety
    /// `b` is on `free[order]`.
    pub(crate) unsafe fn unlink(&mut self, b: *mut FreeBlock, order: u8) {
        // SAFETY: `b` and its neighbours are free blocks on this list.
        unsafe {
            let (n, p) = ((*b).next, (*b).prev);
            if !n.is_null() {
                (*n).prev = p;
            }
            if p.is_null() {
                self.free[order as usize] = n;
            } else {
                (*p).next = n;
            }
        }
    }

    /// Takes a block of `order`, from the cache or by splitting a larger
    /// free block. Returns the block and whether its bytes read as zero.
    ///
    /// # Safety
    /// The lists belong to the calling heap's owner.
    pub(crate) unsafe fn alloc(&mut self, order: u8) -> Option<(*mut u8, bool)> {
        let o = order as usize;
        let c = self.cache[o];
        if !c.is_null() {
            // SAFETY: cached blocks are ours; their first bytes hold the link.
            unsafe {
                self.cache[o] = (*c).next;
                let r = Region::of(c.cast());
                (*r).pagemap[Region::page_of(c.cast())] = PM_USED | order;
            }
            self.free_bytes -= PAGE << order;
            return Some((c.cast(), false));
        }
        let mut j = o;
        while j < ORDERS && self.free[j].is_null() {
            j += 1;
        }
        if j == ORDERS {
            return None;
        }
        let b = self.free[j];
        // SAFETY: `b` heads `free[j]`; its halves lie inside its own region.
        unsafe {
            self.unlink(b, j as u8);
            let since = (*b).since;
            let flags = (*b).flags;
            let r = Region::of(b.cast());
            let page = Region::page_of(b.cast());
            while j > o {
                j -= 1;
                let upper = page + (1 << j);
                (*r).pagemap[upper] = PM_FREE | j as u8;
                // The upper half's pages were all released too when the
                // parent's were (all but the parent's first page).
                self.link(Region::page_ptr(r, upper).cast(), j as u8, since, flags);
            }
            (*r).pagemap[page] = PM_USED | order;
            self.free_bytes -= PAGE << order;
            let zero = flags & F_ZERO != 0;
            if zero {
                // The links were the only non-zero bytes.
                b.cast::<u8>().write_bytes(0, NODE_BYTES);
            }
            Some((b.cast(), zero))
        }
    }

    /// Puts a freed block on the cache (no coalescing).
    ///
    /// # Safety
    /// `p` is a live `PM_USED` block of this heap of `order`.
    pub(crate) unsafe fn cache_push(&mut self, p: *mut u8, order: u8) {
        let b: *mut FreeBlock = p.cast();
        // SAFETY: the block is ours and dead.
        unsafe {
            let r = Region::of(p);
            (*r).pagemap[Region::page_of(p)] = PM_CACHED | order;
            (*b).next = self.cache[order as usize];
            (*b).order = order;
            (*b).flags = 0;
        }
        self.cache[order as usize] = b;
        self.free_bytes += PAGE << order;
    }

    /// Returns a block to the free lists, merging it with free buddies.
    ///
    /// # Safety
    /// `p` is a block of this heap of `order` on no list (its page-map byte
    /// may say used or cached).
    pub(crate) unsafe fn free(&mut self, p: *mut u8, order: u8, since: u32, flags: u8) {
        // SAFETY: all blocks touched are inside `p`'s region, owned by us.
        unsafe {
            let r = Region::of(p);
            let mut page = Region::page_of(p);
            let mut order = order;
            let mut flags = flags;
            while (order as usize) < ORDERS - 1 {
                let bp = page ^ (1 << order);
                if (*r).pagemap[bp] != PM_FREE | order {
                    break;
                }
                let bb: *mut FreeBlock = Region::page_ptr(r, bp).cast();
                self.unlink(bb, order);
                flags &= (*bb).flags;
                let (lo, hi) = (page.min(bp), page.max(bp));
                (*r).pagemap[hi] = PM_INTERIOR;
                if flags & F_ZERO != 0 {
                    // Keep "zero beyond the links" true for the merged block.
                    Region::page_ptr(r, hi).write_bytes(0, NODE_BYTES);
                }
                self.free_bytes -= PAGE << order;
                page = lo;
                order += 1;
            }
            (*r).pagemap[page] = PM_FREE | order;
            self.link(Region::page_ptr(r, page).cast(), order, since, flags);
            self.free_bytes += PAGE << order;
        }
    }

    /// Adds a fresh region's free blocks (pages 2^k of order k).
    ///
    /// # Safety
    /// `r` was just initialized by `Region::init`.
    pub(crate) unsafe fn add_region(&mut self, r: *mut Region, since: u32) {
        for k in 0..ORDERS {
            let page = 1usize << k;
            // SAFETY: every page 2^k of a fresh region starts a free block of order k.
            unsafe {
                (*r).pagemap[page] = PM_FREE | k as u8;
                // Fresh pages are not resident: nothing for pass 5 to release.
                self.link(
                    Region::page_ptr(r, page).cast(),
                    k as u8,
                    since,
                    F_ZERO | F_RELEASED,
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
        (0..ORDERS).all(|k| unsafe { (*r).pagemap[1 << k] } == PM_FREE | k as u8)
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

    /// Moves every cached block to the free lists, coalescing.
    ///
    /// # Safety
    /// Owner only.
    pub(crate) unsafe fn flush_cache(&mut self, since: u32) {
        for o in 0..ORDERS {
            let mut c = core::mem::replace(&mut self.cache[o], ptr::null_mut());
            while !c.is_null() {
                // SAFETY: cached blocks are ours; read the link before reuse.
                unsafe {
                    let next = (*c).next;
                    self.free_bytes -= PAGE << o;
                    self.free(c.cast(), o as u8, since, 0);
                    c = next;
                }
            }
        }
    }
}
