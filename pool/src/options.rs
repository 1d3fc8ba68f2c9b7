//! Options for one batch, and what a batch can be: jobs, morsel loops, a
//! fold with one accumulator per hand, a reduction in a fixed order, and a
//! morsel loop that stops at the first error.

use crate::batch::Kind;
use crate::hand::{Hand, PerHand};
use crate::morsel::Morsels;
use crate::reduce::Tree;
use crate::sync::{AtomicBool, Mutex, Ordering, lock};
use crate::unwind::PanicSlot;
use crate::{Cancel, Cancelled, Pool};
use std::fmt;
use std::ops::Range;

/// Options for one batch: a cap on its hands and a cancellation flag.
///
/// ```
/// use keel_pool::Pool;
///
/// let pool = Pool::builder().width(4).build()?;
/// // At most two hands for this scan, whatever the pool's width.
/// let sums = pool.batch().width(2).fold_morsels(1000, 100, |_| 0u64, |s, r| {
///     *s += r.map(|i| i as u64).sum::<u64>();
/// })?;
/// assert!(sums.len() <= 2);
/// assert_eq!(sums.iter().sum::<u64>(), 999 * 1000 / 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy)]
pub struct BatchOptions<'a> {
    pub(crate) pool: &'a Pool,
    pub(crate) width: usize,
    pub(crate) cancel: Option<&'a Cancel>,
}

/// Why a fallible morsel loop stopped: a morsel's error, or the batch's
/// [`Cancel`] flag.
///
/// ```
/// use keel_pool::{Cancel, Pool, TryError};
///
/// let pool = Pool::builder().width(2).build()?;
/// let cancel = Cancel::new();
/// cancel.cancel();
/// let r = pool.batch().cancel(&cancel).try_for_each_morsel(100, 10, |_, _| Err("bad"));
/// assert_eq!(r, Err(TryError::Cancelled));
/// assert_eq!(TryError::Failed("bad").to_string(), "a morsel failed: bad");
/// # Ok::<(), keel_pool::BuildError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TryError<E> {
    /// The first error a morsel returned; no morsel started after it was
    /// seen.
    Failed(E),
    /// The batch was cancelled before every morsel ran (and no morsel
    /// failed).
    Cancelled,
}

