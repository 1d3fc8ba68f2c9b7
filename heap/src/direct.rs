//! Oversized blocks: direct maps, page-rounded, with a reuse pool.
//!
//! Every direct map is `REGION`-aligned and a whole number of chunks long, so
//! it shares no chunk of the address space with anything else and the chunk
//! map can say "this is ours" without touching memory. The header sits in the
//! page just before the data, so any alignment works. Freed maps go to one
//! process-wide pool (a rare, expensive path, so one lock is fine and frees
//! from any thread land in the same place) and reused: kernel zeroing of fresh
//! pages on every large allocation is a measured cost.
//!
//! The policy keeps the pool's resident bytes close to the live peak:
//!
//! - a request takes the smallest pooled map that holds it, whatever its
//!   size: handing a resident map out costs no more memory than keeping it
//!   pooled. Only when the excess over the request is both more than the
//!   request and more than a quarter of the budget are the excess pages
//!   released, so one huge map cannot pin memory behind a small buffer.
//!   A smaller excess that is still more than the request stays resident
//!   but is only lent: the block's usable size is the request, and the map
//!   goes on the pool's slack list; a fresh map (a request the pool
//!   cannot serve) first releases as many bytes of slack tails as it asks,
//!   so a program that frees a 30 MiB buffer and then asks for five 6 MiB
//!   ones holds about 30 MiB, not the old map's pages plus four new maps,
//!   while a program whose requests the pool keeps serving never faults on
//!   them (releasing only what the fresh map asks keeps the rest of a tail
//!   for the map's next large request);
//! - when no pooled map is large enough, the largest one is grown in place
//!   of a fresh map (`mremap` moves its resident pages to an aligned range
//!   and only the new tail faults), so the pool holds about as many maps as
//!   the program keeps live at once instead of one per size it ever asked;
//! - the pool never holds more than `pool_budget` bytes: a free past it
//!   unmaps the oldest entries at once; a map whose reservation (with its
//!   alignment padding) alone exceeds the budget is unmapped at its free,
//!   and a full release (`release_pages`, and the retry of a failed
//!   allocation) unmaps the whole pool;
//! - a pooled map that stays unused for `decay_ms` has its pages released
//!   (idle decay: any heap's slow path runs the pool's pass once it is due,
//!   and on Linux the decay thread in `pool.rs` does when no slow path
//!   comes, as in a program that stopped allocating).

use crate::chunk_map::{
    CHUNK_DIRECT_HEAD, CHUNK_DIRECT_TAIL, CHUNK_NONE, chunk_map_fits, mark_chunks,
};
use crate::decay::{self, NEVER};
use crate::layout::{PAGE, REGION};
use crate::os;
use crate::stats::global;
use crate::sync::Locked;
use crate::sync::plain::{AtomicU64, Ordering};
use core::ptr;

pub(crate) const MAGIC: usize = 0x6b65_656c_4449_5231; // "keelDIR1"

/// The header one page before a direct map's data.
#[repr(C)]
pub(crate) struct DirectHeader {
    pub(crate) magic: usize,
    base: *mut u8,
    map_len: usize,
    map_align: usize,
    pub(crate) data: *mut u8,
    pub(crate) usable: usize,
    /// The bytes the block's owner may use (`usable`, or the request when
    /// the map is on the slack list, whose tail beyond may be released).
    pub(crate) lent: usize,
    /// On the slack list: the tail up to this many bytes past `data` may
    /// still be resident.
    resident: usize,
    pub(crate) next: *mut DirectHeader,
    /// Global GC epoch when it entered the pool.
    pub(crate) since: u64,
    /// The coarse clock (ms, wrapping) when it entered the pool.
    pub(crate) since_ms: u32,
    pub(crate) zero: bool,
    pub(crate) released: bool,
    pub(crate) pooled: bool,
    /// On [`Pool::slack`] (read and written under the pool lock).
    slack: bool,
}

pub(crate) struct Pool {
    pub(crate) head: *mut DirectHeader,
    /// Live maps lent with a resident tail beyond their request, linked
    /// by `next`.
    slack: *mut DirectHeader,
    pub(crate) bytes: usize,
    /// Idle decay: when the next pass is due, and when the last one ran.
    pub(crate) due: u64,
    pub(crate) last: u64,
}

