//! The pool's counters and the snapshot [`Pool::stats`](crate::Pool::stats)
//! returns.

use crate::sync::Counter;
use std::time::Duration;

/// A snapshot of a pool's counters. Per-batch figures are differences of
/// two snapshots divided by the batches between them.
///
/// ```
/// use keel_pool::Pool;
///
/// let pool = Pool::builder().width(3).build()?;
/// let before = pool.stats();
/// pool.run(10, |_| {});
/// pool.broadcast(|_| {});
/// let after = pool.stats();
/// assert_eq!(after.batches - before.batches, 2);
/// // Ten jobs, then one call on each of the two workers.
/// assert_eq!(after.jobs - before.jobs, 12);
/// # Ok::<(), keel_pool::BuildError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Batches run (including broadcasts and morsel loops).
    pub batches: u64,
    /// Jobs in those batches (morsel loops count one job per hand).
    pub jobs: u64,
    /// Parked workers woken (one futex wake each) by a batch, a broadcast
    /// or the drop. A batch wakes only workers it has work for.
    pub wakes: u64,
    /// Times a worker parked.
    pub parks: u64,
    /// Worker spin windows that ended because work showed up.
    pub spins_found_work: u64,
    /// Time workers spent spinning.
    pub spin_time: Duration,
    /// Times a submitter parked on its completion latch.
    pub submitter_parks: u64,
    /// Time submitters spent spinning on their completion latch.
    pub submitter_spin_time: Duration,
    /// Acquisitions of the pool's one lock (offering a batch, putting back
    /// workers it did not need, parking, broadcasts). Claiming a ticket
    /// takes none.
    pub lock_acquisitions: u64,
    /// The most idle workers ever spinning at once; at most
    /// [`MAX_SPINNERS`](crate::MAX_SPINNERS).
    pub spinners_high_water: u64,
}

/// The live counters, bumped by the protocol (Relaxed: statistics order
/// nothing).
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) batches: Counter,
    pub(crate) jobs: Counter,
    pub(crate) wakes: Counter,
    pub(crate) parks: Counter,
    pub(crate) spins_found_work: Counter,
    pub(crate) spin_ns: Counter,
    pub(crate) submitter_parks: Counter,
    pub(crate) submitter_spin_ns: Counter,
    pub(crate) locks: Counter,
    pub(crate) spinners_high: Counter,
}

impl Counters {
    /// A snapshot.
    pub(crate) fn snapshot(&self) -> Stats {
        Stats {
            batches: self.batches.get(),
            jobs: self.jobs.get(),
            wakes: self.wakes.get(),
            parks: self.parks.get(),
            spins_found_work: self.spins_found_work.get(),
            spin_time: Duration::from_nanos(self.spin_ns.get()),
            submitter_parks: self.submitter_parks.get(),
            submitter_spin_time: Duration::from_nanos(self.submitter_spin_ns.get()),
            lock_acquisitions: self.locks.get(),
            spinners_high_water: self.spinners_high.get(),
        }
    }
}
