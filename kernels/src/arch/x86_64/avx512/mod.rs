//! AVX-512 leaves. Every `#[target_feature]` here enables
//! `avx512f,avx512bw,avx512cd,avx512dq,avx512vl,avx512vpopcntdq,bmi2,popcnt`, the set
//! [`crate::cpu::Level::Avx512`] detects.

pub(crate) mod agg;
pub(crate) mod bitmap;
pub(crate) mod compress;
pub(crate) mod filter;
#[cfg(feature = "alloc")]
pub(crate) mod grouped;
pub(crate) mod hash;
#[cfg(feature = "alloc")]
pub(crate) mod hll;
pub(crate) mod narrow;
