//! Regions and the chunk map.
//!
//! A region is `REGION` bytes aligned to `REGION`, so the header of the
//! region holding any block is at `ptr & !(REGION - 1)`. The header takes the
//! first page: the owning heap, a page map (one byte per page: the state and
//! buddy order of the block starting there) and the metadata of the 64 KiB
//! slabs carved out of the region (kept out of line so slab objects start at
//! the slab's aligned base).
//!
//! The chunk map records, for every `REGION`-sized chunk of the address
//! space, whether it is a region, the chunk holding a direct map's start, or
//! another chunk of a direct map. It answers `owns(ptr)` without touching the
//! pointer, so foreign pointers are rejected safely.

use crate::heap::HeapCore;
use crate::size_class::class_size;
use crate::{PAGE, REGION};

/// Pages per region.
pub(crate) const PAGES: usize = REGION / PAGE;
/// Slab size and its buddy order.
pub(crate) const SLAB: usize = 64 * 1024;
pub(crate) const SLAB_ORDER: u8 = 4;
pub(crate) const SLABS: usize = REGION / SLAB;
/// Buddy orders 0..ORDERS: a block of order k is `PAGE << k` bytes. The
/// largest free block in a region is half of it (page 0 is the header).
pub(crate) const ORDERS: usize = (crate::REGION_SHIFT - 12) as usize;

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
    /// `ceil(2^32 / class size)`: an offset `off` below 2^16 is a multiple
    /// of the class size exactly when `off * magic < magic` (wrapping), the
    /// free path's interior-pointer check, on the line it touches anyway.
    pub(crate) magic: u32,
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

    /// Whether `off` (a byte offset into the slab) is a multiple of its
    /// class size.
    #[inline(always)]
    pub(crate) fn is_object_offset(&self, off: usize) -> bool {
        (off as u32).wrapping_mul(self.magic) < self.magic
    }
}

static_assertions::const_assert!(core::mem::size_of::<SlabMeta>() <= 40);

/// The header at the start of every region.
#[repr(C)]
pub(crate) struct Region {
    pub(crate) magic: usize,
    /// The owning heap: written once before the region is published, never
    /// changed (adoption moves whole heaps between threads, not regions).
    pub(crate) owner: *const HeapCore,
    pub(crate) next: *mut Region,
    pub(crate) pagemap: [Page; PAGES],
    /// Class + 1 of each slab slot (0: not a slab), a copy of
    /// `SlabMeta::class1` on a line of its own: threads that free into this
    /// region without owning it read it, and the owner writes it only when a
    /// slab is made or dissolved, not on the allocations and frees that
    /// write the slab metadata.
    pub(crate) classes: [u8; SLABS],
    /// Each slab slot's [`SlabMeta::magic`] (0: not a slab), beside
    /// `classes` for the same readers.
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
    pub(crate) unsafe fn init(r: *mut Region, owner: *const HeapCore) {
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

/// Where a pointer handed out by keel-heap lives.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Loc {
    /// In the slab in slot `slot` of region `r`.
    Small { r: *mut Region, slot: usize },
    /// A buddy block of order `order`.
    Medium { order: u8 },
    /// A direct map.
    Direct(*mut crate::direct::DirectHeader),
}

/// Why a pointer is not a live block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadPointer {
    /// The pointer is not in memory keel-heap manages.
    Foreign(usize),
    /// The pointer is inside keel-heap memory but not at the start of a live
    /// block. `block` and `size` are the live block it falls in, when there
    /// is one (both 0 otherwise).
    Interior {
        /// The pointer.
        addr: usize,
        /// The start of the live block holding it, or 0.
        block: usize,
        /// That block's usable size, or 0.
        size: usize,
    },
    /// The block is already free (a double free).
    DoubleFree(usize),
}

/// What [`locate`] and the free paths report: a [`BadPointer`]'s kind and
/// the pointer, two words, so the free paths return it in registers. The
/// block around an interior pointer is worked out only when it is reported
/// ([`Bad::describe`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Bad {
    pub(crate) kind: BadKind,
    pub(crate) ptr: *const u8,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BadKind {
    Foreign,
    Interior,
    DoubleFree,
}

impl Bad {
    #[inline]
    pub(crate) fn foreign(ptr: *const u8) -> Self {
        Bad {
            kind: BadKind::Foreign,
            ptr,
        }
    }

