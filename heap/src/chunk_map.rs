//! The chunk map: for every `REGION`-sized chunk of the address space,
//! whether it is a region, the chunk holding a direct map's start, or
//! another chunk of a direct map. It answers `owns(ptr)` without touching
//! the pointer, so foreign pointers are rejected safely. A leaf: it knows
//! chunks, not what is in them.

use crate::layout::REGION;

pub(crate) const CHUNK_NONE: u8 = 0;
pub(crate) const CHUNK_REGION: u8 = 1;
pub(crate) const CHUNK_DIRECT_HEAD: u8 = 2;
pub(crate) const CHUNK_DIRECT_TAIL: u8 = 3;

#[cfg(not(miri))]
mod chunks {
    use crate::sync::plain::{AtomicU8, Ordering};

    /// The 47-bit user address space x86-64 Linux hands out without an
    /// explicit hint above it (and aarch64's 48-bit one halved), one byte
    /// per 4 MiB chunk: 32 MiB of zero pages in `.bss`, touched only where
    /// chunks are marked (one 4 KiB page per 16 GiB of address space). A
    /// byte, not a packed 2-bit field, because every free reads it: one
    /// load and a compare, no shift and mask. Memory above the covered
    /// range is never marked (`fits` refuses it), so a pointer there reads
    /// as none of ours.
    const CHUNKS: usize = 1 << (47 - crate::layout::REGION_SHIFT);
    static MAP: [AtomicU8; CHUNKS] = [const { AtomicU8::new(0) }; CHUNKS];

    #[inline(always)]
    pub(crate) fn get(addr: usize) -> u8 {
        let c = opaque(addr >> crate::layout::REGION_SHIFT);
        if c >= CHUNKS {
            return 0;
        }
        MAP[c].load(Ordering::Acquire)
    }

    /// `c`, through an empty `asm!` on x86-64 that LLVM cannot see into,
    /// so the range test stays one compare of the chunk index the lookup
    /// computes anyway (two instructions). Seen through, `c >= CHUNKS`
    /// becomes `addr >> 47 != 0`, a second shift of a second copy of the
    /// address (three).
    #[inline(always)]
    fn opaque(c: usize) -> usize {
        #[cfg(target_arch = "x86_64")]
        let c = {
            let mut c = c;
            // SAFETY: an empty template: no instruction, no memory, no flags.
            unsafe {
                core::arch::asm!("/* {c} */", c = inout(reg) c, options(pure, nomem, nostack, preserves_flags));
            }
            c
        };
        c
    }

    pub(crate) fn set(addr: usize, kind: u8) {
        let c = addr >> crate::layout::REGION_SHIFT;
        if c >= CHUNKS {
            return;
        }
        MAP[c].store(kind, Ordering::Release);
    }

    pub(crate) fn fits(addr: usize, len: usize) -> bool {
        (addr + len) >> crate::layout::REGION_SHIFT <= CHUNKS
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
        let c = addr >> crate::layout::REGION_SHIFT;
        TABLE.with(|t| t.iter().find(|e| e.0 == c && e.1 != 0).map_or(0, |e| e.1))
    }

    pub(crate) fn set(addr: usize, kind: u8) {
        let c = addr >> crate::layout::REGION_SHIFT;
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
#[inline(always)]
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
