//! aarch64 leaves. Families without a NEON leaf run their scalar twin at
//! [`crate::cpu::Level::Neon`] (see [`neon`] for which have one).

pub(crate) mod neon;