impl<E: fmt::Display> fmt::Display for TryError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TryError::Failed(e) => write!(f, "a morsel failed: {e}"),
            TryError::Cancelled => fmt::Display::fmt(&Cancelled, f),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for TryError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TryError::Failed(e) => Some(e),
            TryError::Cancelled => None,
        }
    }
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
    ///
    /// ```
    /// use keel_pool::{Cancel, Cancelled, Pool};
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    ///
    /// let pool = Pool::builder().width(2).build()?;
    /// let cancel = Cancel::new();
    /// let ran = AtomicUsize::new(0);
    /// // One hand, so jobs run in order: none starts after job 0 sets the flag.
    /// let r = pool.batch().width(1).cancel(&cancel).run(100, |_| {
    ///     ran.fetch_add(1, Ordering::Relaxed);
    ///     cancel.cancel();
    /// });
    /// assert_eq!((r, ran.into_inner()), (Err(Cancelled), 1));
    /// # Ok::<(), keel_pool::BuildError>(())
    /// ```
    pub fn cancel(mut self, cancel: &'a Cancel) -> Self {
        self.cancel = Some(cancel);
        self
    }

    fn cancelled(&self) -> bool {
        self.cancel.is_some_and(Cancel::is_cancelled)
    }

    /// Runs jobs `0..k` (see [`Pool::run`]); `Err(Cancelled)` if the flag
    /// stopped some from running.
    ///
    /// ```
    /// use keel_pool::Pool;
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    ///
    /// let pool = Pool::builder().width(2).build()?;
    /// let hits: Vec<AtomicUsize> = (0..8).map(|_| AtomicUsize::new(0)).collect();
    /// pool.batch().width(2).run(8, |i| {
    ///     hits[i].fetch_add(1, Ordering::Relaxed);
    /// })?;
    /// assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn run<F: Fn(usize) + Sync>(self, k: usize, f: F) -> Result<(), Cancelled> {
        self.pool
            .execute(self.width, k, Kind::Jobs, self.cancel, &|_, i| f(i), None)
    }

    /// Runs jobs `0..k` as [`BatchOptions::run`] does, passing each its
    /// [`Hand`] (see [`Pool::run_hand`]).
    ///
    /// ```
    /// use keel_pool::Pool;
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    ///
    /// let pool = Pool::builder().width(4).build()?;
    /// let jobs = AtomicUsize::new(0);
    /// pool.batch().width(2).run_hand(16, |hand, _| {
    ///     assert!(hand.index < hand.width && hand.width == 2);
    ///     jobs.fetch_add(1, Ordering::Relaxed);
    /// })?;
    /// assert_eq!(jobs.into_inner(), 16);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn run_hand<F: Fn(Hand, usize) + Sync>(self, k: usize, f: F) -> Result<(), Cancelled> {
        let width = self.pool.hands_for(self.width, k);
        self.pool.execute(
            self.width,
            k,
            Kind::Jobs,
            self.cancel,
            &|h, i| f(Hand::new(h, width), i),
            None,
        )
    }

    /// Runs `f` over morsels of `0..len` (see [`Pool::for_each_morsel`]);
    /// `Err(Cancelled)` if the flag stopped some morsels from running.
    pub fn for_each_morsel<F: Fn(Range<usize>) + Sync>(
        self,
        len: usize,
        morsel: usize,
        f: F,
    ) -> Result<(), Cancelled> {
        self.for_each_morsel_hand(len, morsel, |_, r| f(r))
    }

    /// [`BatchOptions::for_each_morsel`] passing each morsel its [`Hand`]
    /// (see [`Pool::for_each_morsel_hand`]).
    ///
    /// ```
    /// use keel_pool::Pool;
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    ///
    /// let pool = Pool::builder().width(4).build()?;
    /// let rows: Vec<AtomicUsize> = (0..2).map(|_| AtomicUsize::new(0)).collect();
    /// pool.batch().width(2).for_each_morsel_hand(1000, 64, |hand, r| {
    ///     rows[hand.index].fetch_add(r.len(), Ordering::Relaxed);
    /// })?;
    /// assert_eq!(rows.iter().map(|n| n.load(Ordering::Relaxed)).sum::<usize>(), 1000);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn for_each_morsel_hand<F: Fn(Hand, Range<usize>) + Sync>(
        self,
        len: usize,
        morsel: usize,
        f: F,
    ) -> Result<(), Cancelled> {
        let m = Morsels::new(len, morsel);
        if self.drive(&m, &|| false, |hand, _, r| f(hand, r)) {
            Err(Cancelled)
        } else {
            Ok(())
        }
    }

    /// A fold over morsels with one accumulator per hand (see
    /// [`Pool::fold_morsels`]); `Err(Cancelled)` if the flag stopped some
    /// morsels from running (the accumulators are dropped).
    pub fn fold_morsels<A, I, F>(
        self,
        len: usize,
        morsel: usize,
        init: I,
        fold: F,
    ) -> Result<Vec<A>, Cancelled>
    where
        A: Send,
        I: Fn(Hand) -> A + Sync,
        F: Fn(&mut A, Range<usize>) + Sync,
    {
        let m = Morsels::new(len, morsel);
        let accs = PerHand::new(self.hands_for_morsels(&m));
        let stopped = self.drive(&m, &|| false, |hand, _, r| {
            // SAFETY: we are hand `hand.index` of the batch `accs` belongs
            // to, and it is running.
            unsafe {
                accs.with(hand.index, |slot| {
                    fold(slot.get_or_insert_with(|| init(hand)), r);
                })
            };
        });
        if stopped {
            Err(Cancelled)
        } else {
            Ok(accs.into_values())
        }
    }

    /// A reduction over morsels in an order fixed by the morsel count (see
    /// [`Pool::reduce_morsels`]); `Err(Cancelled)` if the flag stopped some
    /// morsels from running.
    ///
    /// ```
    /// use keel_pool::Pool;
    ///
    /// let pool = Pool::builder().width(4).build()?;
    /// let opts = pool.batch().width(2);
    /// let sum = |len| opts.reduce_morsels(len, 100, |r| r.sum::<usize>(), |a, b| a + b);
    /// assert_eq!(sum(1000)?, Some(999 * 1000 / 2));
    /// assert_eq!(sum(0)?, None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reduce_morsels<T, M, C>(
        self,
        len: usize,
        morsel: usize,
        map: M,
        combine: C,
    ) -> Result<Option<T>, Cancelled>
    where
        T: Send,
        M: Fn(Range<usize>) -> T + Sync,
        C: Fn(T, T) -> T + Sync,
    {
        let m = Morsels::new(len, morsel);
        if m.count() == 0 {
            return Ok(None);
        }
        let tree = Tree::new(m.count());
        let stopped = self.drive(&m, &|| false, |_, i, r| {
            tree.complete(i, map(r), &combine);
        });
        if stopped {
            return Err(Cancelled);
        }
        // Every morsel ran without a panic (a panic resumed in `drive`), so
        // the root is complete.
        Ok(tree.into_root())
    }

    /// A morsel loop that stops at the first error (see
    /// [`Pool::try_for_each_morsel`]); or `TryError::Cancelled` if the flag
    /// stopped it first.
    ///
    /// ```
    /// use keel_pool::{Cancel, Pool, TryError};
    ///
    /// let pool = Pool::builder().width(2).build()?;
    /// let cancel = Cancel::new();
    /// let opts = pool.batch().cancel(&cancel);
    /// let r = opts.try_for_each_morsel(1000, 10, |_, range| {
    ///     if range.contains(&500) { Err(500) } else { Ok(()) }
    /// });
    /// assert_eq!(r, Err(TryError::Failed(500)));
    /// cancel.cancel();
    /// let r = opts.try_for_each_morsel(1000, 10, |_, _| Ok::<(), u32>(()));
    /// assert_eq!(r, Err(TryError::Cancelled));
    /// # Ok::<(), keel_pool::BuildError>(())
    /// ```
    pub fn try_for_each_morsel<E, F>(
        self,
        len: usize,
        morsel: usize,
        f: F,
    ) -> Result<(), TryError<E>>
    where
        E: Send,
        F: Fn(Hand, Range<usize>) -> Result<(), E> + Sync,
    {
        let m = Morsels::new(len, morsel);
        let failed = AtomicBool::new(false);
        let first: Mutex<Option<E>> = Mutex::new(None);
        // Relaxed: the flag only stops new morsels; the error itself is
        // under the mutex, and the batch's latch publishes it.
        let stop = || failed.load(Ordering::Relaxed);
        let stopped = self.drive(&m, &stop, |hand, _, r| {
            if let Err(e) = f(hand, r) {
                failed.store(true, Ordering::Relaxed);
                lock(&first).get_or_insert(e);
            }
        });
        match first.into_inner().unwrap_or_else(|e| e.into_inner()) {
            Some(e) => Err(TryError::Failed(e)),
            None if stopped => Err(TryError::Cancelled),
            None => Ok(()),
        }
    }

    /// Hands for a morsel loop: never more than morsels, and one for a count
    /// so large that the claim counter (at most count + hands) could
    /// overflow.
    fn hands_for_morsels(&self, m: &Morsels) -> usize {
        if m.count() > usize::MAX / 2 {
            1
        } else {
            self.pool.hands_for(self.width, m.count())
        }
    }

    /// The morsel loop every morsel operation is: one call per hand, each
    /// claiming morsels from `m` and running `body(hand, index, range)` on
    /// them until none are left, the batch is cancelled or `stop` says so.
    /// A panicking morsel is kept and the loop goes on, so the other morsels
    /// still run; the first panic resumes here. Returns whether the loop
    /// stopped before every morsel was claimed.
    fn drive<F>(self, m: &Morsels, stop: &(dyn Fn() -> bool + Sync), body: F) -> bool
    where
        F: Fn(Hand, usize, Range<usize>) + Sync,
    {
        if m.count() == 0 {
            return false;
        }
        let hands = self.hands_for_morsels(m);
        let halted = || self.cancelled() || stop();
        let stopped = AtomicBool::new(false);
        let panics = PanicSlot::new();
        let hand = |h: usize, _: usize| {
            let hand = Hand::new(h, hands);
            while !halted() {
                match m.claim() {
                    Some((i, r)) => panics.run(|| body(hand, i, r)),
                    None => return,
                }
            }
            stopped.store(true, Ordering::Relaxed);
        };
        let more = || !m.all_claimed() && !halted();
        let r = self
            .pool
            .execute(hands, hands, Kind::PerHand, None, &hand, Some(&more));
        debug_assert!(r.is_ok());
        panics.resume_if_any();
        stopped.load(Ordering::Relaxed) && !m.all_claimed()
    }
}

