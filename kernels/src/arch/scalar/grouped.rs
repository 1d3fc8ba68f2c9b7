//! Scalar twin of the grouped aggregates, and the table and key views every
//! grouped leaf works on.
//!
//! A table holds, per slot (group), a row count, and per slot and value
//! column `lanes` sum lanes and, if asked, a min and a max. Counted row `i`
//! adds to lane `i % lanes` of its slot's sums, rows in increasing order
//! (a selection vector's rows in the order listed, row `r` in lane
//! `r % lanes`). Every leaf keeps that order for each lane, so float sums
//! are the same bits at every level.

use crate::arch::mask::RowMask;
use crate::arch::num::Num;

/// The key columns of one call, as slots: a `u8` or `u16` code is its slot;
/// a pair of `u8` keys is `(a - a_lo) * b_span + (b - b_lo)`. The caller
/// checked every key against the layout.
#[derive(Clone, Copy, Debug)]
pub enum KeyCols<'a> {
    /// One-byte codes.
    U8(&'a [u8]),
    /// Two-byte codes.
    U16(&'a [u16]),
    /// Two one-byte keys.
    Pair {
        /// First keys.
        a: &'a [u8],
        /// Second keys.
        b: &'a [u8],
        /// Least first key.
        a_lo: u8,
        /// Least second key.
        b_lo: u8,
        /// Second keys in the layout.
        b_span: usize,
    },
}

impl KeyCols<'_> {
    /// Row `i`'s slot.
    #[inline(always)]
    pub(crate) fn slot(&self, i: usize) -> usize {
        match *self {
            KeyCols::U8(k) => usize::from(k[i]),
            KeyCols::U16(k) => usize::from(k[i]),
            KeyCols::Pair {
                a,
                b,
                a_lo,
                b_lo,
                b_span,
            } => usize::from(a[i] - a_lo) * b_span + usize::from(b[i] - b_lo),
        }
    }
}

/// A table's storage as the leaves write it.
#[derive(Debug)]
pub struct Table<'a, T: Num> {
    /// Rows counted, per slot.
    pub(crate) counts: &'a mut [u64],
    /// Sum lanes, `[(slot * columns + column) * lanes + lane]`; empty when
    /// sums are not kept.
    pub(crate) sums: &'a mut [T::Sum],
    /// Minimums, `[slot * columns + column]`; empty when not kept.
    pub(crate) mins: &'a mut [T],
    /// Maximums, as `mins`.
    pub(crate) maxs: &'a mut [T],
    /// Value columns.
    pub(crate) columns: usize,
    /// Sum lanes per slot and column (a power of two).
    pub(crate) lanes: usize,
}

/// Per value column, an optional `u16` weight column: a weighted column's
/// row adds `value · weight` to its sums (`&[]`: no column is weighted).
pub type Weights<'a, 'w> = &'a [Option<&'w [u16]>];

/// Row `i`'s term of column `c`: its value, times its weight if weighted.
#[inline(always)]
pub(crate) fn term<T: Num>(col: &[T], w: Weights<'_, '_>, c: usize, i: usize) -> T::Sum {
    match w.get(c) {
        Some(Some(w)) => T::sum_weigh(col[i].widen(), w[i]),
        _ => col[i].widen(),
    }
}

impl<T: Num> Table<'_, T> {
    /// Adds row `i` (of `values`, weighted by `w`) to `slot`. A table that
    /// keeps mins or maxes is never weighted.
    #[inline(always)]
    pub(crate) fn add_row(&mut self, slot: usize, i: usize, values: &[&[T]], w: Weights<'_, '_>) {
        self.counts[slot] += 1;
        let base = slot * self.columns;
        if !self.sums.is_empty() {
            let lane = i & (self.lanes - 1);
            for (c, col) in values.iter().enumerate() {
                let s = &mut self.sums[(base + c) * self.lanes + lane];
                *s = T::sum_add(*s, term(col, w, c, i));
            }
        }
        if !self.mins.is_empty() {
            for (c, col) in values.iter().enumerate() {
                let (x, s) = (col[i], &mut self.mins[base + c]);
                if x.order_lt(*s) {
                    *s = x;
                }
            }
        }
        if !self.maxs.is_empty() {
            for (c, col) in values.iter().enumerate() {
                let (x, s) = (col[i], &mut self.maxs[base + c]);
                if s.order_lt(x) {
                    *s = x;
                }
            }
        }
    }
}

/// Adds the rows `m` counts (of `rows` if given, else of all), in order.
/// `keys` and every column of `values` have the same length `n`; every
/// listed row is below it.
pub(crate) fn add<T: Num>(
    t: &mut Table<'_, T>,
    keys: KeyCols<'_>,
    (values, w): (&[&[T]], Weights<'_, '_>),
    rows: Option<&[u32]>,
    m: RowMask<'_>,
    n: usize,
) {
    match rows {
        Some(rows) => {
            for &r in rows {
                let r = r as usize;
                if m.get(r) {
                    t.add_row(keys.slot(r), r, values, w);
                }
            }
        }
        None => add_range(t, keys, (values, w), m, 0, n),
    }
}