/// [`Pool::due`], readable without the lock.
pub(crate) static POOL_DUE: AtomicU64 = AtomicU64::new(NEVER);

// SAFETY: the pool's pointers are only followed under its lock.
unsafe impl Send for Pool {}

pub(crate) static POOL: Locked<Pool> = Locked::new(Pool {
    head: ptr::null_mut(),
    slack: ptr::null_mut(),
    bytes: 0,
    due: NEVER,
    last: 0,
});

/// Takes the pool's lock for `fork` (see [`Locked::hold`]).
#[cfg_attr(not(feature = "std"), allow(dead_code))]
pub(crate) fn hold_pool() {
    POOL.hold();
}

/// Releases the lock [`hold_pool`] took.
///
/// # Safety
/// As [`Locked::release_held`].
#[cfg_attr(not(feature = "std"), allow(dead_code))]
pub(crate) unsafe fn release_pool() {
    // SAFETY: forwarded.
    unsafe { POOL.release_held() }
}

/// The header of the direct map whose data starts at `data`.
#[inline]
pub(crate) fn header_of(data: *const u8) -> *mut DirectHeader {
    data.wrapping_sub(PAGE).cast_mut().cast()
}

fn round_up(x: usize, to: usize) -> Option<usize> {
    Some(x.checked_add(to - 1)? & !(to - 1))
}

/// Allocates `size` bytes aligned to `align` (a power of two). Returns the
/// data pointer and whether it reads as zero, or `None` when out of memory.
pub(crate) fn alloc(size: usize, align: usize) -> Option<(*mut u8, bool)> {
    let pages = round_up(size.max(1), PAGE)?;
    let off = align.max(PAGE);
    if pages > isize::MAX as usize / 2 || off > isize::MAX as usize / 2 {
        return None;
    }
    let got = match POOL.with(|p| take_fit(p, pages, align)) {
        // SAFETY: the entry was just unlinked; it is ours.
        Fit::Hit(h) => Some(unsafe { hand_out(h, pages) }),
        // SAFETY: unlinked, and `take_fit` checked its offset (syscalls run
        // outside the pool lock).
        Fit::Grow(h) => unsafe { grow(h, pages, align) },
        Fit::Miss => {
            release_slack(pages);
            None
        }
    };
    if let Some((data, usable, zero)) = got {
        global().direct_in_use.fetch_add(usable, Ordering::Relaxed);
        return Some((data, zero));
    }
    let map_len = round_up(off.checked_add(pages)?, REGION)?;
    // Aligning the base to `align` too makes `base + align` aligned. The
    // chunks of alignment padding before the one holding the header page
    // are reserved, not committed (whole chunks: the chunk map calls any
    // pointer into them interior without reading there).
    let map_align = REGION.max(align);
    let base = os::map_from(map_len, map_align, (off - PAGE) & !(REGION - 1));
    if base.is_null() {
        return None;
    }
    if !chunk_map_fits(base.addr(), map_len) {
        // SAFETY: we just mapped it.
        unsafe { os::unmap(base, map_len, map_align) };
        return None;
    }
    // SAFETY: `off < map_len`, so data and the header page are in the mapping.
    let data = unsafe { base.add(off) };
    let h = header_of(data);
    // SAFETY: the header page is ours and unused.
    unsafe {
        h.write(DirectHeader {
            magic: MAGIC,
            base,
            map_len,
            map_align,
            data,
            usable: map_len - off,
            lent: map_len - off,
            resident: 0,
            next: ptr::null_mut(),
            since: 0,
            since_ms: 0,
            zero: true,
            released: false,
            pooled: false,
            slack: false,
        });
    }
    mark_chunks(base.addr(), map_len, CHUNK_DIRECT_TAIL, CHUNK_DIRECT_TAIL);
    mark_chunks(
        data.addr() & !(REGION - 1),
        REGION,
        CHUNK_DIRECT_HEAD,
        CHUNK_DIRECT_HEAD,
    );
    let g = global();
    g.mapped.fetch_add(map_len as u64, Ordering::Relaxed);
    g.direct_maps.fetch_add(1, Ordering::Relaxed);
    g.direct_in_use.fetch_add(map_len - off, Ordering::Relaxed);
    Some((data, true))
}

/// What the pool offers for a request.
enum Fit {
    /// A map that holds the request, unlinked from the pool.
    Hit(*mut DirectHeader),
    /// The largest map with a usable alignment, unlinked, to grow.
    Grow(*mut DirectHeader),
    Miss,
}

