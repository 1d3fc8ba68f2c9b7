//! Queueing, waking, spinning and parking: the protocol in `README.md` next
//! to this file, which also justifies every memory ordering used here.

mod serve;

use crate::batch::{BatchCore, BatchRef};
use crate::queue::Queue;
use crate::stats::Counters;
use crate::sync::{
    AtomicBool, AtomicUsize, Mutex, MutexGuard, Ordering, SpinClock, lock, spin_hint, thread,
};
use std::time::Duration;

/// Keeps its contents on cache lines of their own: the lock, the hints
/// spinners poll and the counters each side bumps are written by different
/// threads, and sharing a line made every one of those writes a transfer.
/// 128 bytes, because x86-64 prefetches lines in pairs (as crossbeam's
/// `CachePadded` assumes).
#[repr(align(128))]
pub(crate) struct Padded<T>(T);

impl<T> core::ops::Deref for Padded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// The pool's shared scheduling state.
pub(crate) struct Sleep {
    /// The one lock: queued batches, per-worker tickets, parked workers.
    queue: Padded<Mutex<Queue>>,
    /// Shared tickets in the queue (a hint read by spinners without the
    /// lock; written only under it).
    pending: Padded<AtomicUsize>,
    /// Per worker: it has private (broadcast) tickets queued. Same rules as
    /// `pending`; kept apart so that one worker's broadcast ticket does not
    /// make the others spin on the lock.
    mail: Box<[AtomicBool]>,
    /// Per worker: it has private tickets broadcast from jobs queued (the
    /// ones it serves while waiting inside a job). Same rules as `mail`.
    job_mail: Box<[AtomicBool]>,
    /// Workers inside their spin window (a hint for how many to wake).
    spinning: Padded<AtomicUsize>,
    /// Shutdown hint for spinners (the authority is `Queue::shutdown`).
    shutdown: AtomicBool,
    /// Per worker: parked and not yet woken. Set under the lock by the
    /// worker itself, cleared by whoever popped it from `Queue::idle`.
    asleep: Box<[AtomicBool]>,
    /// The spin window of workers and of waiting submitters.
    pub(crate) window: Duration,
    pub(crate) counters: Padded<Counters>,
}

impl Sleep {
    pub(crate) fn new(workers: usize, window: Duration) -> Self {
        Sleep {
            queue: Padded(Mutex::new(Queue::new(workers))),
            pending: Padded(AtomicUsize::new(0)),
            spinning: Padded(AtomicUsize::new(0)),
            shutdown: AtomicBool::new(false),
            asleep: (0..workers).map(|_| AtomicBool::new(false)).collect(),
            mail: (0..workers).map(|_| AtomicBool::new(false)).collect(),
            job_mail: (0..workers).map(|_| AtomicBool::new(false)).collect(),
            window,
            counters: Padded(Counters::default()),
        }
    }

    /// Queues `tickets` tickets of `batch` under one lock acquisition and
    /// wakes as many parked workers as the batch can keep busy beyond the
    /// workers already spinning (which will find the tickets themselves).
    ///
    /// # Safety
    ///
    /// `batch` is alive and counts `tickets` hands in its latch beyond the
    /// submitter's; the submitter calls [`Sleep::retract`] and waits on the
    /// latch before letting the batch go.
    pub(crate) unsafe fn submit(&self, batch: BatchRef, tickets: usize) {
        let mut q = lock(&self.queue);
        // SAFETY: forwarded from this function's contract.
        unsafe { q.push(batch, tickets) };
        self.pending.fetch_add(tickets, Ordering::Relaxed);
        let spinning = self.spinning.load(Ordering::Relaxed);
        let want = tickets.saturating_sub(spinning).min(q.idle.len());
        // Most recently parked first: their caches are the warmest.
        let at = q.idle.len() - want;
        let woken: Vec<(usize, thread::Thread)> = q.idle.drain(at..).collect();
        drop(q);
        self.wake(woken);
    }

