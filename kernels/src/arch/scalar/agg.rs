//! Scalar twins of the aggregates: the oracle every SIMD level must equal.
//!
//! Float sums follow the documented order of [`crate::agg::sum`]: lane
//! `i % T::SUM_LANES` accumulates row `i`, then [`reduce_lanes`] folds the
//! lanes pairwise. The SIMD leaves keep exactly this lane assignment, so every
//! level returns the same bits.

use crate::arch::mask::RowMask;
use crate::arch::num::Num;

/// Adds rows `start..v.len()` into `acc[i % lanes]` (the documented order).
#[inline]
pub(crate) fn sum_into_lanes<T: Num>(acc: &mut [T::Sum], v: &[T], start: usize, m: RowMask<'_>) {
    let lanes = T::SUM_LANES;
    for (i, &x) in v.iter().enumerate().skip(start) {
        if m.get(i) {
            let l = i % lanes;
            acc[l] = T::sum_add(acc[l], x.widen());
        }
    }
}

/// Folds `acc[..lanes]` pairwise: `acc[j] += acc[j + w]` for `w` halving
/// from `lanes / 2` to 1. `lanes` is a power of two.
#[inline]
pub(crate) fn reduce_lanes<T: Num>(acc: &mut [T::Sum]) -> T::Sum {
    let mut w = T::SUM_LANES;
    while w > 1 {
        w /= 2;
        for j in 0..w {
            acc[j] = T::sum_add(acc[j], acc[j + w]);
        }
    }
    acc[0]
}

/// Sum of the valid values (wrapping for integers, documented order for
/// floats).
pub(crate) fn sum<T: Num>(v: &[T], m: RowMask<'_>) -> T::Sum {
    let mut acc = [T::SUM_ZERO; 64];
    sum_into_lanes::<T>(&mut acc, v, 0, m);
    reduce_lanes::<T>(&mut acc)
}

/// `(min, max)` of the valid values in the min/max order; `MODE` bit 0 asks
/// for the min, bit 1 for the max. Lanes not asked for, and an input without
/// valid values, give `(GREATEST, LEAST)`.
pub(crate) fn min_max<const MODE: u8, T: Num>(v: &[T], m: RowMask<'_>) -> (T, T) {
    let (mut mn, mut mx) = (T::GREATEST, T::LEAST);
    for (i, &x) in v.iter().enumerate() {
        if m.get(i) {
            if MODE & 1 != 0 && x.order_lt(mn) {
                mn = x;
            }
            if MODE & 2 != 0 && mx.order_lt(x) {
                mx = x;
            }
        }
    }
    (mn, mx)
}

/// Merges two partial `(min, max)` results in the min/max order (the AVX2
/// leaves fold their scalar tail in with it).
#[cfg_attr(
    not(all(target_arch = "x86_64", target_feature = "sse2")),
    allow(dead_code)
)]
#[inline]
pub(crate) fn merge<T: Num>(a: (T, T), b: (T, T)) -> (T, T) {
    (
        if b.0.order_lt(a.0) { b.0 } else { a.0 },
        if a.1.order_lt(b.1) { b.1 } else { a.1 },
    )
}

/// Sum of `v[r]` for the listed rows `r` that `m` counts, in the documented
/// order with row `r` in lane `r % lanes` (so a sorted list without repeats
/// sums as the bitmap of the same rows does). Every row is below
/// `v.len()` (checked by the caller).
pub(crate) fn sum_rows<T: Num>(v: &[T], rows: &[u32], m: RowMask<'_>) -> T::Sum {
    let mut acc = [T::SUM_ZERO; 64];
    let lanes = T::SUM_LANES;
    for &r in rows {
        let r = r as usize;
        if m.get(r) {
            let l = r % lanes;
            acc[l] = T::sum_add(acc[l], v[r].widen());
        }
    }
    reduce_lanes::<T>(&mut acc)
}

/// [`min_max`] over the listed rows that `m` counts.
pub(crate) fn min_max_rows<const MODE: u8, T: Num>(
    v: &[T],
    rows: &[u32],
    m: RowMask<'_>,
) -> (T, T) {
    let (mut mn, mut mx) = (T::GREATEST, T::LEAST);
    for &r in rows {
        let (r, x) = (r as usize, v[r as usize]);
        if m.get(r) {
            if MODE & 1 != 0 && x.order_lt(mn) {
                mn = x;
            }
            if MODE & 2 != 0 && mx.order_lt(x) {
                mx = x;
            }
        }
    }
    (mn, mx)
}

/// How many of the listed rows `m` counts.
pub(crate) fn count_rows(rows: &[u32], m: RowMask<'_>) -> usize {
    if m.is_all() {
        return rows.len();
    }
    rows.iter().filter(|&&r| m.get(r as usize)).count()
}

/// Sum of every value of `v`, in the documented order, as a loop the
/// compiler vectorizes at the build's baseline (SSE2 on x86-64): lane
/// `i % L` of a fixed array adds row `i` (`L` = [`Num::SUM_LANES`], or 8
/// independent lanes for integers, where order cannot matter), then the
/// lanes fold as [`reduce_lanes`] folds them. The same bits as [`sum`] with
/// every row counted.
#[inline(never)]
pub(crate) fn sum_all<T: Num>(v: &[T]) -> T::Sum {
    const MAX: usize = 64;
    let lanes = if T::SUM_LANES > 1 { T::SUM_LANES } else { 8 };
    let mut acc = [T::SUM_ZERO; MAX];
    let mut chunks = v.chunks_exact(lanes);
    for c in &mut chunks {
        for (a, &x) in acc[..lanes].iter_mut().zip(c) {
            *a = T::sum_add(*a, x.widen());
        }
    }
    for (a, &x) in acc.iter_mut().zip(chunks.remainder()) {
        *a = T::sum_add(*a, x.widen());
    }
    if T::SUM_LANES > 1 {
        reduce_lanes::<T>(&mut acc)
    } else {
        acc[..lanes]
            .iter()
            .fold(T::SUM_ZERO, |s, &a| T::sum_add(s, a))
    }
}
