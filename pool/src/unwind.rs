//! Panics inside jobs: caught on whichever hand ran the job, the first one
//! kept, and resumed in the batch's submitter once the batch has completed.

use crate::sync::{AtomicBool, Mutex, Ordering, lock};
use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

/// The payload of a panic.
type Payload = Box<dyn Any + Send + 'static>;

/// Holds the first panic of a batch.
pub(crate) struct PanicSlot {
    /// Fast check, so a batch without panics never takes the lock.
    any: AtomicBool,
    first: Mutex<Option<Payload>>,
}

impl PanicSlot {
    pub(crate) fn new() -> Self {
        PanicSlot {
            any: AtomicBool::new(false),
            first: Mutex::new(None),
        }
    }

    /// Runs `f`, keeping its panic (the first one only) instead of unwinding.
    /// Unwind safety is asserted because the panic is resumed in the
    /// submitter, which then observes the shared state exactly as if the job
    /// had panicked on its own thread.
    ///
    /// Never unwinds: a later payload is dropped here, on a hand inside the
    /// batch, and a payload's `Drop` may itself panic. Unwinding from here
    /// would skip the hand's latch release (a worker) or leave the batch's
    /// stack frame while other hands still run it (the submitter).
    #[inline]
    pub(crate) fn run(&self, f: impl FnOnce()) {
        let _ = self.catch(f);
    }

    /// [`PanicSlot::run`] for a closure with a result: `None` if it
    /// panicked (the panic is kept as `run` keeps it).
    #[inline]
    pub(crate) fn catch<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
        match catch_unwind(AssertUnwindSafe(f)) {
            Ok(r) => Some(r),
            Err(p) => {
                self.keep(p);
                None
            }
        }
    }

    /// Keeps `p` if it is the first panic, else drops it quietly.
    fn keep(&self, p: Payload) {
        let extra = {
            let mut first = lock(&self.first);
            match *first {
                None => {
                    *first = Some(p);
                    None
                }
                Some(_) => Some(p),
            }
        };
        self.any.store(true, Ordering::Relaxed);
        if let Some(p) = extra {
            drop_quietly(p);
        }
    }

    /// Resumes the first panic, if any. Called by the submitter after the
    /// latch opened, which orders every hand's store before this load.
    pub(crate) fn resume_if_any(&self) {
        if self.any.load(Ordering::Relaxed) {
            if let Some(p) = lock(&self.first).take() {
                resume_unwind(p);
            }
        }
    }
}

/// Drops a panic payload that nobody will see, without unwinding. If its
/// `Drop` panics, the payload of that panic is dropped the same way once
/// more (a plain message, as a rule), and leaked only if it panics too, so
/// that this cannot recurse without end.
fn drop_quietly(p: Payload) {
    if let Err(again) = catch_unwind(AssertUnwindSafe(move || drop(p))) {
        if let Err(third) = catch_unwind(AssertUnwindSafe(move || drop(again))) {
            std::mem::forget(third);
        }
    }
}
