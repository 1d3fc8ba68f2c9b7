//! keel-pool: a fork-join pool for analytical engines.
//!
//! A fixed set of workers runs *batches*: `pool.run(k, |i| ..)` runs jobs
//! `0..k` and returns when all have finished, with the calling thread as one
//! of the hands. A batch goes into the queue under one lock acquisition and
//! wakes only as many parked workers as it can keep busy; workers that run
//! out of work spin for a bounded window (100 µs by default) and then park,
//! so an idle pool burns no CPU. The width defaults to the physical core
//! count. The protocol and its memory orderings are in `src/sleep/README.md`.
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
mod latch;
mod morsel;
mod queue;
mod sleep;
mod sync;
mod unwind;
mod worker;

#[cfg(feature = "topology")]
pub use affinity::{Binding, current_cpus, places, plan};
#[cfg(feature = "topology")]
pub use keel_topology::Topology;

use batch::{BatchCore, BatchRef, Kind};
use sleep::Sleep;
use std::fmt;
use std::time::Duration;
use sync::{Arc, AtomicBool, Mutex, Ordering, lock, thread};

/// The environment variable that sets the pool width (hands, the calling
/// thread included) when the builder does not.
pub const ENV_WORKERS: &str = "KEEL_WORKERS";
/// The environment variable that sets the spin window in microseconds when
/// the builder does not (`0` parks at once).
pub const ENV_SPIN_US: &str = "KEEL_SPIN_US";
/// The default spin window: long enough to cover a wakeup's cost, short
/// enough that an idle pool stops burning CPU within a tenth of a millisecond.
pub const DEFAULT_SPIN: Duration = Duration::from_micros(100);
/// The widest pool [`Builder::build`] makes: far above any machine's CPU
/// count (Linux's `NR_CPUS` tops out at 8192), and low enough that the
/// per-worker tables are small and a batch's hand count cannot overflow its
/// latch. A wider request is [`BuildError::TooWide`].
pub const MAX_WIDTH: usize = 1 << 16;
/// A width read from the environment is capped at this many hands per usable
/// CPU (with a note in [`Config::notes`]): oversubscribing a few times over
/// can suit hands that block, but a typo such as `KEEL_WORKERS=65536` must
/// not start tens of thousands of threads. The builder's own
/// [`Builder::width`] is taken as asked, up to [`MAX_WIDTH`].
pub const ENV_WIDTH_PER_CPU: usize = 4;

/// What workers share.
pub(crate) struct Shared {
    pub(crate) sleep: Sleep,
    /// Per worker: the outcome of binding, when binding was asked for.
    pub(crate) binding: Mutex<Vec<Option<Result<(), String>>>>,
}

/// A flag that cancels the batches it is given to: once set, hands claim no
/// new job or morsel, and the batch returns `Err(Cancelled)`. Jobs can poll
/// it to stop early themselves.
///
/// ```
/// use keel_pool::{Cancel, Cancelled, Pool};
///
/// let pool = Pool::builder().width(2).build()?;
/// let cancel = Cancel::new();
/// let r = pool.batch().cancel(&cancel).run(1000, |i| {
///     if i == 10 {
///         cancel.cancel();
///     }
/// });
/// assert_eq!(r, Err(Cancelled));
/// # Ok::<(), keel_pool::BuildError>(())
/// ```
#[derive(Debug, Default)]
pub struct Cancel(AtomicBool);

impl Cancel {
    /// A flag that is not set.
    pub fn new() -> Self {
        Cancel(AtomicBool::new(false))
    }

    /// Sets the flag.
    pub fn cancel(&self) {
        // Release: work done before cancelling is visible to whoever sees it.
        self.0.store(true, Ordering::Release);
    }

    /// Whether the flag is set.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    /// Clears the flag, to reuse it for another batch.
    pub fn reset(&self) {
        self.0.store(false, Ordering::Release);
    }
}

/// A batch stopped early because its [`Cancel`] flag was set: some jobs or
/// morsels never ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cancelled;

impl fmt::Display for Cancelled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("batch cancelled before all of its jobs ran")
    }
}

impl std::error::Error for Cancelled {}

