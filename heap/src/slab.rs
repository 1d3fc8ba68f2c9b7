//! Slabs: 64 KiB buddy blocks cut into objects of one small class.
//!
//! A slab's metadata lives in its region's header (`Region::slabs`), so the
//! objects start at the slab's 64 KiB-aligned base and an object of a class
//! whose size is a multiple of `align` is aligned to `align`. Objects are
//! handed out from the slab's free list first, then by bumping an index into
//! never-used space (which stays zero on a fresh slab, so zeroed allocations
//! skip the memset there). A slab with room is on its class's bin list.

use crate::region::{Region, SLAB, SlabFlags, SlabMeta};
use crate::size_class::class_size;
use core::ptr;

/// The base address of the slab described by `m`.
#[inline]
pub(crate) fn base_of(m: *mut SlabMeta) -> *mut u8 {
    let r = Region::of(m.cast());
    let first = core::mem::offset_of!(Region, slabs);
    let slot = (m.addr() - r.addr() - first) / core::mem::size_of::<SlabMeta>();
    r.cast::<u8>().wrapping_add(slot * SLAB)
}

/// Makes the 64 KiB block at `base` a slab of class `c`.
///
/// # Safety
/// `base` is a `PM_USED` block of slab order owned by the caller.
pub(crate) unsafe fn init(base: *mut u8, c: usize, zero: bool) -> *mut SlabMeta {
    let r = Region::of(base);
    let slot = (base.addr() & (crate::layout::REGION - 1)) / SLAB;
    // SAFETY: the region header is ours; the slot's metadata is unused.
    unsafe {
        let magic = (u32::MAX / class_size(c) as u32).wrapping_add(1);
        (*r).classes[slot] = c as u8 + 1;
        (*r).magics[slot] = magic;
        let m: *mut SlabMeta = &raw mut (*r).slabs[slot];
        m.write(SlabMeta {
            free: ptr::null_mut(),
            next: ptr::null_mut(),
            prev: ptr::null_mut(),
            bump: 0,
            used: 0,
            class1: c as u8 + 1,
            flags: if zero {
                SlabFlags::ZERO_TAIL
            } else {
                SlabFlags::empty()
            },
            empty_ms: 0,
            magic,
        });
        m
    }
}

/// Pushes `m` at the front of the list headed by `*head`.
///
/// # Safety
/// `m` is on no list; the list belongs to the caller.
#[inline]
pub(crate) unsafe fn push_front(head: &mut *mut SlabMeta, m: *mut SlabMeta) {
    // SAFETY: list nodes are live slab metadata of the caller's heap.
    unsafe {
        (*m).prev = ptr::null_mut();
        (*m).next = *head;
        if !(*head).is_null() {
            (**head).prev = m;
        }
        (*m).flags.insert(SlabFlags::IN_BIN);
    }
    *head = m;
}

/// Removes `m`, the first slab of the list headed by `*head` (cheaper than
/// [`unlink`]: the allocation fast path only ever unlinks the head).
///
/// # Safety
/// `m == *head`, non-null.
#[inline(always)]
pub(crate) unsafe fn pop_front(head: &mut *mut SlabMeta, m: *mut SlabMeta) {
    debug_assert!(ptr::eq(*head, m) && !m.is_null());
    // SAFETY: list nodes are live slab metadata of the caller's heap; the
    // head has no predecessor.
    unsafe {
        let n = (*m).next;
        if !n.is_null() {
            (*n).prev = ptr::null_mut();
        }
        *head = n;
        (*m).flags.remove(SlabFlags::IN_BIN);
        (*m).next = ptr::null_mut();
    }
}

/// Removes `m` from the list headed by `*head`.
///
/// # Safety
/// `m` is on that list.
#[inline]
pub(crate) unsafe fn unlink(head: &mut *mut SlabMeta, m: *mut SlabMeta) {
    // SAFETY: list nodes are live slab metadata of the caller's heap.
    unsafe {
        let (n, p) = ((*m).next, (*m).prev);
        if !n.is_null() {
            (*n).prev = p;
        }
        if p.is_null() {
            *head = n;
        } else {
            (*p).next = n;
        }
        (*m).flags.remove(SlabFlags::IN_BIN);
        (*m).next = ptr::null_mut();
        (*m).prev = ptr::null_mut();
    }
}

/// Unmakes slab `m` (its block goes back to the buddy lists).
///
/// # Safety
/// `m` is an empty slab of the caller's heap on no list.
#[inline]
pub(crate) unsafe fn clear(m: *mut SlabMeta) {
    let r = Region::of(m.cast());
    let first = core::mem::offset_of!(Region, slabs);
    let slot = (m.addr() - r.addr() - first) / core::mem::size_of::<SlabMeta>();
    // SAFETY: the region header is ours.
    unsafe {
        (*m).class1 = 0;
        (*r).classes[slot] = 0;
        (*r).magics[slot] = 0;
    }
}

/// Moves empty slab `m` from its bin to the heap's list of empty slabs
/// (`*parked`), where any class can take it back or the decay release it.
///
/// # Safety
/// `m` is on the bin headed by `*bin`, empty; the lists belong to the caller.
#[inline]
pub(crate) unsafe fn park(bin: &mut *mut SlabMeta, parked: &mut *mut SlabMeta, m: *mut SlabMeta) {
    // SAFETY: forwarded; the links are reused for the parked list.
    unsafe {
        unlink(bin, m);
        push_front(parked, m);
        (*m).flags.remove(SlabFlags::IN_BIN);
        (*m).flags.insert(SlabFlags::PARKED);
    }
}

/// Takes slab `m` off the list of empty slabs.
///
/// # Safety
/// `m` is on the list headed by `*parked`.
#[inline]
pub(crate) unsafe fn unpark(parked: &mut *mut SlabMeta, m: *mut SlabMeta) {
    // SAFETY: forwarded.
    unsafe {
        unlink(parked, m);
        (*m).flags.remove(SlabFlags::PARKED);
    }
}

/// Whether `p` (an object address of slab `m`) is on the slab's free list or
/// was never handed out: the debug double-free check. O(objects).
///
/// # Safety
/// `m` is a live slab of the caller's heap.
pub(crate) unsafe fn is_free(m: *mut SlabMeta, p: *const u8) -> bool {
    // SAFETY: walking our own slab's free list.
    unsafe {
        if p.addr() - base_of(m).addr() >= (*m).bump as usize {
            return true;
        }
        let mut f = (*m).free;
        while !f.is_null() {
            if f.cast_const() == p {
                return true;
            }
            f = f.cast::<*mut u8>().read();
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use crate::size_class::{CLASSES, class_size};

    /// The slab's 32-bit divisibility magic agrees with the remainder for
    /// every offset inside a slab, in every class.
    #[test]
    fn slab_magic_matches_the_remainder() {
        for c in 0..CLASSES {
            let size = class_size(c);
            let magic = (u32::MAX / size as u32).wrapping_add(1);
            let step = if cfg!(miri) { 97 } else { 1 };
            for off in (0..super::SLAB).step_by(step) {
                let multiple = (off as u32).wrapping_mul(magic) < magic;
                assert_eq!(multiple, off % size == 0, "class {c} offset {off}");
            }
        }
    }
}
