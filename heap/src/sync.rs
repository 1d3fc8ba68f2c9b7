//! The one place that imports atomics and cells.
//!
//! The types loom models (the foreign list and a heap's ownership word) come
//! from `loom` under `cfg(keel_loom)`. Process-wide statics (the chunk map,
//! options, global counters, locks) must be `const`-constructible, which
//! loom's types are not, so they use [`plain`] atomics in every build.

#[cfg(not(keel_loom))]
pub(crate) use core::sync::atomic::{AtomicPtr, AtomicU8, Ordering};
#[cfg(keel_loom)]
pub(crate) use loom::sync::atomic::{AtomicPtr, AtomicU8, Ordering};

/// Atomics for statics and counters that loom never models.
pub(crate) mod plain {
    pub(crate) use core::sync::atomic::{
        AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering,
    };
}

use core::cell::UnsafeCell;

/// One step of a bounded wait for another thread (a spin hint; loom's
/// scheduler needs a yield instead).
#[inline]
pub(crate) fn spin_wait() {
    #[cfg(keel_loom)]
    loom::thread::yield_now();
    #[cfg(not(keel_loom))]
    core::hint::spin_loop();
}

/// A test-and-test-and-set spin lock: the global locks guard rare, short
/// sections (heap registry, oversized pool, the shared fallback heap), and a
/// `const` constructor lets them be statics in a `no_std` crate.
pub(crate) struct SpinLock {
    locked: plain::AtomicBool,
}

impl SpinLock {
    pub(crate) const fn new() -> Self {
        SpinLock {
            locked: plain::AtomicBool::new(false),
        }
    }

    pub(crate) fn lock(&self) {
        loop {
            if self
                .locked
                .compare_exchange_weak(
                    false,
                    true,
                    plain::Ordering::Acquire,
                    plain::Ordering::Relaxed,
                )
                .is_ok()
            {
                return;
            }
            while self.locked.load(plain::Ordering::Relaxed) {
                core::hint::spin_loop();
            }
        }
    }

    pub(crate) fn unlock(&self) {
        self.locked.store(false, plain::Ordering::Release);
    }

    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    /// Forcibly resets the lock: only for a fork child, where the thread that
    /// held it no longer exists.
    pub(crate) fn reset(&self) {
        self.locked.store(false, plain::Ordering::Release);
    }
}

/// A value guarded by a [`SpinLock`].
pub(crate) struct Locked<T> {
    lock: SpinLock,
    val: UnsafeCell<T>,
}

// SAFETY: every access to `val` goes through `with`, which holds the lock.
unsafe impl<T: Send> Sync for Locked<T> {}

impl<T> Locked<T> {
    pub(crate) const fn new(val: T) -> Self {
        Locked {
            lock: SpinLock::new(),
            val: UnsafeCell::new(val),
        }
    }

    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        self.lock.lock();
        struct Unlock<'a>(&'a SpinLock);
        impl Drop for Unlock<'_> {
            fn drop(&mut self) {
                self.0.unlock();
            }
        }
        let _u = Unlock(&self.lock);
        // SAFETY: the lock is held until `_u` drops, so this is the only reference.
        f(unsafe { &mut *self.val.get() })
    }

    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    pub(crate) fn raw_lock(&self) -> &SpinLock {
        &self.lock
    }
}