/// Adds the rows of `start..end` that `m` counts, in order (`end` is at
/// most the columns' length; `start` is a multiple of 64 or `end`).
pub(crate) fn add_range<T: Num>(
    t: &mut Table<'_, T>,
    keys: KeyCols<'_>,
    (values, w): (&[&[T]], Weights<'_, '_>),
    m: RowMask<'_>,
    start: usize,
    end: usize,
) {
    if t.mins.is_empty() && t.maxs.is_empty() {
        // Sums and counts only: a pass over the keys for the counts, then
        // one per column, each as tight as a hand-written group-by loop
        // (the slot of a row is a closure the compiler inlines per key
        // kind). Each lane still takes its rows in order.
        match keys {
            KeyCols::U8(k) => sums_only(t, (values, w), m, start, end, |i| usize::from(k[i])),
            KeyCols::U16(k) => sums_only(t, (values, w), m, start, end, |i| usize::from(k[i])),
            KeyCols::Pair {
                a,
                b,
                a_lo,
                b_lo,
                b_span,
            } => sums_only(t, (values, w), m, start, end, |i| {
                usize::from(a[i] - a_lo) * b_span + usize::from(b[i] - b_lo)
            }),
        }
        return;
    }
    for_each_row(m, start, end, |i| t.add_row(keys.slot(i), i, values, w));
}

/// Slots [`add_sums_ilp`] keeps partial sums for (four a slot and column:
/// 2 KiB of stack for 64-bit sums).
const ILP_SLOTS: usize = 64;

/// The SIMD levels' grouped sums of an integer table without a leaf of
/// their own (NEON; AVX2 where its leaf does not apply): the rows `m`
/// counts in `start..n` (`start` a multiple of 64), counts and sums only,
/// at most [`ILP_SLOTS`] slots; `false`, with nothing done, for any other
/// table. One walk of the
/// counted rows takes up to three columns (a row's slot found once for
/// them), and row `i` adds into partial sum `i % 4` of its slot and
/// column, on the stack, folded into the table at the end. In
/// [`add_range`] consecutive rows of one slot add into one word of the
/// table, each add waiting on the store before it; integer sums wrap, so
/// any order gives the twin's sums. TPC-H Q1's plan at
/// `KEEL_KERNELS=avx2` spent 92% of its time in the twin, and ran in 0.70
/// of it with this (`bench/results/2026-12-07-kernels-grouped-avx2-intel.md`).
pub(crate) fn add_sums_ilp<T: Num>(
    t: &mut Table<'_, T>,
    keys: KeyCols<'_>,
    (values, w): (&[&[T]], Weights<'_, '_>),
    m: RowMask<'_>,
    start: usize,
    n: usize,
) -> bool {
    debug_assert!(start.is_multiple_of(64) || start == n);
    if T::SUM_LANES != 1
        || t.lanes != 1
        || t.counts.len() > ILP_SLOTS
        || t.sums.is_empty()
        || !t.mins.is_empty()
        || !t.maxs.is_empty()
    {
        return false;
    }
    match keys {
        KeyCols::U8(k) => ilp_sums(t, (values, w), m, (start, n), |i| usize::from(k[i])),
        KeyCols::U16(k) => ilp_sums(t, (values, w), m, (start, n), |i| usize::from(k[i])),
        KeyCols::Pair {
            a,
            b,
            a_lo,
            b_lo,
            b_span,
        } => ilp_sums(t, (values, w), m, (start, n), |i| {
            usize::from(a[i] - a_lo) * b_span + usize::from(b[i] - b_lo)
        }),
    }
    true
}

/// Calls `f` on each row of `start..n` (`start` a multiple of 64) that `m`
/// counts, in order, from one call site, so that LLVM inlines `f` (handed
/// to [`for_each_row`], with two, a large walk stayed a call a row).
#[inline(always)]
fn each_counted(m: RowMask<'_>, start: usize, n: usize, mut f: impl FnMut(usize)) {
    let all = m.is_all();
    for b in start / 64..n.div_ceil(64) {
        let lim = !0u64 >> (64 - (n - b * 64).min(64));
        let mut w = if all { lim } else { m.word(b) & lim };
        while w != 0 {
            f(b * 64 + w.trailing_zeros() as usize);
            w &= w - 1;
        }
    }
}

