//! A batch: k jobs (or one call per worker) living on the submitter's stack,
//! run by whichever hands hold a ticket for it.
//!
//! Contract: a `BatchCore` outlives every hand that works on it. The
//! submitter guarantees this by counting each handed-out ticket in the
//! [`CompletionLatch`] and not returning before the latch opens; each hand
//! releases the latch as its last access.

use crate::Cancel;
use crate::latch::CompletionLatch;
use crate::sync::{AtomicBool, AtomicUsize, Ordering};
use crate::unwind::PanicSlot;

/// How hands share out the work.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    /// Jobs `0..k`, claimed one at a time from one counter by any hand.
    Jobs,
    /// One call per ticket, with the index of the worker holding it.
    PerWorker,
}

/// The type-erased part of a batch that hands see.
pub(crate) struct BatchCore<'a> {
    f: &'a (dyn Fn(usize) + Sync + 'a),
    k: usize,
    kind: Kind,
    /// Next job index to claim (`Jobs`).
    next: AtomicUsize,
    cancel: Option<&'a Cancel>,
    /// Some job was skipped because the batch was cancelled.
    skipped: AtomicBool,
    /// Tickets for this batch still in the queue; written under the queue
    /// lock, read by the submitter to know whether it must retract any.
    pub(crate) unclaimed: AtomicUsize,
    pub(crate) latch: CompletionLatch,
    panic: PanicSlot,
}

impl<'a> BatchCore<'a> {
    /// A batch of `k` jobs (or per-worker calls) with `hands` hands counted
    /// in its latch (the submitter's own included).
    pub(crate) fn new(
        f: &'a (dyn Fn(usize) + Sync + 'a),
        k: usize,
        kind: Kind,
        hands: usize,
        cancel: Option<&'a Cancel>,
    ) -> Self {
        BatchCore {
            f,
            k,
            kind,
            next: AtomicUsize::new(0),
            cancel,
            skipped: AtomicBool::new(false),
            unclaimed: AtomicUsize::new(0),
            latch: CompletionLatch::new(hands),
            panic: PanicSlot::new(),
        }
    }

    /// Runs one hand's share: claims jobs until none are left (or the batch
    /// is cancelled), or, for a per-worker batch, calls `f(worker)` once.
    /// Does not release the latch.
    pub(crate) fn work(&self, worker: usize) {
        match self.kind {
            Kind::PerWorker => self.panic.run(|| (self.f)(worker)),
            Kind::Jobs => loop {
                // Relaxed: the RMW alone makes each index go to one hand;
                // the jobs' effects are published by the latch.
                let i = self.next.fetch_add(1, Ordering::Relaxed);
                if i >= self.k {
                    break;
                }
                if self.cancel.is_some_and(Cancel::is_cancelled) {
                    self.skipped.store(true, Ordering::Relaxed);
                    break;
                }
                self.panic.run(|| (self.f)(i));
            },
        }
    }

    /// Whether a job was skipped because of cancellation (read after the
    /// latch opened).
    pub(crate) fn was_cancelled(&self) -> bool {
        self.skipped.load(Ordering::Relaxed)
    }

    /// Resumes the first job panic in the submitter, if there was one.
    pub(crate) fn resume_panic(&self) {
        self.panic.resume_if_any();
    }
}

/// A pointer to a batch as the queue holds it, its lifetime erased.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct BatchRef(*const BatchCore<'static>);

// SAFETY: a BatchRef is only dereferenced by a hand holding a ticket, which
// the batch's latch counts, so the batch is alive; BatchCore's shared state
// is all atomics and locks, and `f` is `Sync`, so using it from another
// thread is sound.
unsafe impl Send for BatchRef {}

impl BatchRef {
    /// Erases the lifetime of `b`. The submitter must not let `b` go before
    /// its latch opens (the contract at the top of this module).
    pub(crate) fn new(b: &BatchCore<'_>) -> Self {
        BatchRef((b as *const BatchCore<'_>).cast::<BatchCore<'static>>())
    }

    /// Records how many tickets of this batch are still queued. Called under
    /// the queue lock; the submitter reads it to know whether to retract.
    ///
    /// # Safety
    ///
    /// The batch is alive (it is queued, or the caller holds a ticket).
    pub(crate) unsafe fn set_unclaimed(self, n: usize) {
        // SAFETY: alive by this function's contract.
        let b = unsafe { &*self.0 };
        // Release pairs with the submitter's Acquire: reading 0 there means
        // the entry has left the queue (both happen under the same lock hold).
        b.unclaimed.store(n, Ordering::Release);
    }

    /// Runs one hand of the batch and releases its latch.
    ///
    /// # Safety
    ///
    /// The caller holds a ticket for this batch that was counted in its
    /// latch and has not been released yet.
    pub(crate) unsafe fn run_hand(self, worker: usize) {
        // SAFETY: the ticket keeps the latch from opening, and the submitter
        // keeps the batch alive until it opens (module contract). `b` is a
        // local, not an argument, so it may dangle once unused.
        let b = unsafe { &*self.0 };
        b.work(worker);
        // SAFETY: our ticket is the unreleased hand; this is our last access
        // to the batch (the latch may free it from here on).
        unsafe { CompletionLatch::release(&b.latch) };
    }
}