/// Why a pool could not be built.
#[derive(Debug)]
pub enum BuildError {
    /// A width of 0 was asked for; the smallest pool has width 1 (the
    /// calling thread alone).
    ZeroWidth,
    /// The thread name prefix contains a NUL byte, which no OS thread name
    /// can hold.
    ThreadName {
        /// The prefix given to [`Builder::thread_name`].
        prefix: String,
    },
    /// A width above [`MAX_WIDTH`] was asked for.
    TooWide {
        /// The width asked for.
        width: usize,
        /// The largest width a pool can have ([`MAX_WIDTH`]).
        max: usize,
    },
    /// The OS refused to start worker `index` (a thread limit such as
    /// `RLIMIT_NPROC`, or memory). The workers started before it have been
    /// joined when `build` returns this.
    Spawn {
        /// The worker that did not start.
        index: usize,
        /// What the OS said.
        error: std::io::Error,
    },
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::ZeroWidth => {
                f.write_str("pool width must be at least 1 (the calling thread)")
            }
            BuildError::TooWide { width, max } => {
                write!(f, "pool width {width} is above the maximum of {max}")
            }
            BuildError::ThreadName { prefix } => {
                write!(f, "thread name prefix {prefix:?} contains a NUL byte")
            }
            BuildError::Spawn { index, error } => {
                write!(f, "could not start worker {index}: {error}")
            }
        }
    }
}

impl std::error::Error for BuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BuildError::Spawn { error, .. } => Some(error),
            BuildError::ZeroWidth | BuildError::TooWide { .. } | BuildError::ThreadName { .. } => {
                None
            }
        }
    }
}

/// Where a setting came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// Set on the [`Builder`].
    Builder,
    /// Read from the environment ([`ENV_WORKERS`], [`ENV_SPIN_US`]).
    Env,
    /// The topology's physical cores (`Topology::workers_for(Work::Bandwidth)`).
    Topology,
    /// `std::thread::available_parallelism` (no topology).
    AvailableParallelism,
    /// The built-in default.
    Default,
}

/// The settings a pool runs with, and where each came from.
#[derive(Clone, Debug)]
pub struct Config {
    /// Hands, the calling thread included: `width - 1` worker threads.
    pub width: usize,
    /// Where `width` came from.
    pub width_source: Source,
    /// Spin window of idle workers and of waiting submitters.
    pub spin: Duration,
    /// Where `spin` came from.
    pub spin_source: Source,
    /// Worker binding.
    #[cfg(feature = "topology")]
    pub binding: Binding,
    /// Settings that were ignored and why (an unparsable environment
    /// variable, for example).
    pub notes: Vec<String>,
}

/// A snapshot of a pool's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Batches run (including broadcasts and morsel loops).
    pub batches: u64,
    /// Jobs in those batches (morsel loops count one job per hand).
    pub jobs: u64,
    /// Parked workers woken by a submit, broadcast or drop.
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
}

/// Configures and builds a [`Pool`].
///
/// ```
/// use keel_pool::Pool;
/// use std::time::Duration;
///
/// let pool = Pool::builder()
///     .width(2)
///     .spin_window(Duration::from_micros(50))
///     .build()?;
/// assert_eq!(pool.width(), 2);
/// assert_eq!(pool.workers(), 1);
/// # Ok::<(), keel_pool::BuildError>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Builder {
    width: Option<usize>,
    spin: Option<Duration>,
    thread_name: Option<String>,
    #[cfg(feature = "topology")]
    binding: Binding,
    #[cfg(feature = "topology")]
    topology: Option<Topology>,
}

impl Builder {
    /// A builder with every setting at its default.
    pub fn new() -> Self {
        Builder::default()
    }

    /// Hands, the calling thread included (`width - 1` worker threads; 1
    /// starts no thread at all). Overrides [`ENV_WORKERS`] and the topology.
    /// `build` refuses 0 and anything above [`MAX_WIDTH`]; a width from
    /// [`ENV_WORKERS`] is capped at [`ENV_WIDTH_PER_CPU`] hands per usable
    /// CPU instead.
    pub fn width(mut self, width: usize) -> Self {
        self.width = Some(width);
        self
    }

    /// How long an idle worker, or a submitter waiting for its batch, spins
    /// before it parks (0 parks at once). Overrides [`ENV_SPIN_US`].
    pub fn spin_window(mut self, window: Duration) -> Self {
        self.spin = Some(window);
        self
    }

    /// Worker thread names are `{prefix}-{index}` (default `keel-pool`);
    /// `build` refuses a prefix with a NUL byte.
    pub fn thread_name(mut self, prefix: impl Into<String>) -> Self {
        self.thread_name = Some(prefix.into());
        self
    }

