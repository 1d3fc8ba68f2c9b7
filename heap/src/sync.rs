//! The one place that imports atomics and cells.
//!
//! The types loom models (the foreign list, a heap's ownership word and its
//! nudge) come
//! from `loom` under `cfg(keel_loom)`. Process-wide statics (the chunk map,
//! options, global counters, locks) must be `const`-constructible, which
//! loom's types are not, so they use [`plain`] atomics in every build.

#[cfg(not(keel_loom))]
pub(crate) use core::sync::atomic::{AtomicPtr, AtomicU8, AtomicU32, AtomicU64, Ordering};
#[cfg(keel_loom)]
pub(crate) use loom::sync::atomic::{AtomicPtr, AtomicU8, AtomicU32, AtomicU64, Ordering};

/// Atomics for statics and counters that loom never models.
pub(crate) mod plain {
    pub(crate) use core::sync::atomic::{
        AtomicBool, AtomicPtr, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering,
    };
}

/// Follows a sequentially consistent access that pairs with a sequentially
/// consistent access to another location (the store-buffering shape: a
/// store, then a load of the other side's location, `ownership::let_go`
/// against `ownership::push_to_owned`). Nothing in a real build, where the
/// accesses order themselves (on x86-64 the store is an `xchg` and the CAS
/// a locked instruction; on aarch64 `stlr`/`ldar`/`casal`). loom takes
/// `SeqCst` accesses as `AcqRel` (its README, "Unsupported features") and
/// would report the pattern broken, but models a `SeqCst` fence: under loom
/// this is one.
#[inline(always)]
pub(crate) fn seqcst_pairing() {
    #[cfg(keel_loom)]
    loom::sync::atomic::fence(Ordering::SeqCst);
}

/// One step of a bounded wait for another thread (a spin hint; loom's
/// scheduler needs a yield instead).
#[inline]
pub(crate) fn spin_wait() {
    #[cfg(keel_loom)]
    loom::thread::yield_now();
    #[cfg(not(keel_loom))]
    core::hint::spin_loop();
}

/// A value behind `spin`'s test-and-test-and-set lock: the global locks
/// guard rare, short sections (the direct-map pool, the shared fallback
/// heap, Miri's chunk table), and a `const` constructor lets them be
/// statics in a `no_std` crate. (loom builds use it too: statics cannot
/// hold loom's primitives, and loom models the lock-free protocols.)
pub(crate) struct Locked<T>(spin::mutex::SpinMutex<T>);

impl<T> Locked<T> {
    pub(crate) const fn new(val: T) -> Self {
        Locked(spin::mutex::SpinMutex::new(val))
    }

    /// Runs `f` with the lock held.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        f(&mut self.0.lock())
    }

    /// Takes the lock and keeps it after returning: `fork`'s prepare
    /// handler, so no other thread holds it when the process forks.
    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    pub(crate) fn hold(&self) {
        core::mem::forget(self.0.lock());
    }

    /// Releases a lock taken with [`hold`](Self::hold).
    ///
    /// # Safety
    /// The lock is held by `hold` (in this process: `fork`'s parent and
    /// child handlers, the child's copy of it included), and nothing else
    /// is inside it.
    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    pub(crate) unsafe fn release_held(&self) {
        // SAFETY: per the contract, the guard `hold` forgot is the only one.
        unsafe { self.0.force_unlock() }
    }
}
