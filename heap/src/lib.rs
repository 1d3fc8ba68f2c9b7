//! keel-heap: a multi-heap allocator with per-thread heaps, freelists,
//! cross-thread frees to the owner and an amortized `madvise` GC.
//! Work in progress.
#![no_std]
