//! Portable scalar twins: the oracle every SIMD level is tested against.

pub(crate) mod agg;
pub(crate) mod bitmap;
pub(crate) mod filter;
pub(crate) mod gather;
#[cfg(feature = "alloc")]
pub(crate) mod grouped;
pub(crate) mod hash;
#[cfg(feature = "alloc")]
pub(crate) mod hll;