    /// Queues one ticket of `batch` for each worker in `targets` and wakes
    /// every parked one of them; `from_job` says the broadcaster is a job of
    /// this pool, whose tickets a worker waiting inside a job also takes.
    ///
    /// # Safety
    ///
    /// As for [`Sleep::submit`], with one latch hand per target.
    pub(crate) unsafe fn submit_private(
        &self,
        batch: BatchRef,
        targets: impl Iterator<Item = usize>,
        from_job: bool,
    ) {
        let mut q = lock(&self.queue);
        let mut serving = Vec::new();
        for w in targets {
            q.push_private(w, batch, from_job);
            self.mail[w].store(true, Ordering::Relaxed);
            if from_job {
                self.job_mail[w].store(true, Ordering::Relaxed);
                // A target waiting on a batch of its own is not in `idle`;
                // it registered here under the lock before parking.
                if let Some(t) = q.serving[w].take() {
                    serving.push(t);
                }
            }
        }
        let woken: Vec<(usize, thread::Thread)> = q.idle.drain(..).collect();
        drop(q);
        self.wake(woken);
        for t in serving {
            t.unpark();
        }
    }

    /// Whether worker `w` has private tickets from jobs queued (a hint; the
    /// lock decides).
    #[inline]
    pub(crate) fn has_job_mail(&self, w: usize) -> bool {
        self.job_mail[w].load(Ordering::Relaxed)
    }

    /// Takes one of worker `w`'s private tickets broadcast from a job. With
    /// `serve`, and none queued, registers the calling thread (worker `w`)
    /// to be unparked when one is pushed: a worker waiting inside a job
    /// calls this under the same lock hold as its final check, so no such
    /// ticket is missed.
    pub(crate) fn take_from_job(&self, w: usize, serve: bool) -> Option<BatchRef> {
        let mut q = lock(&self.queue);
        match q.take_from_job(w) {
            Some(b) => {
                self.update_mail(&q, w);
                Some(b)
            }
            None => {
                if serve {
                    q.serving[w] = Some(thread::current());
                }
                None
            }
        }
    }

    /// Sets worker `w`'s mail hints from the queue `q` after a take.
    fn update_mail(&self, q: &Queue, w: usize) {
        if !q.has_private(w) {
            self.mail[w].store(false, Ordering::Relaxed);
        }
        if !q.has_from_job(w) {
            self.job_mail[w].store(false, Ordering::Relaxed);
        }
    }

    /// Drops worker `w`'s registration from [`Sleep::take_from_job`], if no
    /// push has taken it already.
    pub(crate) fn stop_serving(&self, w: usize) {
        lock(&self.queue).serving[w] = None;
    }

    /// Takes back the tickets of `batch` that no worker took, and their
    /// hands from its latch. Called by the submitter after its own share.
    pub(crate) fn retract(&self, batch: &BatchCore<'_>) {
        // Acquire pairs with the Release store of 0 made when the last
        // ticket left the queue: 0 means no worker can take one any more.
        if batch.unclaimed.load(Ordering::Acquire) == 0 {
            return;
        }
        let mut q = lock(&self.queue);
        let n = q.retract(BatchRef::new(batch));
        self.pending.fetch_sub(n, Ordering::Relaxed);
        drop(q);
        if n > 0 {
            batch.latch.retract(n);
        }
    }

    fn wake(&self, woken: Vec<(usize, thread::Thread)>) {
        if woken.is_empty() {
            return;
        }
        self.counters.wakes.add(woken.len() as u64);
        for (w, t) in woken {
            // Release: nothing rides on it but the flag itself; the worker
            // takes its ticket under the lock.
            self.asleep[w].store(false, Ordering::Release);
            t.unpark();
        }
    }

    /// The next ticket for worker `w` (whose handle is `me`): takes one if
    /// queued, else spins for the window, else parks until woken. `None`
    /// once the pool shuts down.
    pub(crate) fn next_ticket(&self, w: usize, me: &thread::Thread) -> Option<BatchRef> {
        loop {
            if self.has_work(w) {
                let mut q = lock(&self.queue);
                if let Some(b) = self.take(&mut q, w) {
                    return Some(b);
                }
                if q.shutdown {
                    return None;
                }
            }
            if self.shutdown.load(Ordering::Relaxed) && lock(&self.queue).shutdown {
                return None;
            }
            if self.spin(w) {
                continue;
            }
            // Park: the final check and the registration as idle happen in
            // one lock hold, so a submitter either sees this worker idle (and
            // wakes it) or pushed its tickets before this check (and this
            // worker takes one).
            let mut q = lock(&self.queue);
            if let Some(b) = self.take(&mut q, w) {
                return Some(b);
            }
            if q.shutdown {
                return None;
            }
            self.asleep[w].store(true, Ordering::Relaxed);
            q.idle.push((w, me.clone()));
            drop(q);
            self.counters.parks.add(1);
            // Acquire pairs with the waker's Release store; a spurious return
            // of park, or a stale token, loops.
            while self.asleep[w].load(Ordering::Acquire) {
                thread::park();
            }
        }
    }

