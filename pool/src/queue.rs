//! The batch queue: whole batches, each with a number of tickets (hands it
//! still wants), plus a private list per worker for broadcasts and the list
//! of parked workers. It is only ever touched under the pool's one lock, so
//! pushing a whole batch is one lock acquisition.

use crate::batch::BatchRef;
use crate::sync::thread;
use std::collections::VecDeque;

/// A queued batch and how many tickets it still hands out.
struct Entry {
    batch: BatchRef,
    tickets: usize,
}

/// Everything behind the pool's lock.
pub(crate) struct Queue {
    shared: VecDeque<Entry>,
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
            shared: VecDeque::new(),
            private: (0..workers).map(|_| VecDeque::new()).collect(),
            from_jobs: (0..workers).map(|_| VecDeque::new()).collect(),
            idle: Vec::with_capacity(workers),
            serving: (0..workers).map(|_| None).collect(),
            shutdown: false,
        }
    }

    /// Queues `tickets` tickets of `batch` (which any worker may take).
    ///
    /// # Safety
    ///
    /// `batch` is alive, and stays alive until its entry is gone from the
    /// queue and every ticket taken from it has been released.
    pub(crate) unsafe fn push(&mut self, batch: BatchRef, tickets: usize) {
        debug_assert!(tickets > 0);
        // SAFETY: the caller keeps the batch alive (this function's contract).
        unsafe { batch.set_unclaimed(tickets) };
        self.shared.push_back(Entry { batch, tickets });
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

    /// Takes a ticket for `worker`: its private ones first, then the oldest
    /// shared batch. The ticket is counted in the batch's latch (it was when
    /// the batch was pushed), so the taker may run the batch.
    /// Returns the batch and whether the ticket was a private one.
    pub(crate) fn take(&mut self, worker: usize) -> Option<(BatchRef, bool)> {
        if let Some(b) = self.take_from_job(worker) {
            return Some((b, true));
        }
        if let Some(b) = self.private[worker].pop_front() {
            return Some((b, true));
        }
        let front = self.shared.front_mut()?;
        front.tickets -= 1;
        let batch = front.batch;
        // SAFETY: the entry is still queued, so its batch is alive (push's
        // contract), and the ticket just taken keeps it so.
        unsafe { batch.set_unclaimed(front.tickets) };
        if front.tickets == 0 {
            self.shared.pop_front();
        }
        Some((batch, false))
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

    /// Removes `batch`'s entry and returns how many tickets it still had.
    pub(crate) fn retract(&mut self, batch: BatchRef) -> usize {
        match self.shared.iter().position(|e| e.batch == batch) {
            Some(i) => self.shared.remove(i).map_or(0, |e| e.tickets),
            None => 0,
        }
    }

    /// Whether no ticket is queued at all (for debug checks).
    pub(crate) fn is_empty(&self) -> bool {
        self.shared.is_empty()
            && self.private.iter().all(VecDeque::is_empty)
            && self.from_jobs.iter().all(VecDeque::is_empty)
    }
}
