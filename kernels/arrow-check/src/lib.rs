//! Tests only: see `tests/adapters.rs`.
