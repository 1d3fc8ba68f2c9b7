//! The x86-64 grouped sums' cold leaf (AVX2 and AVX-512): the rest of a
//! call whose rows spread over more slots than a leaf keeps in registers,
//! and the whole of a call over two-byte codes (which have no register
//! leaf) or of one over more than 256 slots that its wide pairs take,
//! each row's value and a count of one added to its slot's sum and
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
    /// `(self, hi)`: two sums' terms side by side.
    fn pair2(self, hi: Self) -> __m128i;
}

impl Bits64 for i64 {
    #[inline(always)]
    fn pair(self) -> __m128i {
        // SAFETY: SSE2 is part of x86-64.
        unsafe { _mm_unpacklo_epi64(_mm_cvtsi64_si128(self), _mm_set1_epi64x(1)) }
    }
    #[inline(always)]
    fn pair2(self, hi: i64) -> __m128i {
        // SAFETY: SSE2 is part of x86-64.
        unsafe { _mm_set_epi64x(hi, self) }
    }
}

impl Bits64 for u64 {
    #[inline(always)]
    fn pair(self) -> __m128i {
        (self as i64).pair()
    }
    #[inline(always)]
    fn pair2(self, hi: u64) -> __m128i {
        (self as i64).pair2(hi as i64)
    }
}

