//! [`Runtime`]: what only composition gives — a pool sized from the
//! topology, a keel-heap `Heap` per hand, kernels run morsel-parallel.
//!
//! Every operation is one of keel-pool's morsel loops: a fold with one
//! accumulator per hand (which holds the heap lent to that hand), or a
//! reduction in the pool's fixed order where the result could depend on
//! order (float sums).

mod config;
mod hand;

pub use config::{RuntimeConfig, RuntimeError, WorkKind};
pub use hand::HandCx;
use hand::{HandState, Lent};

use keel_heap::{Heap, PlacementOutcome};
use keel_kernels::Element;
use keel_kernels::filter::Predicate;
use keel_kernels::hll::HyperLogLog;
use keel_kernels::span::{SpanKey, SpanScan};
use keel_pool::settings::Settings;
use keel_pool::{Cancel, Pool};
use keel_topology::Topology;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::vec::Vec;

/// Rows per morsel: 64 Ki rows, the zone-map chunk, big enough that the
/// claim costs nothing and small enough that fast hands take more.
///
/// ```
/// use keel_rt::{MORSEL_ROWS, Runtime, RuntimeError};
///
/// let rt = Runtime::new()?;
/// let morsels = rt.fold(
///     3 * MORSEL_ROWS + 1,
///     MORSEL_ROWS,
///     |_| 0usize,
///     |n, rows, _| {
///         assert!(rows.len() <= MORSEL_ROWS);
///         *n += 1;
///         Ok::<(), RuntimeError>(())
///     },
/// )?;
/// assert_eq!(morsels.iter().sum::<usize>(), 4);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const MORSEL_ROWS: usize = 64 * 1024;

/// A pool sized from the machine's topology, and kernels run on it.
///
/// ```
/// use keel_rt::Runtime;
///
/// let rt = Runtime::new()?;
/// let col: Vec<i64> = (0..200_000).collect();
/// assert_eq!(rt.sum(&col)?, (0..200_000i64).sum::<i64>());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Runtime {
    topology: Topology,
    pool: Pool,
    /// One heap per hand index, lent to that hand for each batch.
    heaps: Vec<Mutex<Option<Heap>>>,
    config: RuntimeConfig,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("pool", &self.pool)
            .field("heaps", &self.heaps.len())
            .finish_non_exhaustive()
    }
}

impl Runtime {
    /// Detects the machine and builds a pool of its bandwidth width
    /// (physical cores among usable CPUs, capped by the quota), and one heap
    /// per hand, with this process's settings ([`Settings::from_env`]: the
    /// `KEEL_CONFIG` file and the `KEEL_*` variables; the pool reads
    /// `KEEL_WORKERS`, `KEEL_SPIN_US` and `KEEL_BIND`, the runtime
    /// `KEEL_PLACEMENT` and `KEEL_WIDTH_*`).
    pub fn new() -> Result<Runtime, RuntimeError> {
        Runtime::with_settings(Topology::detect(), Settings::from_env())
    }

    /// [`Runtime::new`] on a given topology and settings.
    ///
    /// ```
    /// use keel_rt::{Runtime, WorkKind};
    /// use keel_rt::pool::settings::Settings;
    /// use keel_rt::topology::Topology;
    ///
    /// let s = Settings::parse("KEEL_WORKERS=2\nKEEL_WIDTH_COMPUTE=1\n");
    /// let rt = Runtime::with_settings(Topology::detect(), s)?;
    /// assert_eq!(rt.pool().width(), 2);
    /// assert_eq!(rt.width_for(WorkKind::Compute), 1);
    /// assert_eq!(rt.width_for(WorkKind::Scan), 2);
    /// # Ok::<(), keel_rt::RuntimeError>(())
    /// ```
    pub fn with_settings(topology: Topology, settings: Settings) -> Result<Runtime, RuntimeError> {
        let pool = Pool::builder()
            .topology(topology.clone())
            .settings(settings.clone())
            .build()?;
        let config = RuntimeConfig::from_settings(&settings, pool.width());
        Runtime::assemble(topology, pool, config)
    }

    /// A runtime over a topology and pool the caller built, with one heap
    /// per hand of the pool and default runtime settings (placement `auto`,
    /// every kind of work on every hand).
    ///
    /// ```
    /// use keel_rt::{Runtime, WorkKind};
    /// use keel_rt::pool::Pool;
    /// use keel_rt::topology::Topology;
    ///
    /// let rt = Runtime::from_parts(Topology::detect(), Pool::builder().width(3).build()?)?;
    /// assert_eq!(rt.pool().width(), 3);
    /// assert_eq!(rt.width_for(WorkKind::Compute), 3);
    /// # Ok::<(), keel_rt::RuntimeError>(())
    /// ```
    pub fn from_parts(topology: Topology, pool: Pool) -> Result<Runtime, RuntimeError> {
        let config = RuntimeConfig::from_settings(&Settings::new(), pool.width());
        Runtime::assemble(topology, pool, config)
    }

