//! The x86-64 grouped sums' cold leaf (AVX2 and AVX-512): the rest of a
//! call whose rows spread over more slots than a leaf keeps in registers,
//! and the whole of a call over two-byte codes (which have no register
//! leaf), each row's value and a count of one added to its slot's sum and
//! count pair, one load and one store a row (SSE2 and scalar code, inlined
//! into the AVX-512 leaves, out of line in [`rest_from`]).

use crate::arch::mask::RowMask;
use crate::arch::num::Num;
use crate::arch::scalar::grouped::{KeyCols, Table, Weights};
use crate::arch::x86_64::hot::lim;
use core::arch::x86_64::*;

/// Slots the cold leaf's pair scratch holds (32 KiB on the stack).
pub(crate) const PAIR_SLOTS: usize = 256;

/// Whether the cold leaf's pairs pay for the rest of a call (`rows` rows)
/// over a table with `counts`: the layout fits the scratch, and the rows
/// are many beside the scratch's fill and write-back (64 a slot). With a
/// row's value read as a scalar into its pair (one store a row, where the
/// table's lane and count take two), 256 slots' pairs ran faster than the
/// table in place on the Xeon (`bench/results/2026-12-02-kernels-grouped-intel.md`).
pub(crate) fn pairs_pay(counts: &[u64], rows: usize) -> bool {
    counts.len() <= PAIR_SLOTS && rows >= counts.len() * PAIR_ROWS
}

/// Rows a slot of the layout must have ahead for the pairs to pay; under
/// Miri 1, so its short columns reach the pairs too.
const PAIR_ROWS: usize = if cfg!(miri) { 1 } else { 64 };

/// A sum as the cold leaf's scratch keeps it.
pub(crate) trait Bits64 {
    /// `(self, 1)` as a cold pair: the sum's bits low, a count of one high
    /// (as `1.0` for floats, so that one add moves both).
    fn pair(self) -> __m128i;
}

impl Bits64 for i64 {
    #[inline(always)]
    fn pair(self) -> __m128i {
        // SAFETY: SSE2 is part of x86-64.
        unsafe { _mm_unpacklo_epi64(_mm_cvtsi64_si128(self), _mm_set1_epi64x(1)) }
    }
}

impl Bits64 for u64 {
    #[inline(always)]
    fn pair(self) -> __m128i {
        (self as i64).pair()
    }
}

impl Bits64 for f64 {
    #[inline(always)]
    fn pair(self) -> __m128i {
        // SAFETY: SSE2 is part of x86-64.
        unsafe { _mm_castpd_si128(_mm_unpacklo_pd(_mm_set_sd(self), _mm_set1_pd(1.0))) }
    }
}

