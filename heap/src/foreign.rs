//! The cross-thread free list: many producers push, one consumer takes all.
//!
//! A thread freeing a block it does not own writes the current head into the
//! block's first word and publishes the block with a release (sequentially
//! consistent) CAS. The owner
//! swaps the head with null (acquire) and walks the chain privately. Taking
//! the whole list at once means no node is ever popped alone, so there is no
//! ABA problem, and the blocks themselves are the nodes (no allocation).
//!
//! The list is [`LANES`] such stacks, a block going to the lane its address
//! hashes to, so that the owner walks several chains at once: each step of
//! a walk loads a link from a block the freeing thread wrote last, a miss
//! served from that thread's core, and one chain's misses come one after
//! another. On a 2-core Intel Xeon (family 6 model 167) the walk of one
//! chain was 63% of a producer/consumer program's samples (`xmalloc`), nearly
//! all on that load (`bench/results/2026-12-07-heap-foreign-lanes-intel.md`).

use crate::sync::{AtomicPtr, Ordering};
use core::ptr;

/// How many stacks a foreign list keeps (two in the loom models, which pick
/// each push's lane themselves: see [`ForeignList::push_lane`]). Eight
/// heads fill one cache line. On the Xeon above, with one producer and one
/// consumer, eight lanes ran 1.48x as many operations a second as four
/// and four 2.2x as many as one; sixteen (two lines) 0.68x as many as
/// eight.
#[cfg(not(keel_loom))]
pub(crate) const LANES: usize = 8;
/// How many stacks a foreign list keeps.
#[cfg(keel_loom)]
pub(crate) const LANES: usize = 2;
const _: () = assert!(LANES.is_power_of_two() && LANES >= 2);

/// The chains [`ForeignList::take_all`] returns, one per lane.
pub(crate) type Chains = [*mut u8; LANES];

/// The lane of `node`: the top bits of a multiplicative hash of its
/// address, so blocks of any one size class (a fixed stride) spread evenly.
#[inline(always)]
pub(crate) fn lane_of(node: *mut u8) -> usize {
    ((node.addr() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - LANES.trailing_zeros()))
        as usize
}

/// A lock-free multi-producer, single-consumer set of stacks of freed
/// blocks. Its heads fill one cache line of their own, the one line freeing
/// threads write.
#[repr(C, align(64))]
pub(crate) struct ForeignList {
    heads: [AtomicPtr<u8>; LANES],
}

impl ForeignList {
    pub(crate) fn new() -> Self {
        ForeignList {
            heads: core::array::from_fn(|_| AtomicPtr::new(ptr::null_mut())),
        }
    }

    /// Pushes `node` onto its lane ([`lane_of`]).
    ///
    /// # Safety
    /// As [`push_lane`](Self::push_lane).
    #[inline]
    pub(crate) unsafe fn push(&self, node: *mut u8) {
        // SAFETY: forwarded.
        unsafe { self.push_lane(node, lane_of(node)) }
    }

    /// Pushes `node` onto lane `lane` (`< LANES`).
    ///
    /// # Safety
    /// `node` is 8-byte aligned, at least 8 bytes, dead (nobody else reads or
    /// writes it) until the owner takes it back with [`take_all`](Self::take_all).
    #[inline]
    pub(crate) unsafe fn push_lane(&self, node: *mut u8, lane: usize) {
        let head_of = &self.heads[lane];
        let mut head = head_of.load(Ordering::Relaxed);
        loop {
            // SAFETY: the caller gave us the node; its first word is the link.
            unsafe { node.cast::<*mut u8>().write(head) };
            match head_of
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

    /// Takes every pushed node: one chain a lane, each walked with
    /// [`next`](Self::next) (null where the lane was empty).
    #[inline]
    pub(crate) fn take_all(&self) -> Chains {
        core::array::from_fn(|i| {
            let h = &self.heads[i];
            if h.load(Ordering::Relaxed).is_null() {
                ptr::null_mut()
            } else {
                h.swap(ptr::null_mut(), Ordering::Acquire)
            }
        })
    }

    /// Whether nothing is waiting (a hint: a push may land right after).
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.heads
            .iter()
            .all(|h| h.load(Ordering::Relaxed).is_null())
    }

    /// Whether a block waits on `node`'s lane, read with `Acquire`: when
    /// one does, what each freer of that lane wrote before its push (the
    /// foreign mark) is visible to the caller (`HeapCore::free_medium`'s
    /// check for `node` on this list, where [`push`](Self::push) put it).
    #[inline]
    pub(crate) fn waiting_for(&self, node: *mut u8) -> bool {
        self.waiting_in(lane_of(node))
    }

    /// [`waiting_for`](Self::waiting_for) by lane.
    #[inline]
    pub(crate) fn waiting_in(&self, lane: usize) -> bool {
        !self.heads[lane].load(Ordering::Acquire).is_null()
    }

    /// Whether a block waits, read right after the heap was let go
    /// (`ownership::let_go`): sequentially consistent, so that for each
    /// lane either this load sees a racing push or that pusher's check
    /// sees the let-go.
    #[inline]
    pub(crate) fn left_waiting(&self) -> bool {
        // Every lane is read, `|` rather than `||`: the argument holds
        // lane by lane.
        self.heads
            .iter()
            .fold(false, |w, h| w | !h.load(Ordering::SeqCst).is_null())
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

#[cfg(all(test, not(keel_loom)))]
mod tests {
    use super::*;
    use std::vec;
    use std::vec::Vec;

    /// Blocks of one size class (a fixed stride) spread over every lane,
    /// none with more than twice its share or less than half.
    #[test]
    fn lanes_spread_a_fixed_stride() {
        for stride in [16usize, 48, 64, 128, 1008, 4096, 65536] {
            let mut n = [0usize; LANES];
            for i in 0..4096 {
                n[lane_of(ptr::without_provenance_mut(0x7f12_3450_0000 + i * stride))] += 1;
            }
            let share = 4096 / LANES;
            for &c in &n {
                assert!(c > share / 2 && c < share * 2, "stride {stride}: {n:?}");
            }
        }
    }

    /// Every push lands on its block's lane and is waited for there;
    /// `take_all` returns each block once and leaves the list empty.
    #[test]
    fn take_all_returns_every_push_by_lane() {
        let mut blocks = vec![[0u64; 2]; 64];
        let list = ForeignList::new();
        assert!(list.is_empty() && !list.left_waiting());
        let mut pushed: Vec<*mut u8> = blocks.iter_mut().map(|b| b.as_mut_ptr().cast()).collect();
        for &p in &pushed {
            // SAFETY: each block is pushed once and read back only below.
            unsafe { list.push(p) };
            assert!(list.waiting_for(p) && !list.is_empty());
        }
        assert!(list.left_waiting());
        let chains = list.take_all();
        assert!(list.is_empty() && !list.left_waiting());
        let mut seen = Vec::new();
        for (lane, &c) in chains.iter().enumerate() {
            let mut n = c;
            while !n.is_null() {
                assert_eq!(lane_of(n), lane);
                seen.push(n);
                // SAFETY: `n` is in a chain `take_all` returned.
                n = unsafe { ForeignList::next(n) };
            }
        }
        seen.sort();
        pushed.sort();
        assert_eq!(seen, pushed);
        assert!(
            chains.iter().filter(|c| !c.is_null()).count() > 1,
            "one lane took all"
        );
    }
}