/// The operations above for a batch with no options: as wide as the pool,
/// no cancel flag.
impl Pool {
    /// Runs jobs `0..k` as [`Pool::run`] does, passing each job the
    /// [`Hand`] that runs it: per-hand state without a lock, indexed by
    /// `hand.index` (the caller's hand is 0).
    ///
    /// ```
    /// use keel_pool::Pool;
    /// use std::sync::Mutex;
    ///
    /// let pool = Pool::builder().width(2).build()?;
    /// let seen = Mutex::new(Vec::new());
    /// pool.run_hand(4, |hand, job| seen.lock().unwrap().push((hand.index, job)));
    /// let mut jobs: Vec<usize> = seen.into_inner().unwrap().iter().map(|&(_, j)| j).collect();
    /// jobs.sort();
    /// assert_eq!(jobs, [0, 1, 2, 3]);
    /// # Ok::<(), keel_pool::BuildError>(())
    /// ```
    pub fn run_hand<F: Fn(Hand, usize) + Sync>(&self, k: usize, f: F) {
        let r = self.batch().run_hand(k, f);
        debug_assert!(r.is_ok());
    }

    /// [`Pool::for_each_morsel`], passing each morsel the [`Hand`] that
    /// runs it.
    ///
    /// ```
    /// use keel_pool::Pool;
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    ///
    /// let pool = Pool::builder().width(3).build()?;
    /// let rows: Vec<AtomicUsize> = (0..3).map(|_| AtomicUsize::new(0)).collect();
    /// pool.for_each_morsel_hand(10_000, 100, |hand, r| {
    ///     rows[hand.index].fetch_add(r.len(), Ordering::Relaxed);
    /// });
    /// assert_eq!(rows.iter().map(|n| n.load(Ordering::Relaxed)).sum::<usize>(), 10_000);
    /// # Ok::<(), keel_pool::BuildError>(())
    /// ```
    pub fn for_each_morsel_hand<F: Fn(Hand, std::ops::Range<usize>) + Sync>(
        &self,
        len: usize,
        morsel: usize,
        f: F,
    ) {
        let r = self.batch().for_each_morsel_hand(len, morsel, f);
        debug_assert!(r.is_ok());
    }

