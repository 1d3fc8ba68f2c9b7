//! NEON leaves. Every `#[target_feature]` here enables `neon`, the feature
//! [`crate::cpu::Level::Neon`] detects. Families without a leaf here
//! (selection vectors, gathers, hashing, HyperLogLog, and what builds on
//! them) run their scalar twin at that level.

pub(crate) mod agg;
pub(crate) mod bitmap;
pub(crate) mod filter;
