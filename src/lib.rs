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
