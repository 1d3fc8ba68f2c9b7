//! keel-heap: a multi-heap allocator for analytical engines.
//!
//! Engines allocate large column buffers and many small objects, free them at
//! the end of every query, and do it again. keel-heap gives each thread (or
//! each [`Heap`] handle) its own heap:
//!
//! - small sizes (up to [`SMALL_MAX`]) come from 64 KiB slabs of 32 size
//!   classes; medium sizes (up to [`MEDIUM_MAX`]) are power-of-two buddy
//!   blocks inside [`REGION`]-aligned regions, so a block's region and owner
//!   are found from its address; larger requests are direct maps kept in a
//!   reuse pool under a byte budget;
//! - the allocation and local-free fast paths take no lock and no atomic
//!   read-modify-write; a block freed by another thread goes onto its owner's
//!   lock-free foreign list and is drained on the owner's slow path or GC;
//! - a heap whose thread exits is abandoned, not unmapped, and adopted by the
//!   next new heap;
//! - `gc()` runs its passes in order and releases pages with `madvise` only on
//!   one call in N (default 16), only for blocks free across several GCs,
//!   within a budget (see [`Options`]).
//!
//! ```
//! use keel_heap::Heap;
//!
//! let heap = Heap::new().expect("a heap");
//! let p = heap.alloc(1000, 8);
//! assert!(!p.is_null());
//! // SAFETY: `p` holds 1000 writable bytes.
//! unsafe { p.write_bytes(7, 1000) };
//! assert!(unsafe { keel_heap::usable_size(p) } >= 1000);
//! // SAFETY: `p` came from keel-heap and is freed once.
//! unsafe { heap.free(p) };
//! heap.gc();
//! assert!(heap.is_valid().is_ok());
//! ```
//!
//! With the `std` feature (default), [`raw`] backs the calling thread's heap
//! by a thread-local and [`KeelAlloc`] plugs it in as `#[global_allocator]`.
//! With the `allocator-api2` feature, `&Heap` implements
//! `allocator_api2::alloc::Allocator`: `allocator_api2::vec::Vec` and
//! hashbrown's tables (its `allocator-api2` feature) then live in a [`Heap`]
//! and free into it (`Vec::new_in(&heap)`, `HashMap::new_in(&heap)`).
#![no_std]

#[cfg(not(unix))]
compile_error!(
    "keel-heap runs on Unix-like systems (mmap, madvise, POSIX threads); this target is not one"
);

#[cfg(any(feature = "std", test))]
extern crate std;

mod alloc;
#[cfg(feature = "allocator-api2")]
mod api2;
mod buddy;
mod chunk_map;
mod decay;
mod direct;
mod error;
mod foreign;
mod free;
mod gc;
mod handle;
mod heap;
mod layout;
mod locate;
mod nudge;
mod ops;
mod options;
mod os;
mod ownership;
mod placement;
mod pool;
mod reclaim;
mod region;
mod report;
mod size_class;
mod slab;
mod stats;
mod sync;
mod valid;
mod writer;

#[cfg(feature = "std")]
mod global;
#[cfg(feature = "std")]
pub mod raw;

#[cfg(all(test, keel_loom))]
mod loom_models;

/// The README's examples, run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

pub use error::{AllocError, BadPointer, InvalidHeap};
#[cfg(feature = "std")]
pub use global::KeelAlloc;
pub use handle::Heap;
pub use layout::{MAX_ALIGN, MAX_SIZE, MEDIUM_MAX, PAGE, REGION, SMALL_MAX};
pub use ops::{owns, usable_size};
pub use options::{Options, configure, options};
pub use placement::{
    Decision, FallbackReason, NoOpReason, NodeMask, Placement, PlacementOutcome, Policy,
    current_policy, decide, place,
};
pub use stats::Stats;
pub use writer::StackWriter;

/// The system's page size (`sysconf(_SC_PAGESIZE)`, read once): what
/// `mmap`, `madvise` and `mremap` work in. 4 KiB on x86-64; 16 or 64 KiB on
/// some aarch64 kernels. keel-heap's own unit, [`PAGE`], stays 4 KiB: blocks
/// are laid out in it, and ranges given back to the OS are rounded inward
/// to whole system pages.
///
/// ```
/// let p = keel_heap::page_size();
/// assert!(p.is_power_of_two() && p >= keel_heap::PAGE);
/// ```
pub fn page_size() -> usize {
    os::page_size()
}

/// A process-wide statistics snapshot: sums every heap's published counters
/// (frees still waiting on abandoned heaps' foreign lists are taken in
/// first, so they count as freed).
///
/// ```
/// let heap = keel_heap::Heap::new()?;
/// let p = heap.alloc(8 << 20, 8); // a direct map, counted process-wide
/// let s = keel_heap::stats();
/// assert!(s.in_use >= 8 << 20 && s.mapped >= 8 << 20 && s.heaps >= 1);
/// // SAFETY: `p` is live and freed once.
/// unsafe { heap.free(p) };
/// # Ok::<(), keel_heap::AllocError>(())
/// ```
pub fn stats() -> Stats {
    gc::drain_abandoned();
    let mut s = Stats::default();
    heap::for_each_heap(|h, abandoned| s.add_heap(h.counters(), abandoned));
    s.add_global(pool::pool_bytes());
    s
}

// Public types that cross threads say so at compile time.
static_assertions::assert_impl_all!(Heap: Send, core::fmt::Debug);
#[cfg(feature = "std")]
static_assertions::assert_impl_all!(KeelAlloc: Send, Sync);
static_assertions::assert_not_impl_any!(Heap: Sync);
static_assertions::assert_impl_all!(Stats: Send, Sync, Copy);
static_assertions::assert_impl_all!(Options: Send, Sync, Copy);
static_assertions::assert_impl_all!(BadPointer: Send, Sync, core::error::Error);
static_assertions::assert_impl_all!(InvalidHeap: Send, Sync, core::error::Error);
static_assertions::assert_impl_all!(AllocError: Send, Sync, core::error::Error);
static_assertions::assert_impl_all!(Placement: Send, Sync);
static_assertions::assert_impl_all!(PlacementOutcome: Send, Sync);