/// Whether the map of `h` can serve alignment `align` after a move to a base
/// aligned to `REGION.max(align)`.
///
/// # Safety
/// `h` is a live header.
unsafe fn offset_fits(h: *const DirectHeader, align: usize) -> bool {
    // SAFETY: the caller passes a live header.
    unsafe { ((*h).data.addr() - (*h).base.addr()).is_multiple_of(align) }
}

fn take_fit(p: &mut Pool, pages: usize, align: usize) -> Fit {
    let mut best: *mut DirectHeader = ptr::null_mut();
    let mut best_prev: *mut DirectHeader = ptr::null_mut();
    let mut big: *mut DirectHeader = ptr::null_mut();
    let mut big_prev: *mut DirectHeader = ptr::null_mut();
    let mut prev: *mut DirectHeader = ptr::null_mut();
    let mut cur = p.head;
    // SAFETY: pool entries are live headers, followed under the pool lock.
    unsafe {
        while !cur.is_null() {
            let u = (*cur).usable;
            if u >= pages {
                if (*cur).data.addr().is_multiple_of(align)
                    && (best.is_null() || u < (*best).usable)
                {
                    best = cur;
                    best_prev = prev;
                }
            } else if offset_fits(cur, align)
                && (*cur).data.addr() - (*cur).base.addr() == PAGE
                && (big.is_null() || u > (*big).usable)
            {
                // (Only a map with no reserved padding is one mapping that
                // `mremap` can move.)
                big = cur;
                big_prev = prev;
            }
            prev = cur;
            cur = (*cur).next;
        }
        let (h, h_prev, fit) = if !best.is_null() {
            (best, best_prev, Fit::Hit(best))
        } else if !big.is_null() && os::CAN_GROW {
            (big, big_prev, Fit::Grow(big))
        } else {
            return Fit::Miss;
        };
        if h_prev.is_null() {
            p.head = (*h).next;
        } else {
            (*h_prev).next = (*h).next;
        }
        p.bytes -= (*h).usable;
        (*h).pooled = false;
        (*h).next = ptr::null_mut();
        (*h).lent = (*h).usable;
        if let Fit::Hit(_) = fit {
            let excess = (*h).usable - pages;
            if !(*h).released && excess > pages && !releases_at_once(excess, pages) {
                (*h).lent = pages;
                (*h).resident = (*h).usable;
                (*h).slack = true;
                (*h).next = p.slack;
                p.slack = h;
            }
        }
        fit
    }
}

/// Hands out a pooled map that holds `pages`: releases an excess the module
/// doc calls too large, and returns (data, usable, reads as zero).
///
/// # Safety
/// `h` is a live header just unlinked from the pool.
unsafe fn hand_out(h: *mut DirectHeader, pages: usize) -> (*mut u8, usize, bool) {
    // SAFETY: the caller owns the unlinked header.
    unsafe {
        let (data, usable) = ((*h).data, (*h).usable);
        let excess = usable - pages;
        if !(*h).released && releases_at_once(excess, pages) {
            // `pages` and `usable` are page multiples, so the tail is whole pages.
            if os::release(data.add(pages), excess) {
                let g = global();
                g.released.fetch_add(excess as u64, Ordering::Relaxed);
                g.madvise_calls.fetch_add(1, Ordering::Relaxed);
            }
        }
        let zero = (*h).zero;
        (*h).zero = false;
        (*h).released = false;
        (data, usable, zero)
    }
}

/// Whether a hand-out releases the excess beyond the request right away.
fn releases_at_once(excess: usize, pages: usize) -> bool {
    excess > pages && excess > crate::options::options().pool_budget / 4
}

