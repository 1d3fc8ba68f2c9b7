//! What the pool's one lock guards besides offering: each worker's private
//! tickets (broadcasts), the parked workers, the workers waiting inside a
//! job, and the shutdown flag. Shared tickets are not here: batches offer
//! them in the lock-free offer table (`sleep/offer.rs`).

use crate::batch::BatchRef;
use crate::sync::thread;
use std::collections::VecDeque;

/// Everything behind the pool's lock.
pub(crate) struct Queue {
    /// Per-worker tickets (broadcast), one per entry: those broadcast from
    /// outside the pool, and those broadcast from jobs of this pool (the
    /// only ones a worker waiting inside a job takes; see `take_from_job`).
    private: Vec<VecDeque<BatchRef>>,
    from_jobs: Vec<VecDeque<BatchRef>>,
    /// Parked workers: index and handle, most recently parked last.
    pub(crate) idle: Vec<(usize, thread::Thread)>,
    /// Per worker: its handle while it waits on a batch of its own (nested
    /// in a job) and must be woken for a private ticket from a job.
    pub(crate) serving: Vec<Option<thread::Thread>>,
    /// Set once by `Pool`'s drop.
    pub(crate) shutdown: bool,
}

impl Queue {
    pub(crate) fn new(workers: usize) -> Self {
        Queue {
            private: (0..workers).map(|_| VecDeque::new()).collect(),
            from_jobs: (0..workers).map(|_| VecDeque::new()).collect(),
            idle: Vec::with_capacity(workers),
            serving: (0..workers).map(|_| None).collect(),
            shutdown: false,
        }
    }

    /// Queues one ticket of `batch` for `worker` only; `from_job` says the
    /// broadcaster is a job of this pool.
    pub(crate) fn push_private(&mut self, worker: usize, batch: BatchRef, from_job: bool) {
        if from_job {
            self.from_jobs[worker].push_back(batch);
        } else {
            self.private[worker].push_back(batch);
        }
    }

    /// Takes a private ticket for `worker`: those from jobs first. The
    /// ticket is counted in the batch's latch (it was when it was pushed),
    /// so the taker may run the batch.
    pub(crate) fn take_private(&mut self, worker: usize) -> Option<BatchRef> {
        self.take_from_job(worker)
            .or_else(|| self.private[worker].pop_front())
    }

    /// Takes one of `worker`'s private tickets broadcast from a job, if any.
    pub(crate) fn take_from_job(&mut self, worker: usize) -> Option<BatchRef> {
        self.from_jobs[worker].pop_front()
    }

    /// Whether `worker` has private tickets queued.
    pub(crate) fn has_private(&self, worker: usize) -> bool {
        !self.private[worker].is_empty() || self.has_from_job(worker)
    }

    /// Whether `worker` has private tickets from jobs queued.
    pub(crate) fn has_from_job(&self, worker: usize) -> bool {
        !self.from_jobs[worker].is_empty()
    }

    /// Whether no private ticket is queued (for debug checks).
    pub(crate) fn is_empty(&self) -> bool {
        self.private.iter().all(VecDeque::is_empty) && self.from_jobs.iter().all(VecDeque::is_empty)
    }
}
