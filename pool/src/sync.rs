//! The only place that names the concurrency primitives: std's in a normal
//! build, loom's under `cfg(keel_loom)` so every protocol in this crate can
//! be model-checked by swapping this one module.
//!
//! Time is switched here too: loom does not model clocks, so a spin window
//! becomes a bounded number of yields under loom.

#[cfg(not(keel_loom))]
pub(crate) use std::sync::{
    Arc, Mutex, MutexGuard,
    atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering},
};
#[cfg(not(keel_loom))]
pub(crate) use std::thread;
#[cfg(not(keel_loom))]
pub(crate) use std::thread_local;

#[cfg(keel_loom)]
pub(crate) use loom::sync::{
    Arc, Mutex, MutexGuard,
    atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering},
};
#[cfg(keel_loom)]
pub(crate) use loom::thread;
#[cfg(keel_loom)]
pub(crate) use loom::thread_local;

/// A cell whose accesses the protocol orders by other means (an atomic's
/// release and acquire); under loom its accesses are checked against those
/// orderings. The same shape as `loom::cell::UnsafeCell`.
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(
    #[cfg(not(keel_loom))] std::cell::UnsafeCell<T>,
    #[cfg(keel_loom)] loom::cell::UnsafeCell<T>,
);

impl<T> UnsafeCell<T> {
    pub(crate) fn new(v: T) -> Self {
        #[cfg(not(keel_loom))]
        {
            UnsafeCell(std::cell::UnsafeCell::new(v))
        }
        #[cfg(keel_loom)]
        {
            UnsafeCell(loom::cell::UnsafeCell::new(v))
        }
    }

    /// Reads through a shared pointer; the caller ensures no write races.
    #[inline]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        #[cfg(not(keel_loom))]
        {
            f(self.0.get())
        }
        #[cfg(keel_loom)]
        {
            self.0.with(f)
        }
    }

    /// The value, from the owner.
    pub(crate) fn into_inner(self) -> T {
        self.0.into_inner()
    }

    /// Writes through a unique pointer; the caller ensures no access races.
    #[inline]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        #[cfg(not(keel_loom))]
        {
            f(self.0.get())
        }
        #[cfg(keel_loom)]
        {
            self.0.with_mut(f)
        }
    }
}

/// Locks `m`, ignoring poisoning: no code in this crate panics while holding
/// one of its locks (jobs run outside every lock, under `catch_unwind`), so a
/// poisoned lock can only come from an allocation failure, after which the
/// data is still consistent.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One turn of a spin loop: a CPU hint normally, nothing under loom. Loom
/// needs a loop that waits on another thread to yield, or the model never
/// lets that thread run; every spin here is bounded by a [`SpinClock`],
/// which under loom ends after one turn, so none waits on another thread
/// and a yield would only add interleavings that change nothing.
#[inline]
pub(crate) fn spin_hint() {
    #[cfg(not(keel_loom))]
    std::hint::spin_loop();
}

/// CPU time the calling thread has used (`CLOCK_THREAD_CPUTIME_ID`), where
/// the OS reports it; `None` under loom and Miri, which model no CPU time.
pub(crate) fn thread_cpu() -> Option<std::time::Duration> {
    #[cfg(all(unix, not(miri), not(keel_loom)))]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec and the clock id is a
        // constant every unix libc defines.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        (rc == 0).then(|| std::time::Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
    }
    #[cfg(not(all(unix, not(miri), not(keel_loom))))]
    {
        None
    }
}

/// A bounded spin window: `expired` becomes true once `window` has passed
/// (under loom: after one turn, or at once for a zero window).
pub(crate) struct SpinClock {
    #[cfg(not(keel_loom))]
    start: std::time::Instant,
    #[cfg(not(keel_loom))]
    window: std::time::Duration,
    turns: u32,
    zero: bool,
}

impl SpinClock {
    /// Starts a window of `window`.
    #[inline]
    pub(crate) fn start(window: std::time::Duration) -> Self {
        SpinClock {
            #[cfg(not(keel_loom))]
            start: std::time::Instant::now(),
            #[cfg(not(keel_loom))]
            window,
            turns: 0,
            zero: window.is_zero(),
        }
    }

