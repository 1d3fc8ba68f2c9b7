//! A batch: k jobs (or one call per hand, or one per worker) living on the
//! submitter's stack, run by whichever hands hold a ticket for it.
//!
//! Contract: a `BatchCore` outlives every hand that works on it. The
//! submitter guarantees this by counting each ticket it offers in the
//! [`CompletionLatch`], taking back the ones nobody claimed, and not
//! returning before the latch opens; each hand releases the latch as its
//! last access.

use crate::Cancel;
use crate::latch::CompletionLatch;
use crate::sleep::Sleep;
use crate::sleep::wake::WakeList;
use crate::sync::{AtomicBool, AtomicUsize, Ordering};
use crate::unwind::PanicSlot;

/// How hands share out the work.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    /// Jobs `0..k`, claimed one at a time from one counter by any hand:
    /// `f(hand, job)`.
    Jobs,
    /// One call per hand, `f(hand, hand)`: the hand loops over work of its
    /// own (morsels) and the batch's `more` says whether any is left.
    PerHand,
    /// One call per ticket, `f(worker, worker)` with the index of the worker
    /// holding it (broadcasts).
    PerWorker,
}

/// The type-erased part of a batch that hands see.
pub(crate) struct BatchCore<'a> {
    /// `f(hand, item)`: the item is the job index (`Jobs`), the hand
    /// (`PerHand`) or the worker (`PerWorker`).
    f: &'a (dyn Fn(usize, usize) + Sync + 'a),
    k: usize,
    kind: Kind,
    /// Hands the batch may have, the submitter's (hand 0) included.
    hands: usize,
    /// Next job index to claim (`Jobs`).
    next: AtomicUsize,
    /// `PerHand`: whether work is left that another hand could take.
    more: Option<&'a (dyn Fn() -> bool + Sync + 'a)>,
    cancel: Option<&'a Cancel>,
    /// Some job was skipped because the batch was cancelled.
    skipped: AtomicBool,
    /// Parked workers popped for this batch, woken by its hands.
    pub(crate) wakes: WakeList,
    pub(crate) latch: CompletionLatch,
    panic: PanicSlot,
}

impl<'a> BatchCore<'a> {
    /// A batch of `k` jobs (or calls) with `hands` hands counted in its
    /// latch (the submitter's own included).
    pub(crate) fn new(
        f: &'a (dyn Fn(usize, usize) + Sync + 'a),
        k: usize,
        kind: Kind,
        hands: usize,
        cancel: Option<&'a Cancel>,
    ) -> Self {
        BatchCore {
            f,
            k,
            kind,
            hands,
            next: AtomicUsize::new(0),
            more: None,
            cancel,
            skipped: AtomicBool::new(false),
            wakes: WakeList::new(),
            latch: CompletionLatch::new(hands),
            panic: PanicSlot::new(),
        }
    }

    /// A `PerHand` batch's test for work left.
    pub(crate) fn with_more(mut self, more: &'a (dyn Fn() -> bool + Sync + 'a)) -> Self {
        self.more = Some(more);
        self
    }

    fn cancelled(&self) -> bool {
        self.cancel.is_some_and(Cancel::is_cancelled)
    }

    /// Whether work is left that a hand not yet here could take: the wakers'
    /// test before each wake.
    pub(crate) fn has_unclaimed(&self) -> bool {
        if self.cancelled() {
            return false;
        }
        match self.kind {
            Kind::Jobs => self.next.load(Ordering::Relaxed) < self.k,
            Kind::PerHand => self.more.is_none_or(|m| m()),
            Kind::PerWorker => false,
        }
    }

    /// Runs hand `hand`'s share (run by `worker`): claims jobs until none
    /// are left (or the batch is cancelled), or makes the hand's one call.
    /// Does not release the latch.
    pub(crate) fn work(&self, hand: usize, worker: usize) {
        match self.kind {
            Kind::PerWorker => self.panic.run(|| (self.f)(worker, worker)),
            Kind::PerHand => self.panic.run(|| (self.f)(hand, hand)),
            Kind::Jobs => loop {
                // Relaxed: the RMW alone makes each index go to one hand;
                // the jobs' effects are published by the latch.
                let i = self.next.fetch_add(1, Ordering::Relaxed);
                if i >= self.k {
                    break;
                }
                // Lets loom run another hand's cancel between this claim and
                // the check: without a yield it never explored a claimed job
                // being skipped. Only the first claim of a cancellable batch,
                // so the models stay small.
                #[cfg(keel_loom)]
                if i == 0 && self.cancel.is_some() {
                    crate::sync::thread::yield_now();
                }
                if self.cancelled() {
                    self.skipped.store(true, Ordering::Relaxed);
                    break;
                }
                self.panic.run(|| (self.f)(hand, i));
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

/// A pointer to a batch as the offer table and the queue hold it, its
/// lifetime erased.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct BatchRef(*const BatchCore<'static>);

// SAFETY: a BatchRef is only dereferenced by a hand holding a ticket, which
// the batch's latch counts, so the batch is alive; BatchCore's shared state
// is all atomics and locks (the wake list is written once, before the batch
// is offered), and `f` is `Sync`, so using it from another thread is sound.
unsafe impl Send for BatchRef {}

impl BatchRef {
    /// Erases the lifetime of `b`. The submitter must not let `b` go before
    /// its latch opens (the contract at the top of this module).
    pub(crate) fn new(b: &BatchCore<'_>) -> Self {
        BatchRef((b as *const BatchCore<'_>).cast::<BatchCore<'static>>())
    }

    /// The pointer, to store in the offer table.
    pub(crate) fn as_ptr(self) -> *const BatchCore<'static> {
        self.0
    }

    /// A reference back from the offer table (using it needs a ticket: see
    /// [`BatchRef::run_hand`]).
    pub(crate) fn from_ptr(p: *const BatchCore<'static>) -> Self {
        BatchRef(p)
    }

    /// Runs one hand of the batch and releases its latch: a claimed ticket
    /// (`claimed = Some(n)`, `n` the tickets left before the claim, which
    /// numbers the hand) or a private one (`None`: a broadcast call).
    /// A claimed hand first helps wake the workers popped for the batch.
    ///
    /// # Safety
    ///
    /// The caller holds a ticket for this batch that was counted in its
    /// latch and has not been released yet.
    pub(crate) unsafe fn run_hand(self, worker: usize, claimed: Option<usize>, sleep: &Sleep) {
        // SAFETY: the ticket keeps the latch from opening, and the submitter
        // keeps the batch alive until it opens (module contract). `b` is a
        // local, not an argument, so it may dangle once unused.
        let b = unsafe { &*self.0 };
        match claimed {
            Some(left) => {
                sleep.help_wake(b);
                // Tickets count down from hands - 1: hands 1, 2, ...
                b.work(b.hands - left, worker);
            }
            None => b.work(worker, worker),
        }
        // SAFETY: our ticket is the unreleased hand; this is our last access
        // to the batch (the latch may free it from here on).
        unsafe { CompletionLatch::release(&b.latch) };
    }
}
