//! Offering, claiming, waking, spinning and parking: the protocol in
//! `README.md` next to this file, which also justifies every memory
//! ordering used here.

pub(crate) mod offer;
mod serve;
pub(crate) mod wake;

use crate::batch::{BatchCore, BatchRef};
use crate::padded::Padded;
use crate::queue::Queue;
use crate::stats::Counters;
use crate::sync::{
    AtomicBool, AtomicUsize, Hint, Mutex, MutexGuard, Ordering, SpinClock, WakeTimes, lock,
    spin_hint, thread, thread_cpu,
};
use offer::{Offer, Offers};
use std::time::Duration;

/// At most this many idle workers spin at once; the others park as soon as
/// they run out of work. Two are enough that back-to-back batches find a
/// hand without a wakeup, and bound what an idle pool burns after a burst
/// to the spin window times two, at any width (Go's and Tokio's schedulers
/// cap their searching threads the same way). (1 under the loom models, so
/// that a two-worker model already meets the cap.)
///
/// ```
/// use keel_pool::{MAX_SPINNERS, Pool};
///
/// let pool = Pool::builder().width(6).build()?;
/// for _ in 0..20 {
///     pool.run(6, |_| {});
/// }
/// assert!(pool.stats().spinners_high_water <= MAX_SPINNERS as u64);
/// # Ok::<(), keel_pool::BuildError>(())
/// ```
#[cfg(not(keel_loom))]
pub const MAX_SPINNERS: usize = 2;
/// At most this many idle workers spin at once (1 under loom, 2 otherwise).
#[cfg(keel_loom)]
pub const MAX_SPINNERS: usize = 1;

/// The pool's shared scheduling state.
pub(crate) struct Sleep {
    /// The one lock: offering batches, private (broadcast) tickets, parked
    /// workers, shutdown. Never taken to claim a shared ticket.
    queue: Padded<Mutex<Queue>>,
    /// The lock-free offer table.
    pub(crate) offers: Offers,
    /// Per worker: it has private (broadcast) tickets queued. A hint read
    /// without the lock, written only under it.
    mail: Box<[Hint]>,
    /// Per worker: it has private tickets broadcast from jobs queued (the
    /// ones it serves while waiting inside a job). Same rules as `mail`.
    job_mail: Box<[Hint]>,
    /// Workers inside their spin window, at most `max_spinners`.
    spinning: Padded<AtomicUsize>,
    max_spinners: usize,
    /// Shutdown hint for spinners (the authority is `Queue::shutdown`).
    shutdown: Hint,
    /// Per worker: parked and not yet woken. Set under the lock by the
    /// worker itself, cleared by whoever popped it from `Queue::idle`.
    asleep: Box<[AtomicBool]>,
    /// Per worker: when it was last woken.
    woken_at: WakeTimes,
    /// The spin window of workers and of waiting submitters.
    pub(crate) window: Duration,
    pub(crate) counters: Padded<Counters>,
}

impl Sleep {
    pub(crate) fn new(workers: usize, window: Duration) -> Self {
        let hints = || (0..workers).map(|_| Hint::default()).collect();
        Sleep {
            queue: Padded(Mutex::new(Queue::new(workers))),
            offers: Offers::new(),
            mail: hints(),
            job_mail: hints(),
            spinning: Padded(AtomicUsize::new(0)),
            max_spinners: MAX_SPINNERS.min(workers),
            shutdown: Hint::default(),
            asleep: (0..workers).map(|_| AtomicBool::new(false)).collect(),
            woken_at: WakeTimes::new(workers),
            window,
            counters: Padded(Counters::default()),
        }
    }

