//! The shared harness behind keel's fuzz targets.
//!
//! Each target in `fuzz_targets/` is a thin `fuzz_target!` that decodes its
//! input with `arbitrary` and calls one function here, so the harness logic
//! is ordinary Rust that can also be unit-tested and replayed.
pub mod gather;
pub mod grouped;
pub mod heap;
pub mod kernels;
pub mod kernels_hash;
pub mod topology;
