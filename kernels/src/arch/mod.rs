//! Per-level kernel leaves. The only place with `#[target_feature]`.
//!
//! # The contract
//!
//! * **Layout.** `scalar/<family>.rs` holds the portable twin of every
//!   kernel (the oracle); `x86_64/{avx2,avx512}/<family>.rs` and
//!   `aarch64/neon/<family>.rs` hold the SIMD leaves; `num.rs` holds the
//!   type facts the twins are generic over.
//! * **Leaves depend on nothing above `arch/`.** What a leaf needs (the
//!   element type facts [`num::Num`], the hash constants, the predicate
//!   codes, the gather descriptors) is defined in this folder; the safe
//!   layer above translates its types into these.
//! * **A SIMD leaf** is an `unsafe fn` with `#[target_feature(enable =
//!   ...)]` whose `# Safety` says: the CPU supports the level (a
//!   [`crate::Kernels`] at that level proves it) and the caller checked the
//!   lengths. Helpers a leaf calls are `#[inline(always)]` so they compile
//!   with the leaf's features.
//! * **The safe layer reaches a leaf through [`dispatch!`]** on the level
//!   of a `Kernels` value, which is the proof the leaf's `unsafe` needs.
//! * x86-64 leaves exist under `cfg(all(target_arch = "x86_64",
//!   target_feature = "sse2"))`: soft-float targets such as
//!   `x86_64-unknown-none` have no SSE, cannot compile vector code, and run
//!   the scalar level. `dispatch!` applies that cfg to its arms.

pub(crate) mod mask;
pub(crate) mod num;
pub(crate) mod scalar;

/// Calls one kernel at a level: `$scalar` is the twin, `$avx2` and
/// `$avx512` the x86-64 leaves, and the optional `$neon` the aarch64 leaf
/// (without one, NEON runs the scalar twin).
///
/// `$level` must be the level of a [`crate::Kernels`] value (which exists
/// only for levels the CPU supports), and the caller must have checked the
/// arguments as the leaves' `# Safety` sections require.
macro_rules! dispatch {
    (@arms $level:expr, $scalar:expr, $avx2:expr, $avx512:expr, {$($neon_arm:tt)*},
     ($($arg:expr),*)) => {
        match $level {
            $($neon_arm)*
            #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
            $crate::cpu::Level::Avx2 => {
                // SAFETY: the level is a Kernels value's, which exists only
                // if the CPU supports AVX2 (Kernels::at checks, cpu::level
                // clamps); the caller checked the arguments.
                unsafe { $avx2($($arg),*) }
            }
            #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
            $crate::cpu::Level::Avx512 => {
                // SAFETY: as above, for AVX-512.
                unsafe { $avx512($($arg),*) }
            }
            // Scalar, and NEON for families without a NEON leaf.
            _ => $scalar($($arg),*),
        }
    };
    ($level:expr, $scalar:expr, $avx2:expr, $avx512:expr, ($($arg:expr),*)) => {
        $crate::arch::dispatch!(@arms $level, $scalar, $avx2, $avx512, {}, ($($arg),*))
    };
    ($level:expr, $scalar:expr, $avx2:expr, $avx512:expr, $neon:expr, ($($arg:expr),*)) => {
        $crate::arch::dispatch!(@arms $level, $scalar, $avx2, $avx512, {
            #[cfg(target_arch = "aarch64")]
            $crate::cpu::Level::Neon => {
                // SAFETY: the level is a Kernels value's, which exists only
                // if the CPU supports NEON; the caller checked the arguments.
                unsafe { $neon($($arg),*) }
            }
        }, ($($arg),*))
    };
}
pub(crate) use dispatch;

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