/// The rows `m` counts from `start` (a block start) to `n`,
/// when they spread over more slots than the registers hold.
/// Pairs (`DIRECT` false, a layout of at most [`PAIR_SLOTS`]):
/// per slot and lane (row `i`'s lane is `i % 8`), the first
/// column's running sum beside a running count, one 128-bit
/// pair in a scratch table, so that a row costs one load, one
/// add and one store (rows of one slot in one lane are 8 rows
/// apart, so consecutive rows never wait on each other's
/// store). `DIRECT`: the row adds to the table's lane and count
/// in place. A block of 64 counted rows reads each row's value
/// as a scalar straight into its pair, without a mask test;
/// other blocks take their counted rows one at a time. With `U16` it reads
/// two-byte codes straight too; [`rest_from`] sets it for them alone, and
/// the AVX-512 leaves, which inline `rest` for one-byte keys, never: with
/// that arm compiled in, their sums over 16 and 256 groups ran 0.74-1.04x
/// the fused loop where they ran 1.14-1.19x without (Xeon model 167).
/// Later columns add to the table's lanes row by row. Each lane
/// takes its rows in order, so sums are the scalar twin's bits;
/// integer sums (one table lane) fold their 8 scratch lanes,
/// wrapping.
///
/// # Safety
/// Keys (any form) and every column of `values` have `n` rows, each key
/// in the table's layout; `m` covers `n` rows; `t` keeps sums and
/// neither min nor max, with 8 lanes for floats and 1 for integers;
/// `weights` is empty or has one entry per column, each weight column `n`
/// rows; `start` is a multiple of 64 (or `n`); and (pairs)
/// `t.counts.len() <= PAIR_SLOTS`. (SSE2 is all it runs: the leaves
/// inline it, [`rest_from`] does not.)
#[inline(always)]
#[allow(clippy::type_complexity)]
pub(crate) unsafe fn rest<T: Num, const DIRECT: bool, const U16: bool>(
    (t, keys, (values, weights), m, start, n): (
        &mut Table<'_, T>,
        KeyCols<'_>,
        (&[&[T]], Weights<'_, '_>),
        RowMask<'_>,
        usize,
        usize,
    ),
) where
    T::Sum: Bits64,
{
    // Floats keep their sums' bits in the pairs' low halves and their
    // counts as `1.0`s, so that one add moves both.
    let float = T::SUM_LANES != 1;
    let padd = |a: __m128i, b: __m128i| -> __m128i {
        // SAFETY: SSE2 is part of x86-64.
        unsafe {
            if float {
                _mm_castpd_si128(_mm_add_pd(_mm_castsi128_pd(a), _mm_castsi128_pd(b)))
            } else {
                _mm_add_epi64(a, b)
            }
        }
    };
    let slots = t.counts.len();
    // Float sums reach this leaf with 8 lanes, integer sums
    // with one (the leaves' contract): a constant, so a row's
    // lane is one.
    let lanes = if float { 8 } else { 1 };
    debug_assert_eq!(t.lanes, lanes);
    let columns = t.columns;
    // The scratch (unused, and left uninitialised, without pairs).
    let mut scratch = core::mem::MaybeUninit::<[[i64; 2]; PAIR_SLOTS * 8]>::uninit();
    let pairs: &mut [[i64; 2]] = if DIRECT {
        &mut []
    } else {
        // SAFETY: the scratch's pairs are written (zeroed)
        // before the slice is made; `slots <= PAIR_SLOTS`.
        unsafe {
            let p = scratch.as_mut_ptr().cast::<[i64; 2]>();
            core::ptr::write_bytes(p, 0, slots * 8);
            core::slice::from_raw_parts_mut(p, slots * 8)
        }
    };
    // Every sum type of this leaf is 8 bytes, read as i64 bits;
    // from here on the table is written through these pointers
    // only.
    let counts = t.counts.as_mut_ptr();
    let sums_at = t.sums.as_mut_ptr().cast::<i64>();
    for (slot, p) in pairs.chunks_exact_mut(8).enumerate() {
        let at = slot * columns * lanes;
        for (lane, q) in p.iter_mut().enumerate() {
            // SAFETY: `at + lane` (lane 0 for one-lane sums) is
            // slot `slot`'s first column's lane.
            q[0] = unsafe {
                if lanes == 8 {
                    *sums_at.add(at + lane)
                } else if lane == 0 {
                    *sums_at.add(at)
                } else {
                    0
                }
            };
        }
    }
    let col0 = values[0];
    let w0 = weights.first().copied().flatten();
    let base = pairs.as_mut_ptr();
    // SAFETY: SSE2 is part of x86-64; AVX-512 is enabled (the
    // contract). Every slot is below `slots` (the keys were
    // checked), so `slot * 8 + lane` is inside `pairs`; block
    // rows below `n` exist in every column and weight column.
    unsafe {
        // Row `i` of the first column (its term `x`) into its
        // slot: its pair, as `(x, 1)` (one 128-bit load, add and
        // store), or (DIRECT) the table's lane and count.
        let add = |slot: usize, i: usize, x: T::Sum| {
            if DIRECT {
                let at = slot * columns * lanes + (i & (lanes - 1));
                let s = sums_at.add(at).cast::<T::Sum>();
                *s = T::sum_add(*s, x);
                *counts.add(slot) += 1;
            } else {
                let p = base.add(slot * 8 + (i & 7)).cast::<__m128i>();
                _mm_storeu_si128(p, padd(_mm_loadu_si128(p), Bits64::pair(x)));
            }
        };
        // Row `i`'s term of the first column, read without a
        // bounds check (every row below `n` exists).
        let col0p = col0.as_ptr();
        let term0 = |i: usize| {
            let x = T::widen(*col0p.add(i));
            match w0 {
                Some(wc) => T::sum_weigh(x, *wc.as_ptr().add(i)),
                None => x,
            }
        };
        for b in start / 64..n.div_ceil(64) {
            let l = lim(n, b);
            let w = m.word(b) & l;
            if w == !0 {
                // A full block: each row's value read as a
                // scalar straight into its pair (a vector load
                // split by shuffles would queue them all on one
                // port), its code from 8 codes read at once.
                for j in 0..8 {
                    let i0 = b * 64 + 8 * j;
                    match keys {
                        KeyCols::U8(k) => {
                            for r in 0..8 {
                                let slot = usize::from(*k.as_ptr().add(i0 + r));
                                add(slot, i0 + r, term0(i0 + r));
                            }
                        }
                        KeyCols::U16(k) if U16 => {
                            for r in 0..8 {
                                let slot = usize::from(*k.as_ptr().add(i0 + r));
                                add(slot, i0 + r, term0(i0 + r));
                            }
                        }
                        _ => {
                            for r in 0..8 {
                                add(keys.slot(i0 + r), i0 + r, term0(i0 + r));
                            }
                        }
                    }
                }
            } else {
                let mut r = w;
                while r != 0 {
                    let i = b * 64 + r.trailing_zeros() as usize;
                    add(keys.slot(i), i, term0(i));
                    r &= r - 1;
                }
            }
            // Later columns: straight to the table's lanes.
            for (c, col) in values.iter().enumerate().skip(1) {
                let mut r = w;
                while r != 0 {
                    let i = b * 64 + r.trailing_zeros() as usize;
                    let at = (keys.slot(i) * columns + c) * lanes + (i & (lanes - 1));
                    let x = crate::arch::scalar::grouped::term(col, weights, c, i);
                    let s = sums_at.add(at).cast::<T::Sum>();
                    *s = T::sum_add(*s, x);
                    r &= r - 1;
                }
            }
        }
    }
    for (slot, p) in pairs.chunks_exact(8).enumerate() {
        let at = slot * columns * lanes;
        let mut count = 0u64;
        let mut fold = 0i64;
        for (lane, q) in p.iter().enumerate() {
            count += if float {
                f64::from_bits(q[1] as u64) as u64
            } else {
                q[1] as u64
            };
            if lanes == 8 {
                // SAFETY: as when the pairs were read.
                unsafe { *sums_at.add(at + lane) = q[0] };
            } else {
                fold = fold.wrapping_add(q[0]);
            }
        }
        // SAFETY: as when the pairs were read; `slot` is below
        // the layout's slots.
        unsafe {
            if lanes != 8 {
                *sums_at.add(at) = fold;
            }
            *counts.add(slot) += count;
        }
    }
}

/// [`rest`] over the rows `m` counts in `start..n`, its pairs where they
/// pay ([`pairs_pay`]), else the table in place: the AVX2 leaf's hand-off,
/// and the AVX2 and AVX-512 levels' sums over two-byte codes, which have
/// no register leaf. Out of line, so that a caller's loops stay its own.
///
/// # Safety
/// As [`rest`] (without the pairs' bound, which this checks).
#[inline(never)]
pub(crate) unsafe fn rest_from<T: Num>(
    t: &mut Table<'_, T>,
    keys: KeyCols<'_>,
    vw: (&[&[T]], Weights<'_, '_>),
    m: RowMask<'_>,
    (start, n): (usize, usize),
) where
    T::Sum: Bits64,
{
    let pairs = pairs_pay(t.counts, n - start);
    let u16 = matches!(keys, KeyCols::U16(_));
    let args = (t, keys, vw, m, start, n);
    // SAFETY: forwarded contract; the pairs run only for a layout the
    // scratch holds.
    unsafe {
        match (pairs, u16) {
            (true, true) => rest::<T, false, true>(args),
            (true, false) => rest::<T, false, false>(args),
            (false, true) => rest::<T, true, true>(args),
            (false, false) => rest::<T, true, false>(args),
        }
    }
}
