//! The decay thread's nudge for live heaps. A heap runs its slow-path check
//! (decay included) on each slow path and once every `tick_mask + 1`
//! allocations, a count that grows to 4096 while the thread allocates
//! fast. A thread that allocated fast and then allocates a block every
//! 10 ms from its fast path would wait 40 s for its next check, keeping
//! memory freed long before.
//!
//! So each heap publishes its decay deadline, folded into one process-wide
//! board (its earliest), and the decay thread sleeps until the board's
//! time. Then it takes the board and, for every owned heap whose deadline
//! has passed, zeroes its count: the owner's next allocation runs the
//! check. The rest's deadlines go back on the board.
//!
//! The owner counts down with a plain load and store (no read-modify-write
//! on the fast path), so a nudge that lands between the two is lost. The
//! decay thread therefore comes back a step later to every heap it zeroed
//! whose count was still running: a heap whose count stays at or below 0
//! has not allocated since (the nudge stands), and one whose check ran its
//! decay pass has published a later deadline. A heap nobody owns is the
//! sweep's (`gc::sweep_abandoned`), not the nudge's.
//!
//! The loom model is `loom_models::loom_nudge_is_never_lost`.

use crate::decay::NEVER;
use crate::sync::{AtomicU32, AtomicU64, Ordering};

/// A heap's share of the protocol: its allocation count and its published
/// deadline.
pub(crate) struct Nudge {
    /// Allocations left until the next counted check: due at 0 or below.
    ticks: AtomicU32,
    /// The owner's decay deadline as last published ([`NEVER`]: none).
    due: AtomicU64,
}

impl Nudge {
    /// A heap's first allocation runs the check (count 0), nothing pending.
    pub(crate) fn new() -> Self {
        Nudge {
            ticks: AtomicU32::new(0),
            due: AtomicU64::new(NEVER),
        }
    }

    /// Owner: counts one allocation; true when the check is due. A load,
    /// a decrement and a store: the same instructions as a plain field.
    #[inline(always)]
    pub(crate) fn tick(&self) -> bool {
        let t = self.ticks.load(Ordering::Relaxed).wrapping_sub(1);
        self.ticks.store(t, Ordering::Relaxed);
        t as i32 <= 0
    }

    /// Owner: whether the count (or a nudge) made the check due.
    #[inline(always)]
    pub(crate) fn is_due(&self) -> bool {
        self.ticks.load(Ordering::Relaxed) as i32 <= 0
    }

    /// Owner: starts the next count of `n` allocations.
    #[inline]
    pub(crate) fn rearm(&self, n: u32) {
        self.ticks.store(n, Ordering::Relaxed);
    }

    /// The count (the raw layer's tests).
    #[cfg(all(test, not(keel_loom)))]
    pub(crate) fn ticks(&self) -> u32 {
        self.ticks.load(Ordering::Relaxed)
    }

    /// Owner: publishes deadline `d` (ms; [`NEVER`] for none) and folds it
    /// into `board`. True when it came earlier than the board's, so a
    /// sleeping decay thread must be woken. The release half of the fold
    /// orders the deadline's store before it: a decay thread that takes the
    /// board after the fold reads this deadline or a later one.
    pub(crate) fn publish(&self, board: &AtomicU64, d: u64) -> bool {
        self.due.store(d, Ordering::Relaxed);
        d != NEVER && board.fetch_min(d, Ordering::AcqRel) > d
    }
}

/// Decay thread: if the board's deadline has passed at `now`, takes it,
/// zeroes the count of every heap `walk` gives (the owned ones) whose
/// deadline has passed, and puts the earliest of the others' deadlines
/// back, with `now + retry` for each heap whose count it zeroed while it
/// ran (that nudge may be lost).
pub(crate) fn nudge(
    board: &AtomicU64,
    now: u64,
    retry: u64,
    walk: impl FnOnce(&mut dyn FnMut(&Nudge)),
) {
    if board.load(Ordering::Relaxed) > now {
        return;
    }
    // Acquire: every heap that folded its deadline before this reads as
    // at least that deadline below; one folding after it lowers the board.
    board.swap(NEVER, Ordering::AcqRel);
    let mut next = NEVER;
    walk(&mut |n| {
        let d = n.due.load(Ordering::Relaxed);
        if d > now {
            next = next.min(d);
        } else if n.ticks.load(Ordering::Relaxed) as i32 > 0 {
            n.ticks.store(0, Ordering::Relaxed);
            next = next.min(now.saturating_add(retry));
        }
    });
    if next != NEVER {
        board.fetch_min(next, Ordering::AcqRel);
    }
}

#[cfg(not(keel_loom))]
static BOARD: AtomicU64 = AtomicU64::new(NEVER);

#[cfg(keel_loom)]
loom::lazy_static! {
    static ref BOARD: AtomicU64 = AtomicU64::new(NEVER);
}

/// The process's board: the earliest deadline published by a live heap
/// since the decay thread last took it.
#[inline]
pub(crate) fn board() -> &'static AtomicU64 {
    // Under loom a lazy static: the return type derefs it.
    &BOARD
}

/// The board's deadline (for the decay thread's sleep).
#[cfg_attr(
    not(all(feature = "std", target_os = "linux", not(miri), not(keel_loom))),
    allow(dead_code)
)]
#[inline]
pub(crate) fn board_due() -> u64 {
    board().load(Ordering::Relaxed)
}

/// Decay thread: nudges the owned heaps whose deadline has passed (see
/// [`nudge`]), coming back a decay step later to those it may have missed.
#[cfg_attr(
    not(all(feature = "std", target_os = "linux", not(miri), not(keel_loom))),
    allow(dead_code)
)]
pub(crate) fn nudge_live(now: u64, decay: u64) {
    nudge(board(), now, crate::decay::decay_step(decay), |f| {
        crate::heap::for_each_heap(|h, abandoned| {
            if !abandoned {
                f(&h.nudge)
            }
        })
    });
}
