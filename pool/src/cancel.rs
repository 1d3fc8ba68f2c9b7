//! Cancelling a batch from outside or from one of its own jobs.

use crate::sync::{AtomicBool, Ordering};
use std::fmt;

/// A flag that cancels the batches it is given to: once set, hands claim no
/// new job or morsel, and the batch returns `Err(Cancelled)`. Jobs can poll
/// it to stop early themselves.
///
/// ```
/// use keel_pool::{Cancel, Cancelled, Pool};
///
/// // One hand, so job 10 cancels before any later job is claimed (with
/// // more, another hand may claim the rest first).
/// let pool = Pool::builder().width(1).build()?;
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
    ///
    /// ```
    /// use keel_pool::Cancel;
    ///
    /// let cancel = Cancel::new();
    /// assert!(!cancel.is_cancelled());
    /// cancel.cancel();
    /// assert!(cancel.is_cancelled());
    /// ```
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    /// Clears the flag, to reuse it for another batch.
    ///
    /// ```
    /// use keel_pool::{Cancel, Cancelled, Pool};
    ///
    /// let pool = Pool::builder().width(2).build()?;
    /// let cancel = Cancel::new();
    /// cancel.cancel();
    /// assert_eq!(pool.batch().cancel(&cancel).run(4, |_| {}), Err(Cancelled));
    /// cancel.reset();
    /// assert!(!cancel.is_cancelled());
    /// assert_eq!(pool.batch().cancel(&cancel).run(4, |_| {}), Ok(()));
    /// # Ok::<(), keel_pool::BuildError>(())
    /// ```
    pub fn reset(&self) {
        self.0.store(false, Ordering::Release);
    }
}

/// A batch stopped early because its [`Cancel`] flag was set: some jobs or
/// morsels never ran.
///
/// ```
/// use keel_pool::{Cancel, Cancelled, Pool};
///
/// let pool = Pool::builder().width(2).build()?;
/// let cancel = Cancel::new();
/// cancel.cancel();
/// // A flag set before the batch starts stops every morsel.
/// let r = pool.batch().cancel(&cancel).for_each_morsel(100, 10, |_| unreachable!());
/// assert_eq!(r, Err(Cancelled));
/// assert_eq!(Cancelled.to_string(), "batch cancelled before all of its jobs ran");
/// # Ok::<(), keel_pool::BuildError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cancelled;

impl fmt::Display for Cancelled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("batch cancelled before all of its jobs ran")
    }
}

impl std::error::Error for Cancelled {}
