//! The offer table: each batch that wants helpers offers its tickets in a
//! slot owned by the pool, and any worker claims one with a compare-and-swap,
//! without the pool's lock (`README.md`, "Claiming a ticket, without the lock").
//!
//! A slot's state word is `generation << 32 | tickets left`. The generation
//! changes each time the slot is offered again, so a claimer that read an
//! old offer cannot take a ticket of a newer one with a stale batch pointer.

use crate::batch::{BatchCore, BatchRef};
use crate::padded::Padded;
use crate::sync::{AtomicPtr, AtomicU64, Ordering};

/// Slots, so at most this many batches offer tickets at once; a batch
/// submitted while every slot is taken runs on its submitter's hand alone.
/// Each nesting level of a batch inside a job takes one slot.
#[cfg(not(keel_loom))]
pub(crate) const SLOTS: usize = 64;
/// Under loom: few enough that the model stays small.
#[cfg(keel_loom)]
pub(crate) const SLOTS: usize = 4;

const TICKETS: u64 = u32::MAX as u64;
const GENERATION: u64 = 1 << 32;

/// One batch's offer.
struct Slot {
    /// `generation << 32 | tickets left`.
    state: AtomicU64,
    /// The batch whose tickets these are (valid while tickets are left).
    batch: AtomicPtr<BatchCore<'static>>,
}

/// The pool's slots, and which are taken.
pub(crate) struct Offers {
    slots: Box<[Padded<Slot>]>,
    /// Bit `i`: slot `i` belongs to a batch (its tickets may be gone).
    /// Set by an offering submitter under the pool's lock, cleared by it
    /// without the lock once it has withdrawn the offer.
    used: Padded<AtomicU64>,
}

/// A submitter's claim on its slot, to withdraw the offer with.
#[must_use]
pub(crate) struct Offer {
    slot: usize,
}

impl Offers {
    pub(crate) fn new() -> Self {
        Offers {
            slots: (0..SLOTS)
                .map(|_| {
                    Padded(Slot {
                        state: AtomicU64::new(0),
                        batch: AtomicPtr::new(std::ptr::null_mut()),
                    })
                })
                .collect(),
            used: Padded(AtomicU64::new(0)),
        }
    }

    /// Offers `tickets` tickets of `batch` (1 ..= `u32::MAX`); `None` if
    /// every slot is taken. Called under the pool's lock, which serialises
    /// offering submitters (withdrawals do not need it).
    pub(crate) fn offer(&self, batch: BatchRef, tickets: usize) -> Option<Offer> {
        debug_assert!((1..=TICKETS as usize).contains(&tickets));
        // Acquire pairs with `withdraw`'s Release: the previous batch's
        // withdrawal happens-before this offer (see `claim`).
        let used = self.used.load(Ordering::Acquire);
        let free = !used & mask();
        if free == 0 {
            return None;
        }
        let i = free.trailing_zeros() as usize;
        self.used.fetch_or(1 << i, Ordering::Relaxed);
        let slot = &self.slots[i];
        // Only this submitter writes the slot now (it is free, and offers
        // are serialised), so a plain load of the generation is current.
        let generation = slot.state.load(Ordering::Relaxed) & !TICKETS;
        // Release: a claimer that loads this pointer with Acquire sees the
        // slot taken (the `used` update and everything before it).
        slot.batch
            .store(batch.as_ptr().cast_mut(), Ordering::Release);
        // Release: a claimer that reads these tickets sees the batch pointer
        // and the batch's own initialisation.
        slot.state.store(
            generation.wrapping_add(GENERATION) | tickets as u64,
            Ordering::Release,
        );
        Some(Offer { slot: i })
    }

