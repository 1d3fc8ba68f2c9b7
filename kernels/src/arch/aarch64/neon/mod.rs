//! NEON leaves. None of the aggregate/filter/bitmap families has one yet:
//! they dispatch to the scalar twin at [`crate::cpu::Level::Neon`].
