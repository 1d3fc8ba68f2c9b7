//! Slabs: 64 KiB buddy blocks cut into objects of one small class.
//!
//! A slab's metadata lives in its region's header (`Region::slabs`), so the
//! objects start at the slab's 64 KiB-aligned base and an object of a class
//! whose size is a multiple of `align` is aligned to `align`. Objects are
//! handed out from the slab's free list first, then by bumping an index into
//! never-used space (which stays zero on a fresh slab, so zeroed allocations
//! skip the memset there). A slab with room is on its class's bin list.

use crate::region::{Region, SLAB, SlabFlags, SlabMeta};
use crate::size_class::class_magic;
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
        (*r).classes[slot] = c as u8 + 1;
        (*r).magics[slot] = class_magic(c);
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
            limit: 0,
        });
        m
    }
}

// Slab lists (bins and the parked list) are doubly linked through
// `next`/`prev`, null-terminated forwards; the first slab's `prev` is the
// last slab (itself when alone), so a slab can be appended in O(1). Only
// the functions below change the links.

/// Pushes `m` at the front of the list headed by `*head`.
///
/// # Safety
/// `m` is on no list; the list belongs to the caller.
#[inline]
pub(crate) unsafe fn push_front(head: &mut *mut SlabMeta, m: *mut SlabMeta) {
    // SAFETY: list nodes are live slab metadata of the caller's heap.
    unsafe {
        let h = *head;
        if h.is_null() {
            (*m).prev = m;
        } else {
            (*m).prev = (*h).prev;
            (*h).prev = m;
        }
        (*m).next = h;
        (*m).flags.insert(SlabFlags::IN_BIN);
    }
    *head = m;
}

