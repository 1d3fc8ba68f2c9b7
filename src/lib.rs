//! keel: the execution core of an analytical engine, in small crates.
//!
//! This facade re-exports each crate behind a feature of the same name, as
//! crossbeam does, so an engine can depend on `keel-rt` alone:
//!
//! | module | crate | what it is |
//! |---|---|---|
//! | [`topology`] | `keel-topology` | usable CPUs, physical cores, NUMA, caches, quotas |
//! | [`pool`] | `keel-pool` | fork-join batches over fixed workers |
//! | [`heap`] | `keel-heap` | multi-heap allocator with an amortized GC |
//! | [`kernels`] | `keel-kernels` | SIMD column kernels with runtime dispatch |
//!
//! With every crate on, [`Runtime`] composes them: a pool sized from the
//! topology, one heap per hand, and kernels run morsel-parallel (a fold
//! with per-hand state, sum, filter-count, count-distinct through per-hand
//! HyperLogLogs, span scan with a shared abort flag).
#![no_std]

#[cfg(feature = "std")]
extern crate std;

#[cfg(feature = "topology")]
#[doc(inline)]
pub use keel_topology as topology;

#[cfg(feature = "pool")]
#[doc(inline)]
pub use keel_pool as pool;

#[cfg(feature = "heap")]
#[doc(inline)]
pub use keel_heap as heap;

#[cfg(feature = "kernels")]
#[doc(inline)]
pub use keel_kernels as kernels;

#[cfg(all(
    feature = "std",
    feature = "topology",
    feature = "pool",
    feature = "heap",
    feature = "kernels"
))]
mod runtime;
#[cfg(all(
    feature = "std",
    feature = "topology",
    feature = "pool",
    feature = "heap",
    feature = "kernels"
))]
pub use runtime::{HandCx, MORSEL_ROWS, Runtime, RuntimeConfig, RuntimeError, WorkKind};

// An engine shares one runtime between its threads and sends its errors
// across them; a hand's context holds that hand's heap and must stay on
// the thread running it. A change that broke either fails to compile.
#[cfg(all(
    feature = "std",
    feature = "topology",
    feature = "pool",
    feature = "heap",
    feature = "kernels"
))]
mod assertions {
    use super::*;
    static_assertions::assert_impl_all!(Runtime: Send, Sync);
    static_assertions::assert_impl_all!(RuntimeConfig: Send, Sync, Clone);
    static_assertions::assert_impl_all!(RuntimeError: Send, Sync, core::error::Error);
    static_assertions::assert_impl_all!(WorkKind: Send, Sync, Copy);
    static_assertions::assert_not_impl_any!(HandCx<'static>: Send, Sync);
}

/// The README's examples, compiled and run as doctests.
#[cfg(all(
    doctest,
    feature = "std",
    feature = "topology",
    feature = "pool",
    feature = "heap",
    feature = "kernels"
))]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
