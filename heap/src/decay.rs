//! The arithmetic of idle decay by age, shared by the heaps' passes and the
//! direct-map pool's: a leaf. A pass releases what has been free for 7/8 of
//! `decay_ms` and passes are at least 1/8 of it apart, so memory comes back
//! between 7/8 and 1 `decay_ms` after it was freed (plus the wait for the
//! heap's next allocation: the decay thread nudges a heap whose deadline
//! passed, `nudge.rs`), at a bounded number of passes. Stamps are the coarse
//! clock in ms, wrapping at 32 bits (ages stay far below 2^31 ms).

use crate::sync::{AtomicU64, Ordering};

/// "Nothing pending" for a decay deadline.
pub(crate) const NEVER: u64 = u64::MAX;

/// The age (ms) at which a decay pass releases something, for `decay` ms.
#[inline]
pub(crate) fn decay_age(decay: u64) -> u64 {
    decay - decay / 8
}

/// The least time (ms) between two decay passes, for `decay` ms.
#[inline]
pub(crate) fn decay_step(decay: u64) -> u64 {
    (decay / 8).max(1)
}

/// The least time (ms) between two passes of the direct-map pool, for
/// `decay` ms: a sixty-fourth, so a pooled map comes back between 7/8 and
/// 57/64 of `decay` after it was freed (a pass walks a few pooled maps, so
/// more of them cost little; the heaps' passes keep [`decay_step`]).
#[inline]
pub(crate) fn pool_step(decay: u64) -> u64 {
    (decay / 64).max(1)
}

/// Whether a stamp `ms` (wrapping) is at least `age` ms before `now`. A
/// stamp after `now` (another thread's clock read raced ours) is not aged.
#[inline]
pub(crate) fn is_aged(now: u64, ms: u32, age: u64) -> bool {
    let a = (now as u32).wrapping_sub(ms) as i32;
    a >= 0 && a as u64 >= age
}

/// When a stamp `ms` will be aged (absolute ms).
#[inline]
pub(crate) fn aged_at(now: u64, ms: u32, age: u64) -> u64 {
    let a = ((now as u32).wrapping_sub(ms) as i32).max(0) as u64;
    now + age.saturating_sub(a)
}

/// Records that something became free at `now`: sets the deadline `due`
/// if none is pending (a later free never moves an earlier deadline), no
/// sooner than a step after the last pass. True when it set one (the
/// caller publishes it, `HeapCore::publish_due`).
#[inline]
#[must_use]
pub(crate) fn note_free(due: &mut u64, last: u64, now: u64) -> bool {
    if *due == NEVER {
        let decay = crate::options::options_decay_ms();
        if decay != 0 {
            *due = (now + decay_age(decay)).max(last + decay_step(decay));
            return true;
        }
    }
    false
}

/// The earliest decay deadline of the heaps exited threads abandoned (a
/// lower bound: a sweep recomputes it; 0 when frees wait on one's foreign
/// list). loom's type under loom (`loom_models.rs` checks the protocol
/// that makes it due: `ownership/README.md`).
#[cfg(not(keel_loom))]
static ABANDONED_DUE: AtomicU64 = AtomicU64::new(NEVER);

#[cfg(keel_loom)]
loom::lazy_static! {
    static ref ABANDONED_DUE: AtomicU64 = AtomicU64::new(NEVER);
}

/// The decay time (ms) of a heap nobody owns: a 256th of `decay` (3 ms of
/// the default second). Its memory is of use only to a thread that adopts
/// it soon, and a program whose threads come and go spreads its memory
/// over several such heaps, each keeping what it held at its fullest for
/// as long as this. A sixty-fourth (16 ms) kept `malloc/tests/c/exited.c`
/// at up to 1.8x glibc's peak resident set; a 256th keeps it within 1.4x,
/// at the cost of the pages the next adopter faults back in
/// (`bench/results/2026-12-04-heap-abandoned-decay-zen4.md`).
#[inline]
pub(crate) fn abandoned_decay(decay: u64) -> u64 {
    (decay / 256).max(1)
}

/// The decay time (ms) of a heap adopted from an exited thread, for its new
/// owner's first `decay` ms: an eighth of `decay`. What is free in it was
/// the earlier owners', and where threads live shorter than `decay` (each
/// passing its heap on to the next) no owner would ever see it age. Not
/// as short as [`abandoned_decay`]: a thread that lives a few milliseconds
/// and churns blocks (larson's) reuses what it frees over longer than
/// that, and released pages fault in again (a sixty-fourth halved
/// larson's rate, `bench/malloc/run.sh`).
#[inline]
pub(crate) fn adopted_decay(decay: u64) -> u64 {
    (decay / 8).max(1)
}

