//! Span scan with early abort: the min and max of an integer key column
//! that gives up as soon as `max - min` exceeds a budget.
//!
//! An engine uses it to decide whether a dense direct-indexed table fits the
//! keys: once the span is over budget the answer is "no" whatever the rest
//! holds, so the scan stops. The span is checked after every block of
//! [`CHECK_ROWS`] rows, with that block already folded into the running min
//! and max, so a scan stops at most [`CHECK_ROWS`] rows after the row that
//! broke the budget, including when that row is among a morsel's first. (The
//! bug this avoids: checking only at morsel starts, where the running min
//! and max are still empty, never fires.) Workers scanning different ranges
//! share one [`AtomicBool`]: the first to see the budget broken sets it, and
//! every worker polls it before each block. Each worker sees only its own
//! rows: keys that break the budget only together (one worker's low, another
//! one's high) stop nobody, so the final answer is the workers' states
//! merged ([`SpanScan::merge`]) and checked with [`SpanScan::exceeded`].
//!
//! The flag is a hint read and written with `Relaxed` ordering: it carries
//! no data, and a worker that reads it late only scans one more block.
//!
//! ```
//! use core::sync::atomic::AtomicBool;
//! use keel_kernels::span::{Outcome, SpanScan};
//! let abort = AtomicBool::new(false);
//! let mut s = SpanScan::<i64>::new(1000);
//! let keys: Vec<i64> = (0..5000).collect();
//! match s.scan(&keys, None, &abort)? {
//!     Outcome::Exceeded { rows } => assert!(rows <= 1001 + 1024),
//!     other => panic!("{other:?}"),
//! }
//! assert!(abort.load(core::sync::atomic::Ordering::Relaxed));
//! # Ok::<(), keel_kernels::Error>(())
//! ```

use crate::{Element, Error, Kernels, check_bitmap};
use core::sync::atomic::{AtomicBool, Ordering};

/// Rows between two checks of the span and the abort flag.
///
/// ```
/// use core::sync::atomic::AtomicBool;
/// use keel_kernels::span::{Outcome, SpanScan, CHECK_ROWS};
/// let keys: Vec<u32> = (0..3000).collect();
/// let mut s = SpanScan::<u32>::new(0); // broken at row 1, seen after a block
/// let out = s.scan(&keys, None, &AtomicBool::new(false))?;
/// assert_eq!(out, Outcome::Exceeded { rows: CHECK_ROWS });
/// # Ok::<(), keel_kernels::Error>(())
/// ```
pub const CHECK_ROWS: usize = 1024;

/// Integer key types a span is defined for: [`SpanKey::distance`] is
/// `max - min` without overflow.
///
/// ```
/// use keel_kernels::span::SpanKey;
/// assert_eq!(i8::distance(i8::MIN, i8::MAX), 255);
/// assert_eq!(i64::distance(i64::MIN, i64::MAX), u64::MAX);
/// assert_eq!(u16::distance(3, 3), 0);
/// ```
pub trait SpanKey: Element {
    /// `max - min` as an unsigned distance (`max >= min`).
    ///
    /// ```
    /// use keel_kernels::span::SpanKey;
    /// assert_eq!(<i32 as SpanKey>::distance(-5, 5), 10);
    /// ```
    fn distance(min: Self, max: Self) -> u64;
}

macro_rules! span_key {
    ($($t:ty),*) => {$(
        impl SpanKey for $t {
            #[inline]
            fn distance(min: $t, max: $t) -> u64 {
                (max as i128 - min as i128) as u64
            }
        }
    )*};
}
span_key!(i64, u64, i32, u32, i16, u16, i8, u8);

/// How a call to [`SpanScan::scan`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every row scanned; this worker's running span is within budget.
    /// Other workers' rows are not in it: the span of the whole column is
    /// that of the workers' states merged ([`SpanScan::merge`]), which can
    /// exceed the budget although every worker answered `Within`; check it
    /// with [`SpanScan::exceeded`].
    Within,
    /// This scan's running span exceeds the budget after `rows` rows of
    /// this call (0 for an empty morsel after an earlier call broke it),
    /// and the abort flag is set.
    Exceeded {
        /// Rows of this call scanned when it stopped.
        rows: usize,
    },
    /// The abort flag was set (by another worker or an earlier call) after
    /// `rows` rows of this call.
    Aborted {
        /// Rows of this call scanned when it stopped.
        rows: usize,
    },
}