    #[inline]
    pub(crate) fn interior(ptr: *const u8) -> Self {
        Bad {
            kind: BadKind::Interior,
            ptr,
        }
    }

    #[inline]
    pub(crate) fn double_free(ptr: *const u8) -> Self {
        Bad {
            kind: BadKind::DoubleFree,
            ptr,
        }
    }

    /// The public error, with the live block around an interior pointer.
    ///
    /// # Safety
    /// The memory `ptr` lies in is as it was when the error was found.
    #[cold]
    pub(crate) unsafe fn describe(self) -> BadPointer {
        let addr = self.ptr.addr();
        match self.kind {
            BadKind::Foreign => BadPointer::Foreign(addr),
            BadKind::DoubleFree => BadPointer::DoubleFree(addr),
            // SAFETY: forwarded.
            BadKind::Interior => unsafe { interior_detail(self.ptr) },
        }
    }
}

impl BadPointer {
    /// The offending pointer's address.
    ///
    /// ```
    /// assert_eq!(keel_heap::BadPointer::DoubleFree(0x40).addr(), 0x40);
    /// ```
    pub fn addr(&self) -> usize {
        match *self {
            BadPointer::Foreign(a) | BadPointer::DoubleFree(a) => a,
            BadPointer::Interior { addr, .. } => addr,
        }
    }

    /// An interior pointer with no live block known around it.
    fn interior(addr: usize) -> Self {
        BadPointer::Interior {
            addr,
            block: 0,
            size: 0,
        }
    }
}

impl core::fmt::Display for BadPointer {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            BadPointer::Foreign(p) => write!(f, "free of {p:#x}, which keel-heap did not allocate"),
            BadPointer::Interior { addr, block, size } if block != 0 => write!(
                f,
                "invalid free of {addr:#x}, inside a {size}-byte block at {block:#x}"
            ),
            BadPointer::Interior { addr, .. } => write!(
                f,
                "invalid free of {addr:#x}, which is not the start of a keel-heap block"
            ),
            BadPointer::DoubleFree(p) => write!(f, "double free of {p:#x}"),
        }
    }
}

impl core::error::Error for BadPointer {}

/// Locates a pointer from its address, reading only state that is stable
/// while the block is live. Returns an error for pointers keel-heap did not
/// hand out (checks shape only; double frees are found by `HeapCore::check_free`).
///
/// # Safety
/// If `ptr` is in a region or direct map, that memory is still mapped (true
/// for every pointer keel-heap handed out and that is not unmapped yet).
pub(crate) unsafe fn locate(ptr: *const u8) -> Result<Loc, Bad> {
    let addr = ptr.addr();
    match chunk_kind(addr) {
        CHUNK_REGION => {
            let r = Region::of(ptr);
            let off = addr & (REGION - 1);
            if off < PAGE {
                return Err(Bad::interior(ptr));
            }
            let slot = off / SLAB;
            // SAFETY: the chunk map says a live region starts at `r`; a
            // slot's magic only changes when the whole slot is free.
            let magic = unsafe { (*r).magics[slot] };
            if magic != 0 {
                if ((off % SLAB) as u32).wrapping_mul(magic) >= magic {
                    return Err(Bad::interior(ptr));
                }
                return Ok(Loc::Small { r, slot });
            }
            let page = off / PAGE;
            // SAFETY: as above; a live block's page-map byte is stable.
            let pm = unsafe { (*r).pagemap[page] };
            if off % PAGE != 0 || pm.kind() == Page::INTERIOR {
                return Err(Bad::interior(ptr));
            }
            match pm.kind() {
                Page::USED => Ok(Loc::Medium { order: pm.order() }),
                _ => Err(Bad::double_free(ptr)),
            }
        }
        CHUNK_DIRECT_HEAD => {
            // The header sits one page before the data. Data at the start of
            // a chunk (alignments of `REGION` and up) has its header in the
            // chunk before, a tail chunk of the same map; a map with a smaller
            // alignment starts at its head chunk, so the page before that
            // chunk is none of its own and may be unmapped: a pointer to the
            // map's first page would read there.
            if addr % REGION == 0 && chunk_kind(addr.wrapping_sub(REGION)) != CHUNK_DIRECT_TAIL {
                return Err(Bad::interior(ptr));
            }
            let h = crate::direct::header_of(ptr);
            // SAFETY: by the check above `h` lies in a mapped chunk of a
            // direct map: one page before a pointer past the head chunk's
            // first page, or in the tail chunk before it. Only the data
            // start's header holds `data == addr` and the magic; any other
            // page-aligned pointer fails the comparison below.
            unsafe {
                if addr % PAGE == 0
                    && (*h).data.addr() == addr
                    && (*h).magic == crate::direct::MAGIC
                {
                    if (*h).pooled {
                        return Err(Bad::double_free(ptr));
                    }
                    Ok(Loc::Direct(h))
                } else {
                    Err(Bad::interior(ptr))
                }
            }
        }
        CHUNK_DIRECT_TAIL => Err(Bad::interior(ptr)),
        _ => Err(Bad::foreign(ptr)),
    }
}

