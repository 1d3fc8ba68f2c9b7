//! Scalar twins of the aggregates: the oracle every SIMD level must equal.
//!
//! Float sums follow the documented order of [`crate::agg::sum`]: the rows
//! split into two runs at [`sum_split`], row `i` accumulates into lane
//! [`sum_lane`], then [`reduce_lanes`] folds the lanes pairwise. The SIMD
//! leaves keep exactly this lane assignment, so every level returns the same
//! bits.

use crate::arch::mask::RowMask;
use crate::arch::num::Num;

/// The most lanes a sum keeps: two runs of [`Num::SUM_LANES`] (64 for `f32`).
pub(crate) const MAX_SUM_LANES: usize = 128;

/// Where the second run of a float sum over `n` rows starts: half the whole
/// 128-row pairs of blocks, `64 * (n / 128)` (0 below 128 rows). A multiple
/// of 64, so of every [`Num::SUM_LANES`]: the runs' lanes line up with the
/// vectors of a block. Two runs give a level twice the independent add
/// chains of one: four 512-bit registers of lanes a run, eight in all, as
/// many as the bench's ceiling loop keeps. With four, the `f64` sum in L1
/// ran at 0.67-0.72 of that loop on an Intel model 167, with eight at
/// 0.97-1.01 (`bench/results/2026-12-07-kernels-f64-two-runs-intel.md`).
#[inline(always)]
pub(crate) const fn sum_split(n: usize) -> usize {
    64 * (n / 128)
}

/// The lane of row `i` in a sum whose second run starts at `h`
/// ([`sum_split`]): `i % L` in the first run, `L + i % L` in the second.
#[inline(always)]
pub(crate) fn sum_lane<T: Num>(i: usize, h: usize) -> usize {
    let lanes = T::SUM_LANES;
    if lanes == 1 {
        0
    } else {
        usize::from(i >= h) * lanes + i % lanes
    }
}

/// Adds rows `start..v.len()` into their lanes (the documented order).
#[inline]
pub(crate) fn sum_into_lanes<T: Num>(acc: &mut [T::Sum], v: &[T], start: usize, m: RowMask<'_>) {
    let h = sum_split(v.len());
    for (i, &x) in v.iter().enumerate().skip(start) {
        if m.get(i) {
            let l = sum_lane::<T>(i, h);
            acc[l] = T::sum_add(acc[l], x.widen());
        }
    }
}

/// Folds the lanes of both runs pairwise: `acc[j] += acc[j + w]` for `w`
/// halving from `L` (each first-run lane takes its second-run twin) to 1.
#[inline]
pub(crate) fn reduce_lanes<T: Num>(acc: &mut [T::Sum]) -> T::Sum {
    let mut w = if T::SUM_LANES > 1 {
        2 * T::SUM_LANES
    } else {
        1
    };
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
    let mut acc = [T::SUM_ZERO; MAX_SUM_LANES];
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
/// order with row `r` in lane [`sum_lane`] of a column of `v.len()` rows
/// (so a sorted list without repeats sums as the bitmap of the same rows
/// does). Every row is below `v.len()` (checked by the caller).
pub(crate) fn sum_rows<T: Num>(v: &[T], rows: &[u32], m: RowMask<'_>) -> T::Sum {
    let mut acc = [T::SUM_ZERO; MAX_SUM_LANES];
    let h = sum_split(v.len());
    for &r in rows {
        let r = r as usize;
        if m.get(r) {
            let l = sum_lane::<T>(r, h);
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
/// independent lanes for integers, where order cannot matter), one run after
/// the other (a float sum's second run into the next `L` lanes), then the
/// lanes fold as [`reduce_lanes`] folds them. The same bits as [`sum`] with
/// every row counted.
#[inline(never)]
pub(crate) fn sum_all<T: Num>(v: &[T]) -> T::Sum {
    let float = T::SUM_LANES > 1;
    let lanes = if float { T::SUM_LANES } else { 8 };
    let mut acc = [T::SUM_ZERO; MAX_SUM_LANES];
    let (first, second) = v.split_at(if float { sum_split(v.len()) } else { 0 });
    for (run, part) in [first, second].into_iter().enumerate() {
        let acc = &mut acc[run * lanes..(run + 1) * lanes];
        let mut chunks = part.chunks_exact(lanes);
        for c in &mut chunks {
            for (a, &x) in acc.iter_mut().zip(c) {
                *a = T::sum_add(*a, x.widen());
            }
        }
        for (a, &x) in acc.iter_mut().zip(chunks.remainder()) {
            *a = T::sum_add(*a, x.widen());
        }
    }
    if float {
        reduce_lanes::<T>(&mut acc)
    } else {
        acc[..2 * lanes]
            .iter()
            .fold(T::SUM_ZERO, |s, &a| T::sum_add(s, a))
    }
}
