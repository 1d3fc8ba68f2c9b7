//! aarch64 leaves. Families without a NEON leaf run their scalar twin at
//! [`crate::cpu::Level::Neon`] (no aarch64 machine to test on yet).

pub(crate) mod neon;
