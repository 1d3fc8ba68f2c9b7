//! keel-malloc: keel-heap behind the C allocation family, for `LD_PRELOAD`.
//!
//! Build the shared library and preload it into any dynamically linked
//! program:
//!
//! ```sh
//! cargo build --release -p keel-malloc
//! LD_PRELOAD=target/release/libkeel_malloc.so some-program
//! ```
//!
//! The crate is a thin layer: all size, alignment and `errno` policy of the C
//! API lives here ([`policy`]), all memory policy (size classes, per-thread
//! heaps, cross-thread frees, the amortized GC) lives in `keel_heap::raw`.
//! The exported symbols are in `exports.rs` (C++'s `operator new` and
//! `operator delete` in `exports_cxx.rs`); options from the environment in
//! [`options`]; start-up, `fork` handlers and the exit report in [`init`] and
//! [`report`].
//!
//! There is deliberately no `rlib`: linking this crate into a Rust binary
//! would silently replace that binary's `malloc`. The exported symbols are
//! compiled out of the crate's own unit-test binary for the same reason.

pub mod init;
pub mod options;
pub mod policy;
pub mod report;

#[cfg(not(test))]
pub(crate) mod exports;
// C++'s operator names are those of the 64-bit Itanium ABI (`m` is
// `unsigned long`, the 64-bit `std::size_t`).
#[cfg(all(not(test), target_pointer_width = "64"))]
pub(crate) mod exports_cxx;