    /// Binds each worker to CPUs of the topology's cores (default
    /// [`Binding::None`]).
    #[cfg(feature = "topology")]
    pub fn binding(mut self, binding: Binding) -> Self {
        self.binding = binding;
        self
    }

    /// The topology to size and bind the pool from, instead of detecting it.
    #[cfg(feature = "topology")]
    pub fn topology(mut self, topology: Topology) -> Self {
        self.topology = Some(topology);
        self
    }

    /// Starts the workers.
    pub fn build(self) -> Result<Pool, BuildError> {
        let mut notes = Vec::new();
        #[cfg(feature = "topology")]
        let topology = self.topology.clone().or_else(|| {
            (self.width.is_none() || self.binding != Binding::None).then(detect_topology)
        });
        let (width, width_source) = match self.width {
            Some(0) => return Err(BuildError::ZeroWidth),
            Some(width) if width > MAX_WIDTH => {
                return Err(BuildError::TooWide {
                    width,
                    max: MAX_WIDTH,
                });
            }
            Some(w) => (w, Source::Builder),
            None => match env_usize(ENV_WORKERS, &mut notes) {
                Some(0) => {
                    notes.push(format!("{ENV_WORKERS}=0 ignored: the width is at least 1"));
                    default_width(
                        #[cfg(feature = "topology")]
                        topology.as_ref(),
                    )
                }
                Some(w) => {
                    let cpus = usable_cpus(
                        #[cfg(feature = "topology")]
                        topology.as_ref(),
                    );
                    let cap = cpus.saturating_mul(ENV_WIDTH_PER_CPU).min(MAX_WIDTH);
                    if w > cap {
                        notes.push(format!(
                            "{ENV_WORKERS}={w} capped at {cap}: at most {ENV_WIDTH_PER_CPU} hands per usable CPU ({cpus}) from the environment"
                        ));
                        (cap, Source::Env)
                    } else {
                        (w, Source::Env)
                    }
                }
                None => default_width(
                    #[cfg(feature = "topology")]
                    topology.as_ref(),
                ),
            },
        };
        let (spin, spin_source) = match self.spin {
            Some(s) => (s, Source::Builder),
            None => match env_usize(ENV_SPIN_US, &mut notes) {
                Some(us) => (Duration::from_micros(us as u64), Source::Env),
                None => (DEFAULT_SPIN, Source::Default),
            },
        };
        let workers = width - 1;
        #[cfg(feature = "topology")]
        let mut plan = match &topology {
            Some(t) => affinity::plan(t, self.binding, workers),
            None => vec![None; workers],
        }
        .into_iter();
        let shared = Arc::new(Shared {
            sleep: Sleep::new(workers, spin),
            binding: Mutex::new(vec![None; workers]),
        });
        let prefix = self.thread_name.unwrap_or_else(|| "keel-pool".to_string());
        // std panics on a thread name with a NUL byte; refuse it up front.
        if prefix.contains('\0') {
            return Err(BuildError::ThreadName { prefix });
        }
        let mut handles = Vec::with_capacity(workers);
        // Spawned with no lock held: a spawn is slow, and holding the queue
        // through it would stall workers already dequeuing.
        for index in 0..workers {
            let start = worker::Start {
                index,
                #[cfg(feature = "topology")]
                bind: plan.next().flatten(),
            };
            let s = shared.clone();
            let spawned = thread::Builder::new()
                .name(format!("{prefix}-{index}"))
                .spawn(move || worker::main(s, start));
            match spawned {
                Ok(h) => handles.push(h),
                Err(error) => {
                    shared.sleep.shutdown();
                    for h in handles {
                        let _ = h.join();
                    }
                    return Err(BuildError::Spawn { index, error });
                }
            }
        }
        let pool = Pool {
            shared,
            handles,
            config: Config {
                width,
                width_source,
                spin,
                spin_source,
                #[cfg(feature = "topology")]
                binding: self.binding,
                notes,
            },
        };
        // Each worker binds itself before it takes its first ticket, so once
        // every worker has run a broadcast call its outcome is recorded, and
        // `binding_failures` is complete when `build` returns.
        #[cfg(feature = "topology")]
        if self.binding != Binding::None {
            pool.broadcast(|_| {});
        }
        Ok(pool)
    }
}

#[cfg(feature = "topology")]
fn detect_topology() -> Topology {
    Topology::detect()
}

