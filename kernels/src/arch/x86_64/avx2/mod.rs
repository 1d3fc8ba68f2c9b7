//! AVX2 leaves. Every `#[target_feature]` here enables
//! `avx2,bmi1,bmi2,popcnt,fma`, the set [`crate::cpu::Level::Avx2`] detects.

pub(crate) mod agg;
pub(crate) mod bitmap;
pub(crate) mod filter;
pub(crate) mod gather;
#[cfg(feature = "alloc")]
pub(crate) mod grouped;
pub(crate) mod hash;
#[cfg(feature = "alloc")]
pub(crate) mod hll;
pub(crate) mod narrow;
