//! keel-kernels: every level against the scalar twin on arbitrary input.
//!
//! Each entry decodes a column of one of the six element types from raw
//! bytes (so floats take every bit pattern, NaN payloads included), slices
//! it at an arbitrary start (every alignment), and checks that every level
//! the CPU supports returns what `Kernels::scalar()` returns, or the same
//! error.

use arbitrary::Arbitrary;
use core::sync::atomic::{AtomicBool, Ordering};
use keel_kernels::filter::{CmpOp, Predicate};
use keel_kernels::mask::{Bits, Mask, Selection};
use keel_kernels::span::{CHECK_ROWS, Outcome, SpanKey, SpanScan};
use keel_kernels::zone::{Class, ZoneMap};
use keel_kernels::{Element, Kernels};

/// A column and its optional validity bitmap, as bytes.
#[derive(Arbitrary, Debug)]
pub struct Column {
    /// Which element type: `ty % 10` indexes i64, u64, i32, u32, f64, f32,
    /// i16, u16, i8, u8.
    pub ty: u8,
    /// Start offset into the decoded values (alignment).
    pub offset: u8,
    /// Raw value bytes.
    pub bytes: Vec<u8>,
    /// Validity words (may be too short: then every level must refuse).
    pub validity: Option<Vec<u64>>,
    /// Bit offset of the validity in its words (`% 128`), for the masked
    /// aggregates.
    pub shift: u8,
    /// A selection bitmap for the masked aggregates, at bit offset `shift %
    /// 8` of its bytes (too short: every level refuses).
    pub selection: Option<Vec<u8>>,
}

/// Filter input: a column, an operator code, constants and the prior bits
/// for the `and` form.
#[derive(Arbitrary, Debug)]
pub struct FilterInput {
    /// The column.
    pub col: Column,
    /// `op % 7`: the six [`CmpOp`]s, then between.
    pub op: u8,
    /// Constant bytes (first and second constant).
    pub consts: [u8; 16],
    /// Prior bitmap for `filter_and` (too short: every level refuses).
    pub prior: Vec<u64>,
}

/// Zone-map input: a filter input and a chunk size.
#[derive(Arbitrary, Debug)]
pub struct ZoneInput {
    /// Column, predicate and prior bits.
    pub f: FilterInput,
    /// `6 + log2 % 5`: chunks of 64..=1024 rows.
    pub log2: u8,
}

/// Calls `$f::<T>($arg)` for the element type `$ty` names (`% 10`).
macro_rules! by_type {
    ($ty:expr, $f:ident, $arg:expr) => {
        match $ty % 10 {
            0 => $f::<i64>($arg),
            1 => $f::<u64>($arg),
            2 => $f::<i32>($arg),
            3 => $f::<u32>($arg),
            4 => $f::<f64>($arg),
            5 => $f::<f32>($arg),
            6 => $f::<i16>($arg),
            7 => $f::<u16>($arg),
            8 => $f::<i8>($arg),
            _ => $f::<u8>($arg),
        }
    };
}

