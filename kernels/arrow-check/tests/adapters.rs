//! keel-kernels' arrow adapters against arrow's own compute kernels, on
//! sliced arrays with nulls, at every keel level.

use arrow_array::types::{
    ArrowPrimitiveType, Float64Type, Int16Type, Int32Type, Int64Type, UInt8Type, UInt16Type,
};
use arrow_array::{Array, PrimitiveArray};
use keel_kernels::arrow as ka;
use keel_kernels::filter::CmpOp;
use keel_kernels::{Element, Num, cpu};

/// xorshift64*.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

trait Make: ArrowPrimitiveType<Native: Element + From<u8>> {}
impl Make for Int64Type {}
impl Make for Int32Type {}
impl Make for Int16Type {}
impl Make for UInt8Type {}
impl Make for UInt16Type {}
impl Make for Float64Type {}

fn array<T: Make>(n: usize, seed: u64) -> PrimitiveArray<T> {
    let mut r = Rng(seed | 1);
    (0..n)
        .map(|_| {
            let x = r.next();
            // Small values, so float sums are exact in any order; unsigned
            // types take the absolute value.
            (!x.is_multiple_of(5)).then(|| T::Native::from(((x >> 8) % 100) as u8))
        })
        .collect()
}

/// Runs `f` at every keel level this CPU supports, on each slice (offset,
/// length) of a 3000-row array the checks take, then restores the level.
fn every_level_and_slice(mut f: impl FnMut(cpu::Level, usize, usize)) {
    for level in cpu::Level::ALL {
        if !cpu::supported(level) {
            continue;
        }
        cpu::set_max_level(level);
        for (off, len) in [
            (0, 0),
            (0, 3000),
            (1, 999),
            (63, 65),
            (64, 700),
            (777, 1500),
            (2999, 1),
        ] {
            f(level, off, len);
        }
    }
    cpu::set_max_level(cpu::detected());
}

fn check<T: Make>(seed: u64)
where
    T::Native: arrow_array::ArrowNativeTypeOp,
{
    let full = array::<T>(3000, seed);
    let c = T::Native::from(40u8);
    let scalar = PrimitiveArray::<T>::new_scalar(c);
    every_level_and_slice(|level, off, len| {
        let a = full.slice(off, len);
        let ctx = || format!("{level} {} offset {off} len {len}", T::Native::NAME);
        let want_sum = arrow_arith::aggregate::sum(&a);
        let got = ka::sum(&a).unwrap();
        if <T::Native as Num>::SUM_LANES > 1 {
            assert_eq!(format!("{got:?}"), format!("{want_sum:?}"), "sum {}", ctx());
        } else {
            // keel sums integers in 64 bits, arrow in the native type:
            // equal modulo the native width.
            let wrapped = got.map(|s| {
                let s: i128 = format!("{s:?}").parse().unwrap();
                <T::Native as arrow_buffer::ArrowNativeType>::usize_as(s as usize)
            });
            assert_eq!(wrapped, want_sum, "sum {}", ctx());
        }
        assert_eq!(
            ka::min(&a).unwrap(),
            arrow_arith::aggregate::min(&a),
            "min {}",
            ctx()
        );
        assert_eq!(
            ka::max(&a).unwrap(),
            arrow_arith::aggregate::max(&a),
            "max {}",
            ctx()
        );
        assert_eq!(ka::count_valid(&a), a.len() - a.null_count());
        for (op, arrow_cmp) in [
            (
                CmpOp::Lt,
                arrow_ord::cmp::lt as fn(&dyn arrow_array::Datum, &dyn arrow_array::Datum) -> _,
            ),
            (CmpOp::Eq, arrow_ord::cmp::eq),
            (CmpOp::Ge, arrow_ord::cmp::gt_eq),
        ] {
            let want = arrow_cmp(&a, &scalar).unwrap();
            let got = ka::compare(&a, op, c).unwrap();
            assert_eq!(got, want, "{op:?} {}", ctx());
            let want_count = want.iter().filter(|x| *x == Some(true)).count();
            let pred = keel_kernels::filter::Predicate::Cmp(op, c);
            assert_eq!(
                ka::count_matching(&a, pred).unwrap(),
                want_count,
                "{}",
                ctx()
            );
            // The comparison's result as a selection of another column.
            let clean = arrow_array::BooleanArray::new(want.values().clone(), None);
            let sel = ka::selection(&clean).unwrap();
            let picked = keel_kernels::agg::count_masked(a.values(), sel).unwrap();
            assert_eq!(picked, clean.true_count());
        }
    });
}

#[test]
fn adapters_equal_arrow_compute_on_sliced_arrays_with_nulls() {
    check::<Int64Type>(1);
    check::<Int32Type>(2);
    check::<Int16Type>(3);
    check::<UInt8Type>(4);
    check::<UInt16Type>(5);
    check::<Float64Type>(6);
}