    /// Takes the pool's lock, counting it.
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.counters.locks.add(1);
        lock(&self.queue)
    }

    /// Offers `tickets` tickets of `batch` in one lock hold, and pops the
    /// parked workers it can use beyond those spinning (which find the
    /// tickets themselves) onto its wake list, most recently parked first.
    /// `None` if every offer slot is taken: the batch then has no helpers.
    ///
    /// # Safety
    ///
    /// `batch` counts `tickets` hands in its latch beyond the submitter's;
    /// the submitter withdraws the offer, takes back the tickets nobody
    /// claimed, and waits on the latch before letting the batch go.
    pub(crate) unsafe fn offer(&self, batch: &BatchCore<'_>, tickets: usize) -> Option<Offer> {
        let mut q = self.lock();
        let spinning = self.spinning.load(Ordering::Relaxed);
        let want = tickets.saturating_sub(spinning).min(q.idle.len());
        let at = q.idle.len() - want;
        let mut woken: Vec<(usize, thread::Thread)> = q.idle.drain(at..).collect();
        woken.reverse();
        let n = woken.len();
        // SAFETY: the batch is not offered yet, so no other thread sees it.
        unsafe { batch.wakes.fill(woken) };
        let offer = self.offers.offer(BatchRef::new(batch), tickets);
        if offer.is_none() && n > 0 {
            // Nothing was offered, so nobody can have taken an entry.
            q.idle.extend(batch.wakes.close().into_iter().rev());
        }
        offer
    }

    /// The submitter's half of waking: wakes the workers on `batch`'s wake
    /// list while work is left for them (hands holding a ticket help, in
    /// [`Sleep::help_wake`]), then closes the list and puts the workers
    /// nobody woke back on the idle list (a second lock hold, only then).
    pub(crate) fn wake_for(&self, batch: &BatchCore<'_>) {
        self.help_wake(batch);
        let rest = batch.wakes.close();
        if rest.is_empty() {
            return;
        }
        let mut q = self.lock();
        let mut mail = Vec::new();
        for (w, t) in rest {
            // A broadcast since the pop found it on no idle list: wake it
            // for its private ticket instead of parking it on.
            if q.has_private(w) {
                mail.push((w, t));
            } else {
                q.idle.push((w, t));
            }
        }
        drop(q);
        self.wake(mail);
    }

    /// Wakes workers from `batch`'s wake list while the batch has work left
    /// that a new hand could take.
    pub(crate) fn help_wake(&self, batch: &BatchCore<'_>) {
        if batch.wakes.is_empty() {
            return;
        }
        while batch.has_unclaimed() {
            match batch.wakes.pop() {
                Some(e) => self.wake_one(e),
                None => return,
            }
        }
    }

    /// Withdraws `batch`'s offer and takes back from its latch the tickets
    /// nobody claimed. Called by the submitter after its own share.
    pub(crate) fn withdraw(&self, batch: &BatchCore<'_>, offer: Offer) {
        let left = self.offers.withdraw(offer);
        if left > 0 {
            batch.latch.retract(left);
        }
    }

    /// Queues one ticket of `batch` for each worker in `targets` and wakes
    /// every parked one of them; `from_job` says the broadcaster is a job of
    /// this pool, whose tickets a worker waiting inside a job also takes.
    ///
    /// # Safety
    ///
    /// `batch` is alive and counts one hand per target beyond the
    /// submitter's, and the submitter waits on its latch before letting it
    /// go (broadcast tickets are never withdrawn).
    pub(crate) unsafe fn submit_private(
        &self,
        batch: BatchRef,
        targets: impl Iterator<Item = usize>,
        from_job: bool,
    ) {
        let mut q = self.lock();
        let mut serving = Vec::new();
        for w in targets {
            q.push_private(w, batch, from_job);
            self.mail[w].set(true);
            if from_job {
                self.job_mail[w].set(true);
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
        self.counters.wakes.add(serving.len() as u64);
        for t in serving {
            t.unpark();
        }
    }

    /// Whether worker `w` has private tickets from jobs queued (a hint; the
    /// lock decides).
    #[inline]
    pub(crate) fn has_job_mail(&self, w: usize) -> bool {
        self.job_mail[w].get()
    }

    /// Takes one of worker `w`'s private tickets broadcast from a job. With
    /// `serve`, and none queued, registers the calling thread (worker `w`)
    /// to be unparked when one is pushed: a worker waiting inside a job
    /// calls this under the same lock hold as its final check, so no such
    /// ticket is missed.
    pub(crate) fn take_from_job(&self, w: usize, serve: bool) -> Option<BatchRef> {
        let mut q = self.lock();
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
            self.mail[w].set(false);
        }
        if !q.has_from_job(w) {
            self.job_mail[w].set(false);
        }
    }

    /// Drops worker `w`'s registration from [`Sleep::take_from_job`], if no
    /// push has taken it already.
    pub(crate) fn stop_serving(&self, w: usize) {
        self.lock().serving[w] = None;
    }

    /// Wakes one parked worker popped from the idle list.
    fn wake_one(&self, (w, t): (usize, thread::Thread)) {
        self.counters.wakes.add(1);
        self.woken_at.stamp(w);
        // Release: nothing rides on it but the flag itself; the worker
        // claims its ticket from the offer table.
        self.asleep[w].store(false, Ordering::Release);
        t.unpark();
    }

    fn wake(&self, woken: Vec<(usize, thread::Thread)>) {
        for e in woken {
            self.wake_one(e);
        }
    }

    /// The next ticket for worker `w` (whose handle is `me`): a private one
    /// if queued, else one claimed from the offer table, else it spins for
    /// the window (if fewer than `max_spinners` spin), else it parks until
    /// woken. Returns the batch and, for a claimed ticket, the tickets that
    /// were left before it (see [`BatchRef::run_hand`]); `None` once the
    /// pool shuts down.
    ///
    /// `park_cost` is what the worker reserves for parking: twice the CPU
    /// time its last park took (deciding, the system calls to sleep and to
    /// come back). The spin is shortened by it, so that spinning and parking
    /// together stay within the window.
    pub(crate) fn next_ticket(
        &self,
        w: usize,
        me: &thread::Thread,
        park_cost: &mut Duration,
    ) -> Option<(BatchRef, Option<usize>)> {
        // The spin window runs from the end of the worker's last hand, or
        // from its wakeup if it was woken for a batch that had finished by
        // the time it ran. Either point is before the last batch ends, so
        // once it has, every spinner stops within one window, at most
        // `max_spinners` at a time: what an idle pool burns after a burst
        // stays within the window times the cap, however late a woken
        // worker gets a CPU.
        let mut woken = false;
        loop {
            if self.mail[w].get() {
                let mut q = self.lock();
                if let Some(b) = self.take_private(&mut q, w) {
                    return Some((b, None));
                }
            }
            if let Some((b, left)) = self.offers.claim() {
                return Some((b, Some(left)));
            }
            if self.shutdown.get() && self.lock().shutdown {
                return None;
            }
            let spent = if woken {
                self.woken_at.since(w)
            } else {
                Duration::ZERO
            };
            if self.spin(w, *park_cost + spent) {
                continue;
            }
            let cpu_before = thread_cpu();
            // Park: the final check and the registration as idle happen in
            // one lock hold, so a submitter either sees this worker idle (and
            // pops it) or offered its tickets before this check (and this
            // worker claims one).
            let mut q = self.lock();
            if let Some(b) = self.take_private(&mut q, w) {
                return Some((b, None));
            }
            if let Some((b, left)) = self.offers.claim() {
                return Some((b, Some(left)));
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
            woken = true;
            if let (Some(a), Some(b)) = (cpu_before, thread_cpu()) {
                // Twice what this park cost, since the next may cost more
                // (a few µs, varying with the scheduler's work); at most a
                // quarter of the window, so a slow park cannot turn spinning
                // off.
                *park_cost = (b.saturating_sub(a) * 2).min(self.window / 4);
            }
        }
    }

    /// Takes a private ticket for `w` under the lock `q`, keeping the hints
    /// exact.
    fn take_private(&self, q: &mut MutexGuard<'_, Queue>, w: usize) -> Option<BatchRef> {
        let b = q.take_private(w)?;
        self.update_mail(q, w);
        Some(b)
    }

    /// Spins up to the window, less `reserve` (what parking will cost), if
    /// fewer than `max_spinners` workers spin; true if work (or shutdown)
    /// showed up.
    fn spin(&self, w: usize, reserve: Duration) -> bool {
        let window = self.window.saturating_sub(reserve);
        if window.is_zero() {
            return false;
        }
        // Become a spinner only below the cap: the increment returns how
        // many hold one, and only those under the cap spin, so spinners
        // never exceed it. The count itself may pass the cap for an
        // instant, by a worker that takes its increment back at once; a
        // submitter that reads it then wakes one worker fewer, which costs
        // that batch a hand, never a job (its own hand can run them all).
        let n = self.spinning.fetch_add(1, Ordering::Relaxed);
        if n >= self.max_spinners {
            self.spinning.fetch_sub(1, Ordering::Relaxed);
            return false;
        }
        self.counters.spinners_high.max(n as u64 + 1);
        let mut clock = SpinClock::start(window);
        let mut found = false;
        while !clock.expired() {
            spin_hint();
            if self.offers.any() || self.mail[w].get() {
                found = true;
                self.counters.spins_found_work.add(1);
                break;
            }
            if self.shutdown.get() {
                found = true;
                break;
            }
        }
        // Decrement before taking the lock to park: a submitter that locks
        // after this sees the worker as not spinning.
        self.spinning.fetch_sub(1, Ordering::Relaxed);
        self.counters.spin_ns.add(clock.elapsed_ns());
        found
    }

    /// Marks the pool shut down and wakes every parked worker.
    pub(crate) fn shutdown(&self) {
        let mut q = self.lock();
        debug_assert!(q.is_empty(), "shutdown with tickets queued");
        q.shutdown = true;
        self.shutdown.set(true);
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
