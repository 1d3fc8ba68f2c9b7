//! The only place that names the concurrency primitives: std's in a normal
//! build, loom's under `cfg(keel_loom)` so every protocol in this crate can
//! be model-checked by swapping this one module.
//!
//! Time is switched here too: loom does not model clocks, so a spin window
//! becomes a bounded number of yields under loom.

#[cfg(not(keel_loom))]
pub(crate) use std::sync::{
    Arc, Mutex, MutexGuard,
    atomic::{AtomicBool, AtomicUsize, Ordering},
};
#[cfg(not(keel_loom))]
pub(crate) use std::thread;
#[cfg(not(keel_loom))]
pub(crate) use std::thread_local;

#[cfg(keel_loom)]
pub(crate) use loom::sync::{
    Arc, Mutex, MutexGuard,
    atomic::{AtomicBool, AtomicUsize, Ordering},
};
#[cfg(keel_loom)]
pub(crate) use loom::thread;
#[cfg(keel_loom)]
pub(crate) use loom::thread_local;

/// Locks `m`, ignoring poisoning: no code in this crate panics while holding
/// one of its locks (jobs run outside every lock, under `catch_unwind`), so a
/// poisoned lock can only come from an allocation failure, after which the
/// data is still consistent.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One turn of a spin loop: a CPU hint normally, a yield under loom (loom
/// requires spin loops to yield so that the other threads can progress).
#[inline]
pub(crate) fn spin_hint() {
    #[cfg(not(keel_loom))]
    std::hint::spin_loop();
    #[cfg(keel_loom)]
    loom::thread::yield_now();
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
}
