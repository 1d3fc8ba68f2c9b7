//! `join(a, b)`: two closures as a batch of two jobs.

use crate::Pool;
use crate::sync::UnsafeCell;

/// A closure, then its result, for the one job that runs it.
struct Once<F, R> {
    f: UnsafeCell<Option<F>>,
    out: UnsafeCell<Option<R>>,
}

// SAFETY: job `i` of a batch runs exactly once, so exactly one hand touches
// each `Once`, and the batch's latch orders that before the caller reads the
// result: moving `F` and `R` across threads needs only `Send`.
unsafe impl<F: Send, R: Send> Sync for Once<F, R> {}

impl<F: FnOnce() -> R, R> Once<F, R> {
    fn new(f: F) -> Self {
        Once {
            f: UnsafeCell::new(Some(f)),
            out: UnsafeCell::new(None),
        }
    }

    /// Runs the closure.
    ///
    /// # Safety
    ///
    /// Called once, by the one hand that runs this job.
    unsafe fn run(&self) {
        // SAFETY: only this hand touches `self` now (see above).
        if let Some(f) = self.f.with_mut(|p| unsafe { (*p).take() }) {
            let r = f();
            // SAFETY: as above.
            self.out.with_mut(|p| unsafe { *p = Some(r) });
        }
    }

    /// The result, once the batch is over.
    fn into_result(self) -> Option<R> {
        self.out.into_inner()
    }
}

impl Pool {
    /// Runs `a` and `b`, on two hands when one is free, and returns both
    /// results, as `rayon::join` does. If either panics, the other still
    /// runs and the panic then resumes here. Borrowing from the caller's
    /// stack is fine: `join` returns only once both are done.
    ///
    /// A `join` is a batch of two jobs. keel's pool runs batches, and does
    /// not steal work: a deep recursion of joins keeps one batch open per
    /// level, and one that finds all 64 offer slots taken runs on its
    /// caller alone. Use it for coarse splits; split large loops into
    /// morsels instead.
    ///
    /// ```
    /// use keel_pool::Pool;
    ///
    /// let pool = Pool::builder().width(2).build()?;
    /// let v: Vec<u64> = (1..=1000).collect();
    /// let (left, right) = v.split_at(500);
    /// let (a, b) = pool.join(|| left.iter().sum::<u64>(), || right.iter().sum::<u64>());
    /// assert_eq!(a + b, 500_500);
    /// # Ok::<(), keel_pool::BuildError>(())
    /// ```
    pub fn join<A, B, RA, RB>(&self, a: A, b: B) -> (RA, RB)
    where
        A: FnOnce() -> RA + Send,
        B: FnOnce() -> RB + Send,
        RA: Send,
        RB: Send,
    {
        let a = Once::new(a);
        let b = Once::new(b);
        self.run(2, |i| {
            // SAFETY: job `i` runs once, on one hand.
            unsafe { if i == 0 { a.run() } else { b.run() } }
        });
        // `run` returned without resuming a panic, so both jobs completed.
        match (a.into_result(), b.into_result()) {
            (Some(ra), Some(rb)) => (ra, rb),
            _ => unreachable!("join: a job neither finished nor panicked"),
        }
    }
}