    fn assemble(
        topology: Topology,
        pool: Pool,
        config: RuntimeConfig,
    ) -> Result<Runtime, RuntimeError> {
        let heaps = (0..pool.width())
            .map(|_| {
                Heap::new()
                    .map(|h| Mutex::new(Some(h)))
                    .map_err(|_| RuntimeError::Heap)
            })
            .collect::<Result<_, _>>()?;
        Ok(Runtime {
            topology,
            pool,
            heaps,
            config,
        })
    }

    /// The runtime's own settings.
    ///
    /// ```
    /// use keel_rt::Runtime;
    /// use keel_rt::heap::Placement;
    /// use keel_rt::pool::settings::Settings;
    /// use keel_rt::topology::Topology;
    ///
    /// let s = Settings::parse("KEEL_PLACEMENT=interleave\n");
    /// let rt = Runtime::with_settings(Topology::detect(), s)?;
    /// assert_eq!(rt.config().placement, Placement::Interleave);
    /// assert!(rt.config().notes.is_empty());
    /// # Ok::<(), keel_rt::RuntimeError>(())
    /// ```
    pub fn config(&self) -> &RuntimeConfig {
        &self.config
    }

    /// Hands the runtime gives a batch of `kind`.
    ///
    /// ```
    /// use keel_rt::{Runtime, WorkKind};
    /// use keel_rt::pool::settings::Settings;
    /// use keel_rt::topology::Topology;
    ///
    /// let s = Settings::parse("KEEL_WORKERS=2\nKEEL_WIDTH_GATHER=1\n");
    /// let rt = Runtime::with_settings(Topology::detect(), s)?;
    /// assert_eq!(rt.width_for(WorkKind::Gather), 1);
    /// assert_eq!(rt.width_for(WorkKind::Scan), rt.pool().width());
    /// # Ok::<(), keel_rt::RuntimeError>(())
    /// ```
    pub fn width_for(&self, kind: WorkKind) -> usize {
        self.config.width(kind)
    }

    /// Places `buf`'s pages over the machine's NUMA nodes as
    /// `KEEL_PLACEMENT` says (interleaved by default where there is more
    /// than one node): call it on a large column before writing it. Never
    /// fails; the outcome says what was done.
    ///
    /// ```
    /// use keel_rt::Runtime;
    ///
    /// let rt = Runtime::new()?;
    /// let col = vec![0i64; 1 << 20];
    /// println!("{}", rt.place(&col));
    /// # Ok::<(), keel_rt::RuntimeError>(())
    /// ```
    pub fn place<T>(&self, buf: &[T]) -> PlacementOutcome {
        let nodes: Vec<u32> = self
            .topology
            .numa_nodes()
            .iter()
            .map(|n| n.os_index)
            .collect();
        keel_heap::place(buf, self.config.placement, &nodes)
    }

