//! keel-pool: a fork-join pool for analytical engines.
//!
//! A fixed set of workers runs *batches*: `pool.run(k, |i| ..)` runs jobs
//! `0..k` and returns when all have finished, with the calling thread as one
//! of the hands. A batch is offered in one lock hold and wakes only the
//! parked workers it can use; workers claim its tickets and jobs with
//! atomics, without the lock. At most [`MAX_SPINNERS`] idle workers spin for
//! a bounded window (100 µs by default) before they park, the others park at
//! once, so an idle pool burns no CPU. The width defaults to the physical
//! core count. The protocol and its memory orderings are in
//! `src/sleep/README.md`.
//!
//! ```
//! use keel_pool::Pool;
//! use std::sync::atomic::{AtomicU64, Ordering};
//!
//! let pool = Pool::builder().width(2).build()?;
//! let data: Vec<u64> = (0..100_000).collect();
//! let sum = AtomicU64::new(0);
//! pool.for_each_morsel(data.len(), 4096, |range| {
//!     let s: u64 = data[range].iter().sum();
//!     sum.fetch_add(s, Ordering::Relaxed);
//! });
//! assert_eq!(sum.into_inner(), 99_999 * 100_000 / 2);
//! # Ok::<(), keel_pool::BuildError>(())
//! ```
#![cfg_attr(keel_loom, allow(dead_code))]

#[cfg(feature = "topology")]
mod affinity;
mod batch;
mod builder;
mod cancel;
mod hand;
mod join;
mod latch;
mod morsel;
mod options;
mod padded;
mod queue;
mod reduce;
pub mod settings;
mod sleep;
mod stats;
mod sync;
mod unwind;
mod worker;

#[cfg(feature = "topology")]
pub use affinity::{BindError, Binding, places, plan};
pub use builder::{
    BuildError, Builder, Config, DEFAULT_SPIN, ENV_MAX_SPIN, ENV_SPIN_US, ENV_WIDTH_PER_CPU,
    ENV_WORKERS, MAX_WIDTH, Source,
};
pub use cancel::{Cancel, Cancelled};
pub use hand::Hand;
#[cfg(feature = "topology")]
pub use keel_topology::Topology;
pub use options::{BatchOptions, TryError};
pub use sleep::MAX_SPINNERS;
pub use stats::Stats;

use batch::{BatchCore, BatchRef, Kind};
use sleep::Sleep;
use std::fmt;
use sync::{Arc, thread};
#[cfg(feature = "topology")]
use sync::{Mutex, lock};

/// What workers share.
pub(crate) struct Shared {
    pub(crate) sleep: Sleep,
    /// Per worker: the outcome of binding, when binding was asked for.
    #[cfg(feature = "topology")]
    pub(crate) binding: Mutex<Vec<Option<Result<(), BindError>>>>,
}

/// A fork-join pool. See the crate documentation.
pub struct Pool {
    shared: Arc<Shared>,
    handles: Vec<thread::JoinHandle<()>>,
    config: Config,
}

