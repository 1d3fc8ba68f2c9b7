//! keel-kernels: raw SIMD column kernels with runtime CPU dispatch, each with
//! a scalar twin that is its oracle. Work in progress.
#![no_std]
