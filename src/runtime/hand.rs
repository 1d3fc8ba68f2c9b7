//! What a hand holds inside a runtime operation: its context and the
//! heap lent to it.

use keel_heap::Heap;
use keel_pool::Hand;
use std::sync::Mutex;

#[cfg(doc)]
use super::Runtime;
use super::lock;

/// What a hand sees inside [`Runtime::fold`]: which hand of the pool's
/// batch it is, and the heap lent to it for the batch.
///
/// ```
/// use keel_rt::Runtime;
///
/// let rt = Runtime::new()?;
/// let hands = rt.fold(
///     1 << 20,
///     4096,
///     |cx| (cx.index(), cx.width(), cx.hand(), cx.heap().id()),
///     |_, _, _| Ok::<(), keel_rt::RuntimeError>(()),
/// )?;
/// for &(index, width, hand, _) in &hands {
///     assert!(index < width && width <= rt.pool().width());
///     assert_eq!((hand.index, hand.width), (index, width));
/// }
/// let heaps: std::collections::HashSet<usize> = hands.iter().map(|h| h.3).collect();
/// assert_eq!(heaps.len(), hands.len()); // a heap of its own per hand
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy)]
pub struct HandCx<'a> {
    pub(super) hand: Hand,
    pub(super) heap: &'a Heap,
}

impl std::fmt::Debug for HandCx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandCx")
            .field("hand", &self.hand)
            .finish_non_exhaustive()
    }
}

impl<'a> HandCx<'a> {
    /// The pool's hand: its index and the batch's width.
    pub fn hand(&self) -> Hand {
        self.hand
    }

    /// This hand's index, `0..width`, stable for the whole operation (0 is
    /// the calling thread).
    pub fn index(&self) -> usize {
        self.hand.index
    }

    /// Hands the operation may have.
    pub fn width(&self) -> usize {
        self.hand.width
    }

    /// This hand's heap: nobody else allocates from it during the
    /// operation, and the runtime collects it when the operation ends.
    pub fn heap(&self) -> &'a Heap {
        self.heap
    }
}

/// A heap lent to one hand for one batch: it goes back to the runtime's
/// slot for that hand, collected, when the hand's state is dropped (after
/// the batch, on every path: success, error, panic). A spare (made for a
/// nested fold that found the slot's heap lent out) is dropped instead:
/// dropping the handle abandons the heap, and the next `Heap::new` adopts
/// it.
pub(super) struct Lent<'r> {
    pub(super) heap: Option<Heap>,
    pub(super) slot: Option<&'r Mutex<Option<Heap>>>,
}

impl Lent<'_> {
    pub(super) fn get(&self) -> &Heap {
        match &self.heap {
            Some(h) => h,
            None => unreachable!("a lent heap is taken only when it goes back"),
        }
    }
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        if let (Some(heap), Some(slot)) = (self.heap.take(), self.slot) {
            // What the hand's morsels freed goes back to its free lists.
            heap.gc();
            *lock(slot) = Some(heap);
        }
    }
}

/// One hand's state in a fold: its lent heap and the caller's accumulator.
pub(super) struct HandState<'r, A> {
    pub(super) hand: Hand,
    pub(super) heap: Lent<'r>,
    pub(super) acc: A,
}