impl fmt::Debug for Pool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pool")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Pool {
    /// A pool with the default settings (see [`Builder`]).
    pub fn new() -> Result<Pool, BuildError> {
        Builder::new().build()
    }

    /// A builder.
    pub fn builder() -> Builder {
        Builder::new()
    }

    /// Hands a batch can use: the worker threads plus the calling thread.
    pub fn width(&self) -> usize {
        self.config.width
    }

    /// Worker threads (`width() - 1`).
    ///
    /// ```
    /// use keel_pool::Pool;
    ///
    /// let pool = Pool::builder().width(3).build()?;
    /// assert_eq!(pool.workers(), 2);
    /// // Width 1 starts no thread: the caller runs every job.
    /// assert_eq!(Pool::builder().width(1).build()?.workers(), 0);
    /// # Ok::<(), keel_pool::BuildError>(())
    /// ```
    pub fn workers(&self) -> usize {
        self.handles.len()
    }

    /// The settings this pool runs with.
    ///
    /// ```
    /// use keel_pool::{Pool, Source};
    /// use std::time::Duration;
    ///
    /// let pool = Pool::builder().width(2).spin_window(Duration::ZERO).build()?;
    /// let config = pool.config();
    /// assert_eq!((config.width, config.width_source), (2, Source::Builder));
    /// assert_eq!((config.spin, config.spin_source), (Duration::ZERO, Source::Builder));
    /// # Ok::<(), keel_pool::BuildError>(())
    /// ```
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The index of the calling thread among this pool's workers, if it is
    /// one of them.
    ///
    /// ```
    /// use keel_pool::Pool;
    /// use std::sync::Mutex;
    ///
    /// let pool = Pool::builder().width(2).build()?;
    /// assert_eq!(pool.current_worker(), None);
    /// let seen = Mutex::new(Vec::new());
    /// pool.broadcast(|w| seen.lock().unwrap().push((w, pool.current_worker())));
    /// assert_eq!(seen.into_inner().unwrap(), [(0, Some(0))]);
    /// # Ok::<(), keel_pool::BuildError>(())
    /// ```
    pub fn current_worker(&self) -> Option<usize> {
        worker::current_index(&self.shared)
    }

    /// Runs jobs `0..k`, each exactly once, and returns when all have
    /// finished. The calling thread runs jobs too. Up to `min(k, width())`
    /// hands work on it. If a job panics, the other jobs still run and the
    /// first panic resumes here afterwards. Calling `run` from inside a job
    /// is fine: the inner batch is run by its caller and any free workers.
    ///
    /// ```
    /// use keel_pool::Pool;
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    ///
    /// let pool = Pool::builder().width(2).build()?;
    /// let hits: Vec<AtomicUsize> = (0..8).map(|_| AtomicUsize::new(0)).collect();
    /// pool.run(8, |i| {
    ///     hits[i].fetch_add(1, Ordering::Relaxed);
    /// });
    /// assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
    /// # Ok::<(), keel_pool::BuildError>(())
    /// ```
    pub fn run<F: Fn(usize) + Sync>(&self, k: usize, f: F) {
        let r = self.execute(usize::MAX, k, Kind::Jobs, None, &|_, i| f(i), None);
        debug_assert!(r.is_ok());
    }

    /// [`Pool::run`] with at most `width` hands (0 is taken as 1): the
    /// per-operation cap for work that stops scaling past a few threads.
    ///
    /// ```
    /// use keel_pool::Pool;
    /// use std::collections::HashSet;
    /// use std::sync::Mutex;
    ///
    /// let pool = Pool::builder().width(4).build()?;
    /// let threads = Mutex::new(HashSet::new());
    /// pool.run_with(2, 100, |_| {
    ///     threads.lock().unwrap().insert(std::thread::current().id());
    /// });
    /// assert!(threads.into_inner().unwrap().len() <= 2);
    /// // One hand: the calling thread runs every job.
    /// pool.run_with(1, 10, |_| assert_eq!(pool.current_worker(), None));
    /// # Ok::<(), keel_pool::BuildError>(())
    /// ```
    pub fn run_with<F: Fn(usize) + Sync>(&self, width: usize, k: usize, f: F) {
        let r = self.execute(width.max(1), k, Kind::Jobs, None, &|_, i| f(i), None);
        debug_assert!(r.is_ok());
    }

    /// Calls `f` on consecutive ranges of `0..len` of `morsel` items (the
    /// last may be shorter; 0 is taken as 1), each exactly once, claimed
    /// from one atomic counter so faster hands take more.
    pub fn for_each_morsel<F: Fn(std::ops::Range<usize>) + Sync>(
        &self,
        len: usize,
        morsel: usize,
        f: F,
    ) {
        let r = self.batch().for_each_morsel(len, morsel, f);
        debug_assert!(r.is_ok());
    }

    /// The hands a batch of `k` jobs capped at `width` has: what
    /// `execute` computes.
    pub(crate) fn hands_for(&self, width: usize, k: usize) -> usize {
        if k > usize::MAX - self.width() {
            1
        } else {
            width.max(1).min(self.width()).min(k)
        }
    }

    /// Options for one batch: width cap, cancellation.
    ///
    /// ```
    /// use keel_pool::{Cancel, Pool};
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    ///
    /// let pool = Pool::builder().width(4).build()?;
    /// let cancel = Cancel::new();
    /// // Options are `Copy`: one set serves several batches.
    /// let options = pool.batch().width(2).cancel(&cancel);
    /// let n = AtomicUsize::new(0);
    /// options.run(8, |_| {
    ///     n.fetch_add(1, Ordering::Relaxed);
    /// })?;
    /// options.for_each_morsel(100, 10, |r| {
    ///     n.fetch_add(r.len(), Ordering::Relaxed);
    /// })?;
    /// assert_eq!(n.into_inner(), 108);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn batch(&self) -> BatchOptions<'_> {
        BatchOptions {
            pool: self,
            width: usize::MAX,
            cancel: None,
        }
    }

    /// Runs `f(worker_index)` once on every worker thread (not on the
    /// calling thread, unless it is itself a worker of this pool) and
    /// returns when all have run: per-worker set-up. A worker busy with a
    /// job takes the call when the job ends. Only a call broadcast from a
    /// job of this pool can run earlier, while its worker waits inside a
    /// job for a batch of its own (a nested one, or its own broadcast):
    /// waiting for the job to end could deadlock there.
    ///
    /// ```
    /// use keel_pool::Pool;
    /// use std::sync::Mutex;
    ///
    /// let pool = Pool::builder().width(3).build()?;
    /// let seen = Mutex::new(Vec::new());
    /// pool.broadcast(|w| seen.lock().unwrap().push(w));
    /// let mut seen = seen.into_inner().unwrap();
    /// seen.sort();
    /// assert_eq!(seen, vec![0, 1]);
    /// # Ok::<(), keel_pool::BuildError>(())
    /// ```
    pub fn broadcast<F: Fn(usize) + Sync>(&self, f: F) {
        let n = self.workers();
        if n == 0 {
            return;
        }
        let me = self.current_worker();
        let others = n - usize::from(me.is_some());
        let counters = &self.shared.sleep.counters;
        counters.batches.add(1);
        counters.jobs.add(n as u64);
        let call = |_: usize, w: usize| f(w);
        let b = BatchCore::new(&call, n, Kind::PerWorker, others + 1, None);
        if others > 0 {
            // SAFETY: `b` counts one hand per target plus ours, and we wait
            // on its latch below before it goes out of scope. Broadcast
            // tickets are never retracted: every target takes its own.
            unsafe {
                self.shared.sleep.submit_private(
                    BatchRef::new(&b),
                    (0..n).filter(|&w| Some(w) != me),
                    me.is_some(),
                )
            };
        }
        if let Some(w) = me {
            b.work(w, w);
        }
        // SAFETY: our own hand on our own live batch.
        unsafe { latch::CompletionLatch::release(&b.latch) };
        self.wait(&b);
        b.resume_panic();
    }

    /// A snapshot of the counters.
    ///
    /// ```
    /// use keel_pool::Pool;
    ///
    /// let pool = Pool::builder().width(2).build()?;
    /// let before = pool.stats();
    /// pool.run(5, |_| {});
    /// let after = pool.stats();
    /// assert_eq!(after.batches, before.batches + 1);
    /// assert_eq!(after.jobs, before.jobs + 5);
    /// # Ok::<(), keel_pool::BuildError>(())
    /// ```
    pub fn stats(&self) -> Stats {
        self.shared.sleep.counters.snapshot()
    }

    /// Workers whose binding failed, with the reason (empty when binding is
    /// off or every worker bound itself); complete once `build` has
    /// returned. A worker that could not bind runs unbound.
    ///
    /// ```
    /// use keel_pool::{Binding, Pool};
    ///
    /// let pool = Pool::builder().width(2).binding(Binding::Close).build()?;
    /// for (worker, why) in pool.binding_failures() {
    ///     eprintln!("worker {worker} runs unbound: {why}");
    /// }
    /// # Ok::<(), keel_pool::BuildError>(())
    /// ```
    #[cfg(feature = "topology")]
    pub fn binding_failures(&self) -> Vec<(usize, BindError)> {
        lock(&self.shared.binding)
            .iter()
            .enumerate()
            .filter_map(|(w, o)| match o {
                Some(Err(e)) => Some((w, e.clone())),
                _ => None,
            })
            .collect()
    }

    /// Runs one batch of `k` jobs (or calls) with at most `width` hands;
    /// `more` says whether a `PerHand` batch has work left for a new hand.
    fn execute(
        &self,
        width: usize,
        k: usize,
        kind: Kind,
        cancel: Option<&Cancel>,
        f: &(dyn Fn(usize, usize) + Sync),
        more: Option<&(dyn Fn() -> bool + Sync)>,
    ) -> Result<(), Cancelled> {
        if k == 0 {
            return Ok(());
        }
        let sleep = &self.shared.sleep;
        sleep.counters.batches.add(1);
        sleep.counters.jobs.add(k as u64);
        // The claim counter reaches k + hands - 1: keep it below usize::MAX.
        let hands = self.hands_for(width, k);
        let mut b = BatchCore::new(f, k, kind, hands, cancel);
        if let Some(m) = more {
            b = b.with_more(m);
        }
        // We withdraw the offer, take back the unclaimed tickets and wait on
        // the latch before `b` goes out of scope; nothing between here and
        // there unwinds (jobs run under catch_unwind).
        let offer = if hands > 1 {
            // SAFETY: `b` counts `hands - 1` tickets plus our hand and
            // outlives every ticket (above).
            let offer = unsafe { sleep.offer(&b, hands - 1) };
            match offer {
                Some(_) => sleep.wake_for(&b),
                // No free offer slot: our hand runs every job.
                None => b.latch.retract(hands - 1),
            }
            offer
        } else {
            None
        };
        b.work(0, usize::MAX);
        if let Some(o) = offer {
            sleep.withdraw(&b, o);
        }
        // SAFETY: our own hand on our own live batch.
        unsafe { latch::CompletionLatch::release(&b.latch) };
        self.wait(&b);
        b.resume_panic();
        if b.was_cancelled() {
            Err(Cancelled)
        } else {
            Ok(())
        }
    }

    /// Waits for `b`'s latch, spinning first, and counts what it cost.
    fn wait(&self, b: &BatchCore<'_>) {
        let out = if b.latch.is_done() {
            latch::WaitOutcome::default()
        } else if let Some(w) = self.current_worker() {
            self.shared.sleep.wait_serving(b, w)
        } else {
            b.latch.wait(self.shared.sleep.window)
        };
        let c = &self.shared.sleep.counters;
        if out.spin_ns > 0 {
            c.submitter_spin_ns.add(out.spin_ns);
        }
        if out.parked {
            c.submitter_parks.add(1);
        }
    }
}