impl Bits64 for f64 {
    #[inline(always)]
    fn pair(self) -> __m128i {
        // SAFETY: SSE2 is part of x86-64.
        unsafe { _mm_castpd_si128(_mm_unpacklo_pd(_mm_set_sd(self), _mm_set1_pd(1.0))) }
    }
    #[inline(always)]
    fn pair2(self, hi: f64) -> __m128i {
        // SAFETY: SSE2 is part of x86-64.
        unsafe { _mm_castpd_si128(_mm_set_pd(hi, self)) }
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
/// pay ([`pairs_pay`]), the wide pairs where they pay ([`wide_pays`]),
/// else the table in place: the AVX2 leaf's hand-off, and the AVX2 and
/// AVX-512 levels' sums over two-byte codes, which have no register leaf,
/// and over more than [`PAIR_SLOTS`] slots where [`wide_takes`] or the
/// table is a float one of one lane.
/// Out of line, so that a caller's loops stay its own. A float table of
/// one lane (past 256 slots) only the wide pairs take: else this returns
/// `false`, the table untouched, for the scalar twin. The wide pairs take
/// one to four unweighted columns ([`wide`], [`wide_cols`]).
///
/// # Safety
/// As [`rest`] (without the pairs' bound, which this checks), except that
/// a float table may have one lane.
#[inline(never)]
pub(crate) unsafe fn rest_from<T: Num>(
    t: &mut Table<'_, T>,
    keys: KeyCols<'_>,
    vw: (&[&[T]], Weights<'_, '_>),
    m: RowMask<'_>,
    (start, n): (usize, usize),
) -> bool
where
    T::Sum: Bits64,
{
    let rows = n - start;
    let u16 = matches!(keys, KeyCols::U16(_));
    let float = T::SUM_LANES != 1;
    if pairs_pay(t.counts, rows) && !(float && t.lanes == 1) {
        // SAFETY: forwarded contract; the layout fits the scratch.
        unsafe {
            if u16 {
                rest::<T, false, true>((t, keys, vw, m, start, n))
            } else {
                rest::<T, false, false>((t, keys, vw, m, start, n))
            }
        }
        return true;
    }
    if wide_takes(t, vw, rows) {
        let cols = vw.0.len();
        let slots = t.counts.len();
        // Pairs a slot: one column's lanes (`wide_lanes`; one for floats),
        // or a pair for the first column and the count and one for each
        // two columns after it (`wide_cols`).
        let per = match cols {
            1 if !float => wide_lanes(slots, rows, close_repeats(&keys, start, n)),
            1 => 1,
            c => c / 2 + 1,
        };
        let mut stack = core::mem::MaybeUninit::<[[i64; 2]; PAIR_SLOTS * 8]>::uninit();
        #[cfg(feature = "alloc")]
        let mut heap = alloc::vec::Vec::new();
        let pairs: &mut [[i64; 2]] = if slots * per <= PAIR_SLOTS * 8 {
            // SAFETY: zeroed before the slice is made; inside the array.
            unsafe {
                let p = stack.as_mut_ptr().cast::<[i64; 2]>();
                core::ptr::write_bytes(p, 0, slots * per);
                core::slice::from_raw_parts_mut(p, slots * per)
            }
        } else {
            // Empty if not allocated.
            #[cfg(feature = "alloc")]
            if heap.try_reserve_exact(slots * per).is_ok() {
                heap.resize(slots * per, [0i64; 2]);
            }
            #[cfg(feature = "alloc")]
            let h: &mut [[i64; 2]] = &mut heap;
            #[cfg(not(feature = "alloc"))]
            let h: &mut [[i64; 2]] = &mut [];
            h
        };
        if !pairs.is_empty() {
            let rs = (m, start, n);
            // SAFETY: forwarded contract: sums of 1 to 4 unweighted
            // columns, integers or floats of one lane; `pairs` holds `per`
            // zeroed pairs a slot.
            unsafe {
                match keys {
                    KeyCols::U16(k) => {
                        wide_any(t, |i| usize::from(*k.as_ptr().add(i)), vw.0, rs, pairs, per)
                    }
                    // The slot of a pair read without a bounds check (the
                    // keys have `n` rows) or a match on the form a row.
                    KeyCols::Pair {
                        a,
                        b,
                        a_lo,
                        b_lo,
                        b_span,
                    } => {
                        // (x - a_lo) * b_span + (y - b_lo), the two lows
                        // folded into one constant.
                        let base = usize::from(a_lo) * b_span + usize::from(b_lo);
                        let slot = |i: usize| {
                            let (x, y) = (*a.as_ptr().add(i), *b.as_ptr().add(i));
                            (usize::from(x) * b_span + usize::from(y)).wrapping_sub(base)
                        };
                        wide_any(t, slot, vw.0, rs, pairs, per)
                    }
                    KeyCols::U8(_) => wide_any(t, |i| keys.slot(i), vw.0, rs, pairs, per),
                }
            }
            return true;
        }
    }
    if float && t.lanes == 1 {
        return false;
    }
    // SAFETY: forwarded contract.
    unsafe {
        if u16 {
            rest::<T, true, true>((t, keys, vw, m, start, n))
        } else {
            rest::<T, true, false>((t, keys, vw, m, start, n))
        }
    }
    true
}

/// Whether [`rest_from`] adds `rows` rows of the columns `vw` into the
/// wide pairs: one to four unweighted columns, floats only in a table of
/// one lane, where they pay ([`wide_pays`]).
pub(crate) fn wide_takes<T: Num>(
    t: &Table<'_, T>,
    vw: (&[&[T]], Weights<'_, '_>),
    rows: usize,
) -> bool {
    let float = T::SUM_LANES != 1;
    wide_pays(t.counts.len(), rows)
        && (1..=4).contains(&vw.0.len())
        && vw.1.iter().all(Option::is_none)
        && (!float || t.lanes == 1)
}

/// Rows a slot must have ahead for the wide pairs to pay (their scratch
/// is filled and folded back once a call); under Miri 1.
const WIDE_ROWS: usize = if cfg!(miri) { 1 } else { 16 };

/// Whether [`wide`] pays for `rows` rows over a layout of `slots`: more
/// slots than the pairs hold ([`PAIR_SLOTS`]), and rows many beside them.
pub(crate) fn wide_pays(slots: usize, rows: usize) -> bool {
    slots > PAIR_SLOTS && rows >= slots.saturating_mul(WIDE_ROWS)
}

/// [`wide`]'s lanes a slot for integer sums: as many as keep its scratch
/// in 32 KiB (the pairs' stack scratch), a power of two from 1 to 8. Where
/// rows come back to a slot within a few rows (`close`, from
/// [`close_repeats`]), up to [`CLOSE_LANES`], as many as keep the scratch
/// within `rows` pairs and [`CLOSE_PAIRS`]: one lane a slot makes each such
/// row wait on its slot's last store (a store-to-load round trip and an
/// add, about 7 cycles on Zen 4), where with lanes it adds beside it.
fn wide_lanes(slots: usize, rows: usize, close: bool) -> usize {
    let pow2 = |l: usize| 1 << l.ilog2();
    let fit = pow2((PAIR_SLOTS * 8 / slots.max(1)).clamp(1, 8));
    if !close {
        return fit;
    }
    let room = (rows.min(CLOSE_PAIRS) / slots.max(1)).clamp(1, CLOSE_LANES);
    fit.max(pow2(room))
}

/// Lanes a slot where rows come back to a slot: over 4096 two-byte codes
/// with nine rows in ten on one, 8 lanes ran 0.24x one lane's time and 4
/// lanes 0.29x (`bench/results/2026-12-08-kernels-grouped-close-lanes-zen4.md`).
const CLOSE_LANES: usize = 8;

/// The most pairs (16 bytes each: 1 MiB) a scratch takes for close lanes.
const CLOSE_PAIRS: usize = 1 << 16;

/// Rows [`close_repeats`] samples.
const CLOSE_SAMPLE: usize = 256;

/// Whether, among the first [`CLOSE_SAMPLE`] rows from `start` (counted
/// or not: the sample only reads keys, all of which are in the layout),
/// more than one in eight has the slot of one of the three rows before it.
fn close_repeats(keys: &KeyCols<'_>, start: usize, n: usize) -> bool {
    let end = n.min(start + CLOSE_SAMPLE);
    let mut last = [usize::MAX; 3];
    let mut close = 0;
    for i in start..end {
        let s = keys.slot(i);
        close += usize::from(last.contains(&s));
        last[i % 3] = s;
    }
    close * 8 > end - start
}

/// [`wide`] (one column, `per` lanes: 1, 2, 4 or 8) or [`wide_cols`]
/// (2 to 4 columns, `per` their pairs), the count a constant.
///
/// # Safety
/// As `wide` or `wide_cols`, with `pairs` holding `per` zeroed pairs a
/// slot.
#[inline(always)]
unsafe fn wide_any<T: Num>(
    t: &mut Table<'_, T>,
    slot: impl Fn(usize) -> usize,
    cols: &[&[T]],
    (m, start, n): (RowMask<'_>, usize, usize),
    pairs: &mut [[i64; 2]],
    per: usize,
) where
    T::Sum: Bits64,
{
    let rs = (start, n);
    // SAFETY: forwarded.
    unsafe {
        match (cols.len(), per) {
            (1, 1) => wide::<T, 1>(t, slot, cols[0], m, rs, pairs),
            (1, 2) => wide::<T, 2>(t, slot, cols[0], m, rs, pairs),
            (1, 4) => wide::<T, 4>(t, slot, cols[0], m, rs, pairs),
            (1, _) => wide::<T, 8>(t, slot, cols[0], m, rs, pairs),
            (2, _) => wide_cols::<T, 2>(t, slot, cols, m, rs, pairs),
            (3, _) => wide_cols::<T, 3>(t, slot, cols, m, rs, pairs),
            _ => wide_cols::<T, 4>(t, slot, cols, m, rs, pairs),
        }
    }
}

/// Sums of one unweighted column over a layout of more than [`PAIR_SLOTS`]
/// slots: each row's value and a count of one added to its slot's 128-bit
/// pair in `pairs` (one load, add and store a row, where the table in
/// place, its sum and count on two lines, takes two read-modify-writes: 0.6
/// against 0.96 ns a row over 4096 uniform two-byte codes on the Xeon model
/// 167), then the pairs go into the table. Integer sums give a slot `LANES`
/// lanes ([`wide_lanes`]; row `i`'s lane `i % LANES`), so that a slot
/// taking most rows does not wait on its own store row after row while the
/// scratch stays within 32 KiB: 4 from 257 slots, 2 from 513, 1 from 1025,
/// the scratch on the heap from 2049 (one lane a slot: over 4096 slots two
/// lanes ran 0.84 ns a row uniform where one ran 0.60), and up to 8 where
/// a sample finds rows coming back to a slot within a few rows (one lane
/// then chains them through the slot's store); they wrap, so the
/// lanes' order changes no bit, and the pairs start from 0 and add into the
/// table. Float sums (the table's one lane past 256 slots) keep one lane,
/// started from the table's sum, their count as `1.0` beside the sum so
/// that one add moves both, so each slot adds its rows in row order onto
/// the table's sum: the scalar twin's bits.
///
/// # Safety
/// As [`rest`]: `slot(i)` is in `t`'s layout for every row below `n`;
/// `col` has `n` rows and `m` covers them; `start` is a multiple of 64 (or
/// `n`); `t` keeps sums of one column in one lane, and neither min nor
/// max; `pairs` holds `LANES` zeroed pairs a slot, `LANES` 1 for floats.
#[inline(never)]
unsafe fn wide<T: Num, const LANES: usize>(
    t: &mut Table<'_, T>,
    slot: impl Fn(usize) -> usize,
    col: &[T],
    m: RowMask<'_>,
    (start, n): (usize, usize),
    pairs: &mut [[i64; 2]],
) where
    T::Sum: Bits64,
{
    let float = T::SUM_LANES != 1;
    debug_assert!(t.lanes == 1 && t.columns == 1 && (!float || LANES == 1));
    debug_assert_eq!(pairs.len(), t.counts.len() * LANES);
    // Every sum type here is 8 bytes, read as i64 bits.
    let sums = t.sums.as_mut_ptr().cast::<i64>();
    if float {
        // A float slot's lane starts from the table's sum, so each row adds
        // onto it in row order; integer pairs start from 0 and are added
        // to the table at the end.
        for (s, p) in pairs.iter_mut().enumerate() {
            // SAFETY: `s` is below the layout's slots, one lane a slot.
            p[0] = unsafe { *sums.add(s) };
        }
    }
    let base = pairs.as_mut_ptr();
    let colp = col.as_ptr();
    // SAFETY: SSE2 is part of x86-64; every slot is in the layout (the
    // contract), so its lanes are inside `pairs`; every row below `n`
    // exists in `col`.
    let row = |i: usize| unsafe {
        let p = base
            .add(slot(i) * LANES + (i & (LANES - 1)))
            .cast::<__m128i>();
        let x = Bits64::pair(T::widen(*colp.add(i)));
        let a = _mm_loadu_si128(p);
        let sum = if float {
            _mm_castpd_si128(_mm_add_pd(_mm_castsi128_pd(a), _mm_castsi128_pd(x)))
        } else {
            _mm_add_epi64(a, x)
        };
        _mm_storeu_si128(p, sum);
    };
    each_row(m, start, n, row);
    for (s, p) in pairs.chunks_exact(LANES).enumerate() {
        // SAFETY: `s` is below the layout's slots, one lane a slot.
        let sum = unsafe { &mut *sums.add(s) };
        if float {
            *sum = p[0][0];
            t.counts[s] += f64::from_bits(p[0][1] as u64) as u64;
        } else {
            for q in p {
                // Integer lanes wrap.
                *sum = sum.wrapping_add(q[0]);
                t.counts[s] += q[1] as u64;
            }
        }
    }
}

/// [`wide`] for `C` (2 to 4) unweighted columns, one lane a slot: a slot's
/// `C / 2 + 1` pairs hold the first column's sum beside the count, then
/// the other columns' sums two by two (the last pair's high half unused
/// when `C` is even), so a row adds into one or two lines, a load, add and
/// store a pair, where the table in place takes `C + 1` read-modify-writes
/// on as many lines. Float sums start from the table's sums and add each
/// slot's rows in row order (the scalar twin's bits); integer sums start
/// from 0 and add into the table.
///
/// # Safety
/// As [`wide`], with `cols` the table's `C` columns (`n` rows each) and
/// `pairs` holding `C / 2 + 1` zeroed pairs a slot.
#[inline(never)]
unsafe fn wide_cols<T: Num, const C: usize>(
    t: &mut Table<'_, T>,
    slot: impl Fn(usize) -> usize,
    cols: &[&[T]],
    m: RowMask<'_>,
    (start, n): (usize, usize),
    pairs: &mut [[i64; 2]],
) where
    T::Sum: Bits64,
{
    let float = T::SUM_LANES != 1;
    let per = C / 2 + 1;
    debug_assert!(t.lanes == 1 && t.columns == C && cols.len() == C);
    debug_assert_eq!(pairs.len(), t.counts.len() * per);
    // Pair `k`'s halves as column indices, `C` for the count and `C + 1`
    // for an unused half: (0, C), (1, 2), (3, 4)...
    let at = |k: usize, half: usize| match (k, half) {
        (0, 0) => 0,
        (0, _) => C,
        _ if 2 * k - 1 + half < C => 2 * k - 1 + half,
        _ => C + 1,
    };
    let sums = t.sums.as_mut_ptr().cast::<i64>();
    if float {
        for (s, p) in pairs.chunks_exact_mut(per).enumerate() {
            for (k, q) in p.iter_mut().enumerate() {
                for (half, h) in q.iter_mut().enumerate() {
                    let c = at(k, half);
                    if c < C {
                        // SAFETY: `s` is below the layout's slots and `c`
                        // below its columns, one lane each.
                        *h = unsafe { *sums.add(s * C + c) };
                    }
                }
            }
        }
    }
    let colp: [*const T; C] = core::array::from_fn(|c| cols[c].as_ptr());
    let base = pairs.as_mut_ptr();
    // SAFETY: SSE2 is part of x86-64; every slot is in the layout, so its
    // pairs are inside `pairs`; every row below `n` exists in each column.
    let row = |i: usize| unsafe {
        let p = base.add(slot(i) * per).cast::<__m128i>();
        let term = |c: usize| T::widen(*colp[c].add(i));
        let add = |a: __m128i, x: __m128i| {
            if float {
                _mm_castpd_si128(_mm_add_pd(_mm_castsi128_pd(a), _mm_castsi128_pd(x)))
            } else {
                _mm_add_epi64(a, x)
            }
        };
        let x0 = Bits64::pair(term(0));
        _mm_storeu_si128(p, add(_mm_loadu_si128(p), x0));
        for k in 1..per {
            let hi = if 2 * k < C { term(2 * k) } else { T::SUM_ZERO };
            let x = Bits64::pair2(term(2 * k - 1), hi);
            let q = p.add(k);
            _mm_storeu_si128(q, add(_mm_loadu_si128(q), x));
        }
    };
    each_row(m, start, n, row);
    for (s, p) in pairs.chunks_exact(per).enumerate() {
        for (k, q) in p.iter().enumerate() {
            for (half, &h) in q.iter().enumerate() {
                let c = at(k, half);
                if c == C {
                    // The count.
                    t.counts[s] += if float {
                        f64::from_bits(h as u64) as u64
                    } else {
                        h as u64
                    };
                } else if c < C {
                    // SAFETY: as when the pairs were filled.
                    let sum = unsafe { &mut *sums.add(s * C + c) };
                    *sum = if float { h } else { sum.wrapping_add(h) };
                }
            }
        }
    }
}

/// Calls `row(i)` for each row `m` counts in `start..n` in order: a full
/// 64-row block straight, others bit by bit.
#[inline(always)]
fn each_row(m: RowMask<'_>, start: usize, n: usize, mut row: impl FnMut(usize)) {
    for b in start / 64..n.div_ceil(64) {
        let w = m.word(b) & lim(n, b);
        if w == !0 {
            for j in 0..8 {
                for r in 0..8 {
                    row(b * 64 + j * 8 + r);
                }
            }
        } else {
            let mut r = w;
            while r != 0 {
                row(b * 64 + r.trailing_zeros() as usize);
                r &= r - 1;
            }
        }
    }
}