/// Before a fresh map of `need` bytes: releases as much of the slack
/// tails, from their ends, so resident memory stays flat while a map the
/// pool serves again next keeps most of its pages (under the lock, so none
/// is freed and handed out again meanwhile). A block's usable size stays
/// its request.
fn release_slack(need: usize) {
    let (bytes, calls) = POOL.with(|p| {
        let (mut bytes, mut calls) = (0u64, 0u64);
        let mut left = need;
        let mut link: *mut *mut DirectHeader = &mut p.slack;
        // SAFETY: slack entries are live maps whose owner uses only their
        // first `lent` bytes (page multiples, as `resident` and `need`),
        // followed under the pool lock.
        unsafe {
            while left != 0 && !(*link).is_null() {
                let cur = *link;
                let (lent, end) = ((*cur).lent, (*cur).resident);
                let from = end.saturating_sub(left).max(lent);
                calls += 1;
                if os::release((*cur).data.add(from), end - from) {
                    bytes += (end - from) as u64;
                }
                left -= end - from;
                (*cur).resident = from;
                if from == lent {
                    *link = (*cur).next;
                    (*cur).slack = false;
                    (*cur).next = ptr::null_mut();
                } else {
                    link = &mut (*cur).next;
                }
            }
        }
        (bytes, calls)
    });
    if calls != 0 {
        let g = global();
        g.released.fetch_add(bytes, Ordering::Relaxed);
        g.madvise_calls.fetch_add(calls, Ordering::Relaxed);
    }
}

/// Unlinks `h` from the slack list if it is there.
///
/// # Safety
/// `h` is a live header; called under the pool lock.
unsafe fn unlink_slack(p: &mut Pool, h: *mut DirectHeader) {
    // SAFETY: `slack` is only touched under the pool lock; entries are live.
    unsafe {
        if !(*h).slack {
            return;
        }
        (*h).slack = false;
        let mut link: *mut *mut DirectHeader = &mut p.slack;
        while *link != h {
            link = &mut (**link).next;
        }
        *link = (*h).next;
        (*h).next = ptr::null_mut();
    }
}

/// Grows the unlinked pooled map `h` so it holds `pages` at alignment
/// `align`, keeping its resident pages. `None` (with `h` back in the pool)
/// when the OS refuses.
///
/// # Safety
/// `h` is a live header just unlinked from the pool, with `offset_fits`.
unsafe fn grow(h: *mut DirectHeader, pages: usize, align: usize) -> Option<(*mut u8, usize, bool)> {
    // SAFETY: the caller owns the unlinked header; its fields are valid.
    let (base, old_len, off, zero) = unsafe {
        (
            (*h).base,
            (*h).map_len,
            (*h).data.addr() - (*h).base.addr(),
            (*h).zero,
        )
    };
    let new_len = round_up(off.checked_add(pages)?, REGION)?;
    let map_align = REGION.max(align);
    // Clear the old range's marks first: once the pages move, nothing may
    // find a header there.
    mark_chunks(base.addr(), old_len, CHUNK_NONE, CHUNK_NONE);
    // SAFETY: `base`/`old_len` is a whole map of ours that nobody uses.
    let nb = unsafe { os::grow(base, old_len, new_len, map_align) };
    if nb.is_null() {
        mark_chunks(base.addr(), old_len, CHUNK_DIRECT_TAIL, CHUNK_DIRECT_TAIL);
        mark_chunks(
            (base.addr() + off) & !(REGION - 1),
            REGION,
            CHUNK_DIRECT_HEAD,
            CHUNK_DIRECT_HEAD,
        );
        // SAFETY: still a live, unlinked header.
        unsafe { repool(h) };
        return None;
    }
    if !chunk_map_fits(nb.addr(), new_len) {
        // SAFETY: the new mapping is ours and holds nothing.
        unsafe { os::unmap(nb, new_len, map_align) };
        global().mapped.fetch_sub(old_len as u64, Ordering::Relaxed);
        global().direct_maps.fetch_sub(1, Ordering::Relaxed);
        return None;
    }
    // SAFETY: `off < new_len`; the header page moved with the old pages.
    let data = unsafe { nb.add(off) };
    let nh = header_of(data);
    // SAFETY: the moved header page is ours.
    unsafe {
        (*nh).base = nb;
        (*nh).map_len = new_len;
        (*nh).map_align = map_align;
        (*nh).data = data;
        (*nh).usable = new_len - off;
        (*nh).lent = new_len - off;
        (*nh).zero = false;
        (*nh).released = false;
    }
    mark_chunks(nb.addr(), new_len, CHUNK_DIRECT_TAIL, CHUNK_DIRECT_TAIL);
    mark_chunks(
        data.addr() & !(REGION - 1),
        REGION,
        CHUNK_DIRECT_HEAD,
        CHUNK_DIRECT_HEAD,
    );
    global()
        .mapped
        .fetch_add((new_len - old_len) as u64, Ordering::Relaxed);
    // The moved part reads as zero only if it was released; the new tail is fresh.
    Some((data, new_len - off, zero))
}

