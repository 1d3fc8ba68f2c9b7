//! The direct-map pool's passes: the GC's trim to the budget and release
//! of aged maps, and idle decay by age (`direct.rs` holds the pool and its
//! reuse policy).

use crate::decay::{self, NEVER};
use crate::direct::{POOL, POOL_DUE, split_beyond, unmap_chain};
use crate::os;
use crate::stats::global;
use crate::sync::plain::Ordering;
use core::ptr;

/// GC pass 4: unmap the oldest pooled maps beyond the budget.
pub(crate) fn reclaim_beyond_budget() {
    let budget = crate::options::options().pool_budget;
    let victims = POOL.with(|p| {
        if p.bytes > budget {
            split_beyond(p, budget)
        } else {
            ptr::null_mut()
        }
    });
    // SAFETY: unlinked under the lock.
    unsafe { unmap_chain(victims) };
}

/// Releases the pages of pooled maps free for at least `min_age` global GCs,
/// within `budget` bytes. Returns (bytes released, madvise calls).
pub(crate) fn release_aged(epoch: u64, min_age: u64, budget: usize) -> (usize, u64) {
    POOL.with(|p| {
        let mut done = 0usize;
        let mut calls = 0u64;
        let mut cur = p.head;
        // SAFETY: pool entries are live headers, followed under the pool lock.
        unsafe {
            while !cur.is_null() {
                let u = (*cur).usable;
                if !(*cur).released
                    && epoch.saturating_sub((*cur).since) >= min_age
                    && done + u <= budget
                {
                    if os::release((*cur).data, u) {
                        (*cur).released = true;
                        (*cur).zero = true;
                        done += u;
                    }
                    calls += 1;
                }
                cur = (*cur).next;
            }
        }
        (done, calls)
    })
}

/// The pool's idle decay, if due: releases the pages of every pooled map
/// unused for at least 7/8 of `decay` ms (as a heap's decay pass does).
pub(crate) fn decay(now: u64, decay: u64) {
    if now < POOL_DUE.load(Ordering::Relaxed) {
        return;
    }
    let age = decay::decay_age(decay);
    let (bytes, calls) = POOL.with(|p| {
        if now < p.due {
            return (0, 0); // another thread ran it
        }
        let (mut bytes, mut calls) = (0u64, 0u64);
        let mut next = NEVER;
        let mut cur = p.head;
        // SAFETY: pool entries are live headers, followed under the pool lock.
        unsafe {
            while !cur.is_null() {
                if !(*cur).released {
                    let ms = (*cur).since_ms;
                    if decay::is_aged(now, ms, age) {
                        calls += 1;
                        if os::release((*cur).data, (*cur).usable) {
                            (*cur).released = true;
                            (*cur).zero = true;
                            bytes += (*cur).usable as u64;
                        }
                    } else {
                        let a = ((now as u32).wrapping_sub(ms) as i32).max(0) as u64;
                        next = next.min(now + age.saturating_sub(a));
                    }
                }
                cur = (*cur).next;
            }
        }
        p.last = now;
        p.due = if next == NEVER {
            NEVER
        } else {
            next.max(now + decay::decay_step(decay))
        };
        POOL_DUE.store(p.due, Ordering::Relaxed);
        (bytes, calls)
    });
    let g = global();
    g.released.fetch_add(bytes, Ordering::Relaxed);
    g.madvise_calls.fetch_add(calls, Ordering::Relaxed);
}

/// Bytes held by the pool.
pub(crate) fn pool_bytes() -> usize {
    POOL.with(|p| p.bytes)
}
