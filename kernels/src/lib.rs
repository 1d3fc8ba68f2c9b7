//! keel-kernels: raw SIMD column kernels with runtime CPU dispatch, each with
//! a scalar twin that is its oracle. Work in progress.
#![no_std]

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

pub mod cpu;