    /// A fold over the morsels of `0..len`: each hand makes its
    /// accumulator with `init(hand)` at its first morsel and folds every
    /// morsel it claims into it with `fold`; returns one accumulator per
    /// hand that ran a morsel, in hand order. The accumulators are each on
    /// cache lines of their own, so they serve as per-hand scratch. Which
    /// morsels a hand gets depends on timing: combine the accumulators with
    /// an operation whose result does not depend on how the morsels were
    /// shared out, or use [`Pool::reduce_morsels`] for a fixed order.
    ///
    /// ```
    /// use keel_pool::Pool;
    ///
    /// let pool = Pool::builder().width(2).build()?;
    /// let col: Vec<u32> = (0..100_000).map(|i| i % 7).collect();
    /// // A histogram per hand, merged at the end.
    /// let hists = pool.fold_morsels(col.len(), 4096, |_| [0u64; 7], |h, r| {
    ///     for &v in &col[r] {
    ///         h[v as usize] += 1;
    ///     }
    /// });
    /// let mut total = [0u64; 7];
    /// for h in &hists {
    ///     for (t, n) in total.iter_mut().zip(h) {
    ///         *t += n;
    ///     }
    /// }
    /// assert_eq!(total.iter().sum::<u64>(), 100_000);
    /// # Ok::<(), keel_pool::BuildError>(())
    /// ```
    pub fn fold_morsels<A, I, F>(&self, len: usize, morsel: usize, init: I, fold: F) -> Vec<A>
    where
        A: Send,
        I: Fn(Hand) -> A + Sync,
        F: Fn(&mut A, std::ops::Range<usize>) + Sync,
    {
        match self.batch().fold_morsels(len, morsel, init, fold) {
            Ok(v) => v,
            Err(Cancelled) => unreachable!("no cancel flag"),
        }
    }