/// The public error for an interior pointer: names the live block it falls
/// in, when there is one.
///
/// # Safety
/// `ptr` lies in keel-heap memory that is still mapped.
#[cold]
unsafe fn interior_detail(ptr: *const u8) -> BadPointer {
    let addr = ptr.addr();
    match chunk_kind(addr) {
        CHUNK_REGION => {
            let r = Region::of(ptr);
            let off = addr & (REGION - 1);
            if off >= PAGE {
                // SAFETY: a live region's header.
                let class1 = unsafe { (*r).classes[off / SLAB] };
                if class1 != 0 {
                    return small_interior(addr, class1 as usize - 1);
                }
                // SAFETY: as above.
                return unsafe { medium_interior(r, addr) };
            }
            BadPointer::interior(addr)
        }
        // SAFETY: the chunk holds part of a live direct map.
        CHUNK_DIRECT_HEAD | CHUNK_DIRECT_TAIL => unsafe { direct_interior(ptr) },
        _ => BadPointer::interior(addr),
    }
}

/// The interior-pointer error for `addr` inside a slab of class `c`: names
/// the object it falls in (live or not: a slab cannot tell without its
/// owner's lists).
#[cold]
fn small_interior(addr: usize, c: usize) -> BadPointer {
    let size = class_size(c);
    let base = addr & !(SLAB - 1);
    BadPointer::Interior {
        addr,
        block: base + (addr - base) / size * size,
        size,
    }
}

/// The interior-pointer error for `addr` inside a page of region `r` that
/// no block starts at: names the used block covering it, if one does.
///
/// # Safety
/// `r` is a live region holding `addr`.
#[cold]
unsafe fn medium_interior(r: *mut Region, addr: usize) -> BadPointer {
    let page = (addr & (REGION - 1)) / PAGE;
    for k in 0..ORDERS {
        let start = page & !((1 << k) - 1);
        // SAFETY: a page index inside the region.
        let pm = unsafe { (*r).pagemap[start] };
        if pm.kind() != Page::INTERIOR && pm.order() as usize >= k {
            if pm.kind() == Page::USED && start + (1usize << pm.order()) > page {
                return BadPointer::Interior {
                    addr,
                    block: Region::page_ptr(r, start).addr(),
                    size: PAGE << pm.order(),
                };
            }
            break;
        }
    }
    BadPointer::interior(addr)
}

/// The interior-pointer error for `addr` in a chunk of a direct map: names
/// the map when `addr` falls inside its data. The data starts in the map's
/// head chunk (found back from a tail chunk through the chunk map), at a
/// page whose previous page holds the header.
///
/// # Safety
/// `ptr`'s chunk is part of a live direct map.
#[cold]
unsafe fn direct_interior(ptr: *const u8) -> BadPointer {
    let addr = ptr.addr();
    let mut head = addr & !(REGION - 1);
    while chunk_kind(head) == CHUNK_DIRECT_TAIL {
        head = head.wrapping_sub(REGION);
    }
    if chunk_kind(head) == CHUNK_DIRECT_HEAD {
        // Candidate data starts, from the page of `addr` (or the head
        // chunk's last page) down to the chunk's start.
        let top = if addr < head + REGION {
            addr & !(PAGE - 1)
        } else {
            head + REGION - PAGE
        };
        let mut data = top;
        loop {
            // The header page is mapped: inside the head chunk, or the
            // tail chunk before it.
            let below = data == head && chunk_kind(head.wrapping_sub(REGION)) != CHUNK_DIRECT_TAIL;
            if !below {
                let h = crate::direct::header_of(ptr.with_addr(data));
                // SAFETY: `h` lies in a mapped page of the map (see above).
                let (magic, d, usable) = unsafe { ((*h).magic, (*h).data.addr(), (*h).usable) };
                if magic == crate::direct::MAGIC && d == data {
                    if addr > data && addr < data + usable {
                        return BadPointer::Interior {
                            addr,
                            block: data,
                            size: usable,
                        };
                    }
                    break;
                }
            }
            if data == head {
                break;
            }
            data -= PAGE;
        }
    }
    BadPointer::interior(addr)
}

