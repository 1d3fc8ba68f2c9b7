//! A batch's wake list: the parked workers its submitter popped from the
//! idle list in its one lock hold, woken by any hand of the batch while work
//! is left (`README.md`, "Submitting a batch of k jobs with h hands").
//!
//! The list is written once, by the submitter, before the batch is offered;
//! after that only the cursor changes. Each `fetch_add` on the cursor hands
//! one entry to one waker; the submitter closes the list with a swap and
//! puts the entries nobody took back on the idle list.

use crate::sync::{AtomicUsize, Ordering, UnsafeCell, thread};

/// Set in the cursor once the list is closed.
const CLOSED: usize = 1 << (usize::BITS - 1);

/// The workers to wake for one batch: `(index, handle)`.
pub(crate) struct WakeList {
    list: UnsafeCell<Vec<(usize, thread::Thread)>>,
    /// Entries handed out so far (`| CLOSED` once closed).
    cursor: AtomicUsize,
}

impl WakeList {
    pub(crate) fn new() -> Self {
        WakeList {
            list: UnsafeCell::new(Vec::new()),
            cursor: AtomicUsize::new(0),
        }
    }

    /// Fills the list.
    ///
    /// # Safety
    ///
    /// Called once, by the submitter, before the batch is offered: no other
    /// thread can reach the list yet, and the offer's release publishes it.
    pub(crate) unsafe fn fill(&self, workers: Vec<(usize, thread::Thread)>) {
        // SAFETY: exclusive by this function's contract.
        self.list.with_mut(|l| unsafe { *l = workers });
    }

    /// Takes the next entry to wake, if any is left and the list is open.
    /// The caller is the submitter, or a hand holding a ticket (so the batch,
    /// and the list, are alive, and the offer's acquire made the list
    /// visible).
    pub(crate) fn pop(&self) -> Option<(usize, thread::Thread)> {
        // SAFETY: the list is only written by `fill`, before any other
        // thread can reach it (see `fill`); reading it is a shared access.
        let len = self.list.with(|l| unsafe { (*l).len() });
        if len == 0 {
            return None;
        }
        // Relaxed: the RMW alone gives each entry to one waker.
        let i = self.cursor.fetch_add(1, Ordering::Relaxed);
        if i >= len {
            return None;
        }
        // SAFETY: as above; entry `i` is ours alone.
        Some(self.list.with(|l| unsafe { (&(*l))[i].clone() }))
    }

    /// Whether the list never had entries (a batch that woke nobody).
    pub(crate) fn is_empty(&self) -> bool {
        // SAFETY: as in `pop`.
        self.list.with(|l| unsafe { (*l).is_empty() })
    }

    /// Closes the list (the submitter, once no work is left for new hands)
    /// and returns the entries nobody took, to put back on the idle list.
    pub(crate) fn close(&self) -> Vec<(usize, thread::Thread)> {
        // SAFETY: as in `pop`.
        let len = self.list.with(|l| unsafe { (*l).len() });
        if len == 0 {
            return Vec::new();
        }
        // The swap is ordered with every pop's fetch_add: entries below the
        // count it returns were taken by wakers, the rest by no one.
        let taken = self.cursor.swap(CLOSED, Ordering::Relaxed).min(len);
        // SAFETY: as in `pop`; the clones leave the list as it is, so wakers
        // still reading their entries are not disturbed.
        self.list.with(|l| unsafe { (&(*l))[taken..].to_vec() })
    }
}
