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

fn check<T: Make>(seed: u64)
where
    T::Native: arrow_array::ArrowNativeTypeOp,
{
    let full = array::<T>(3000, seed);
    let c = T::Native::from(40u8);
    let scalar = PrimitiveArray::<T>::new_scalar(c);
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
        }
    }
    cpu::set_max_level(cpu::detected());
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