/// One worker's running min and max, carried across the morsels it scans.
///
/// Each worker's [`SpanScan::min_max`] covers its own rows; merged with
/// [`SpanScan::merge`], the states answer for the whole column, and
/// [`SpanScan::exceeded`] says whether that span is over budget.
///
/// ```
/// use core::sync::atomic::AtomicBool;
/// use keel_kernels::span::{Outcome, SpanScan};
/// let abort = AtomicBool::new(false);
/// let (mut a, mut b) = (SpanScan::<i32>::new(10), SpanScan::<i32>::new(10));
/// assert_eq!(a.scan(&[0, 5, 8], None, &abort)?, Outcome::Within);
/// assert_eq!(b.scan(&[9, 15], None, &abort)?, Outcome::Within);
/// a.merge(&b);
/// assert_eq!(a.min_max(), Some((0, 15)));
/// assert!(a.exceeded() && !b.exceeded());
/// # Ok::<(), keel_kernels::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SpanScan<T> {
    budget: u64,
    kernels: Kernels,
    min_max: Option<(T, T)>,
}

impl<T: SpanKey> SpanScan<T> {
    /// A scan that gives up once `max - min > budget`, at the current level.
    pub fn new(budget: u64) -> Self {
        Self::with_kernels(Kernels::current(), budget)
    }

    /// As [`SpanScan::new`] with the kernels `k`.
    ///
    /// ```
    /// use core::sync::atomic::AtomicBool;
    /// use keel_kernels::{span::{Outcome, SpanScan}, Kernels};
    /// let keys: Vec<i16> = (-100..100).collect();
    /// for k in Kernels::supported() {
    ///     let mut s = SpanScan::<i16>::with_kernels(k, 199);
    ///     assert_eq!(s.scan(&keys, None, &AtomicBool::new(false))?, Outcome::Within);
    ///     assert_eq!((s.min_max(), s.span()), (Some((-100, 99)), Some(199)));
    /// }
    /// # Ok::<(), keel_kernels::Error>(())
    /// ```
    pub fn with_kernels(k: Kernels, budget: u64) -> Self {
        SpanScan {
            budget,
            kernels: k,
            min_max: None,
        }
    }

    /// The running `(min, max)` of the valid rows scanned, `None` before any.
    pub fn min_max(&self) -> Option<(T, T)> {
        self.min_max
    }

    /// The running span, `None` before any valid row.
    pub fn span(&self) -> Option<u64> {
        self.min_max.map(|(a, b)| T::distance(a, b))
    }

    /// Whether the running span exceeds the budget.
    pub fn exceeded(&self) -> bool {
        self.span().is_some_and(|s| s > self.budget)
    }

    /// Folds another worker's state in (for the final answer).
    pub fn merge(&mut self, other: &SpanScan<T>) {
        self.fold(other.min_max);
    }

    fn fold(&mut self, m: Option<(T, T)>) {
        self.min_max = match (self.min_max, m) {
            (None, x) | (x, None) => x,
            (Some(a), Some(b)) => Some((
                if b.0 < a.0 { b.0 } else { a.0 },
                if a.1 < b.1 { b.1 } else { a.1 },
            )),
        };
    }

    /// Scans one morsel (with its validity bitmap, nulls skipped), block by
    /// block of [`CHECK_ROWS`] rows: polls `abort` before each block, folds
    /// the block's min/max in, and stops, setting `abort`, once the span is
    /// over budget. Errors if `validity` is too short.
    pub fn scan(
        &mut self,
        values: &[T],
        validity: Option<&[u64]>,
        abort: &AtomicBool,
    ) -> Result<Outcome, Error> {
        check_bitmap("validity", values.len(), validity)?;
        for (b, block) in values.chunks(CHECK_ROWS).enumerate() {
            if abort.load(Ordering::Relaxed) {
                return Ok(Outcome::Aborted {
                    rows: b * CHECK_ROWS,
                });
            }
            let val = validity.map(|v| &v[b * CHECK_ROWS / 64..]);
            let m = self.kernels.min_max_masked(block, val)?;
            self.fold(m);
            if self.exceeded() {
                abort.store(true, Ordering::Relaxed);
                return Ok(Outcome::Exceeded {
                    rows: b * CHECK_ROWS + block.len(),
                });
            }
        }
        // Only an empty morsel gets here with the budget already broken (a
        // non-empty one stops in its first block): it must not answer
        // `Within` for a span that is over budget.
        if self.exceeded() {
            abort.store(true, Ordering::Relaxed);
            return Ok(Outcome::Exceeded { rows: values.len() });
        }
        Ok(Outcome::Within)
    }
}
