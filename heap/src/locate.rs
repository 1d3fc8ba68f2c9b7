//! Where a pointer lies, and why it is not a block: the lookup every free,
//! `usable_size` and check starts from. It reads the chunk map (never the
//! pointer) to tell keel-heap's memory from the rest, then the region
//! header or a direct map's header, reading only state that is stable while
//! a block is live.

use crate::chunk_map::{CHUNK_DIRECT_HEAD, CHUNK_DIRECT_TAIL, CHUNK_REGION, chunk_kind};
use crate::error::BadPointer;
use crate::layout::{PAGE, REGION};
use crate::region::{ORDERS, Page, Region, SLAB};
use crate::size_class::class_size;

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
            if !off.is_multiple_of(PAGE) || pm.kind() == Page::INTERIOR {
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
            if addr.is_multiple_of(REGION)
                && chunk_kind(addr.wrapping_sub(REGION)) != CHUNK_DIRECT_TAIL
            {
                return Err(Bad::interior(ptr));
            }
            let h = crate::direct::header_of(ptr);
            // SAFETY: by the check above `h` lies in a mapped chunk of a
            // direct map: one page before a pointer past the head chunk's
            // first page, or in the tail chunk before it. Only the data
            // start's header holds `data == addr` and the magic; any other
            // page-aligned pointer fails the comparison below.
            unsafe {
                if addr.is_multiple_of(PAGE)
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
        Loc::Direct(h) => unsafe { (*h).lent },
    }
}