trait Decode: Element {
    const SIZE: usize;
    fn decode(b: &[u8]) -> Self;
    /// The naive sum of the rows `on` counts: integers exactly in `i128`,
    /// then wrapped into the sum type; floats in the documented order
    /// (row `i` into lane `i % SUM_LANES` from `-0.0`, lanes folded
    /// pairwise, `+0.0` when no row counts). The second value is
    /// `sum_checked`'s: `None` when an integer sum does not fit.
    fn naive_sum(v: &[Self], on: &dyn Fn(usize) -> bool) -> (Self::Sum, Option<Self::Sum>);
}
macro_rules! decode_int {
    ($($t:ty => $sum:ty),*) => {$(
        impl Decode for $t {
            const SIZE: usize = core::mem::size_of::<$t>();
            fn decode(b: &[u8]) -> $t {
                <$t>::from_le_bytes(b.try_into().unwrap())
            }
            fn naive_sum(v: &[$t], on: &dyn Fn(usize) -> bool) -> ($sum, Option<$sum>) {
                let exact: i128 = (0..v.len()).filter(|&i| on(i)).map(|i| v[i] as i128).sum();
                (exact as $sum, <$sum>::try_from(exact).ok())
            }
        }
    )*};
}
decode_int!(i64 => i64, u64 => u64, i32 => i64, u32 => u64, i16 => i64, u16 => u64, i8 => i64, u8 => u64);
macro_rules! decode_float {
    ($($t:ty => $lanes:expr),*) => {$(
        impl Decode for $t {
            const SIZE: usize = core::mem::size_of::<$t>();
            fn decode(b: &[u8]) -> $t {
                <$t>::from_le_bytes(b.try_into().unwrap())
            }
            fn naive_sum(v: &[$t], on: &dyn Fn(usize) -> bool) -> ($t, Option<$t>) {
                let mut lanes = [-0.0 as $t; $lanes];
                let mut any = false;
                for (i, &x) in v.iter().enumerate() {
                    if on(i) {
                        lanes[i % $lanes] += x;
                        any = true;
                    }
                }
                let mut w = $lanes;
                while w > 1 {
                    w /= 2;
                    for j in 0..w {
                        lanes[j] += lanes[j + w];
                    }
                }
                let s = if any { lanes[0] } else { 0.0 };
                (s, Some(s))
            }
        }
    )*};
}
decode_float!(f64 => 32, f32 => 64);

/// The start of a column's slice: `offset % (len + 1)`, so short inputs
/// keep rows.
fn start(c: &Column, len: usize) -> usize {
    usize::from(c.offset) % (len + 1)
}

/// Bit `i` of little-endian words.
fn word_bit(w: &[u64], i: usize) -> bool {
    w[i / 64] >> (i % 64) & 1 == 1
}

/// Bit `i` of bytes in arrow's order.
fn byte_bit(b: &[u8], i: usize) -> bool {
    b[i / 8] >> (i % 8) & 1 == 1
}

/// The naive aggregates of the rows `on` counts, checked against the
/// scalar twin's (called only where the twin returned `Ok`).
fn naive_aggs<T: Decode>(
    v: &[T],
    on: &dyn Fn(usize) -> bool,
    sum: T::Sum,
    checked: Option<T::Sum>,
    min_max: Option<(T, T)>,
    count: usize,
    what: &str,
) {
    let (want_sum, want_checked) = T::naive_sum(v, on);
    assert!(
        T::sum_same(sum, want_sum),
        "{what} sum {sum:?} != naive {want_sum:?}"
    );
    match (checked, want_checked) {
        (Some(a), Some(b)) => assert!(T::sum_same(a, b), "{what} sum_checked {a:?} != {b:?}"),
        (a, b) => assert_eq!(a, b, "{what} sum_checked"),
    }
    let mut mm: Option<(T, T)> = None;
    for (i, &x) in v.iter().enumerate() {
        if on(i) {
            mm = Some(mm.map_or((x, x), |(lo, hi)| {
                (
                    if x.order_lt(lo) { x } else { lo },
                    if hi.order_lt(x) { x } else { hi },
                )
            }));
        }
    }
    let ok = match (min_max, mm) {
        (Some(a), Some(b)) => a.0.same(b.0) && a.1.same(b.1),
        (a, b) => a.is_none() && b.is_none(),
    };
    assert!(ok, "{what} min_max {min_max:?} != naive {mm:?}");
    let n = (0..v.len()).filter(|&i| on(i)).count();
    assert_eq!(count, n, "{what} count");
}

fn values<T: Decode>(c: &Column) -> Vec<T> {
    c.bytes.chunks_exact(T::SIZE).map(T::decode).collect()
}

fn same<T: Element>(a: T, b: T) -> bool {
    a.same(b)
}

fn eq_sum<T: Element>(a: T::Sum, b: T::Sum) -> bool {
    // NaN sums print alike whatever the payload; everything else is ==.
    a == b || format!("{a:?}") == format!("{b:?}")
}

