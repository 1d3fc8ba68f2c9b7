//! The column element types the kernels accept, and their per-type dispatch.

use crate::Kernels;
use core::fmt::Debug;

pub(crate) mod private {
    /// Proof that a call comes from inside this crate, after the safe layer
    /// checked the arguments. Outside code cannot construct it.
    #[derive(Clone, Copy)]
    pub struct Token(pub(crate) ());
}
use private::Token;

/// A column element type: `i64`, `i32`, `u64`, `u32`, `f64` or `f32`.
///
/// Sealed: its hidden methods are the per-type dispatch of the kernels and
/// need a token only this crate can make. Order: integers by value; floats by
/// [`f64::total_cmp`] for min/max (so `-0.0 < +0.0`, `NaN` above `+inf`,
/// negative `NaN` below `-inf`) and by IEEE comparison in filters.
pub trait Element: Copy + PartialOrd + Debug + Default + Send + Sync + 'static {
    /// What [`crate::agg::sum`] returns: `i64` for `i32`/`i64`, `u64` for
    /// `u32`/`u64` (both wrapping), `f64`/`f32` for floats.
    type Sum: Copy + Debug + PartialEq + Default;
    /// The type's name, as in Rust.
    const NAME: &'static str;
    /// The additive identity of [`Element::Sum`] that sums start from
    /// (`-0.0` for floats, so a sum of `-0.0`s stays `-0.0`).
    const SUM_ZERO: Self::Sum;
    /// Independent accumulator lanes of the documented summation order
    /// (see [`crate::agg::sum`]); 1 for integers, where order cannot matter.
    const SUM_LANES: usize;
    /// Smallest value in the min/max order (for floats: negative quiet NaN
    /// with full payload, i.e. the least value under `total_cmp`).
    const LEAST: Self;
    /// Largest value in the min/max order (for floats: positive NaN with full
    /// payload).
    const GREATEST: Self;

    /// Widens a value into the sum type.
    fn widen(self) -> Self::Sum;
    /// Adds in the sum type (wrapping for integers).
    fn sum_add(a: Self::Sum, b: Self::Sum) -> Self::Sum;
    /// `self < other` in the min/max order (total order for floats).
    fn order_lt(self, other: Self) -> bool;
    /// Bit-exact equality for floats (any NaN equals any NaN), `==` for
    /// integers: what "equals its scalar twin" means in tests.
    fn same(self, other: Self) -> bool;

    #[doc(hidden)]
    fn k_sum(t: Token, k: Kernels, v: &[Self], validity: Option<&[u64]>) -> Self::Sum;
    #[doc(hidden)]
    fn k_sum_checked(
        t: Token,
        k: Kernels,
        v: &[Self],
        validity: Option<&[u64]>,
    ) -> Option<Self::Sum>;
    /// Filter into `out` (exactly the words the rows need), `and`ing if
    /// asked.
    #[doc(hidden)]
    fn k_filter(
        t: Token,
        k: Kernels,
        pred: crate::filter::Predicate<Self>,
        v: &[Self],
        out: &mut [u64],
        and: bool,
    );
    /// Min and/or max (`MODE`: 1 min, 2 max, 3 both) over the valid values;
    /// lanes not asked for, and an input without valid values, give
    /// (`GREATEST`, `LEAST`).
    #[doc(hidden)]
    fn k_min_max(
        t: Token,
        k: Kernels,
        mode: u8,
        v: &[Self],
        validity: Option<&[u64]>,
    ) -> (Self, Self);
}

macro_rules! int_common {
    ($t:ty, $sum:ty) => {
        type Sum = $sum;
        const NAME: &'static str = stringify!($t);
        const SUM_ZERO: $sum = 0;
        const SUM_LANES: usize = 1;
        const LEAST: $t = <$t>::MIN;
        const GREATEST: $t = <$t>::MAX;
        #[inline(always)]
        fn widen(self) -> $sum {
            self as $sum
        }
        #[inline(always)]
        fn sum_add(a: $sum, b: $sum) -> $sum {
            a.wrapping_add(b)
        }
        #[inline(always)]
        fn order_lt(self, other: $t) -> bool {
            self < other
        }
        #[inline(always)]
        fn same(self, other: $t) -> bool {
            self == other
        }
    };
}