    /// Takes one ticket of any offered batch, without a lock. Returns the
    /// batch and the tickets that were left before this one was taken
    /// (`n` of `n`: the first ticket), which numbers the claimer's hand.
    /// The ticket is counted in the batch's latch, so the batch is alive
    /// until the claimer releases it.
    pub(crate) fn claim(&self) -> Option<(BatchRef, usize)> {
        let mut used = self.used.load(Ordering::Relaxed);
        while used != 0 {
            let i = used.trailing_zeros() as usize;
            used &= used - 1;
            let slot = &self.slots[i];
            // Acquire pairs with `offer`'s Release store of the state.
            let mut s = slot.state.load(Ordering::Acquire);
            while s & TICKETS != 0 {
                // Acquire: reading a newer offer's pointer makes that offer
                // (and the withdrawal of ours before it) happen-before the
                // CAS below, which then cannot succeed on our stale `s`.
                let batch = slot.batch.load(Ordering::Acquire);
                match slot.state.compare_exchange_weak(
                    s,
                    s - 1,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    // The CAS took a ticket of the offer whose generation we
                    // read, and `batch` belongs to that offer (above); the
                    // ticket is counted in its latch.
                    Ok(_) => return Some((BatchRef::from_ptr(batch), (s & TICKETS) as usize)),
                    Err(now) => s = now,
                }
            }
        }
        None
    }

    /// Whether some offer has tickets left (a hint for spinners: the claim
    /// decides).
    #[inline]
    pub(crate) fn any(&self) -> bool {
        let mut used = self.used.load(Ordering::Relaxed);
        while used != 0 {
            let i = used.trailing_zeros() as usize;
            used &= used - 1;
            if self.slots[i].state.load(Ordering::Relaxed) & TICKETS != 0 {
                return true;
            }
        }
        false
    }

    /// Withdraws the offer: no ticket can be claimed from it any more.
    /// Returns the tickets nobody took, which the submitter takes back from
    /// its latch.
    pub(crate) fn withdraw(&self, offer: Offer) -> usize {
        let slot = &self.slots[offer.slot];
        // An RMW, so it is ordered after every successful claim, and every
        // later claim of this generation fails.
        let left = slot.state.fetch_and(!TICKETS, Ordering::AcqRel) & TICKETS;
        // Release pairs with the next offer's Acquire load of `used`.
        self.used.fetch_and(!(1 << offer.slot), Ordering::Release);
        left as usize
    }
}

/// The bits of `used` that name slots.
fn mask() -> u64 {
    if SLOTS == 64 {
        u64::MAX
    } else {
        (1u64 << SLOTS) - 1
    }
}

#[cfg(all(test, keel_loom))]
mod tests {
    use super::*;
    use crate::batch::Kind;
    use crate::sync::{Arc, thread};

    /// A claimer races a submitter that withdraws its offer and offers a
    /// second batch in the same slot: every ticket taken is one the batch it
    /// names offered (the generation stops a stale claim from taking the
    /// second batch's ticket for the first), and tickets taken plus tickets
    /// withdrawn add up for each batch.
    #[test]
    fn loom_claim_against_withdraw_and_reoffer() {
        loom::model(|| {
            let f = |_: usize, _: usize| {};
            // The claimer only compares the pointers it gets back; it never
            // runs a hand, so the batches can stay on this stack.
            let b1 = BatchCore::new(&f, 1, Kind::Jobs, 2, None);
            let b2 = BatchCore::new(&f, 1, Kind::Jobs, 2, None);
            let (b1, b2) = (&b1, &b2);
            let offers = Arc::new(Offers::new());
            let o = offers.offer(BatchRef::new(b1), 1).unwrap();
            let o2 = offers.clone();
            let claimer = thread::spawn(move || {
                let mut got = Vec::new();
                for _ in 0..2 {
                    if let Some((b, left)) = o2.claim() {
                        assert_eq!(left, 1);
                        got.push(b);
                    }
                }
                got
            });
            let left1 = offers.withdraw(o);
            let o = offers.offer(BatchRef::new(b2), 1).unwrap();
            let left2 = offers.withdraw(o);
            let got = claimer.join().unwrap();
            let n1 = got.iter().filter(|b| **b == BatchRef::new(b1)).count();
            let n2 = got.iter().filter(|b| **b == BatchRef::new(b2)).count();
            assert_eq!(n1 + n2, got.len(), "a ticket named no offered batch");
            assert_eq!(n1 + left1, 1);
            assert_eq!(n2 + left2, 1);
        });
    }
}