fn agg_typed<T: Decode>(c: &Column) {
    let all = values::<T>(c);
    let v = &all[start(c, all.len())..];
    let val = c.validity.as_deref();
    let s = Kernels::scalar();
    // The same at a bit offset, with a selection bitmap in bytes.
    let m = Mask {
        validity: c
            .validity
            .as_deref()
            .map(|w| Bits::with_offset(w, usize::from(c.shift % 128))),
        selection: c.selection.as_deref().map_or(Selection::All, |b| {
            Selection::Bitmap(Bits::from_bytes(b, usize::from(c.shift % 8)))
        }),
    };
    for k in Kernels::supported() {
        match (s.sum_masked(v, val), k.sum_masked(v, val)) {
            (Ok(a), Ok(b)) => assert!(eq_sum::<T>(a, b), "{} sum {a:?} {b:?}", k.level()),
            (a, b) => assert_eq!(a.err(), b.err()),
        }
        let (a, b) = (s.min_max_masked(v, val), k.min_max_masked(v, val));
        match (a, b) {
            (Ok(Some(a)), Ok(Some(b))) => {
                assert!(
                    same(a.0, b.0) && same(a.1, b.1),
                    "{} {a:?} {b:?}",
                    k.level()
                )
            }
            (a, b) => assert_eq!(format!("{a:?}"), format!("{b:?}")),
        }
        let (a, b) = (s.min_masked(v, val), k.min_masked(v, val));
        assert_eq!(format!("{a:?}"), format!("{b:?}"), "{} min", k.level());
        let (a, b) = (s.max_masked(v, val), k.max_masked(v, val));
        assert_eq!(format!("{a:?}"), format!("{b:?}"), "{} max", k.level());
        assert_eq!(s.count_masked(v, val), k.count_masked(v, val));
        let (a, b) = (s.sum_checked_masked(v, val), k.sum_checked_masked(v, val));
        assert_eq!(
            format!("{a:?}"),
            format!("{b:?}"),
            "{} sum_checked",
            k.level()
        );
        match (s.sum_masked(v, m), k.sum_masked(v, m)) {
            (Ok(a), Ok(b)) => assert!(eq_sum::<T>(a, b), "{} masked sum {a:?} {b:?}", k.level()),
            (a, b) => assert_eq!(a.err(), b.err()),
        }
        let (a, b) = (s.min_max_masked(v, m), k.min_max_masked(v, m));
        assert_eq!(
            format!("{a:?}"),
            format!("{b:?}"),
            "{} masked min_max",
            k.level()
        );
        assert_eq!(s.count_masked(v, m), k.count_masked(v, m));
    }
    // The scalar twin against naive folds, on both masks.
    if let Ok(sum) = s.sum_masked(v, val) {
        let on = |i: usize| val.is_none_or(|w| word_bit(w, i));
        naive_aggs(
            v,
            &on,
            sum,
            s.sum_checked_masked(v, val).unwrap(),
            s.min_max_masked(v, val).unwrap(),
            s.count_masked(v, val).unwrap(),
            "validity",
        );
    }
    if let Ok(sum) = s.sum_masked(v, m) {
        let on = |i: usize| {
            c.validity
                .as_deref()
                .is_none_or(|w| word_bit(w, usize::from(c.shift % 128) + i))
                && c.selection
                    .as_deref()
                    .is_none_or(|b| byte_bit(b, usize::from(c.shift % 8) + i))
        };
        naive_aggs(
            v,
            &on,
            sum,
            s.sum_checked_masked(v, m).unwrap(),
            s.min_max_masked(v, m).unwrap(),
            s.count_masked(v, m).unwrap(),
            "mask",
        );
    }
}

/// Aggregates at every level equal the scalar twin, which equals naive
/// folds: wrapping integer sums, `sum_checked`'s exact sums, float sums in
/// the documented lane order, min/max by the documented order, counts.
pub fn agg(c: &Column) {
    by_type!(c.ty, agg_typed, c)
}

