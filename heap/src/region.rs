//! Regions: `REGION` bytes aligned to `REGION`, so the header of the
//! region holding any block is at `ptr & !(REGION - 1)`. The header takes
//! the first page: the owning heap, a page map (one byte per page: the state
//! and buddy order of the block starting there) and the metadata of the
//! 64 KiB slabs carved out of the region (kept out of line so slab objects
//! start at the slab's aligned base).

use crate::layout::{PAGE, REGION};

/// What a region's owner pointer points to, opaque here: the heap (see
/// `heap.rs`), which regions know nothing of.
pub(crate) enum Owner {}

/// Pages per region.
pub(crate) const PAGES: usize = REGION / PAGE;
/// Slab size and its buddy order.
pub(crate) const SLAB: usize = 64 * 1024;
pub(crate) const SLAB_ORDER: u8 = 4;
pub(crate) const SLABS: usize = REGION / SLAB;
/// Buddy orders 0..ORDERS: a block of order k is `PAGE << k` bytes. The
/// largest free block in a region is half of it (page 0 is the header).
pub(crate) const ORDERS: usize = (crate::layout::REGION_SHIFT - 12) as usize;

bitflags::bitflags! {
    /// A page-map byte: the state of the block that starts at the page (the
    /// high bits; none for a page inside a block) and its buddy order (the
    /// low bits).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    #[repr(transparent)]
    pub(crate) struct Page: u8 {
        /// A free block on the buddy free lists.
        const FREE = 0x40;
        /// A block in use (a medium block, a slab, or the header page).
        const USED = 0x80;
        /// A freed block on the buddy cache, not yet coalesced.
        const CACHED = 0xC0;
        /// The state bits.
        const KIND = 0xC0;
        /// The order bits.
        const ORDER = 0x1F;
    }
}

impl Page {
    /// A page inside a block (no block starts here).
    pub(crate) const INTERIOR: Page = Page::empty();

    /// The byte of a block of `kind` (FREE, USED or CACHED) and `order`.
    #[inline(always)]
    pub(crate) fn block(kind: Page, order: u8) -> Page {
        kind | Page::from_bits_retain(order & Page::ORDER.bits())
    }

    /// The state bits alone.
    #[inline(always)]
    pub(crate) fn kind(self) -> Page {
        self & Page::KIND
    }

    /// The order bits.
    #[inline(always)]
    pub(crate) fn order(self) -> u8 {
        (self & Page::ORDER).bits()
    }
}

const MAGIC: usize = 0x6b65_656c_5245_4731; // "keelREG1"

/// Metadata of one 64 KiB slab slot of a region.
#[repr(C)]
pub(crate) struct SlabMeta {
    /// Local free objects (a singly linked list through the objects).
    pub(crate) free: *mut u8,
    /// Bin list links (slabs of one class with room).
    pub(crate) next: *mut SlabMeta,
    pub(crate) prev: *mut SlabMeta,
    /// Objects never handed out start at this byte offset into the slab
    /// (a byte offset, so the allocation and the free check add and compare
    /// without multiplying).
    pub(crate) bump: u32,
    pub(crate) used: u16,
    /// Class + 1; 0 when the slot is not a slab.
    pub(crate) class1: u8,
    pub(crate) flags: SlabFlags,
    /// The heap's clock (ms, wrapping) when `used` last dropped to 0.
    pub(crate) empty_ms: u32,
    /// `k * excess` for the `k` objects handed out so far by bumping (see
    /// `size_class::compute_magic`): an offset `off` is a handed-out
    /// object exactly when `off * magic < limit`, with `magic` the slot's
    /// entry in `Region::magics`. The free path's interior-pointer check,
    /// one multiply and one compare.
    pub(crate) limit: u32,
}

bitflags::bitflags! {
    /// Where a slab is and what it holds.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) struct SlabFlags: u8 {
        /// On its class's bin (it has room).
        const IN_BIN = 1;
        /// Objects at offsets >= `bump` read as zero.
        const ZERO_TAIL = 2;
        /// On the heap's list of empty slabs (then on no bin).
        const PARKED = 4;
    }
}

impl SlabMeta {
    #[inline(always)]
    pub(crate) fn in_bin(&self) -> bool {
        self.flags.contains(SlabFlags::IN_BIN)
    }

    #[inline(always)]
    pub(crate) fn zero_tail(&self) -> bool {
        self.flags.contains(SlabFlags::ZERO_TAIL)
    }

    #[inline(always)]
    pub(crate) fn parked(&self) -> bool {
        self.flags.contains(SlabFlags::PARKED)
    }
}

static_assertions::const_assert!(core::mem::size_of::<SlabMeta>() <= 40);

/// The header at the start of every region.
#[repr(C)]
pub(crate) struct Region {
    pub(crate) magic: usize,
    /// The owning heap: written once before the region is published, never
    /// changed (adoption moves whole heaps between threads, not regions).
    pub(crate) owner: *const Owner,
    pub(crate) next: *mut Region,
    pub(crate) pagemap: [Page; PAGES],
    /// Class + 1 of each slab slot (0: not a slab), a copy of
    /// `SlabMeta::class1` on a line of its own: threads that free into this
    /// region without owning it read it, and the owner writes it only when a
    /// slab is made or dissolved, not on the allocations and frees that
    /// write the slab metadata.
    pub(crate) classes: [u8; SLABS],
    /// Each slab slot's divisibility magic (`size_class::compute_magic`;
    /// 0: not a slab), beside `classes` for the same readers and the owner's
    /// free path.
    pub(crate) magics: [u32; SLABS],
    pub(crate) slabs: [SlabMeta; SLABS],
}

static_assertions::const_assert!(core::mem::size_of::<Region>() <= PAGE);
static_assertions::const_assert!(REGION.is_power_of_two() && REGION >= 4 * SLAB);

impl Region {
    /// The region holding `ptr` (no check that it is one).
    #[inline]
    pub(crate) fn of(ptr: *const u8) -> *mut Region {
        ptr.map_addr(|a| a & !(REGION - 1)).cast_mut().cast()
    }

    /// Initializes a freshly mapped, zeroed region for `owner`.
    ///
    /// # Safety
    /// `r` is a new `REGION`-aligned zeroed mapping of `REGION` bytes.
    pub(crate) unsafe fn init(r: *mut Region, owner: *const Owner) {
        // SAFETY: the mapping is ours and zeroed; zero is a valid SlabMeta
        // (null pointers, zero counts) and page map.
        unsafe {
            (*r).magic = MAGIC;
            (*r).owner = owner;
            (*r).next = core::ptr::null_mut();
            (*r).pagemap[0] = Page::USED;
        }
    }

    /// Base address of page `page` of region `r`.
    #[inline]
    pub(crate) fn page_ptr(r: *mut Region, page: usize) -> *mut u8 {
        // SAFETY-free: pointer arithmetic inside the region's mapping.
        r.cast::<u8>().wrapping_add(page * PAGE)
    }

    /// Page index of `ptr` inside its region.
    #[inline]
    pub(crate) fn page_of(ptr: *const u8) -> usize {
        (ptr.addr() & (REGION - 1)) / PAGE
    }
}