    /// Whether the window is over. Reads the clock only every 16 turns: a
    /// clock read costs about as much as 16 spin hints.
    #[inline]
    pub(crate) fn expired(&mut self) -> bool {
        if self.zero {
            return true;
        }
        self.turns = self.turns.wrapping_add(1);
        #[cfg(not(keel_loom))]
        {
            self.turns % 16 == 0 && self.start.elapsed() >= self.window
        }
        #[cfg(keel_loom)]
        {
            self.turns > 1
        }
    }

    /// Nanoseconds since the start (0 under loom).
    pub(crate) fn elapsed_ns(&self) -> u64 {
        #[cfg(not(keel_loom))]
        {
            u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
        }
        #[cfg(keel_loom)]
        {
            0
        }
    }
}

/// When each worker was last woken: how long a worker that finds its batch
/// gone may still spin is measured from there (see `Sleep::next_ticket`).
/// Plain std atomics even under loom, like [`Hint`]; loom has no clock, so
/// there every wake is "just now".
pub(crate) struct WakeTimes {
    #[cfg(not(keel_loom))]
    epoch: std::time::Instant,
    /// Nanoseconds from `epoch` to worker `w`'s last wake.
    #[cfg_attr(keel_loom, allow(dead_code))]
    at: Box<[std::sync::atomic::AtomicU64]>,
}

impl WakeTimes {
    pub(crate) fn new(workers: usize) -> Self {
        WakeTimes {
            #[cfg(not(keel_loom))]
            epoch: std::time::Instant::now(),
            at: (0..workers)
                .map(|_| std::sync::atomic::AtomicU64::new(0))
                .collect(),
        }
    }

    /// Records that worker `w` is being woken now.
    #[inline]
    pub(crate) fn stamp(&self, w: usize) {
        #[cfg(not(keel_loom))]
        {
            let ns = u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
            self.at[w].store(ns, std::sync::atomic::Ordering::Relaxed);
        }
        #[cfg(keel_loom)]
        let _ = w;
    }

    /// How long ago worker `w` was last woken.
    pub(crate) fn since(&self, w: usize) -> std::time::Duration {
        #[cfg(not(keel_loom))]
        {
            let at = std::time::Duration::from_nanos(
                self.at[w].load(std::sync::atomic::Ordering::Relaxed),
            );
            self.epoch.elapsed().saturating_sub(at)
        }
        #[cfg(keel_loom)]
        {
            let _ = w;
            std::time::Duration::ZERO
        }
    }
}

/// A flag read without the lock as a hint and written only under it (a
/// worker's mail, the shutdown flag). Deliberately a plain std atomic even
/// under loom, like [`Counter`]: every decision a hint triggers is made
/// again under the lock, so its staleness can cost a spin turn or a lock
/// hold but never a job or a wakeup, and keeping it out of the model keeps
/// loom's state space to the operations the protocol rests on.
#[derive(Default)]
pub(crate) struct Hint(std::sync::atomic::AtomicBool);

impl Hint {
    /// The flag (Relaxed: a hint orders nothing).
    #[inline]
    pub(crate) fn get(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Sets the flag (under the lock).
    #[inline]
    pub(crate) fn set(&self, v: bool) {
        self.0.store(v, std::sync::atomic::Ordering::Relaxed);
    }
}

/// A statistics counter. Deliberately a plain std atomic even under loom:
/// counters are not part of any protocol, and keeping them out of the model
/// keeps loom's state space to the operations that matter.
#[derive(Default)]
pub(crate) struct Counter(std::sync::atomic::AtomicU64);

impl Counter {
    /// Adds `n` (Relaxed: a statistic orders nothing).
    #[inline]
    pub(crate) fn add(&self, n: u64) {
        self.0.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    }

    /// The current value.
    pub(crate) fn get(&self) -> u64 {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Raises the value to `n` if it is lower (a high-water mark).
    #[inline]
    pub(crate) fn max(&self, n: u64) {
        self.0.fetch_max(n, std::sync::atomic::Ordering::Relaxed);
    }
}