fn pred<T: Decode>(f: &FilterInput) -> Predicate<T> {
    let a = T::decode(&f.consts[..T::SIZE]);
    let b = T::decode(&f.consts[8..8 + T::SIZE]);
    match f.op % 7 {
        6 => Predicate::Between(a, b),
        op => Predicate::Cmp(CmpOp::ALL[op as usize], a),
    }
}

fn filter_typed<T: Decode>(f: &FilterInput) {
    let all = values::<T>(&f.col);
    let v = &all[start(&f.col, all.len())..];
    let p = pred::<T>(f);
    let s = Kernels::scalar();
    let mut want = f.prior.clone();
    let r = s.filter(v, p, &mut want);
    let mut want_and = f.prior.clone();
    let r_and = s.filter_and(v, p, &mut want_and);
    // The scalar twin against the predicate row by row: the rows' bits,
    // the last word's bits past the rows zero, later words untouched.
    let words = v.len().div_ceil(64);
    assert_eq!(r.is_ok(), f.prior.len() >= words, "{r:?}");
    assert_eq!(r_and, r);
    if r.is_ok() {
        let eval = |x: T| match p {
            Predicate::Between(lo, hi) => lo <= x && x <= hi,
            Predicate::Cmp(CmpOp::Eq, c) => x == c,
            Predicate::Cmp(CmpOp::Ne, c) => x != c,
            Predicate::Cmp(CmpOp::Lt, c) => x < c,
            Predicate::Cmp(CmpOp::Le, c) => x <= c,
            Predicate::Cmp(CmpOp::Gt, c) => x > c,
            Predicate::Cmp(CmpOp::Ge, c) => x >= c,
        };
        let mut plain = f.prior.clone();
        let mut and = f.prior.clone();
        for w in 0..words {
            plain[w] = 0;
            and[w] = 0;
        }
        for (i, &x) in v.iter().enumerate() {
            let b = u64::from(eval(x)) << (i % 64);
            plain[i / 64] |= b;
            and[i / 64] |= b & f.prior[i / 64];
        }
        assert_eq!(want, plain, "filter {p:?} against the predicate row by row");
        assert_eq!(
            want_and, and,
            "filter_and {p:?} against the predicate row by row"
        );
    }
    for k in Kernels::supported() {
        let mut got = f.prior.clone();
        assert_eq!(k.filter(v, p, &mut got), r, "{}", k.level());
        assert_eq!(got, want, "{} {p:?}", k.level());
        let mut got = f.prior.clone();
        assert_eq!(k.filter_and(v, p, &mut got), r_and);
        assert_eq!(got, want_and, "{} and {p:?}", k.level());
        // The fused count, under the column's validity and the prior bits
        // as a selection at a bit offset; it equals filter, and, popcount.
        let m = Mask {
            validity: f.col.validity.as_deref().map(Bits::new),
            selection: Selection::Bitmap(Bits::with_offset(
                &f.prior,
                usize::from(f.col.shift % 64),
            )),
        };
        let c = s.count_matching(v, p, m);
        assert_eq!(k.count_matching(v, p, m), c, "{} count {p:?}", k.level());
        if let (Ok(c), Ok(())) = (&c, &r) {
            let bit = |w: &[u64], i: usize| w[i / 64] >> (i % 64) & 1 == 1;
            let off = usize::from(f.col.shift % 64);
            let naive = (0..v.len())
                .filter(|&i| {
                    bit(&want, i)
                        && f.col.validity.as_deref().is_none_or(|w| bit(w, i))
                        && bit(&f.prior, off + i)
                })
                .count();
            assert_eq!(*c, naive, "{} count vs filter {p:?}", k.level());
        }
        // Bitmap kernels on the result.
        let rows = v.len().min(want.len() * 64);
        assert_eq!(k.popcount(&want, rows), s.popcount(&want, rows));
        assert_eq!(k.select(&want, rows), s.select(&want, rows));
        // Into a longer buffer: the same positions, nothing written past.
        if let Ok(sel) = s.select(&want, rows) {
            let mut out = vec![u32::MAX; sel.len() + 3];
            assert_eq!(k.select_into(&want, rows, &mut out), Ok(sel.len()));
            assert_eq!(&out[..sel.len()], &sel[..], "{} select_into", k.level());
            assert_eq!(
                &out[sel.len()..],
                &[u32::MAX; 3],
                "{} select_into",
                k.level()
            );
        }
        for op in 0..3 {
            let (mut a, mut b) = (want.clone(), want.clone());
            let src = &f.prior;
            let (ra, rb) = match op {
                0 => (s.and(&mut a, src), k.and(&mut b, src)),
                1 => (s.or(&mut a, src), k.or(&mut b, src)),
                _ => (s.andnot(&mut a, src), k.andnot(&mut b, src)),
            };
            assert_eq!((ra, &a), (rb, &b), "{} bitmap op {op}", k.level());
        }
    }
}