    /// A morsel-parallel fold on [`WorkKind::Scan`]'s hands: the rows
    /// `0..len` in morsels of `morsel` rows (0 is taken as 1), claimed from
    /// the pool's counter so that faster hands take more (keel-pool's
    /// `fold_morsels`). Each hand makes its accumulator with `init` at its
    /// first morsel and folds every morsel it claims into it with `fold`;
    /// the accumulators of the hands that ran a morsel come back in hand
    /// order, for the caller to combine. The first error (in time) is
    /// returned and no morsel starts after it is seen (the batch's
    /// `Cancel`); so is [`RuntimeError::Heap`] if a hand had no heap and
    /// none could be made. Each hand allocates its scratch from the heap
    /// the runtime lends it for the fold ([`HandCx::heap`]); the heaps are
    /// collected when the fold ends.
    ///
    /// ```
    /// use keel_rt::Runtime;
    ///
    /// let rt = Runtime::new()?;
    /// let col: Vec<u32> = (0..100_000).collect();
    /// let parts = rt.fold(
    ///     col.len(),
    ///     4096,
    ///     |_| 0u64,
    ///     |acc, rows, _| {
    ///         *acc += col[rows].iter().map(|&x| u64::from(x)).sum::<u64>();
    ///         Ok::<(), keel_rt::RuntimeError>(())
    ///     },
    /// )?;
    /// assert_eq!(parts.iter().sum::<u64>(), 99_999 * 100_000 / 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn fold<A, E, I, F>(&self, len: usize, morsel: usize, init: I, fold: F) -> Result<Vec<A>, E>
    where
        A: Send,
        E: Send + From<RuntimeError>,
        I: Fn(&HandCx<'_>) -> A + Sync,
        F: Fn(&mut A, std::ops::Range<usize>, &HandCx<'_>) -> Result<(), E> + Sync,
    {
        self.fold_on(WorkKind::Scan, len, morsel, init, fold)
    }

    /// [`Runtime::fold`] on the hands of `kind`.
    ///
    /// keel-pool has a fold (`fold_morsels`, per-hand accumulators) and a
    /// fallible loop (`try_for_each_morsel`), not a fallible fold: this is
    /// the fold, stopped by the batch's `Cancel`, with the first error kept
    /// beside it.
    fn fold_on<A, E, I, F>(
        &self,
        kind: WorkKind,
        len: usize,
        morsel: usize,
        init: I,
        fold: F,
    ) -> Result<Vec<A>, E>
    where
        A: Send,
        E: Send + From<RuntimeError>,
        I: Fn(&HandCx<'_>) -> A + Sync,
        F: Fn(&mut A, std::ops::Range<usize>, &HandCx<'_>) -> Result<(), E> + Sync,
    {
        let cancel = Cancel::new();
        let first: Mutex<Option<E>> = Mutex::new(None);
        let fail = |e: E| {
            lock(&first).get_or_insert(e);
            cancel.cancel();
        };
        let states = self
            .pool
            .batch()
            .width(self.width_for(kind))
            .cancel(&cancel)
            .fold_morsels(
                len,
                morsel,
                |hand| {
                    let heap = self.lend(hand.index)?;
                    let cx = HandCx {
                        hand,
                        heap: heap.get(),
                    };
                    let acc = init(&cx);
                    Some(HandState { hand, heap, acc })
                },
                |state, rows| match state {
                    Some(s) => {
                        let cx = HandCx {
                            hand: s.hand,
                            heap: s.heap.get(),
                        };
                        if let Err(e) = fold(&mut s.acc, rows, &cx) {
                            fail(e);
                        }
                    }
                    None => fail(RuntimeError::Heap.into()),
                },
            );
        if let Some(e) = first.into_inner().unwrap_or_else(|e| e.into_inner()) {
            return Err(e);
        }
        let Ok(states) = states else {
            unreachable!("only a failed morsel cancels the batch, and it left its error")
        };
        Ok(states.into_iter().flatten().map(|s| s.acc).collect())
    }

    /// The heap of hand `index` for one batch: the runtime's, or, when a
    /// fold nested inside another's morsel finds it lent out, a heap of its
    /// own (`None` if none can be made).
    fn lend(&self, index: usize) -> Option<Lent<'_>> {
        let slot = &self.heaps[index];
        let lent = lock(slot).take();
        Some(match lent {
            Some(heap) => Lent {
                heap: Some(heap),
                slot: Some(slot),
            },
            None => Lent {
                heap: Some(Heap::new().ok()?),
                slot: None,
            },
        })
    }

    /// The machine the runtime was sized for.
    ///
    /// ```
    /// use keel_rt::Runtime;
    /// use keel_rt::pool::Pool;
    /// use keel_rt::topology::Topology;
    ///
    /// let t = Topology::detect();
    /// let rt = Runtime::from_parts(t.clone(), Pool::builder().width(1).build()?)?;
    /// assert_eq!(rt.topology().usable_cpus(), t.usable_cpus());
    /// assert_eq!(rt.topology().cores(), t.cores());
    /// # Ok::<(), keel_rt::RuntimeError>(())
    /// ```
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// The pool operations run on.
    ///
    /// ```
    /// use keel_rt::Runtime;
    /// use keel_rt::pool::settings::Settings;
    /// use keel_rt::topology::Topology;
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    ///
    /// let s = Settings::parse("KEEL_WORKERS=2\n");
    /// let rt = Runtime::with_settings(Topology::detect(), s)?;
    /// assert_eq!(rt.pool().width(), 2);
    /// let jobs = AtomicUsize::new(0);
    /// rt.pool().run(10, |_| _ = jobs.fetch_add(1, Ordering::Relaxed));
    /// assert_eq!(jobs.into_inner(), 10);
    /// # Ok::<(), keel_rt::RuntimeError>(())
    /// ```
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// Sum of `values` (wrapping for integers, as [`keel_kernels::agg::sum`]).
    /// Each morsel is summed by the kernel and the morsel sums are combined
    /// in keel-pool's fixed pairwise order (`reduce_morsels`), so a float
    /// sum has the same bits at any width and whoever ran which morsel.
    ///
    /// ```
    /// use keel_rt::Runtime;
    ///
    /// let rt = Runtime::new()?;
    /// assert_eq!(rt.sum(&[i64::MAX, 1])?, i64::MIN); // wraps
    /// assert_eq!(rt.sum(&[200u8; 3])?, 600u64); // u8 sums as u64
    /// let col: Vec<f64> = (1..300_000).map(|i| 1.0 / i as f64).collect();
    /// assert_eq!(rt.sum(&col)?.to_bits(), rt.sum(&col)?.to_bits());
    /// # Ok::<(), keel_rt::RuntimeError>(())
    /// ```
    pub fn sum<T: Element>(&self, values: &[T]) -> Result<T::Sum, RuntimeError>
    where
        T::Sum: Send,
    {
        let total = self
            .pool
            .batch()
            .width(self.width_for(WorkKind::Scan))
            .reduce_morsels(
                values.len(),
                MORSEL_ROWS,
                |r| keel_kernels::agg::sum(&values[r]),
                T::sum_add,
            );
        match total {
            Ok(s) => Ok(s.unwrap_or(T::EMPTY_SUM)),
            Err(_) => unreachable!("no cancel flag"),
        }
    }

    /// How many rows of `values` pass `pred`.
    ///
    /// ```
    /// use keel_rt::Runtime;
    /// use keel_rt::kernels::filter::{CmpOp, Predicate};
    ///
    /// let rt = Runtime::new()?;
    /// let col: Vec<i32> = (0..100_000).collect();
    /// assert_eq!(rt.filter_count(&col, Predicate::Cmp(CmpOp::Lt, 1000))?, 1000);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn filter_count<T: Element>(
        &self,
        values: &[T],
        pred: Predicate<T>,
    ) -> Result<usize, RuntimeError> {
        let parts = self.fold(
            values.len(),
            MORSEL_ROWS,
            |_| 0usize,
            |count, r, _| {
                *count += keel_kernels::filter::count_matching(&values[r], pred, None)?;
                Ok::<(), RuntimeError>(())
            },
        )?;
        Ok(parts.iter().sum())
    }

    /// Approximate number of distinct keys: one HyperLogLog per hand (p = 14,
    /// ~0.81% standard error), merged at the end.
    ///
    /// ```
    /// use keel_rt::Runtime;
    ///
    /// let rt = Runtime::new()?;
    /// let col: Vec<i64> = (0..50_000).map(|i| i % 10_000).collect();
    /// let n = rt.count_distinct_i64(&col)?;
    /// assert!((9_500..=10_500).contains(&n), "{n}");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn count_distinct_i64(&self, values: &[i64]) -> Result<u64, RuntimeError> {
        // One sketch per hand, a copy of an empty one.
        let empty = HyperLogLog::new(keel_kernels::hll::DEFAULT_PRECISION)?;
        let parts = self.fold_on(
            WorkKind::Compute,
            values.len(),
            MORSEL_ROWS,
            |_| empty.clone(),
            |sketch, r, _| {
                sketch.add_i64_column(&values[r]);
                Ok::<(), RuntimeError>(())
            },
        )?;
        let mut total = empty;
        for s in &parts {
            total.merge(s)?;
        }
        Ok(total.count())
    }

    /// The min and max of `values` if `max - min <= budget`, or `None` as
    /// soon as any hand sees the span exceed it: every hand shares one abort
    /// flag and checks it every [`keel_kernels::span::CHECK_ROWS`] rows. An
    /// empty column has no min and max, so it is `None` too: test
    /// `values.is_empty()` first where the two must be told apart.
    ///
    /// ```
    /// use keel_rt::Runtime;
    ///
    /// let rt = Runtime::new()?;
    /// let mut col: Vec<i64> = (0..300_000).map(|i| i % 100).collect();
    /// assert_eq!(rt.span_within(&col, 1_000)?, Some((0, 99)));
    /// col[200_000] = 1_000_000;
    /// assert_eq!(rt.span_within(&col, 1_000)?, None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn span_within<T: SpanKey>(
        &self,
        values: &[T],
        budget: u64,
    ) -> Result<Option<(T, T)>, RuntimeError> {
        let abort = AtomicBool::new(false);
        // One running scan per hand, carried across the morsels it claims, so
        // a hand notices a span that only its morsels together exceed.
        let scans = self.fold(
            values.len(),
            MORSEL_ROWS,
            |_| SpanScan::new(budget),
            |scan, r, _| {
                scan.scan(&values[r], None, &abort)?;
                Ok::<(), RuntimeError>(())
            },
        )?;
        let mut total = SpanScan::new(budget);
        for s in &scans {
            total.merge(s);
        }
        if abort.load(Ordering::Relaxed) || total.exceeded() {
            return Ok(None);
        }
        Ok(total.min_max())
    }
}

/// Locks, ignoring poison: a panicking job resumes in the caller anyway.
pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