#[inline(always)]
fn ilp_sums<T: Num>(
    t: &mut Table<'_, T>,
    (values, w): (&[&[T]], Weights<'_, '_>),
    m: RowMask<'_>,
    span: (usize, usize),
    slot: impl Fn(usize) -> usize + Copy,
) {
    let slots = t.counts.len();
    let mut counts = [[0u64; 4]; ILP_SLOTS];
    let mut first = true;
    let mut c = 0;
    // Up to three columns a walk, so a row's slot is found once for them.
    while c < values.len() {
        let k = (values.len() - c).min(3);
        let cols = &values[c..c + k];
        let wts = |i: usize| w.get(c + i).copied().flatten();
        let counts = if first { Some(&mut counts) } else { None };
        match k {
            1 => ilp_pass::<T, 1>(t, c, [cols[0]], [wts(0)], counts, m, span, slot),
            2 => ilp_pass::<T, 2>(
                t,
                c,
                [cols[0], cols[1]],
                [wts(0), wts(1)],
                counts,
                m,
                span,
                slot,
            ),
            _ => ilp_pass::<T, 3>(
                t,
                c,
                [cols[0], cols[1], cols[2]],
                [wts(0), wts(1), wts(2)],
                counts,
                m,
                span,
                slot,
            ),
        }
        first = false;
        c += k;
    }
    for (total, c) in t.counts.iter_mut().zip(&counts[..slots]) {
        *total += c[0] + c[1] + c[2] + c[3];
    }
}

/// One walk of [`ilp_sums`] over `C` columns from column `c0`, counting
/// the rows too when given `counts`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn ilp_pass<T: Num, const C: usize>(
    t: &mut Table<'_, T>,
    c0: usize,
    cols: [&[T]; C],
    wts: [Option<&[u16]>; C],
    mut counts: Option<&mut [[u64; 4]; ILP_SLOTS]>,
    m: RowMask<'_>,
    (start, n): (usize, usize),
    slot: impl Fn(usize) -> usize,
) {
    let cols = cols.map(|c| &c[..n]);
    let mut part = [[[T::SUM_ZERO; 4]; C]; ILP_SLOTS];
    // A named function, forced inline, called from `each_counted`'s one
    // call site: as a closure handed to `for_each_row` (two call sites),
    // LLVM kept the walk out of line, a call a row with its captures read
    // through memory (80% of Q1's samples at `KEEL_KERNELS=avx2`).
    #[inline(always)]
    fn row<T: Num, const C: usize>(
        i: usize,
        s: usize,
        (cols, wts): (&[&[T]; C], &[Option<&[u16]>; C]),
        counts: &mut Option<&mut [[u64; 4]; ILP_SLOTS]>,
        part: &mut [[[T::Sum; 4]; C]; ILP_SLOTS],
    ) {
        if let Some(counts) = counts.as_deref_mut() {
            counts[s][i & 3] += 1;
        }
        for c in 0..C {
            let x = match wts[c] {
                Some(wc) => T::sum_weigh(cols[c][i].widen(), wc[i]),
                None => cols[c][i].widen(),
            };
            let p = &mut part[s][c][i & 3];
            *p = T::sum_add(*p, x);
        }
    }
    each_counted(m, start, n, |i| {
        row::<T, C>(i, slot(i), (&cols, &wts), &mut counts, &mut part)
    });
    for (s, p) in part[..t.counts.len()].iter().enumerate() {
        for (c, p) in p.iter().enumerate() {
            let at = s * t.columns + c0 + c;
            let folded = T::sum_add(T::sum_add(p[0], p[1]), T::sum_add(p[2], p[3]));
            t.sums[at] = T::sum_add(t.sums[at], folded);
        }
    }
}

/// Calls `f` on each row of `start..end` that `m` counts, in order.
#[inline(always)]
fn for_each_row(m: RowMask<'_>, start: usize, end: usize, mut f: impl FnMut(usize)) {
    if m.is_all() {
        (start..end).for_each(f);
        return;
    }
    let mut i = start;
    while i < end {
        let b = i / 64;
        let rows = (end - b * 64).min(64);
        let mut w = m.word(b) & (!0u64 >> (64 - rows)) & (!0u64 << (i % 64));
        while w != 0 {
            f(b * 64 + w.trailing_zeros() as usize);
            w &= w - 1;
        }
        i = b * 64 + 64;
    }
}

#[inline(always)]
fn sums_only<T: Num>(
    t: &mut Table<'_, T>,
    (values, w): (&[&[T]], Weights<'_, '_>),
    m: RowMask<'_>,
    start: usize,
    end: usize,
    slot: impl Fn(usize) -> usize,
) {
    let counts = &mut *t.counts;
    for_each_row(m, start, end, |i| counts[slot(i)] += 1);
    if t.sums.is_empty() {
        return;
    }
    let (columns, lanes) = (t.columns, t.lanes);
    let lane_mask = lanes - 1;
    for (c, col) in values.iter().enumerate() {
        let col = &col[..end];
        let sums = &mut *t.sums;
        match w.get(c) {
            Some(Some(wc)) => {
                let wc = &wc[..end];
                for_each_row(m, start, end, |i| {
                    let at = (slot(i) * columns + c) * lanes + (i & lane_mask);
                    sums[at] = T::sum_add(sums[at], T::sum_weigh(col[i].widen(), wc[i]));
                });
            }
            _ => for_each_row(m, start, end, |i| {
                let at = (slot(i) * columns + c) * lanes + (i & lane_mask);
                sums[at] = T::sum_add(sums[at], col[i].widen());
            }),
        }
    }
}