/// Filters (plain and `and` forms) and bitmap kernels at every level equal
/// the scalar twin, whose filters equal the predicate evaluated row by row
/// (floats by IEEE rules, between inclusive).
pub fn filter(f: &FilterInput) {
    by_type!(f.col.ty, filter_typed, f)
}

fn zone_typed<T: Decode>(z: &ZoneInput) {
    let all = values::<T>(&z.f.col);
    let v = &all[start(&z.f.col, all.len())..];
    let val = z.f.col.validity.as_deref();
    let log2 = 6 + (z.log2 % 5) as u32;
    let p = pred::<T>(&z.f);
    let s = Kernels::scalar();
    let Ok(map) = ZoneMap::build(s, v, val, log2) else {
        // Only a short validity bitmap is refused; every level agrees.
        for k in Kernels::supported() {
            assert!(ZoneMap::build(k, v, val, log2).is_err());
        }
        return;
    };
    let words = v.len().div_ceil(64);
    let mut want = vec![0u64; words];
    s.filter(v, p, &mut want).unwrap();
    if let Some(b) = val {
        s.and(&mut want, &b[..words]).unwrap();
    }
    let cr = map.chunk_rows();
    for i in 0..map.chunks() {
        let c = map.classify(i, p);
        for row in i * cr..((i + 1) * cr).min(v.len()) {
            let pass = want[row / 64] >> (row % 64) & 1 == 1;
            let valid = val.is_none_or(|b| b[row / 64] >> (row % 64) & 1 == 1);
            match c {
                Class::AllPass => assert!(pass || !valid, "{p:?} chunk {i} row {row}"),
                Class::AllFail => assert!(!pass, "{p:?} chunk {i} row {row}"),
                Class::Mixed => {}
            }
        }
    }
    for k in Kernels::supported() {
        let m = ZoneMap::build(k, v, val, log2).unwrap();
        assert_eq!(format!("{m:?}"), format!("{map:?}"), "{}", k.level());
        let mut got = vec![0u64; words];
        m.filter_with(k, v, val, p, &mut got).unwrap();
        assert_eq!(got, want, "{} {p:?}", k.level());
    }
}

/// Zone maps: build at every level equals scalar, classes are sound, and
/// the zone filter equals the plain filter and validity.
pub fn zone(z: &ZoneInput) {
    by_type!(z.f.col.ty, zone_typed, z)
}

/// Span-scan input: an integer key column, a budget and whether another
/// worker has already set the abort flag.
#[derive(Arbitrary, Debug)]
pub struct SpanInput {
    /// `col.ty % 4` indexes i64, u64, i32, u32.
    pub col: Column,
    /// The budget is `budget >> (shift % 64)`, so small budgets are common.
    pub budget: u64,
    /// See `budget`.
    pub shift: u8,
    /// The abort flag starts set.
    pub preset_abort: bool,
    /// Each row (and its validity bit) is repeated `1 + repeat % 16` times
    /// in place, so the row where the span first exceeds the budget can
    /// land in any of several blocks of `CHECK_ROWS` rows although fuzz
    /// inputs stay small.
    pub repeat: u8,
}