impl Drop for Pool {
    /// Wakes every worker and joins it. No batch can be in flight (every
    /// batch borrows the pool), so the queue is empty; workers finishing the
    /// tail of a spin or a latch release simply see the shutdown next.
    fn drop(&mut self) {
        self.shared.sleep.shutdown();
        let me = thread::current().id();
        for h in self.handles.drain(..) {
            // A pool dropped from one of its own jobs cannot join that
            // worker; it exits by itself after the job.
            if h.thread().id() != me {
                let _ = h.join();
            }
        }
    }
}

// Public types that are shared with, or sent to, other threads: a pool is
// used from many submitters, a Cancel flag from every hand, and errors and
// reports travel in `Box<dyn Error + Send + Sync>` and across joins.
static_assertions::assert_impl_all!(Pool: Send, Sync);
static_assertions::assert_impl_all!(BatchOptions<'static>: Send, Sync);
static_assertions::assert_impl_all!(Builder: Send, Sync);
static_assertions::assert_impl_all!(Cancel: Send, Sync);
static_assertions::assert_impl_all!(Cancelled: Send, Sync);
static_assertions::assert_impl_all!(BuildError: Send, Sync);
static_assertions::assert_impl_all!(Config: Send, Sync);
static_assertions::assert_impl_all!(Stats: Send, Sync);
static_assertions::assert_impl_all!(settings::Settings: Send, Sync);
static_assertions::assert_impl_all!(settings::SettingError: Send, Sync);
#[cfg(feature = "topology")]
static_assertions::assert_impl_all!(BindError: Send, Sync);

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
