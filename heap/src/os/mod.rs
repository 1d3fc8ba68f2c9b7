//! The OS layer: the only module that talks to the kernel.
//!
//! `map` returns zeroed, readable and writable memory aligned as asked;
//! `unmap` gives it back; `grow` moves a mapping's pages to the start of a
//! larger aligned one (where the OS can); `release` drops the physical pages of a range while
//! keeping the mapping (the next touch faults in a zero page). Under Miri,
//! which has no `mmap`, the same interface is served by the global allocator
//! so that the rest of the crate runs unchanged.

#[cfg(not(miri))]
mod unix;
#[cfg(not(miri))]
pub(crate) use unix::{
    CAN_GROW, abort, grow, map, map_from, now_ms, page_size, random_u64, release, unmap, write_all,
    yield_now,
};

#[cfg(miri)]
mod miri;
#[cfg(miri)]
pub(crate) use miri::{
    CAN_GROW, abort, grow, map, map_from, now_ms, page_size, random_u64, release, unmap, write_all,
    yield_now,
};
pub(crate) mod numa;
#[cfg(feature = "std")]
pub(crate) mod tls;