/// Folds the decay deadline `due` of a heap now owner-less, whose clock
/// read `now` last, into the sweep's: under [`abandoned_decay`], what is
/// pending comes due sooner.
pub(crate) fn note_abandoned(due: u64, now: u64) {
    if due != NEVER {
        let decay = crate::options::options_decay_ms();
        let due = due.min(now + decay_age(abandoned_decay(decay)));
        if ABANDONED_DUE.fetch_min(due, Ordering::Relaxed) > due {
            crate::pool::thread::wake();
        }
    }
}

/// The sweep's deadline as frees and abandons set it.
#[inline]
pub(crate) fn abandoned_due() -> u64 {
    ABANDONED_DUE.load(Ordering::Relaxed)
}

/// When the last sweep of abandoned heaps started (ms; a hint, not part of
/// the protocol that makes the sweep due, so a plain atomic).
static LAST_SWEEP: crate::sync::plain::AtomicU64 = crate::sync::plain::AtomicU64::new(0);

/// The least time (ms) between two sweeps of abandoned heaps, for `decay`
/// ms: [`abandoned_decay`]. A free into a heap nobody owns makes the sweep
/// due at once, and a program whose new threads free what exited ones
/// allocated (larson's) does so again right after each sweep: without a
/// floor the decay thread woke and swept every 100 us or so, 266 futex
/// wakes in a 32 ms thread's life, and every heap's slow path swept too.
/// Frees queued meanwhile wait at most this long.
#[inline]
pub(crate) fn sweep_gap(decay: u64) -> u64 {
    abandoned_decay(decay)
}

/// When the sweep may run next (for the decay thread's sleep): its
/// deadline, but no sooner than [`sweep_gap`] after the last sweep.
#[cfg_attr(
    not(all(feature = "std", target_os = "linux", not(miri), not(keel_loom))),
    allow(dead_code)
)]
#[inline]
pub(crate) fn abandoned_sweep_at(decay: u64) -> u64 {
    let due = ABANDONED_DUE.load(Ordering::Relaxed);
    if due == NEVER {
        return NEVER;
    }
    due.max(LAST_SWEEP.load(Ordering::Relaxed) + sweep_gap(decay))
}

/// Whether a sweep may start at `now` ([`sweep_gap`] after the last); if
/// so, it is noted as started. Checked before [`take_abandoned_due`], so a
/// sweep held back leaves the deadline (and a free's flag) in place.
#[inline]
pub(crate) fn sweep_allowed(now: u64, decay: u64) -> bool {
    let last = LAST_SWEEP.load(Ordering::Relaxed);
    if now < last + sweep_gap(decay) {
        return false;
    }
    // Two sweepers racing here may both start: each takes the deadline
    // (only one wins it), which is all the floor is for.
    LAST_SWEEP.store(now, Ordering::Relaxed);
    true
}

/// Notes that an owner-less heap has frees waiting on its foreign list:
/// the sweep is due now (a load, and a store only the first time). Called
/// after the push: the load is sequentially consistent and the store a
/// release, so a sweep that takes the flag after either (a sequentially
/// consistent compare and swap) is ordered after the push, and then finds
/// the heap let go or its borrower finds the block (`ownership/README.md`,
/// "Frees into a heap that is not the caller's").
#[inline]
pub(crate) fn note_abandoned_foreign() {
    if ABANDONED_DUE.load(Ordering::SeqCst) != 0 {
        ABANDONED_DUE.store(0, Ordering::Release);
        crate::pool::thread::wake();
    }
}

/// Whether the sweep of abandoned heaps is due at `now`; if so, takes it
/// (what the sweep finds still pending is folded back). A compare and
/// swap, so a free's [`note_abandoned_foreign`] landing between the test
/// and the take is taken by this sweep, never overwritten.
pub(crate) fn take_abandoned_due(now: u64) -> bool {
    let mut due = ABANDONED_DUE.load(Ordering::SeqCst);
    while due <= now {
        match ABANDONED_DUE.compare_exchange(due, NEVER, Ordering::SeqCst, Ordering::SeqCst) {
            Ok(_) => {
                crate::sync::seqcst_pairing();
                return true;
            }
            Err(d) => due = d,
        }
    }
    false
}
