//! The completion latch a batch's submitter waits on.
//!
//! It counts *hands*, not jobs: the submitter's own hand plus one per ticket
//! handed to a worker. A hand releases the latch once, as its very last touch
//! of the batch (the batch lives on the submitter's stack and is gone as soon
//! as the submitter sees zero). The protocol and its orderings are described
//! in `sleep/README.md`.

use crate::sync::{AtomicUsize, Mutex, Ordering, SpinClock, lock, spin_hint, thread};
use std::time::Duration;

/// Low bit of the state: the submitter has parked (or is about to).
const SLEEPING: usize = 1;
/// One hand in the state word (the count lives above the `SLEEPING` bit).
const HAND: usize = 2;

/// A countdown of hands with spin-then-park waiting for one waiter.
pub(crate) struct CompletionLatch {
    /// `hands << 1 | SLEEPING`.
    state: AtomicUsize,
    /// The waiter's handle, set before it parks and taken by the hand that
    /// brings the count to zero.
    waiter: Mutex<Option<thread::Thread>>,
}

/// What a wait cost, for the pool's statistics.
#[derive(Default)]
pub(crate) struct WaitOutcome {
    /// The waiter parked at least once.
    pub(crate) parked: bool,
    /// Nanoseconds spent spinning.
    pub(crate) spin_ns: u64,
}

impl CompletionLatch {
    /// A latch waiting for `hands` releases.
    pub(crate) fn new(hands: usize) -> Self {
        CompletionLatch {
            state: AtomicUsize::new(hands * HAND),
            waiter: Mutex::new(None),
        }
    }

    /// Takes back `n` hands that were never handed out (tickets retracted
    /// from the queue). Only the waiter calls this, before `wait`, so the
    /// count cannot reach zero here while `SLEEPING` is set.
    pub(crate) fn retract(&self, n: usize) {
        self.state.fetch_sub(n * HAND, Ordering::AcqRel);
    }

    /// Releases one hand. This is the hand's last access to the latch
    /// unless it is the last hand and the waiter sleeps, in which case it
    /// takes the waiter's handle *before* publishing zero, so that nothing of
    /// the latch is touched after the waiter may have returned.
    ///
    /// It takes a raw pointer, not `&self`: a reference argument must stay
    /// valid for the whole call, but the waiter may free the latch as soon
    /// as the count reaches zero, while this call is still returning.
    ///
    /// # Safety
    ///
    /// `this` points to a live latch on which the caller holds one
    /// unreleased hand.
    pub(crate) unsafe fn release(this: *const Self) {
        // `state` is all interior mutability, so this reference asserts
        // nothing about the memory once it is freed, and it is not used after
        // the count may have reached zero, except in the sleeping branch,
        // where the waiter cannot return before we store 0.
        // SAFETY: the caller's unreleased hand keeps the latch alive until
        // the fetch_sub below.
        let state: &AtomicUsize = unsafe { &(*this).state };
        // AcqRel: Release publishes this hand's jobs to the waiter; Acquire
        // makes the last hand see earlier hands' releases (and the waiter's
        // handle, stored before it set SLEEPING).
        let prev = state.fetch_sub(HAND, Ordering::AcqRel);
        debug_assert!(prev >= HAND, "latch released more often than it has hands");
        if prev == HAND | SLEEPING {
            // SAFETY: the count is zero with SLEEPING set: the waiter is
            // parked (or about to) and does not return before the store
            // below, so the latch is alive.
            let waiter = lock(unsafe { &(*this).waiter }).take();
            // Release: the waiter's Acquire load of 0 sees every job's effects.
            state.store(0, Ordering::Release);
            if let Some(t) = waiter {
                t.unpark();
            }
        }
    }

    /// Whether every hand has released.
    pub(crate) fn is_done(&self) -> bool {
        self.state.load(Ordering::Acquire) == 0
    }

    /// Waits until every hand has released: spins for `window`, then parks.
    pub(crate) fn wait(&self, window: Duration) -> WaitOutcome {
        let mut out = WaitOutcome::default();
        if self.is_done() {
            return out;
        }
        out.spin_ns = self.spin(window, || false);
        if !self.is_done() {
            out.parked = true;
            self.park(|| false);
        }
        out
    }

