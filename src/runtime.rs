//! [`Runtime`]: what only composition gives — a pool sized from the
//! topology running kernels morsel-parallel.
//!
//! Each operation splits a column into morsels claimed from the pool's one
//! atomic counter, runs a kernel per morsel, and combines per-morsel or
//! per-worker partial results. Combining is deterministic where the result
//! could depend on order (float sums fold in morsel order).

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::vec;
use std::vec::Vec;

use keel_kernels::Element;
use keel_kernels::filter::Predicate;
use keel_kernels::hll::HyperLogLog;
use keel_kernels::span::{SpanKey, SpanScan};
use keel_pool::{BuildError, Pool};
use keel_topology::Topology;

/// Rows per morsel: 64 Ki rows, the zone-map chunk, big enough that the
/// claim costs nothing and small enough that fast hands take more.
pub const MORSEL_ROWS: usize = 64 * 1024;

/// Why a runtime operation failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum RuntimeError {
    /// A kernel refused its arguments.
    Kernel(keel_kernels::Error),
}

impl std::fmt::Display for RuntimeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RuntimeError::Kernel(e) => write!(f, "kernel error: {e:?}"),
        }
    }
}

impl std::error::Error for RuntimeError {}

impl From<keel_kernels::Error> for RuntimeError {
    fn from(e: keel_kernels::Error) -> Self {
        RuntimeError::Kernel(e)
    }
}

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
#[derive(Debug)]
pub struct Runtime {
    topology: Topology,
    pool: Pool,
}

impl Runtime {
    /// Detects the machine and builds a pool of its bandwidth width
    /// (physical cores among usable CPUs, capped by the quota; `KEEL_WORKERS`
    /// overrides).
    pub fn new() -> Result<Runtime, BuildError> {
        let topology = Topology::detect();
        let pool = Pool::builder().topology(topology.clone()).build()?;
        Ok(Runtime { topology, pool })
    }

    /// A runtime over a topology and pool the caller built.
    pub fn from_parts(topology: Topology, pool: Pool) -> Runtime {
        Runtime { topology, pool }
    }

    /// The machine the runtime was sized for.
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// The pool operations run on.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// Sum of `values` (wrapping for integers, as [`keel_kernels::agg::sum`]).
    /// Floats are summed per morsel in the kernel's order, then the morsel
    /// sums are folded in morsel order, so the result does not depend on
    /// which worker ran which morsel.
    pub fn sum<T: Element>(&self, values: &[T]) -> Result<T::Sum, RuntimeError>
    where
        T::Sum: Send,
    {
        let morsels = values.len().div_ceil(MORSEL_ROWS);
        let partial: Vec<Mutex<T::Sum>> = (0..morsels).map(|_| Mutex::new(T::SUM_ZERO)).collect();
        self.pool.for_each_morsel(values.len(), MORSEL_ROWS, |r| {
            let slot = r.start / MORSEL_ROWS;
            *lock(&partial[slot]) = keel_kernels::agg::sum(&values[r]);
        });
        Ok(partial.into_iter().fold(T::SUM_ZERO, |acc, p| {
            T::sum_add(acc, p.into_inner().unwrap_or_else(|e| e.into_inner()))
        }))
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
        let count = AtomicUsize::new(0);
        let err = Mutex::new(None);
        self.pool.for_each_morsel(values.len(), MORSEL_ROWS, |r| {
            let rows = r.len();
            let mut bits = vec![0u64; rows.div_ceil(64)];
            let n = keel_kernels::filter::filter(&values[r], pred, &mut bits)
                .and_then(|()| keel_kernels::bitmap::popcount(&bits, rows));
            match n {
                Ok(n) => {
                    count.fetch_add(n, Ordering::Relaxed);
                }
                Err(e) => *lock(&err) = Some(e),
            }
        });
        if let Some(e) = lock(&err).take() {
            return Err(e.into());
        }
        Ok(count.into_inner())
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
        let hands = self.pool.workers() + 1;
        let sketches: Vec<Mutex<Option<HyperLogLog>>> =
            (0..hands).map(|_| Mutex::new(None)).collect();
        let err = Mutex::new(None);
        self.pool.for_each_morsel(values.len(), MORSEL_ROWS, |r| {
            // The caller is the last hand; a worker's slot is its index.
            let hand = self
                .pool
                .current_worker()
                .unwrap_or(hands - 1)
                .min(hands - 1);
            let mut slot = lock(&sketches[hand]);
            if slot.is_none() {
                match HyperLogLog::new(14) {
                    Ok(s) => *slot = Some(s),
                    Err(e) => {
                        *lock(&err) = Some(e);
                        return;
                    }
                }
            }
            if let Some(s) = slot.as_mut() {
                s.add_i64_column(&values[r]);
            }
        });
        if let Some(e) = lock(&err).take() {
            return Err(e.into());
        }
        let mut total = HyperLogLog::new(14)?;
        for s in sketches {
            if let Some(s) = s.into_inner().unwrap_or_else(|e| e.into_inner()) {
                total.merge(&s)?;
            }
        }
        Ok(total.count())
    }

    /// The min and max of `values` if `max - min <= budget`, or `None` as
    /// soon as any hand sees the span exceed it: every hand shares one abort
    /// flag and checks it every [`keel_kernels::span::CHECK_ROWS`] rows.
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
        let hands = self.pool.workers() + 1;
        let scans: Vec<Mutex<SpanScan<T>>> = (0..hands)
            .map(|_| Mutex::new(SpanScan::new(budget)))
            .collect();
        let err = Mutex::new(None);
        self.pool.for_each_morsel(values.len(), MORSEL_ROWS, |r| {
            let hand = self
                .pool
                .current_worker()
                .unwrap_or(hands - 1)
                .min(hands - 1);
            if let Err(e) = lock(&scans[hand]).scan(&values[r], None, &abort) {
                *lock(&err) = Some(e);
            }
        });
        if let Some(e) = lock(&err).take() {
            return Err(e.into());
        }
        let mut total = SpanScan::new(budget);
        for s in &scans {
            total.merge(&lock(s));
        }
        if abort.load(Ordering::Relaxed) || total.exceeded() {
            return Ok(None);
        }
        Ok(total.min_max())
    }
}

/// Locks, ignoring poison: a panicking job resumes in the caller anyway.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
