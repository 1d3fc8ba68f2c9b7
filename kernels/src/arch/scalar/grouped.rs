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

impl<T: Num> Table<'_, T> {
    /// Adds row `i` (of `values`) to `slot`.
    #[inline(always)]
    pub(crate) fn add_row(&mut self, slot: usize, i: usize, values: &[&[T]]) {
        self.counts[slot] += 1;
        let base = slot * self.columns;
        if !self.sums.is_empty() {
            let lane = i & (self.lanes - 1);
            for (c, col) in values.iter().enumerate() {
                let s = &mut self.sums[(base + c) * self.lanes + lane];
                *s = T::sum_add(*s, col[i].widen());
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
/// `keys` and every column of `values` have the same length; every listed
/// row is below it.
pub(crate) fn add<T: Num>(
    t: &mut Table<'_, T>,
    keys: KeyCols<'_>,
    values: &[&[T]],
    rows: Option<&[u32]>,
    m: RowMask<'_>,
    n: usize,
) {
    match rows {
        Some(rows) => {
            for &r in rows {
                let r = r as usize;
                if m.get(r) {
                    t.add_row(keys.slot(r), r, values);
                }
            }
        }
        None if m.is_all() => {
            for i in 0..n {
                t.add_row(keys.slot(i), i, values);
            }
        }
        None => {
            for blk in 0..n.div_ceil(64) {
                let mut w = m.word(blk);
                let rows_here = n - blk * 64;
                if rows_here < 64 {
                    w &= (1u64 << rows_here) - 1;
                }
                while w != 0 {
                    let i = blk * 64 + w.trailing_zeros() as usize;
                    t.add_row(keys.slot(i), i, values);
                    w &= w - 1;
                }
            }
        }
    }
}