/// Each row of `v` repeated `times` times in place, with its validity bit
/// likewise (a bitmap too short for `v` is passed on unchanged: every level
/// must refuse it).
fn stretch<T: Copy>(v: &[T], val: Option<&[u64]>, times: usize) -> (Vec<T>, Option<Vec<u64>>) {
    let n = v.len();
    let rows: Vec<T> = v
        .iter()
        .flat_map(|&x| core::iter::repeat_n(x, times))
        .collect();
    let val = val.map(|w| {
        if w.len() * 64 < n {
            return w.to_vec();
        }
        let mut out = vec![0u64; (n * times).div_ceil(64)];
        for i in 0..n * times {
            let j = i / times;
            out[i / 64] |= (w[j / 64] >> (j % 64) & 1) << (i % 64);
        }
        out
    });
    (rows, val)
}

fn span_typed<T: Decode + SpanKey + Into<i128>>(inp: &SpanInput) {
    let all = values::<T>(&inp.col);
    let (rows, bits) = stretch(
        &all[start(&inp.col, all.len())..],
        inp.col.validity.as_deref(),
        1 + usize::from(inp.repeat % 16),
    );
    let (v, val) = (&rows[..], bits.as_deref());
    let budget = inp.budget >> (inp.shift % 64);
    let run = |k: Kernels| {
        let flag = AtomicBool::new(inp.preset_abort);
        let mut s = SpanScan::<T>::with_kernels(k, budget);
        let r = s.scan(v, val, &flag);
        (r, s.min_max(), flag.load(Ordering::Relaxed))
    };
    let want = run(Kernels::scalar());
    for k in Kernels::supported() {
        let got = run(k);
        assert_eq!(
            format!("{want:?}"),
            format!("{got:?}"),
            "{} span scan",
            k.level()
        );
    }
    // The scalar scan against a row-by-row oracle.
    let Ok(outcome) = want.0 else { return };
    if inp.preset_abort {
        let expect = if v.is_empty() {
            Outcome::Within
        } else {
            Outcome::Aborted { rows: 0 }
        };
        assert_eq!(outcome, expect);
        return;
    }
    let valid = |i: usize| val.is_none_or(|w| w[i / 64] >> (i % 64) & 1 == 1);
    let mut mm: Option<(i128, i128)> = None;
    let mut first_over = None;
    for (i, &x) in v.iter().enumerate() {
        if !valid(i) {
            continue;
        }
        let x: i128 = x.into();
        let (lo, hi) = mm.map_or((x, x), |(a, b)| (a.min(x), b.max(x)));
        mm = Some((lo, hi));
        if hi - lo > i128::from(budget) {
            first_over = Some(i);
            break;
        }
    }
    match first_over {
        // Stops at the end of the block holding the first row over budget,
        // never before it and never a block later.
        Some(r) => {
            let rows = ((r / CHECK_ROWS + 1) * CHECK_ROWS).min(v.len());
            assert_eq!(
                outcome,
                Outcome::Exceeded { rows },
                "first over budget: row {r}"
            );
            assert!(want.2, "the flag is set on exceeding");
        }
        None => {
            assert_eq!(outcome, Outcome::Within);
            let got = want.1.map(|(a, b)| (a.into(), b.into()));
            assert_eq!(got, mm, "min and max of a scan within budget");
        }
    }
}

/// Span scans at every level equal the scalar scan, which stops exactly at
/// the end of the block where the span first exceeds the budget.
pub fn span(inp: &SpanInput) {
    match inp.col.ty % 4 {
        0 => span_typed::<i64>(inp),
        1 => span_typed::<u64>(inp),
        2 => span_typed::<i32>(inp),
        _ => span_typed::<u32>(inp),
    }
}
