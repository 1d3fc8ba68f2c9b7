//! x86-64 leaves: AVX2 (with BMI1/BMI2, POPCNT, FMA) and AVX-512
//! (F, BW, CD, DQ, VL, VPOPCNTDQ), matching [`crate::cpu::Level`].

pub(crate) mod avx2;
pub(crate) mod avx512;