    /// Spins for up to `window` until every hand has released or `stop`
    /// returns true; returns the nanoseconds spent.
    pub(crate) fn spin(&self, window: Duration, stop: impl Fn() -> bool) -> u64 {
        let mut clock = SpinClock::start(window);
        while !clock.expired() {
            spin_hint();
            if self.is_done() || stop() {
                break;
            }
        }
        clock.elapsed_ns()
    }

    /// Parks until every hand has released (true) or `stop` returns true
    /// (false). Only the one waiter calls this, possibly again after a
    /// `false`: its handle stays registered and `SLEEPING` stays set, so
    /// the last hand still unparks it, and registering again is harmless.
    /// `stop` must become true only after something unparks this thread, or
    /// it is not seen until the latch opens.
    pub(crate) fn park(&self, stop: impl Fn() -> bool) -> bool {
        *lock(&self.waiter) = Some(thread::current());
        let mut s = self.state.load(Ordering::Acquire);
        loop {
            if s == 0 {
                return true;
            }
            if s & SLEEPING != 0 {
                // Set by an earlier call; writing it again would only add a
                // store racing the last hand's store of 0.
                break;
            }
            // AcqRel on success: Release orders the handle store above before
            // the bit the last hand reads with Acquire.
            match self.state.compare_exchange_weak(
                s,
                s | SLEEPING,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => break,
                Err(now) => s = now,
            }
        }
        // The last hand stores 0 and then unparks; a park token left by that
        // unpark makes a park after the store return at once, so no wakeup
        // can be lost. Spurious returns loop.
        loop {
            if self.is_done() {
                return true;
            }
            if stop() {
                return false;
            }
            thread::park();
        }
    }
}

#[cfg(all(test, keel_loom))]
mod tests {
    use super::*;
    use crate::sync::Arc;

    /// The latch with two worker hands and the waiter's own hand: the waiter
    /// always returns, and only after both workers' writes are visible.
    #[test]
    fn loom_latch_spin_then_park() {
        loom::model(|| {
            let latch = Arc::new(CompletionLatch::new(3));
            let data = Arc::new(AtomicUsize::new(0));
            let mut hs = Vec::new();
            for _ in 0..2 {
                let (l, d) = (latch.clone(), data.clone());
                hs.push(thread::spawn(move || {
                    d.fetch_add(1, Ordering::Relaxed);
                    // SAFETY: the Arc keeps the latch alive; one hand each.
                    unsafe { CompletionLatch::release(&*l) };
                }));
            }
            // SAFETY: the waiter's own hand on a live latch.
            unsafe { CompletionLatch::release(&*latch) };
            latch.wait(Duration::from_micros(1));
            assert_eq!(data.load(Ordering::Relaxed), 2);
            for h in hs {
                h.join().unwrap();
            }
        });
    }

    /// A waiter woken for something else (`stop`) parks again, while the
    /// last hand releases in between: it still returns, after the release.
    #[test]
    fn loom_latch_park_again_after_stop() {
        use crate::sync::AtomicBool;
        loom::model(|| {
            let latch = Arc::new(CompletionLatch::new(2));
            let mail = Arc::new(AtomicBool::new(false));
            let me = thread::current();
            let (l, m) = (latch.clone(), mail.clone());
            let h = thread::spawn(move || {
                m.store(true, Ordering::Relaxed);
                me.unpark();
                // SAFETY: the Arc keeps the latch alive; one hand.
                unsafe { CompletionLatch::release(&*l) };
            });
            // SAFETY: the waiter's own hand on a live latch.
            unsafe { CompletionLatch::release(&*latch) };
            while !latch.park(|| mail.swap(false, Ordering::Relaxed)) {}
            assert!(latch.is_done());
            h.join().unwrap();
        });
    }

    /// Retracting hands that never started, then waiting with a zero window
    /// (park at once).
    #[test]
    fn loom_latch_retract_and_park() {
        loom::model(|| {
            let latch = Arc::new(CompletionLatch::new(3));
            let l = latch.clone();
            // SAFETY: the Arc keeps the latch alive; one hand each.
            let h = thread::spawn(move || unsafe { CompletionLatch::release(&*l) });
            latch.retract(1);
            // SAFETY: as above.
            unsafe { CompletionLatch::release(&*latch) };
            latch.wait(Duration::ZERO);
            assert!(latch.is_done());
            h.join().unwrap();
        });
    }
}
