//! The cross-thread free lists: many producers push, one consumer takes all.
//!
//! Every slab has one such list (blocks of that slab freed by other threads),
//! and a heap has one more for its medium (buddy) blocks. A thread whose push
//! turns a slab's list from empty to non-empty raises the slab's bit in its
//! owner heap's [`Notify`] map, so the owner can find slabs that left its bins
//! (full) and have foreign frees waiting, without a lock and without ever
//! touching the blocks until it is about to reuse them.
//!
//! A thread freeing a block it does not own writes the current head into the
//! block's first word and publishes the block with a release CAS. The owner
//! swaps the head with null (acquire) and walks the chain privately. Taking
//! the whole list at once means no node is ever popped alone, so there is no
//! ABA problem, and the blocks themselves are the nodes (no allocation).

use crate::sync::{AtomicPtr, AtomicU64, Ordering};
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

    /// Pushes `node`; true when the list was empty before.
    ///
    /// # Safety
    /// `node` is 8-byte aligned, at least 8 bytes, dead (nobody else reads or
    /// writes it) until the owner takes it back with [`take_all`](Self::take_all).
    #[inline]
    pub(crate) unsafe fn push(&self, node: *mut u8) -> bool {
        let mut head = self.head.load(Ordering::Relaxed);
        loop {
            // SAFETY: the caller gave us the node; its first word is the link.
            unsafe { node.cast::<*mut u8>().write(head) };
            match self
                .head
                .compare_exchange_weak(head, node, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return head.is_null(),
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

/// Bits per [`Notify`] word, and words in a heap's map.
pub(crate) const NOTIFY_WORDS: usize = 64;

/// Which slabs of a heap may have foreign frees waiting: bit `slot` of word
/// `key % N` (`key` is the region's index in its heap), plus a summary word
/// with bit `i` set when word `i` may be non-zero. Keys alias, so a bit is a
/// hint the owner checks against the slab's list; a raised bit is never lost.
///
/// Protocol: a pusher raises after its push (so the owner that sees the bit
/// sees the block); the owner clears the summary before the words, so a word
/// set from zero after the owner read it raises the summary again. The map
/// lives in the heap, which is never unmapped, so raising after the push is
/// safe even if the owner reuses the block and drops its region meanwhile.
pub(crate) struct Notify<const N: usize> {
    any: AtomicU64,
    words: [AtomicU64; N],
}

impl<const N: usize> Notify<N> {
    pub(crate) fn new() -> Self {
        Notify {
            any: AtomicU64::new(0),
            words: core::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// Marks slot `slot` (< 64) of the region with index `key`.
    #[inline]
    pub(crate) fn raise(&self, key: usize, slot: usize) {
        let i = key % N;
        if self.words[i].fetch_or(1 << slot, Ordering::Release) == 0 {
            self.any.fetch_or(1 << i, Ordering::Release);
        }
    }

    /// Whether nothing is raised (a hint).
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.any.load(Ordering::Relaxed) == 0
    }

    /// Takes every raised bit into `out` (word `i` for keys `i mod N`);
    /// false when there was none.
    pub(crate) fn take(&self, out: &mut [u64; N]) -> bool {
        if self.is_empty() {
            return false;
        }
        let mut any = self.any.swap(0, Ordering::Acquire);
        let found = any != 0;
        while any != 0 {
            let i = any.trailing_zeros() as usize;
            any &= any - 1;
            out[i] = self.words[i].swap(0, Ordering::Acquire);
        }
        found
    }
}

/// Bits of a [`CountedList`] word that hold the head's address: user
/// addresses fit in 48 bits on the targets keel-heap supports (the chunk map
/// assumes the same); the top 16 hold the count.
const ADDR_BITS: u32 = 48;
const ADDR_MASK: usize = (1 << ADDR_BITS) - 1;

/// A [`ForeignList`] that also counts its nodes, in the top bits of the
/// head word, so the owner learns how many blocks it took without walking
/// them (a slab's foreign list: at most 4096 objects, far below 2^16).
pub(crate) struct CountedList {
    head: AtomicPtr<u8>,
}

impl CountedList {
    /// An empty list (in the heap, slab lists start as zeroed memory, so only
    /// the loom models construct one).
    #[cfg(all(test, keel_loom))]
    pub(crate) fn new() -> Self {
        CountedList {
            head: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// Pushes `node`; true when the list was empty before.
    ///
    /// # Safety
    /// As [`ForeignList::push`]; the address of `node` fits in 48 bits and
    /// the list holds fewer than 65535 nodes.
    #[inline]
    pub(crate) unsafe fn push(&self, node: *mut u8) -> bool {
        debug_assert!(node.addr() & !ADDR_MASK == 0);
        let mut head = self.head.load(Ordering::Relaxed);
        loop {
            // Offsets, not masks, so that the compiler keeps each step one
            // instruction (the node's own top bits are zero).
            let tag = head.addr() & !ADDR_MASK;
            let next = head.wrapping_byte_sub(tag);
            // SAFETY: the caller gave us the node; its first word is the link.
            unsafe { node.cast::<*mut u8>().write(next) };
            let new = node.wrapping_byte_add(tag + (1 << ADDR_BITS));
            match self
                .head
                .compare_exchange_weak(head, new, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return head.is_null(),
                Err(h) => head = h,
            }
        }
    }

    /// Takes every pushed node: the first (walk on with
    /// [`ForeignList::next`]) and how many there are.
    #[inline]
    pub(crate) fn take_all(&self) -> (*mut u8, usize) {
        if self.head.load(Ordering::Relaxed).is_null() {
            return (ptr::null_mut(), 0);
        }
        let w = self.head.swap(ptr::null_mut(), Ordering::Acquire);
        let tag = w.addr() & !ADDR_MASK;
        (w.wrapping_byte_sub(tag), tag >> ADDR_BITS)
    }

    /// Whether nothing is waiting (a hint: a push may land right after).
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.head.load(Ordering::Relaxed).is_null()
    }

    /// The first node without taking it (acquire), and the count: for the
    /// checker and the debug double-free detector (nodes behind a head stay
    /// unchanged until the owner takes them).
    #[inline]
    pub(crate) fn peek(&self) -> (*mut u8, usize) {
        let w = self.head.load(Ordering::Acquire);
        let tag = w.addr() & !ADDR_MASK;
        (w.wrapping_byte_sub(tag), tag >> ADDR_BITS)
    }
}