/// `filter_by` and `take` against arrow's `filter` and `take`: sliced
/// arrays with nulls and without a null buffer, predicates with nulls of
/// their own (and sliced), index arrays with nulls, without, and with a
/// null buffer that holds none, at every keel level.
fn check_select<T: Make>(seed: u64)
where
    T::Native: keel_kernels::gather::Value,
{
    let full = array::<T>(3000, seed);
    let no_nulls = PrimitiveArray::<T>::new(full.values().clone(), None);
    let mut r = Rng(seed ^ 0x5eed);
    let preds: Vec<arrow_array::BooleanArray> = (0..3)
        .map(|kind| {
            (0..3100)
                .map(|_| {
                    let x = r.next();
                    match kind {
                        0 => Some(x.is_multiple_of(2)),
                        1 => (!x.is_multiple_of(7)).then_some(x.is_multiple_of(3)),
                        _ => (!x.is_multiple_of(4)).then_some(x % 64 == 1),
                    }
                })
                .collect()
        })
        .collect();
    let idx_all: arrow_array::UInt32Array = (0..4000u32)
        .map(|_| Some((r.next() % 3000) as u32))
        .collect();
    let idx_nulls: arrow_array::UInt64Array = (0..4000u64)
        .map(|_| {
            let x = r.next();
            (!x.is_multiple_of(5)).then_some(x % 3000)
        })
        .collect();
    every_level_and_slice(|level, off, len| {
        for a in [full.slice(off, len), no_nulls.slice(off, len)] {
            let ctx = || {
                let nulls = a.nulls().is_some();
                format!(
                    "{level} {} offset {off} len {len} null buffer {nulls}",
                    T::Native::NAME
                )
            };
            for (p, pred) in preds.iter().enumerate() {
                let pr = pred.slice(p * 7, len);
                let want = arrow_select::filter::filter(&a, &pr).unwrap();
                let got = ka::filter_by(&a, &pr).unwrap();
                assert_eq!(
                    &got as &dyn Array,
                    want.as_ref(),
                    "filter pred {p} {}",
                    ctx()
                );
                assert_eq!(got.null_count(), want.null_count(), "{}", ctx());
            }
            if len > 0 {
                let idx = arrow_array::UInt32Array::from_iter_values(
                    idx_all.values().iter().map(|&i| i % len as u32),
                )
                .slice(off % 7, 1000);
                let want = arrow_select::take::take(&a, &idx, None).unwrap();
                let got = ka::take(&a, &idx).unwrap();
                assert_eq!(&got as &dyn Array, want.as_ref(), "take {}", ctx());
                let all_valid = arrow_buffer::NullBuffer::new_valid(idx.len());
                let idx = arrow_array::UInt32Array::new(idx.values().clone(), Some(all_valid));
                let want = arrow_select::take::take(&a, &idx, None).unwrap();
                let got = ka::take(&a, &idx).unwrap();
                assert_eq!(
                    &got as &dyn Array,
                    want.as_ref(),
                    "take, a null buffer with no null {}",
                    ctx()
                );
                let idx = arrow_array::UInt64Array::from_iter(
                    idx_nulls.iter().map(|i| i.map(|i| i % len as u64)),
                )
                .slice(3, 1500);
                let want = arrow_select::take::take(&a, &idx, None).unwrap();
                let got = ka::take(&a, &idx).unwrap();
                assert_eq!(
                    &got as &dyn Array,
                    want.as_ref(),
                    "take, null indices {}",
                    ctx()
                );
                assert_eq!(got.null_count(), want.null_count(), "{}", ctx());
            }
        }
    });
}

#[test]
fn filter_and_take_equal_arrow_select_on_sliced_arrays_with_nulls() {
    check_select::<Int64Type>(11);
    check_select::<Int32Type>(12);
    check_select::<UInt8Type>(13);
    check_select::<Float64Type>(14);
}

#[test]
fn filter_and_take_bad_arguments_are_errors() {
    let a = arrow_array::Int64Array::from(vec![Some(1), None, Some(3)]);
    let short = arrow_array::BooleanArray::from(vec![true, false]);
    assert!(matches!(
        ka::filter_by(&a, &short),
        Err(keel_kernels::Error::LengthMismatch {
            expected: 3,
            actual: 2,
            ..
        })
    ));
    let idx = arrow_array::UInt32Array::from(vec![Some(0), None, Some(3)]);
    assert!(matches!(
        ka::take(&a, &idx),
        Err(keel_kernels::Error::OutOfRange {
            position: 2,
            index: 3,
            ..
        })
    ));
    // The same without a null index (the gather's own check).
    let idx = arrow_array::UInt32Array::from(vec![0, 2, 3, 1]);
    assert!(matches!(
        ka::take(&a, &idx),
        Err(keel_kernels::Error::OutOfRange {
            position: 2,
            index: 3,
            ..
        })
    ));
    // Every index null: null rows, even from an empty array.
    let empty = arrow_array::Int64Array::from(Vec::<i64>::new());
    let idx = arrow_array::UInt32Array::from(vec![None, None]);
    let t = ka::take(&empty, &idx).unwrap();
    assert_eq!(t.len(), 2);
    assert_eq!(t.null_count(), 2);
}