macro_rules! float_common {
    ($t:ty, $bits:ty, $lanes:expr) => {
        type Sum = $t;
        const NAME: &'static str = stringify!($t);
        const SUM_ZERO: $t = -0.0;
        const SUM_LANES: usize = $lanes;
        const LEAST: $t = <$t>::from_bits(!0);
        const GREATEST: $t = <$t>::from_bits(!0 >> 1);
        #[inline(always)]
        fn widen(self) -> $t {
            self
        }
        #[inline(always)]
        fn sum_add(a: $t, b: $t) -> $t {
            a + b
        }
        #[inline(always)]
        fn order_lt(self, other: $t) -> bool {
            self.total_cmp(&other).is_lt()
        }
        #[inline(always)]
        fn same(self, other: $t) -> bool {
            self.to_bits() == other.to_bits() || (self.is_nan() && other.is_nan())
        }
    };
}

/// Dispatches one kernel on the handle's level: `$scalar` is the twin, the
/// x86-64 leaves live in `arch::x86_64::{avx2,avx512}::$fam`, and the
/// optional `$neon` leaf in `arch::aarch64::neon::$fam` (without one, NEON
/// runs the scalar twin).
macro_rules! dispatch {
    (@arms $k:expr, $scalar:expr, $avx2:expr, $avx512:expr, {$($neon_arm:tt)*},
     ($($arg:expr),*)) => {
        match $k.level() {
            $($neon_arm)*
            #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
            $crate::cpu::Level::Avx2 => {
                // SAFETY: a Kernels at Avx2 exists only if the CPU supports
                // AVX2 (Kernels::at checks, cpu::level clamps); the safe layer
                // checked the lengths before it made the Token.
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
    ($k:expr, $scalar:expr, $avx2:expr, $avx512:expr, ($($arg:expr),*)) => {
        $crate::element::dispatch!(@arms $k, $scalar, $avx2, $avx512, {}, ($($arg),*))
    };
    ($k:expr, $scalar:expr, $avx2:expr, $avx512:expr, $neon:expr, ($($arg:expr),*)) => {
        $crate::element::dispatch!(@arms $k, $scalar, $avx2, $avx512, {
            #[cfg(target_arch = "aarch64")]
            $crate::cpu::Level::Neon => {
                // SAFETY: a Kernels at Neon exists only if the CPU supports
                // NEON (Kernels::at checks, cpu::level clamps); the safe
                // layer checked the lengths before it made the Token.
                unsafe { $neon($($arg),*) }
            }
        }, ($($arg),*))
    };
}
#[allow(unused_imports)] // used by the families as they move onto it
pub(crate) use dispatch;

/// Overflow-reporting sums: `wide` types widen into a sum type they cannot
/// overflow below 2^32 rows (so the SIMD sum is exact); `exact` types add in
/// `i128` (scalar); floats return their sum.
macro_rules! checked {
    (wide, $t:ident, $k:ident, $v:ident, $val:ident) => {
        if ($v.len() as u64) < (1u64 << 32) {
            Some(Self::k_sum($t, $k, $v, $val))
        } else {
            checked!(exact, $t, $k, $v, $val)
        }
    };
    (exact, $t:ident, $k:ident, $v:ident, $val:ident) => {{
        let _ = ($t, $k);
        let mut s: i128 = 0;
        for (i, &x) in $v.iter().enumerate() {
            if crate::arch::scalar::agg::is_valid($val, i) {
                s += x as i128;
            }
        }
        Self::Sum::try_from(s).ok()
    }};
    (float, $t:ident, $k:ident, $v:ident, $val:ident) => {
        Some(Self::k_sum($t, $k, $v, $val))
    };
}

macro_rules! element {
    ($t:ty, $common:ident!($($c:tt)*), $sum:ident, $mm:ident, $checked:ident, $filter:ident) => {
        impl Element for $t {
            $common!($($c)*);
            fn k_sum_checked(t: Token, k: Kernels, v: &[$t], val: Option<&[u64]>)
                -> Option<Self::Sum> {
                checked!($checked, t, k, v, val)
            }
            fn k_sum(_: Token, k: Kernels, v: &[$t], val: Option<&[u64]>) -> Self::Sum {
                #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
                use crate::arch::x86_64::{avx2::agg as a2, avx512::agg as a5};
                #[cfg(target_arch = "aarch64")]
                use crate::arch::aarch64::neon::agg as ne;
                use crate::arch::scalar::agg as sc;
                dispatch!(k, sc::sum, a2::$sum, a5::$sum, ne::$sum, (v, val))
            }
            fn k_filter(
                _: Token,
                k: Kernels,
                pred: crate::filter::Predicate<$t>,
                v: &[$t],
                out: &mut [u64],
                and: bool,
            ) {
                #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
                use crate::arch::x86_64::{avx2::filter as a2, avx512::filter as a5};
                #[cfg(target_arch = "aarch64")]
                use crate::arch::aarch64::neon::filter as ne;
                use crate::arch::scalar::filter as sc;
                let (op, c1, c2) = pred.code();
                macro_rules! arm {
                    ($o:literal, $a:literal) => {
                        dispatch!(
                            k,
                            sc::filter_code::<$o, $a, $t>,
                            a2::$filter::<$o, $a>,
                            a5::$filter::<$o, $a>,
                            ne::$filter::<$o, $a>,
                            (v, c1, c2, out)
                        )
                    };
                }
                match (op, and) {
                    (0, false) => arm!(0, false),
                    (1, false) => arm!(1, false),
                    (2, false) => arm!(2, false),
                    (3, false) => arm!(3, false),
                    (4, false) => arm!(4, false),
                    (5, false) => arm!(5, false),
                    (_, false) => arm!(6, false),
                    (0, true) => arm!(0, true),
                    (1, true) => arm!(1, true),
                    (2, true) => arm!(2, true),
                    (3, true) => arm!(3, true),
                    (4, true) => arm!(4, true),
                    (5, true) => arm!(5, true),
                    (_, true) => arm!(6, true),
                }
            }
            fn k_min_max(_: Token, k: Kernels, mode: u8, v: &[$t], val: Option<&[u64]>) -> ($t, $t) {
                #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
                use crate::arch::x86_64::{avx2::agg as a2, avx512::agg as a5};
                #[cfg(target_arch = "aarch64")]
                use crate::arch::aarch64::neon::agg as ne;
                use crate::arch::scalar::agg as sc;
                macro_rules! arm {
                    ($m:literal) => {
                        dispatch!(
                            k,
                            sc::min_max::<$m, $t>,
                            a2::$mm::<$m>,
                            a5::$mm::<$m>,
                            ne::$mm::<$m>,
                            (v, val)
                        )
                    };
                }
                match mode {
                    1 => arm!(1),
                    2 => arm!(2),
                    _ => arm!(3),
                }
            }
        }
    };
}

element!(
    i64,
    int_common!(i64, i64),
    sum_i64,
    min_max_i64,
    exact,
    filter_i64
);
element!(
    u64,
    int_common!(u64, u64),
    sum_u64,
    min_max_u64,
    exact,
    filter_u64
);
element!(
    i32,
    int_common!(i32, i64),
    sum_i32,
    min_max_i32,
    wide,
    filter_i32
);
element!(
    u32,
    int_common!(u32, u64),
    sum_u32,
    min_max_u32,
    wide,
    filter_u32
);
element!(
    f64,
    float_common!(f64, u64, 32),
    sum_f64,
    min_max_f64,
    float,
    filter_f64
);
element!(
    f32,
    float_common!(f32, u32, 64),
    sum_f32,
    min_max_f32,
    float,
    filter_f32
);
