//! Hands: which of a batch's hands runs a job or a morsel, and state kept
//! per hand for the length of one batch.

use crate::padded::Padded;
use crate::sync::UnsafeCell;

/// One hand of a batch: `index` is unique among the batch's hands and
/// stable for the whole batch (a thread runs all of its jobs or morsels of
/// a batch as one hand), `0` is the calling thread, and `index < width`,
/// the hands the batch may have (fewer may turn up: a worker busy elsewhere
/// does not come).
///
/// ```
/// use keel_pool::Pool;
/// use std::sync::atomic::{AtomicUsize, Ordering};
///
/// let pool = Pool::builder().width(3).build()?;
/// let per_hand: Vec<AtomicUsize> = (0..3).map(|_| AtomicUsize::new(0)).collect();
/// pool.run_hand(30, |hand, _job| {
///     assert!(hand.index < hand.width && hand.width <= 3);
///     per_hand[hand.index].fetch_add(1, Ordering::Relaxed);
/// });
/// let total: usize = per_hand.iter().map(|n| n.load(Ordering::Relaxed)).sum();
/// assert_eq!(total, 30);
/// # Ok::<(), keel_pool::BuildError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Hand {
    /// This hand, `0..width`; `0` is the thread that submitted the batch.
    pub index: usize,
    /// The hands the batch may have.
    pub width: usize,
}

impl Hand {
    pub(crate) fn new(index: usize, width: usize) -> Self {
        debug_assert!(index < width);
        Hand { index, width }
    }

    /// Whether this is the submitting thread's hand.
    ///
    /// ```
    /// use keel_pool::Pool;
    ///
    /// let pool = Pool::builder().width(1).build()?;
    /// pool.run_hand(1, |hand, _| assert!(hand.is_caller()));
    /// # Ok::<(), keel_pool::BuildError>(())
    /// ```
    pub fn is_caller(self) -> bool {
        self.index == 0
    }
}

/// One value per hand of one batch, each on cache lines of its own so
/// hands writing their own do not share a line. Hand `h` alone touches slot
/// `h` while the batch runs (hand indices are unique within a batch); the
/// submitter reads them all once the batch's latch has opened.
pub(crate) struct PerHand<A> {
    slots: Box<[Padded<UnsafeCell<Option<A>>>]>,
}

// SAFETY: each slot is used by one hand at a time (see the type's comment),
// and values move between threads only whole, so `A: Send` is enough to
// share the table between the hands.
unsafe impl<A: Send> Sync for PerHand<A> {}

impl<A> PerHand<A> {
    pub(crate) fn new(hands: usize) -> Self {
        PerHand {
            slots: (0..hands).map(|_| Padded(UnsafeCell::new(None))).collect(),
        }
    }

    /// Runs `f` on hand `hand`'s slot.
    ///
    /// # Safety
    ///
    /// The caller is hand `hand` of the batch this table belongs to, and
    /// the batch is running: no other thread touches this slot now.
    pub(crate) unsafe fn with<R>(&self, hand: usize, f: impl FnOnce(&mut Option<A>) -> R) -> R {
        // SAFETY: exclusive by this function's contract.
        self.slots[hand].with_mut(|p| f(unsafe { &mut *p }))
    }

    /// The values, in hand order, once the batch is over (`self` is owned,
    /// so no hand can still be using it).
    pub(crate) fn into_values(self) -> Vec<A> {
        self.slots
            .into_vec()
            .into_iter()
            .filter_map(|s| s.0.into_inner())
            .collect()
    }
}
