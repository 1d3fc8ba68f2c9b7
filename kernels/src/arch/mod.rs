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

/// An order key back to its element, for the min/max leaves of AVX2 and
/// NEON, which compare order-preserving integer keys (each key map is its
/// own inverse on bits). Defined before the SIMD modules so they see it.
#[cfg(any(
    all(target_arch = "x86_64", target_feature = "sse2"),
    target_arch = "aarch64"
))]
macro_rules! unkey {
    (i64, $k:expr) => {
        $k
    };
    (u64, $k:expr) => {
        ($k as u64) ^ (1 << 63)
    };
    (f64, $k:expr) => {
        f64::from_bits(($k ^ (((($k) >> 63) as u64) >> 1) as i64) as u64)
    };
    (i32, $k:expr) => {
        $k
    };
    (u32, $k:expr) => {
        ($k as u32) ^ (1 << 31)
    };
    (f32, $k:expr) => {
        f32::from_bits(($k ^ (((($k) >> 31) as u32) >> 1) as i32) as u32)
    };
}

// Soft-float x86-64 targets (`x86_64-unknown-none`, kernels) have no SSE,
// and LLVM cannot lower vector code there: they get the scalar level only.
// Dispatch arms for x86-64 leaves use this same cfg.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
pub(crate) mod x86_64;

#[cfg(target_arch = "aarch64")]
pub(crate) mod aarch64;
