//! NEON leaves. Every `#[target_feature]` here enables `neon`, the feature
//! [`crate::cpu::Level::Neon`] detects. Leaves: the aggregates (sum, min,
//! max, min-max; count is a bitmap popcount), the compare-to-constant
//! filters, bitmap and/or/and-not/popcount, and the HyperLogLog merge (zone
//! maps and span scans run on the aggregates and filters). The rest
//! (selection vectors, gathers, hashing, partitioning, HyperLogLog add) run
//! their scalar twin at that level.

pub(crate) mod agg;
pub(crate) mod bitmap;
pub(crate) mod filter;
#[cfg(feature = "alloc")]
pub(crate) mod hll;
pub(crate) mod narrow;
