//! The cross-thread free list: many producers push, one consumer takes all.
//!
//! A thread freeing a block it does not own writes the current head into the
//! block's first word and publishes the block with a release (sequentially
//! consistent) CAS. The owner
//! swaps the head with null (acquire) and walks the chain privately. Taking
//! the whole list at once means no node is ever popped alone, so there is no
//! ABA problem, and the blocks themselves are the nodes (no allocation).

use crate::sync::{AtomicPtr, Ordering};
use core::ptr;

/// A lock-free multi-producer, single-consumer stack of freed blocks.
pub(crate) struct ForeignList {
    head: AtomicPtr<u8>,
}

impl ForeignList {
    pub(crate) fn new() -> Self {
        ForeignList {
            head: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// Pushes `node`.
    ///
    /// # Safety
    /// `node` is 8-byte aligned, at least 8 bytes, dead (nobody else reads or
    /// writes it) until the owner takes it back with [`take_all`](Self::take_all).
    #[inline]
    pub(crate) unsafe fn push(&self, node: *mut u8) {
        let mut head = self.head.load(Ordering::Relaxed);
        loop {
            // SAFETY: the caller gave us the node; its first word is the link.
            unsafe { node.cast::<*mut u8>().write(head) };
            match self
                .head
                // Release publishes the link; sequentially consistent for
                // the check of the heap's owner after the push
                // (`ownership::push_to_owned`).
                .compare_exchange_weak(head, node, Ordering::SeqCst, Ordering::Relaxed)
            {
                Ok(_) => return crate::sync::seqcst_pairing(),
                Err(h) => head = h,
            }
        }
    }

    /// Takes every pushed node; walk the chain with [`next`](Self::next).
    #[inline]
    pub(crate) fn take_all(&self) -> *mut u8 {
        if self.head.load(Ordering::Relaxed).is_null() {
            return ptr::null_mut();
        }
        self.head.swap(ptr::null_mut(), Ordering::Acquire)
    }

    /// Whether nothing is waiting (a hint: a push may land right after).
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.head.load(Ordering::Relaxed).is_null()
    }

    /// Whether a block waits, read with `Acquire`: when it does, what each
    /// freer wrote before its push (the foreign mark) is visible to the
    /// caller (`HeapCore::free_medium`'s check for a block on this list).
    #[inline]
    pub(crate) fn waiting(&self) -> bool {
        !self.head.load(Ordering::Acquire).is_null()
    }

    /// Whether a block waits, read right after the heap was let go
    /// (`ownership::let_go`): sequentially consistent, so that either this
    /// load sees a racing push or that pusher's check sees the let-go.
    #[inline]
    pub(crate) fn left_waiting(&self) -> bool {
        !self.head.load(Ordering::SeqCst).is_null()
    }

    /// The node after `node` in a chain from `take_all`.
    ///
    /// # Safety
    /// `node` is in a chain returned by `take_all` and not yet reused.
    #[inline]
    pub(crate) unsafe fn next(node: *mut u8) -> *mut u8 {
        // SAFETY: the pusher wrote the link before its release CAS, which our
        // acquire swap synchronized with.
        unsafe { node.cast::<*mut u8>().read() }
    }
}
