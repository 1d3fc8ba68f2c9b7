//! The column element types the kernels accept, and their per-type dispatch.

use crate::Kernels;
use crate::arch::dispatch;
use crate::arch::mask::RowMask;
pub use crate::arch::num::Num;

pub(crate) mod private {
    /// Proof that a call comes from inside this crate, after the safe layer
    /// checked the arguments. Outside code cannot construct it.
    #[derive(Clone, Copy)]
    pub struct Token(pub(crate) ());
}
use private::Token;

/// A column element type: `i64`, `u64`, `i32`, `u32`, `i16`, `u16`, `i8`,
/// `u8`, `f64` or `f32`.
///
/// Sealed: its hidden methods are the per-type dispatch of the kernels and
/// need a token only this crate can make. Its type facts (the sum type
/// [`Num::Sum`], the min/max order, [`Num::same`]) are those of its
/// supertrait [`Num`]. Order: integers by value; floats by
/// [`f64::total_cmp`] for min/max (so `-0.0 < +0.0`, `NaN` above `+inf`,
/// negative `NaN` below `-inf`) and by IEEE comparison in filters.
///
/// Code generic over the column type bounds it by `Element`:
///
/// ```
/// use keel_kernels::{agg, Element};
/// fn total<T: Element>(values: &[T]) -> T::Sum {
///     agg::sum(values)
/// }
/// assert_eq!(total(&[1u8, 2, 255]), 258u64);
/// assert_eq!(total(&[-1i16, -2]), -3i64);
/// assert_eq!(total(&[0.5f32, 0.25]), 0.75f32);
/// ```
pub trait Element: Num {
    /// Sum of the rows `m` counts.
    #[doc(hidden)]
    fn k_sum(t: Token, k: Kernels, v: &[Self], m: RowMask<'_>) -> Self::Sum;
    /// Overflow-reporting sum of the rows `m` counts, over `rows` (each in
    /// range) if given.
    #[doc(hidden)]
    fn k_sum_checked(
        t: Token,
        k: Kernels,
        v: &[Self],
        rows: Option<&[u32]>,
        m: RowMask<'_>,
    ) -> Option<Self::Sum>;
    /// Filter into `out` (exactly the words the rows need) or count the
    /// passing rows `m` counts, as `sink` (`arch::scalar::filter::{WRITE,
    /// AND, COUNT}`) says; returns the count (0 unless counting).
    #[doc(hidden)]
    fn k_filter(
        t: Token,
        k: Kernels,
        pred: crate::filter::Predicate<Self>,
        v: &[Self],
        out: &mut [u64],
        sink: u8,
        m: RowMask<'_>,
    ) -> usize;
    /// Min and/or max (`MODE`: 1 min, 2 max, 3 both) over the valid values;
    /// lanes not asked for, and an input without valid values, give
    /// (`GREATEST`, `LEAST`).
    #[doc(hidden)]
    fn k_min_max(t: Token, k: Kernels, mode: u8, v: &[Self], m: RowMask<'_>) -> (Self, Self);
    /// Grouped sums with a SIMD leaf of this type at this level, if there is
    /// one (then `true`); `false` leaves the table untouched for the scalar
    /// twin.
    #[doc(hidden)]
    #[cfg(feature = "alloc")]
    fn k_group_sum(
        t: Token,
        k: Kernels,
        table: &mut crate::arch::scalar::grouped::Table<'_, Self>,
        keys: crate::arch::scalar::grouped::KeyCols<'_>,
        values: &[&[Self]],
        weights: crate::arch::scalar::grouped::Weights<'_, '_>,
        m: RowMask<'_>,
    ) -> bool;
}

/// Overflow-reporting sums: `wide` types widen into a sum type they cannot
/// overflow below 2^32 rows (so the SIMD sum is exact); `exact` types add in
/// `i128` (scalar); floats return their sum.
macro_rules! checked {
    (wide, $t:ident, $k:ident, $v:ident, $rows:ident, $m:ident) => {
        match $rows {
            None if ($v.len() as u64) < (1u64 << 32) => Some(Self::k_sum($t, $k, $v, $m)),
            Some(r) if (r.len() as u64) < (1u64 << 32) => {
                Some(crate::arch::scalar::agg::sum_rows($v, r, $m))
            }
            _ => checked!(exact, $t, $k, $v, $rows, $m),
        }
    };
    (exact, $t:ident, $k:ident, $v:ident, $rows:ident, $m:ident) => {{
        let _ = ($t, $k);
        let mut s: i128 = 0;
        match $rows {
            None => {
                for (i, &x) in $v.iter().enumerate() {
                    if $m.get(i) {
                        s += x as i128;
                    }
                }
            }
            Some(r) => {
                for &i in r {
                    if $m.get(i as usize) {
                        s += $v[i as usize] as i128;
                    }
                }
            }
        }
        Self::Sum::try_from(s).ok()
    }};
    (float, $t:ident, $k:ident, $v:ident, $rows:ident, $m:ident) => {
        Some(match $rows {
            None => Self::k_sum($t, $k, $v, $m),
            Some(r) => crate::arch::scalar::agg::sum_rows($v, r, $m),
        })
    };
}

macro_rules! element {
    ($t:ty, $sum:ident, $mm:ident, $checked:ident, $filter:ident, [$($wide:ident)?] $(, $group:ident $(, $avx2:ident)?)?) => {
        impl Element for $t {
            #[cfg(feature = "alloc")]
            #[allow(unused_variables)] // types without a grouped leaf
            fn k_group_sum(
                _: Token,
                k: Kernels,
                table: &mut crate::arch::scalar::grouped::Table<'_, $t>,
                keys: crate::arch::scalar::grouped::KeyCols<'_>,
                values: &[&[$t]],
                weights: crate::arch::scalar::grouped::Weights<'_, '_>,
                m: RowMask<'_>,
            ) -> bool {
                $(
                    // Two-byte codes have no register leaf, nor float
                    // tables of one lane (past 256 slots: pairs of keys)
                    // one that keeps their rows in order; and over more
                    // than 256 slots an integer call with rows enough for
                    // the wide pairs runs faster there than in a register
                    // leaf (whose hot set still takes a skewed short
                    // call). At the AVX2 and AVX-512 levels the cold leaf
                    // takes the whole call.
                    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
                    let n = values.first().map_or(0, |c| c.len());
                    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
                    if (matches!(keys, crate::arch::scalar::grouped::KeyCols::U16(_))
                        || (<$t as crate::arch::num::Num>::SUM_LANES != 1 && table.lanes == 1)
                        || crate::arch::x86_64::cold::wide_takes(table, (values, weights), n))
                        && matches!(k.level(), crate::cpu::Level::Avx512 | crate::cpu::Level::Avx2)
                    {
                        // SAFETY: the safe layer checked the keys (each in
                        // the layout), the lengths and the mask, and made a
                        // sums-only table (floats: 8 lanes, or one past 256
                        // slots, which `rest_from` may leave to the twin);
                        // 0 is a block start.
                        return unsafe {
                            crate::arch::x86_64::cold::rest_from(
                                table, keys, (values, weights), m, (0, n),
                            )
                        };
                    }
                    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
                    if k.level() == crate::cpu::Level::Avx512 {
                        // SAFETY: a Kernels at Avx512 exists only if the CPU
                        // supports it; the safe layer checked the keys, the
                        // lengths and the mask, and made a sums-only table
                        // with the lanes the leaf needs.
                        unsafe {
                            crate::arch::x86_64::avx512::grouped::$group(
                                table, keys, values, weights, m, n,
                            )
                        };
                        return true;
                    }
                    $(
                        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
                        if k.level() == crate::cpu::Level::Avx2 {
                            // SAFETY: a Kernels at Avx2 exists only if the CPU
                            // supports it; the safe layer checked the keys, the
                            // lengths and the mask, and made a sums-only table
                            // with the lanes the leaf needs.
                            unsafe {
                                crate::arch::x86_64::$avx2::grouped::sum(
                                    table, keys, values, weights, m, n,
                                )
                            };
                            return true;
                        }
                    )?
                )?
                // The other SIMD levels (the scalar level is the twin, the
                // tests' oracle): integer tables' partial sums.
                if k.level() != crate::cpu::Level::Scalar {
                    let n = values.first().map_or(0, |c| c.len());
                    return crate::arch::scalar::grouped::add_sums_ilp(
                        table,
                        keys,
                        (values, weights),
                        m,
                        0,
                        n,
                    );
                }
                false
            }
            fn k_sum_checked(
                t: Token,
                k: Kernels,
                v: &[$t],
                rows: Option<&[u32]>,
                m: RowMask<'_>,
            ) -> Option<Self::Sum> {
                checked!($checked, t, k, v, rows, m)
            }
            fn k_sum(_: Token, k: Kernels, v: &[$t], m: RowMask<'_>) -> Self::Sum {
                #[cfg(target_arch = "aarch64")]
                use crate::arch::aarch64::neon::agg as ne;
                use crate::arch::scalar::agg as sc;
                #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
                use crate::arch::x86_64::{avx2::agg as a2, avx512::agg as a5};
                // A level the CPU supports (dispatch!'s contract): the
                // handle's, or AVX2 in place of AVX-512, which includes it.
                let level = if m.is_all() {
                    crate::agg::sum_level::<$t>(k.level(), v.len())
                } else {
                    k.level()
                };
                $(
                    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
                    if m.is_all()
                        && level == crate::cpu::Level::Avx512
                        && crate::cpu::wide_sums()
                    {
                        // SAFETY: a Kernels at Avx512 exists only if the CPU
                        // supports it; the leaf reads every row of `v`.
                        return unsafe { a5::$wide(v) };
                    }
                )?
                if m.is_all() && crate::agg::sum_streams::<$t>(level, v.len()) {
                    return sc::sum_all(v);
                }
                dispatch!(level, sc::sum, a2::$sum, a5::$sum, ne::$sum, (v, m))
            }
            fn k_filter(
                _: Token,
                k: Kernels,
                pred: crate::filter::Predicate<$t>,
                v: &[$t],
                out: &mut [u64],
                sink: u8,
                m: RowMask<'_>,
            ) -> usize {
                #[cfg(target_arch = "aarch64")]
                use crate::arch::aarch64::neon::filter as ne;
                use crate::arch::scalar::filter as sc;
                #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
                use crate::arch::x86_64::{avx2::filter as a2, avx512::filter as a5};
                let (op, c1, c2) = pred.code();
                // Avx512 or lower: a level the CPU supports (dispatch!'s
                // contract), since the AVX-512 level includes AVX2.
                let level = crate::filter::filter_level::<$t>(k.level(), v.len());
                macro_rules! arm {
                    ($o:ident, $s:ident) => {
                        dispatch!(
                            level,
                            sc::filter_code::<{ sc::$o }, { sc::$s }, $t>,
                            a2::$filter::<{ sc::$o }, { sc::$s }>,
                            a5::$filter::<{ sc::$o }, { sc::$s }>,
                            ne::$filter::<{ sc::$o }, { sc::$s }>,
                            (v, c1, c2, out, m)
                        )
                    };
                }
                macro_rules! ops {
                    ($s:ident) => {
                        match op {
                            sc::EQ => arm!(EQ, $s),
                            sc::NE => arm!(NE, $s),
                            sc::LT => arm!(LT, $s),
                            sc::LE => arm!(LE, $s),
                            sc::GT => arm!(GT, $s),
                            sc::GE => arm!(GE, $s),
                            _ => arm!(BETWEEN, $s),
                        }
                    };
                }
                match sink {
                    sc::WRITE => ops!(WRITE),
                    sc::AND => ops!(AND),
                    _ => ops!(COUNT),
                }
            }
            fn k_min_max(_: Token, k: Kernels, mode: u8, v: &[$t], m: RowMask<'_>) -> ($t, $t) {
                #[cfg(target_arch = "aarch64")]
                use crate::arch::aarch64::neon::agg as ne;
                use crate::arch::scalar::agg as sc;
                #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
                use crate::arch::x86_64::{avx2::agg as a2, avx512::agg as a5};
                macro_rules! arm {
                    ($mode:literal) => {
                        dispatch!(
                            k.level(),
                            sc::min_max::<$mode, $t>,
                            a2::$mm::<$mode>,
                            a5::$mm::<$mode>,
                            ne::$mm::<$mode>,
                            (v, m)
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
    sum_i64,
    min_max_i64,
    exact,
    filter_i64,
    [sum_all_i64],
    sum_i64,
    avx2
);
element!(
    u64,
    sum_u64,
    min_max_u64,
    exact,
    filter_u64,
    [sum_all_u64],
    sum_u64,
    avx2
);
element!(
    i32,
    sum_i32,
    min_max_i32,
    wide,
    filter_i32,
    [sum_all_i32],
    sum_i32,
    avx2
);
element!(
    u32,
    sum_u32,
    min_max_u32,
    wide,
    filter_u32,
    [],
    sum_u32,
    avx2
);
element!(
    f64,
    sum_f64,
    min_max_f64,
    float,
    filter_f64,
    [],
    sum_f64,
    avx2
);
element!(f32, sum_f32, min_max_f32, float, filter_f32, []);
element!(
    i16,
    sum_i16,
    min_max_i16,
    wide,
    filter_i16,
    [],
    sum_i16,
    avx2
);
element!(
    u16,
    sum_u16,
    min_max_u16,
    wide,
    filter_u16,
    [],
    sum_u16,
    avx2
);
element!(i8, sum_i8, min_max_i8, wide, filter_i8, [], sum_i8, avx2);
element!(u8, sum_u8, min_max_u8, wide, filter_u8, [], sum_u8, avx2);
