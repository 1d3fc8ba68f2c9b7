//! The process-wide tuning knobs: a leaf the GC, the decay and the checks
//! read on entry (a change only wakes the decay thread).

use crate::sync::plain::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// Tuning knobs; see [`configure`].
///
/// ```
/// use keel_heap::Options;
/// let d = Options::default();
/// assert_eq!((d.purge_every, d.min_free_gcs, d.decay_ms), (16, 3, 1000));
/// assert_eq!((d.release_budget, d.pool_budget), (64 << 20, 256 << 20));
/// assert!(d.decay_thread && !d.checker);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// The page-release pass runs on one GC in this many (default 16; 1 =
    /// release on every GC, which measured 21% slower on the repeated query:
    /// the next query re-faults the pages just released).
    pub purge_every: u32,
    /// A free block's pages are released only after it stayed free across
    /// this many GCs (default 3).
    pub min_free_gcs: u32,
    /// Bytes released per GC call at most (default 64 MiB).
    pub release_budget: usize,
    /// Bytes of freed direct maps kept for reuse (default 256 MiB).
    pub pool_budget: usize,
    /// Idle decay: memory that has stayed free this long (empty slabs, free
    /// buddy blocks, pooled direct maps) is returned to the OS by the
    /// allocator's next slow path, whatever else the thread allocates; no
    /// `gc()` call is needed (default 1000 ms; 0 disables decay). Times come
    /// from the coarse monotonic clock (a few ms granularity).
    pub decay_ms: u64,
    /// The decay thread (Linux with `std`; default on): one detached thread
    /// per process, named `keel-decay`, started with the first direct map
    /// pooled while decay is on, returns pooled maps and exited threads'
    /// heaps by age when no slow path comes. Off, no thread is started (for
    /// a program that must stay single-threaded, as one calling
    /// `unshare(CLONE_NEWUSER)` must, or a sandbox counting threads) and
    /// decay still runs on the slow paths; a thread already started then
    /// sleeps until the option comes back on.
    pub decay_thread: bool,
    /// The full checker in release builds too (debug builds always run
    /// it): the heap checker at every GC entry, every free looked up on
    /// its slab's free list, and a line for each pointer freed that
    /// keel-heap does not own. (The cheap double- and interior-free checks
    /// are always on.)
    pub checker: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            purge_every: 16,
            min_free_gcs: 3,
            release_budget: 64 << 20,
            pool_budget: 256 << 20,
            decay_ms: 1000,
            decay_thread: true,
            checker: false,
        }
    }
}

static OPT_PURGE: AtomicU64 = AtomicU64::new(16);
static OPT_MIN_AGE: AtomicU64 = AtomicU64::new(3);
static OPT_BUDGET: AtomicUsize = AtomicUsize::new(64 << 20);
static OPT_POOL: AtomicUsize = AtomicUsize::new(256 << 20);
static OPT_DECAY: AtomicU64 = AtomicU64::new(1000);
static OPT_DECAY_THREAD: AtomicBool = AtomicBool::new(true);
static OPT_CHECKER: AtomicBool = AtomicBool::new(false);
/// Bumped by every [`configure`], so heaps recompute deadlines taken under
/// older options.
static OPT_GEN: AtomicU32 = AtomicU32::new(0);

/// Whether [`Options::checker`] is on (read on the report paths).
#[inline]
pub(crate) fn checker_on() -> bool {
    OPT_CHECKER.load(Ordering::Relaxed)
}

#[inline]
pub(crate) fn options_decay_ms() -> u64 {
    OPT_DECAY.load(Ordering::Relaxed)
}

/// Whether [`Options::decay_thread`] is on.
#[inline]
pub(crate) fn decay_thread_on() -> bool {
    OPT_DECAY_THREAD.load(Ordering::Relaxed)
}

#[inline]
pub(crate) fn options_generation() -> u32 {
    OPT_GEN.load(Ordering::Relaxed)
}

/// Sets the process-wide options (any time; GCs read them on entry).
///
/// ```
/// keel_heap::configure(keel_heap::Options { purge_every: 8, ..keel_heap::options() });
/// assert_eq!(keel_heap::options().purge_every, 8);
/// # keel_heap::configure(keel_heap::Options::default());
/// ```
pub fn configure(o: Options) {
    OPT_PURGE.store(o.purge_every.max(1) as u64, Ordering::Relaxed);
    OPT_MIN_AGE.store(o.min_free_gcs as u64, Ordering::Relaxed);
    OPT_BUDGET.store(o.release_budget, Ordering::Relaxed);
    OPT_POOL.store(o.pool_budget, Ordering::Relaxed);
    OPT_DECAY.store(o.decay_ms, Ordering::Relaxed);
    OPT_DECAY_THREAD.store(o.decay_thread, Ordering::Relaxed);
    OPT_CHECKER.store(o.checker, Ordering::Relaxed);
    OPT_GEN.fetch_add(1, Ordering::Relaxed);
    // A decay thread asleep under the old options reads the new ones.
    crate::pool::thread::wake();
}

/// The current options.
///
/// ```standalone_crate
/// use keel_heap::{Options, configure, options};
/// let old = options();
/// configure(Options { purge_every: 0, ..old }); // read back as 1: every GC
/// assert_eq!(options().purge_every, 1);
/// configure(old);
/// ```
pub fn options() -> Options {
    Options {
        purge_every: OPT_PURGE.load(Ordering::Relaxed) as u32,
        min_free_gcs: OPT_MIN_AGE.load(Ordering::Relaxed) as u32,
        release_budget: OPT_BUDGET.load(Ordering::Relaxed),
        pool_budget: OPT_POOL.load(Ordering::Relaxed),
        decay_ms: OPT_DECAY.load(Ordering::Relaxed),
        decay_thread: OPT_DECAY_THREAD.load(Ordering::Relaxed),
        checker: OPT_CHECKER.load(Ordering::Relaxed),
    }
}