    /// Whether worker `w` may find a ticket (a hint; the lock decides).
    #[inline]
    fn has_work(&self, w: usize) -> bool {
        self.pending.load(Ordering::Relaxed) > 0 || self.mail[w].load(Ordering::Relaxed)
    }

    /// Takes a ticket for `w` under the lock `q`, keeping the hints exact.
    fn take(&self, q: &mut MutexGuard<'_, Queue>, w: usize) -> Option<BatchRef> {
        let (b, private) = q.take(w)?;
        if private {
            self.update_mail(q, w);
        } else {
            self.pending.fetch_sub(1, Ordering::Relaxed);
        }
        Some(b)
    }

    /// Spins up to the window; true if work (or shutdown) showed up.
    fn spin(&self, w: usize) -> bool {
        if self.window.is_zero() {
            return false;
        }
        self.spinning.fetch_add(1, Ordering::Relaxed);
        let mut clock = SpinClock::start(self.window);
        let mut found = false;
        while !clock.expired() {
            spin_hint();
            if self.has_work(w) {
                found = true;
                self.counters.spins_found_work.add(1);
                break;
            }
            if self.shutdown.load(Ordering::Relaxed) {
                found = true;
                break;
            }
        }
        // Decrement before taking the lock to take or park: a submitter that
        // locks after this sees the worker as not spinning.
        self.spinning.fetch_sub(1, Ordering::Relaxed);
        self.counters.spin_ns.add(clock.elapsed_ns());
        found
    }

    /// Marks the pool shut down and wakes every parked worker.
    pub(crate) fn shutdown(&self) {
        let mut q = lock(&self.queue);
        debug_assert!(q.is_empty(), "shutdown with tickets queued");
        q.shutdown = true;
        self.shutdown.store(true, Ordering::Relaxed);
        let woken: Vec<(usize, thread::Thread)> = q.idle.drain(..).collect();
        drop(q);
        self.wake(woken);
    }
}

#[cfg(all(test, keel_loom))]
mod tests {
    use crate::Pool;
    use crate::sync::{AtomicUsize, Ordering};
    use std::time::Duration;

    fn pool(width: usize, spin: Duration) -> Pool {
        Pool::builder()
            .width(width)
            .spin_window(spin)
            .build()
            .unwrap()
    }

    /// Submit against a worker that may be starting, checking the queue or
    /// parked (zero spin): both jobs run exactly once and the submitter
    /// returns, i.e. no wakeup is lost and no ticket dangles.
    #[test]
    fn loom_submit_wake_parked_worker() {
        loom::model(|| {
            let p = pool(2, Duration::ZERO);
            let hits = [AtomicUsize::new(0), AtomicUsize::new(0)];
            p.run(2, |i| {
                hits[i].fetch_add(1, Ordering::Relaxed);
            });
            assert_eq!(hits[0].load(Ordering::Relaxed), 1);
            assert_eq!(hits[1].load(Ordering::Relaxed), 1);
        });
    }

    /// The same with a spin window: the worker may find the ticket while
    /// spinning, or give up and park just as it is pushed.
    #[test]
    fn loom_spin_then_park_vs_submit() {
        loom::model(|| {
            let p = pool(2, Duration::from_micros(1));
            let n = AtomicUsize::new(0);
            p.run(2, |_| {
                n.fetch_add(1, Ordering::Relaxed);
            });
            assert_eq!(n.load(Ordering::Relaxed), 2);
        });
    }

    /// A broadcast reaches the worker through its private ticket.
    #[test]
    fn loom_broadcast_private_ticket() {
        loom::model(|| {
            let p = pool(2, Duration::ZERO);
            let n = AtomicUsize::new(0);
            p.broadcast(|w| {
                assert_eq!(w, 0);
                n.fetch_add(1, Ordering::Relaxed);
            });
            assert_eq!(n.load(Ordering::Relaxed), 1);
        });
    }

    /// Shutdown while the worker is anywhere between start and park.
    #[test]
    fn loom_shutdown_joins() {
        loom::model(|| {
            drop(pool(2, Duration::from_micros(1)));
        });
    }
}