/// Usable size of a located block.
///
/// # Safety
/// `loc` came from [`locate`] for a live block.
pub(crate) unsafe fn usable(loc: Loc) -> usize {
    match loc {
        // SAFETY: stable while the block is live (see `locate`).
        Loc::Small { r, slot } => class_size(unsafe { (*r).slabs[slot].class1 } as usize - 1),
        Loc::Medium { order, .. } => PAGE << order,
        // SAFETY: the header of a live direct map.
        Loc::Direct(h) => unsafe { (*h).usable },
    }
}

// ---- the chunk map ----

pub(crate) const CHUNK_NONE: u8 = 0;
pub(crate) const CHUNK_REGION: u8 = 1;
pub(crate) const CHUNK_DIRECT_HEAD: u8 = 2;
pub(crate) const CHUNK_DIRECT_TAIL: u8 = 3;

#[cfg(not(miri))]
mod chunks {
    use crate::sync::plain::{AtomicU64, Ordering};

    /// 48-bit user address space, 2 bits per chunk, 32 chunks per word.
    const CHUNKS: usize = 1 << (48 - crate::REGION_SHIFT);
    const WORDS: usize = CHUNKS / 32;
    static MAP: [AtomicU64; WORDS] = [const { AtomicU64::new(0) }; WORDS];

    #[inline]
    pub(crate) fn get(addr: usize) -> u8 {
        let c = addr >> crate::REGION_SHIFT;
        if c >= CHUNKS {
            return 0;
        }
        ((MAP[c / 32].load(Ordering::Acquire) >> ((c % 32) * 2)) & 3) as u8
    }

    pub(crate) fn set(addr: usize, kind: u8) {
        let c = addr >> crate::REGION_SHIFT;
        if c >= CHUNKS {
            return;
        }
        let shift = (c % 32) * 2;
        let w = &MAP[c / 32];
        w.fetch_and(!(3u64 << shift), Ordering::AcqRel);
        w.fetch_or((kind as u64) << shift, Ordering::AcqRel);
    }

    pub(crate) fn fits(addr: usize, len: usize) -> bool {
        (addr + len) >> crate::REGION_SHIFT <= CHUNKS
    }
}

#[cfg(miri)]
mod chunks {
    //! Miri's addresses are not laid out like a real process's, so a small
    //! table of chunks stands in for the bitmap.
    use crate::sync::Locked;
    const N: usize = 128;
    static TABLE: Locked<[(usize, u8); N]> = Locked::new([(0, 0); N]);

    pub(crate) fn get(addr: usize) -> u8 {
        let c = addr >> crate::REGION_SHIFT;
        TABLE.with(|t| t.iter().find(|e| e.0 == c && e.1 != 0).map_or(0, |e| e.1))
    }

    pub(crate) fn set(addr: usize, kind: u8) {
        let c = addr >> crate::REGION_SHIFT;
        TABLE.with(|t| {
            if let Some(e) = t.iter_mut().find(|e| e.0 == c && e.1 != 0) {
                e.1 = kind;
                if kind == 0 {
                    e.0 = 0;
                }
            } else if kind != 0 {
                if let Some(e) = t.iter_mut().find(|e| e.1 == 0) {
                    *e = (c, kind);
                }
            }
        })
    }

    pub(crate) fn fits(_addr: usize, _len: usize) -> bool {
        true
    }
}

/// The kind of chunk `addr` lies in.
#[inline]
pub(crate) fn chunk_kind(addr: usize) -> u8 {
    chunks::get(addr)
}

/// Marks the chunks of `[addr, addr+len)` (both `REGION`-aligned) as `kind`
/// for the first chunk and `rest` for the others.
pub(crate) fn mark_chunks(addr: usize, len: usize, first: u8, rest: u8) {
    let mut a = addr;
    let mut k = first;
    while a < addr + len {
        chunks::set(a, k);
        k = rest;
        a += REGION;
    }
}

/// Whether the chunk map can describe `[addr, addr+len)`.
pub(crate) fn chunk_map_fits(addr: usize, len: usize) -> bool {
    chunks::fits(addr, len)
}