    /// Maps each morsel of `0..len` to a value and combines the values in
    /// an order fixed by the number of morsels alone: a pairwise tree over
    /// morsel indices (morsels 0 and 1, 2 and 3, ..., then those pairs,
    /// and so on), each node combined as soon as both its halves are done,
    /// by whichever hand finished second. The result is the same, to the
    /// bit, at any width and any timing, floating-point sums included.
    /// `None` when `len` is 0.
    ///
    /// ```
    /// use keel_pool::Pool;
    ///
    /// let col: Vec<f64> = (0..100_000).map(|i| 1.0 / (1.0 + i as f64)).collect();
    /// let sum = |width| {
    ///     let pool = Pool::builder().width(width).build().unwrap();
    ///     pool.reduce_morsels(col.len(), 1000, |r| col[r].iter().sum::<f64>(), |a, b| a + b)
    /// };
    /// let one = sum(1).unwrap();
    /// assert_eq!(sum(2).unwrap().to_bits(), one.to_bits());
    /// assert_eq!(sum(3).unwrap().to_bits(), one.to_bits());
    /// ```
    pub fn reduce_morsels<T, M, C>(
        &self,
        len: usize,
        morsel: usize,
        map: M,
        combine: C,
    ) -> Option<T>
    where
        T: Send,
        M: Fn(std::ops::Range<usize>) -> T + Sync,
        C: Fn(T, T) -> T + Sync,
    {
        match self.batch().reduce_morsels(len, morsel, map, combine) {
            Ok(v) => v,
            Err(Cancelled) => unreachable!("no cancel flag"),
        }
    }

    /// A morsel loop that stops at the first error: once a morsel returns
    /// `Err`, no morsel starts any more (those already running finish), and
    /// the first error returned (in time) is the result.
    ///
    /// ```
    /// use keel_pool::Pool;
    ///
    /// let pool = Pool::builder().width(2).build()?;
    /// let col: Vec<i64> = (0..10_000).map(|i| if i == 5_000 { -1 } else { i }).collect();
    /// let r = pool.try_for_each_morsel(col.len(), 256, |_, r| {
    ///     match col[r.clone()].iter().position(|&v| v < 0) {
    ///         Some(at) => Err(format!("negative value at row {}", r.start + at)),
    ///         None => Ok(()),
    ///     }
    /// });
    /// assert_eq!(r, Err("negative value at row 5000".to_string()));
    /// # Ok::<(), keel_pool::BuildError>(())
    /// ```
    pub fn try_for_each_morsel<E, F>(&self, len: usize, morsel: usize, f: F) -> Result<(), E>
    where
        E: Send,
        F: Fn(Hand, std::ops::Range<usize>) -> Result<(), E> + Sync,
    {
        match self.batch().try_for_each_morsel(len, morsel, f) {
            Ok(()) => Ok(()),
            Err(TryError::Failed(e)) => Err(e),
            Err(TryError::Cancelled) => unreachable!("no cancel flag"),
        }
    }
}