/// Puts an unlinked header back at the pool's head.
///
/// # Safety
/// `h` is a live header reachable from nowhere.
unsafe fn repool(h: *mut DirectHeader) {
    POOL.with(|p| {
        // SAFETY: we own the header until it is on the list.
        unsafe {
            (*h).pooled = true;
            (*h).next = p.head;
            p.bytes += (*h).usable;
        }
        p.head = h;
    });
}

/// Frees a direct map into the pool, or unmaps it if its reservation alone
/// exceeds the budget (a pooled map keeps its whole reservation, alignment
/// padding included: a freed block aligned to 1 TiB would hold a TiB of
/// address space).
///
/// # Safety
/// `h` is the header of a live direct map, not used after this call.
pub(crate) unsafe fn free(h: *mut DirectHeader) {
    let budget = crate::options::options().pool_budget;
    // SAFETY: the caller hands over a live header.
    let (usable, reserved) = unsafe { ((*h).usable, (*h).map_len) };
    global().direct_in_use.fetch_sub(usable, Ordering::Relaxed);
    if reserved > budget {
        // SAFETY: live and unpooled; unlinked from the slack list first.
        unsafe {
            POOL.with(|p| unlink_slack(p, h));
            unmap(h);
        }
        return;
    }
    let epoch = global().gc_epoch.load(Ordering::Relaxed);
    let now = os::now_ms();
    let decay = crate::options::options_decay_ms();
    let mut woke = false;
    let victims = POOL.with(|p| {
        if p.due == NEVER && decay != 0 {
            p.due = (now + decay::decay_age(decay)).max(p.last + decay::pool_step(decay));
            POOL_DUE.store(p.due, Ordering::Relaxed);
            woke = true;
        }
        // SAFETY: we own the header until it is on the list.
        unsafe {
            unlink_slack(p, h);
            (*h).pooled = true;
            (*h).since = epoch;
            (*h).since_ms = now as u32;
            (*h).zero = false;
            (*h).released = false;
            (*h).next = p.head;
        }
        p.head = h;
        p.bytes += usable;
        if p.bytes > budget {
            split_beyond(p, budget)
        } else {
            ptr::null_mut()
        }
    });
    // SAFETY: victims were unlinked from the pool under the lock.
    unsafe { unmap_chain(victims) };
    if decay != 0 && crate::options::decay_thread_on() {
        crate::pool::thread::ensure_started();
        if woke {
            crate::pool::thread::wake();
        }
    }
}

/// Unlinks the oldest entries beyond `budget` bytes and returns them.
pub(crate) fn split_beyond(p: &mut Pool, budget: usize) -> *mut DirectHeader {
    let mut kept = 0usize;
    let mut prev: *mut DirectHeader = ptr::null_mut();
    let mut cur = p.head;
    // SAFETY: pool entries are live headers, followed under the pool lock.
    unsafe {
        // Newest first: keep a prefix within the budget.
        while !cur.is_null() && kept + (*cur).usable <= budget {
            kept += (*cur).usable;
            prev = cur;
            cur = (*cur).next;
        }
        if prev.is_null() {
            p.head = ptr::null_mut();
        } else {
            (*prev).next = ptr::null_mut();
        }
    }
    p.bytes = kept;
    cur
}

/// # Safety
/// `chain` is a list of pool headers no longer reachable from the pool.
pub(crate) unsafe fn unmap_chain(mut chain: *mut DirectHeader) {
    while !chain.is_null() {
        // SAFETY: read the link before the mapping goes away.
        unsafe {
            let next = (*chain).next;
            unmap(chain);
            chain = next;
        }
    }
}

/// # Safety
/// `h` is a live header reachable from nowhere.
unsafe fn unmap(h: *mut DirectHeader) {
    // SAFETY: header fields are valid until the unmap below.
    unsafe {
        let (base, len, align) = ((*h).base, (*h).map_len, (*h).map_align);
        (*h).magic = 0;
        mark_chunks(base.addr(), len, CHUNK_NONE, CHUNK_NONE);
        os::unmap(base, len, align);
        let g = global();
        g.mapped.fetch_sub(len as u64, Ordering::Relaxed);
        g.direct_maps.fetch_sub(1, Ordering::Relaxed);
    }
}