/// Appends `m` to the list headed by `*head`: a slab that gets room back
/// waits behind the ones allocations are using, as mimalloc's page queues
/// do, so allocation stays on one slab until it fills (and meets the
/// blocks freed into it meanwhile) instead of hopping to each slab that
/// gets a free.
///
/// # Safety
/// `m` is on no list; the list belongs to the caller.
#[inline]
pub(crate) unsafe fn push_back(head: &mut *mut SlabMeta, m: *mut SlabMeta) {
    let h = *head;
    if h.is_null() {
        // SAFETY: forwarded.
        return unsafe { push_front(head, m) };
    }
    // SAFETY: list nodes are live slab metadata of the caller's heap; the
    // first slab's `prev` is the last.
    unsafe {
        let t = (*h).prev;
        (*t).next = m;
        (*m).prev = t;
        (*m).next = ptr::null_mut();
        (*h).prev = m;
        (*m).flags.insert(SlabFlags::IN_BIN);
    }
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
    // head's `prev` is the last slab, which the new head inherits.
    unsafe {
        let n = (*m).next;
        if !n.is_null() {
            (*n).prev = (*m).prev;
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
        if ptr::eq(*head, m) {
            // The first slab: the next one inherits the link to the last.
            if !n.is_null() {
                (*n).prev = p;
            }
            *head = n;
        } else {
            (*p).next = n;
            if n.is_null() {
                // The last slab: the first slab's `prev` moves back.
                (**head).prev = p;
            } else {
                (*n).prev = p;
            }
        }
        (*m).flags.remove(SlabFlags::IN_BIN);
        (*m).next = ptr::null_mut();
        (*m).prev = ptr::null_mut();
    }
}

/// Whether the list headed by `head` is linked as the functions above
/// leave it (each slab's `prev` its predecessor, the first slab's the
/// last, at most `limit` slabs): the first slab found out of place, else
/// null. For the heap's validator.
///
/// # Safety
/// The list's slabs are live slab metadata of the caller's heap.
pub(crate) unsafe fn mislinked(head: *mut SlabMeta, limit: usize) -> *mut SlabMeta {
    if head.is_null() {
        return ptr::null_mut();
    }
    // SAFETY: walking live list nodes; the count bounds a cycle.
    unsafe {
        let (mut prev, mut m, mut n) = (head, (*head).next, 1usize);
        while !m.is_null() {
            if !ptr::eq((*m).prev, prev) || n >= limit {
                return m;
            }
            (prev, m, n) = (m, (*m).next, n + 1);
        }
        if ptr::eq((*head).prev, prev) {
            ptr::null_mut()
        } else {
            head
        }
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
        // No slab, no object: the free path's one compare (`off * magic <
        // limit`, magic 0) sends every block of the slot to its medium path.
        (*m).limit = 0;
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
        let key = crate::report::free_key();
        // A list that a double free made a cycle (or a broken link) ends
        // the walk: no list holds more blocks than the slab has objects.
        let mut left = SLAB / 16 + 1;
        let mut f = (*m).free;
        while !f.is_null() && left > 0 {
            if f.cast_const() == p {
                return true;
            }
            match crate::free::link_target(f, f.cast::<usize>().read(), key) {
                Some(next) => f = next,
                None => break,
            }
            left -= 1;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::{mislinked, pop_front, push_back, push_front, unlink};
    use crate::region::{SlabFlags, SlabMeta};
    use crate::size_class::{CLASSES, class_excess, class_magic, class_size};
    use core::ptr;
    use std::vec::Vec;

    /// The slab list's links against a model (a `Vec`): every push, pop and
    /// unlink leaves the order the model has and the first slab's `prev`
    /// on the last.
    #[test]
    fn slab_list_links_match_a_model() {
        let mut slabs: Vec<SlabMeta> = (0..6)
            .map(|_| SlabMeta {
                free: ptr::null_mut(),
                next: ptr::null_mut(),
                prev: ptr::null_mut(),
                bump: 0,
                used: 0,
                class1: 1,
                flags: SlabFlags::empty(),
                empty_ms: 0,
                limit: 0,
            })
            .collect();
        let base = slabs.as_mut_ptr();
        let at = |i: usize| base.wrapping_add(i);
        let mut head: *mut SlabMeta = ptr::null_mut();
        let mut model: Vec<usize> = Vec::new();
        let mut r = 0x9E37_79B9_7F4A_7C15u64;
        let steps = if cfg!(miri) { 60 } else { 2000 };
        for _ in 0..steps {
            r ^= r << 13;
            r ^= r >> 7;
            r ^= r << 17;
            let i = (r % 6) as usize;
            // SAFETY: every node is a live element of `slabs`, on the list
            // exactly when the model holds its index.
            unsafe {
                if let Some(k) = model.iter().position(|&x| x == i) {
                    if k == 0 && r & 64 != 0 {
                        pop_front(&mut head, at(i));
                    } else {
                        unlink(&mut head, at(i));
                    }
                    model.remove(k);
                } else if r & 128 != 0 {
                    push_back(&mut head, at(i));
                    model.push(i);
                } else {
                    push_front(&mut head, at(i));
                    model.insert(0, i);
                }
                assert!(mislinked(head, 8).is_null());
                let mut seen = Vec::new();
                let mut m = head;
                while !m.is_null() {
                    seen.push(m.offset_from(base) as usize);
                    m = (*m).next;
                }
                assert_eq!(seen, model);
            }
        }
    }

    /// The slab's 32-bit divisibility magic agrees with the remainder for
    /// every offset inside a slab, in every class.
    #[test]
    fn slab_magic_matches_the_remainder() {
        for c in 0..CLASSES {
            let size = class_size(c);
            let (magic, excess) = (class_magic(c), class_excess(c));
            let cap = super::SLAB / size;
            // Under Miri, fewer offsets and limits: as many products as the
            // remainder-only check took there before.
            let step = if cfg!(miri) { 389 } else { 1 };
            let ks: &[usize] = if cfg!(miri) {
                &[1, cap]
            } else {
                &[0, 1, 2, cap / 2, cap - 1, cap]
            };
            for off in (0..super::SLAB).step_by(step) {
                let product = (off as u32).wrapping_mul(magic);
                assert_eq!(product < magic, off % size == 0, "class {c} offset {off}");
                // The free check against a slab that handed out `k` objects
                // by bumping: its limit is `k * excess`.
                for &k in ks {
                    let handed_out = off % size == 0 && off / size < k;
                    assert_eq!(
                        product < k as u32 * excess,
                        handed_out,
                        "class {c} offset {off} after {k} objects"
                    );
                }
            }
        }
    }
}
