//! The heap checker: walks a heap's regions, free lists, cache and slabs
//! and checks the invariants stated in `buddy.rs` and `slab.rs`.

use crate::buddy::{BlockFlags, FreeBlock};
use crate::error::InvalidHeap;
use crate::heap::HeapCore;
use crate::region::{ORDERS, PAGES, Page, Region, SLAB, SLAB_ORDER, SLABS};
use crate::size_class::{CLASSES, class_size};
use crate::slab;

fn fail<T>(what: &'static str, addr: usize) -> Result<T, InvalidHeap> {
    Err(InvalidHeap { what, addr })
}

/// Checks every invariant of `h`.
///
/// # Safety
/// The caller owns `h`.
pub(crate) unsafe fn check(h: &HeapCore) -> Result<(), InvalidHeap> {
    // SAFETY: owner-only state; all pointers followed are our own blocks.
    unsafe {
        let l = h.local();
        let mut free_counts = [0usize; ORDERS];
        let mut cached_counts = [0usize; ORDERS];
        let mut free_bytes = 0usize;
        let mut r = l.regions;
        while !r.is_null() {
            if !core::ptr::eq(HeapCore::owner_of(r), h) {
                return fail("region owned by another heap", r.addr());
            }
            if (*r).pagemap[0] != Page::USED {
                return fail("region header page not marked used", r.addr());
            }
            let mut p = 1usize;
            while p < PAGES {
                let pm = (*r).pagemap[p];
                let k = pm.kind();
                let o = pm.order() as usize;
                let at = Region::page_ptr(r, p).addr();
                if k == Page::INTERIOR
                    || o >= ORDERS
                    || !p.is_multiple_of(1 << o)
                    || p + (1 << o) > PAGES
                {
                    return fail("page map has no well-formed block start here", at);
                }
                for q in p + 1..p + (1 << o) {
                    if (*r).pagemap[q] != Page::INTERIOR {
                        return fail(
                            "page inside a block is marked as a block start",
                            Region::page_ptr(r, q).addr(),
                        );
                    }
                }
                if k == Page::FREE {
                    free_counts[o] += 1;
                    free_bytes += crate::layout::PAGE << o;
                    let bp = p ^ (1 << o);
                    if o + 1 < ORDERS && (*r).pagemap[bp] == pm {
                        return fail("two free buddies were not merged", at);
                    }
                    let b: *mut FreeBlock = Region::page_ptr(r, p).cast();
                    if (*b).order as usize != o {
                        return fail("free block's order disagrees with the page map", at);
                    }
                } else if k == Page::CACHED {
                    cached_counts[o] += 1;
                    free_bytes += crate::layout::PAGE << o;
                }
                p += 1 << o;
            }
            for s in 0..SLABS {
                let m = &raw mut (*r).slabs[s];
                if (*r).classes[s] != (*m).class1
                    || (*r).magics[s]
                        != if (*m).class1 == 0 {
                            0
                        } else {
                            crate::size_class::class_magic(((*m).class1 - 1) as usize % CLASSES)
                        }
                {
                    return fail(
                        "slot's class copy disagrees with its slab",
                        r.addr() + s * SLAB,
                    );
                }
                if (*m).class1 == 0 {
                    if (*m).limit != 0 {
                        // The free path would take a medium block here for a
                        // small one.
                        return fail(
                            "slot that is no slab has a free-check limit",
                            r.addr() + s * SLAB,
                        );
                    }
                    continue;
                }
                let base = slab::base_of(m);
                if (*r).pagemap[s * (SLAB / crate::layout::PAGE)]
                    != Page::block(Page::USED, SLAB_ORDER)
                {
                    return fail(
                        "slab's block is not a used block of slab order",
                        base.addr(),
                    );
                }
                let c = (*m).class1 as usize - 1;
                let cap = SLAB / class_size(c);
                if c >= CLASSES
                    || !((*m).bump as usize).is_multiple_of(class_size(c))
                    || (*m).bump as usize > cap * class_size(c)
                {
                    return fail("slab has a bad class or bump offset", base.addr());
                }
                let bumped = (*m).bump as usize / class_size(c);
                if (*m).limit as usize != bumped * crate::size_class::class_excess(c) as usize {
                    return fail(
                        "slab's free-check limit disagrees with its bump offset",
                        base.addr(),
                    );
                }
                let mut nfree = 0usize;
                let mut f = (*m).free;
                while !f.is_null() {
                    let off = f.addr().wrapping_sub(base.addr());
                    if off >= SLAB
                        || !off.is_multiple_of(class_size(c))
                        || off >= (*m).bump as usize
                    {
                        return fail(
                            "slab free list points outside its handed-out objects",
                            f.addr(),
                        );
                    }
                    let Some(next) = crate::free::link_target(
                        f,
                        f.cast::<usize>().read(),
                        crate::report::free_key(),
                    ) else {
                        return fail(
                            "free object lost its free mark (written after it was freed?)",
                            f.addr(),
                        );
                    };
                    nfree += 1;
                    if nfree > cap {
                        return fail("slab free list has a cycle", base.addr());
                    }
                    f = next;
                }
                if (*m).used as usize + nfree != bumped {
                    return fail(
                        "slab counts disagree (used + free != handed out)",
                        base.addr(),
                    );
                }
                if (*m).parked() && ((*m).used != 0 || (*m).in_bin()) {
                    return fail("parked slab in use or on a bin", base.addr());
                }
                let room = !(*m).free.is_null() || bumped < cap;
                if room != ((*m).in_bin() || (*m).parked()) {
                    return fail(
                        "slab with room not on its bin (or full slab on it)",
                        base.addr(),
                    );
                }
            }
            r = (*r).next;
        }
        for (o, &want) in free_counts.iter().enumerate() {
            let mut n = 0usize;
            let mut prev: *mut FreeBlock = core::ptr::null_mut();
            let mut b = l.buddy.free[o];
            let mut released = false;
            while !b.is_null() {
                let pm = (*Region::of(b.cast())).pagemap[Region::page_of(b.cast())];
                if pm != Page::block(Page::FREE, o as u8) || (*b).prev != prev {
                    return fail("free list node is not a free block of its order", b.addr());
                }
                let r = (*b).flags.contains(BlockFlags::RELEASED);
                if released && !r {
                    return fail("resident free block behind a released one", b.addr());
                }
                released = r;
                n += 1;
                if n > want {
                    return fail("free list longer than the free blocks in regions", b.addr());
                }
                prev = b;
                b = (*b).next;
            }
            if n != want {
                return fail("free block missing from its free list", o);
            }
            if l.buddy.tail[o] != prev {
                return fail("free list tail is not its last block", o);
            }
            let mut n = 0usize;
            let mut b = l.buddy.cache[o];
            while !b.is_null() {
                let pm = (*Region::of(b.cast())).pagemap[Region::page_of(b.cast())];
                if pm != Page::block(Page::CACHED, o as u8) {
                    return fail("cache node is not a cached block of its order", b.addr());
                }
                n += 1;
                if n > cached_counts[o] {
                    return fail("cache list longer than the cached blocks", b.addr());
                }
                b = (*b).next;
            }
            if n != cached_counts[o] {
                return fail("cached block missing from the cache", o);
            }
        }
        if free_bytes != l.buddy.free_bytes {
            return fail("free byte count disagrees with the free blocks", free_bytes);
        }
        let mut m = l.parked;
        let mut n = 0usize;
        while !m.is_null() {
            if !(*m).parked() || (*m).class1 == 0 {
                return fail("empty-slab list holds a slab not parked", m.addr());
            }
            n += 1;
            if n > 1 << 24 {
                return fail("empty-slab list has a cycle", m.addr());
            }
            m = (*m).next;
        }
        let bad = crate::slab::mislinked(l.parked, n + 1);
        if !bad.is_null() {
            return fail("empty-slab list's back links are broken", bad.addr());
        }
        for c in 0..CLASSES {
            let mut m = l.bins[c];
            let mut n = 0usize;
            while !m.is_null() {
                if !(*m).in_bin() || (*m).class1 as usize != c + 1 {
                    return fail(
                        "bin holds a slab of another class or not marked in a bin",
                        m.addr(),
                    );
                }
                n += 1;
                if n > 1 << 24 {
                    return fail("bin list has a cycle", m.addr());
                }
                m = (*m).next;
            }
            let bad = crate::slab::mislinked(l.bins[c], n + 1);
            if !bad.is_null() {
                return fail("bin list's back links are broken", bad.addr());
            }
        }
        Ok(())
    }
}
