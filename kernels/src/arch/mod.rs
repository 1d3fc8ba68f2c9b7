//! Per-level kernel leaves. The only place with `#[target_feature]`.
//!
//! Layout: `scalar/<family>.rs` holds the portable twin of every kernel (the
//! oracle); `x86_64/{avx2,avx512}/<family>.rs` and
//! `aarch64/neon/<family>.rs` hold the SIMD leaves. A SIMD leaf is an
//! `unsafe fn` with `#[target_feature(enable = ...)]` whose `# Safety` says:
//! the CPU supports the level (a [`crate::Kernels`] at that level proves it)
//! and the caller checked the lengths. Helpers a leaf calls are
//! `#[inline(always)]` so they compile with the leaf's features.

pub(crate) mod scalar;

// Soft-float x86-64 targets (`x86_64-unknown-none`, kernels) have no SSE,
// and LLVM cannot lower vector code there: they get the scalar level only.
// Dispatch arms for x86-64 leaves use this same cfg.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
pub(crate) mod x86_64;

#[cfg(target_arch = "aarch64")]
pub(crate) mod aarch64;