/// The default width and where it came from, at most [`MAX_WIDTH`] (a
/// recorded or hostile sysfs tree may list up to 2^20 CPUs).
fn default_width(#[cfg(feature = "topology")] topology: Option<&Topology>) -> (usize, Source) {
    #[cfg(feature = "topology")]
    if let Some(t) = topology {
        if !t.cores().is_empty() {
            return (
                t.workers_for(keel_topology::Work::Bandwidth).min(MAX_WIDTH),
                Source::Topology,
            );
        }
    }
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    (n.min(MAX_WIDTH), Source::AvailableParallelism)
}

/// The CPUs this process may use: the topology's usable CPUs, else
/// `available_parallelism` (which also honours the affinity mask).
fn usable_cpus(#[cfg(feature = "topology")] topology: Option<&Topology>) -> usize {
    #[cfg(feature = "topology")]
    if let Some(t) = topology {
        let n = t.usable_cpus().len();
        if n > 0 {
            return n;
        }
    }
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Reads a non-negative integer from the environment; an unparsable value
/// is ignored with a note.
fn env_usize(name: &str, notes: &mut Vec<String>) -> Option<usize> {
    let v = std::env::var(name).ok()?;
    match v.trim().parse::<usize>() {
        Ok(n) => Some(n),
        Err(e) => {
            notes.push(format!("{name}={v:?} ignored: {e}"));
            None
        }
    }
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

/// Options for one batch: a cap on its hands and a cancellation flag.
#[derive(Clone, Copy)]
pub struct BatchOptions<'a> {
    pool: &'a Pool,
    width: usize,
    cancel: Option<&'a Cancel>,
}

impl<'a> BatchOptions<'a> {
    /// At most `width` hands (the calling thread included) work on this
    /// batch; 0 is taken as 1. A latency-bound operator may ask for more than
    /// the bandwidth default only if the pool was built that wide.
    pub fn width(mut self, width: usize) -> Self {
        self.width = width.max(1);
        self
    }

    /// Observe `cancel`: once set, no new job or morsel starts.
    pub fn cancel(mut self, cancel: &'a Cancel) -> Self {
        self.cancel = Some(cancel);
        self
    }

    /// Runs jobs `0..k` (see [`Pool::run`]); `Err(Cancelled)` if the flag
    /// stopped some from running.
    pub fn run<F: Fn(usize) + Sync>(self, k: usize, f: F) -> Result<(), Cancelled> {
        self.pool
            .execute(self.width, k, Kind::Jobs, self.cancel, &f)
    }

    /// Runs `f` over morsels of `0..len` (see [`Pool::for_each_morsel`]);
    /// `Err(Cancelled)` if the flag stopped some morsels from running.
    pub fn for_each_morsel<F: Fn(std::ops::Range<usize>) + Sync>(
        self,
        len: usize,
        morsel: usize,
        f: F,
    ) -> Result<(), Cancelled> {
        let m = morsel::Morsels::new(len, morsel);
        if m.count() == 0 {
            return Ok(());
        }
        let cancel = self.cancel;
        let stopped = AtomicBool::new(false);
        let panics = unwind::PanicSlot::new();
        // One job per hand; each loops over claims. A panicking morsel is
        // kept and the loop goes on, so the other morsels still run.
        let hand = |_: usize| {
            while !cancel.is_some_and(Cancel::is_cancelled) {
                match m.claim() {
                    Some(r) => panics.run(|| f(r)),
                    None => return,
                }
            }
            stopped.store(true, Ordering::Relaxed);
        };
        // Keep the claim counter (at most count + hands) below usize::MAX.
        let hands = if m.count() > usize::MAX / 2 {
            1
        } else {
            m.count()
        };
        let width = self.width.min(hands);
        let r = self.pool.execute(width, width, Kind::Jobs, None, &hand);
        panics.resume_if_any();
        debug_assert!(r.is_ok());
        if stopped.load(Ordering::Relaxed) && !m.all_claimed() {
            Err(Cancelled)
        } else {
            Ok(())
        }
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
    pub fn workers(&self) -> usize {
        self.handles.len()
    }

    /// The settings this pool runs with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The index of the calling thread among this pool's workers, if it is
    /// one of them.
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
        let r = self.execute(usize::MAX, k, Kind::Jobs, None, &f);
        debug_assert!(r.is_ok());
    }

    /// [`Pool::run`] with at most `width` hands (0 is taken as 1): the
    /// per-operation cap for work that stops scaling past a few threads.
    pub fn run_with<F: Fn(usize) + Sync>(&self, width: usize, k: usize, f: F) {
        let r = self.execute(width.max(1), k, Kind::Jobs, None, &f);
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

    /// Options for one batch: width cap, cancellation.
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
        let b = BatchCore::new(&f, n, Kind::PerWorker, others + 1, None);
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
            b.work(w);
        }
        // SAFETY: our own hand on our own live batch.
        unsafe { latch::CompletionLatch::release(&b.latch) };
        self.wait(&b);
        b.resume_panic();
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> Stats {
        let c = &self.shared.sleep.counters;
        Stats {
            batches: c.batches.get(),
            jobs: c.jobs.get(),
            wakes: c.wakes.get(),
            parks: c.parks.get(),
            spins_found_work: c.spins_found_work.get(),
            spin_time: Duration::from_nanos(c.spin_ns.get()),
            submitter_parks: c.submitter_parks.get(),
            submitter_spin_time: Duration::from_nanos(c.submitter_spin_ns.get()),
        }
    }

    /// Workers whose binding failed, with the reason (empty when binding is
    /// off or every worker bound itself); complete once `build` has
    /// returned. A worker that could not bind runs unbound.
    pub fn binding_failures(&self) -> Vec<(usize, String)> {
        lock(&self.shared.binding)
            .iter()
            .enumerate()
            .filter_map(|(w, o)| match o {
                Some(Err(e)) => Some((w, e.clone())),
                _ => None,
            })
            .collect()
    }

    /// Runs one batch of `k` jobs with at most `width` hands.
    fn execute(
        &self,
        width: usize,
        k: usize,
        kind: Kind,
        cancel: Option<&Cancel>,
        f: &(dyn Fn(usize) + Sync),
    ) -> Result<(), Cancelled> {
        if k == 0 {
            return Ok(());
        }
        let counters = &self.shared.sleep.counters;
        counters.batches.add(1);
        counters.jobs.add(k as u64);
        // The claim counter reaches k + hands - 1: keep it below usize::MAX.
        let hands = if k > usize::MAX - self.width() {
            1
        } else {
            width.min(self.width()).min(k)
        };
        let b = BatchCore::new(f, k, kind, hands, cancel);
        if hands > 1 {
            // We retract the untaken tickets and wait on the latch before
            // `b` goes out of scope; nothing between here and there unwinds
            // (jobs run under catch_unwind).
            // SAFETY: `b` counts `hands - 1` tickets plus our hand and
            // outlives every ticket (above).
            unsafe { self.shared.sleep.submit(BatchRef::new(&b), hands - 1) };
        }
        b.work(usize::MAX);
        if hands > 1 {
            self.shared.sleep.retract(&b);
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
            self.wait_serving(b, w)
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

impl Pool {
    /// Worker `w` waits for `b`'s latch from inside a job (a nested batch or
    /// broadcast) and meanwhile runs the broadcast calls that jobs of this
    /// pool addressed to it: they need this very worker, and their
    /// broadcaster may be a hand `b` waits for, so waiting without serving
    /// them could deadlock. Calls broadcast from outside the pool wait until
    /// the job ends: they cannot be part of such a cycle, and running them
    /// in the middle of a job could meet locks or borrows the job holds.
    fn wait_serving(&self, b: &BatchCore<'_>, w: usize) -> latch::WaitOutcome {
        let sleep = &self.shared.sleep;
        let mut out = latch::WaitOutcome::default();
        let mut spun = false;
        loop {
            if sleep.has_job_mail(w) {
                if let Some(t) = sleep.take_from_job(w, false) {
                    // SAFETY: a private ticket taken under the lock is
                    // counted in its batch's latch and not yet released.
                    unsafe { t.run_hand(w) };
                    continue;
                }
            }
            if b.latch.is_done() {
                return out;
            }
            if !spun {
                spun = true;
                out.spin_ns = b.latch.spin(sleep.window, || sleep.has_job_mail(w));
                continue;
            }
            // The last check for a private ticket and the registration for
            // a wakeup are one lock hold, as a parking worker's are.
            if let Some(t) = sleep.take_from_job(w, true) {
                // SAFETY: as above.
                unsafe { t.run_hand(w) };
                continue;
            }
            out.parked = true;
            if b.latch.park(|| sleep.has_job_mail(w)) {
                sleep.stop_serving(w);
                return out;
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn _assert_send_sync() {
        fn is<T: Send + Sync>() {}
        is::<Pool>();
        is::<Cancel>();
        is::<Stats>();
    }
}

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
