//! The scalar twins against naive definitions: exact integer sums (i128),
//! min/max by sorting under the documented order, counts by bit tests, and
//! the float sum's stated error bound against a compensated sum.

mod common;
use common::*;
use keel_kernels::{Element, Kernels, Num, agg};

fn valid_rows<T: Copy>(v: &[T], val: Option<&[u64]>) -> Vec<T> {
    v.iter()
        .enumerate()
        .filter(|(i, _)| val.is_none_or(|b| b[i / 64] >> (i % 64) & 1 == 1))
        .map(|(_, &x)| x)
        .collect()
}

fn naive_min_max<T: Element>(rows: &[T]) -> Option<(T, T)> {
    let mut s = rows.to_vec();
    s.sort_by(|a, b| {
        if a.order_lt(*b) {
            std::cmp::Ordering::Less
        } else if b.order_lt(*a) {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    });
    Some((*s.first()?, *s.last()?))
}

fn same_opt<T: Element>(a: Option<(T, T)>, b: Option<(T, T)>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => a.0.same(b.0) && a.1.same(b.1),
        _ => false,
    }
}

fn check_min_max_count<T: Gen>(seed: u64) {
    let s = Kernels::scalar();
    let mut r = Rng(seed);
    for &p in PATTERNS {
        for &nulls in NULLS {
            // Under Miri up to 65 rows (two blocks, a partial one among
            // them): this holds the scalar twin to sorting, whose cost under
            // Miri grows with the length; the longer sweeps run natively.
            let lens = lens().into_iter().filter(|&l| !cfg!(miri) || l <= 65);
            for len in lens.step_by(if cfg!(miri) { 1 } else { 7 }) {
                let v: Vec<T> = column(p, len, r.next());
                let val = validity(nulls, len, r.next());
                let val = val.as_deref();
                let rows = valid_rows(&v, val);
                let want = naive_min_max(&rows);
                assert!(
                    same_opt(s.min_max_masked(&v, val).unwrap(), want),
                    "{} {p:?} {nulls:?} {len}",
                    T::NAME
                );
                assert!(same_opt(
                    s.min_masked(&v, val).unwrap().map(|m| (m, m)),
                    want.map(|w| (w.0, w.0))
                ));
                assert!(same_opt(
                    s.max_masked(&v, val).unwrap().map(|m| (m, m)),
                    want.map(|w| (w.1, w.1))
                ));
                assert_eq!(s.count_masked(&v, val).unwrap(), rows.len());
            }
        }
    }
}

#[test]
fn min_max_count_equal_naive() {
    check_min_max_count::<i64>(31);
    check_min_max_count::<u64>(32);
    check_min_max_count::<i32>(33);
    check_min_max_count::<u32>(34);
    check_min_max_count::<f64>(35);
    check_min_max_count::<f32>(36);
    check_min_max_count::<i16>(37);
    check_min_max_count::<u16>(38);
    check_min_max_count::<i8>(39);
    check_min_max_count::<u8>(40);
}

#[test]
fn float_order_is_total_order() {
    let v = [0.0f64, -0.0, f64::NAN, 1.0, f64::NEG_INFINITY, -f64::NAN];
    for k in Kernels::supported() {
        let (mn, mx) = k.min_max_masked(&v, None).unwrap().unwrap();
        assert!(
            mn.is_nan() && mn.is_sign_negative(),
            "{}: negative NaN is least",
            k.level()
        );
        assert!(
            mx.is_nan() && mx.is_sign_positive(),
            "{}: NaN is greatest",
            k.level()
        );
        let (mn, mx) = k.min_max_masked(&v[..2], None).unwrap().unwrap();
        assert!(mn.to_bits() == (-0.0f64).to_bits() && mx.to_bits() == 0.0f64.to_bits());
    }
}

macro_rules! int_sums {
    ($name:ident, $t:ty) => {
        #[test]
        fn $name() {
            let mut r = Rng(40);
            for &p in PATTERNS {
                for &nulls in NULLS {
                    for len in lens().into_iter().step_by(if cfg!(miri) { 1 } else { 5 }) {
                        let v: Vec<$t> = column(p, len, r.next());
                        let val = validity(nulls, len, r.next());
                        let val = val.as_deref();
                        let exact: i128 = valid_rows(&v, val).iter().map(|&x| x as i128).sum();
                        for k in Kernels::supported() {
                            let got = k.sum_masked(&v, val).unwrap();
                            // Wrapping: the exact sum modulo 2^64.
                            assert_eq!(got as i128 as u64, exact as u64, "{} {len}", k.level());
                            let checked = k.sum_checked_masked(&v, val).unwrap();
                            let fits = <<$t as Num>::Sum>::try_from(exact).ok();
                            assert_eq!(checked, fits, "{} {len}", k.level());
                        }
                    }
                }
            }
        }
    };
}
int_sums!(i64_sum_wraps_and_checked_reports, i64);
int_sums!(u64_sum_wraps_and_checked_reports, u64);
int_sums!(i32_sum_widens, i32);
int_sums!(u32_sum_widens, u32);
int_sums!(i16_sum_widens, i16);
int_sums!(u16_sum_widens, u16);
int_sums!(i8_sum_widens, i8);
int_sums!(u8_sum_widens, u8);

#[test]
fn wrapping_is_documented_behaviour() {
    assert_eq!(agg::sum_masked(&[i64::MAX, 1], None).unwrap(), i64::MIN);
    assert_eq!(agg::sum_checked_masked(&[i64::MAX, 1], None).unwrap(), None);
    assert_eq!(agg::sum_masked(&[u64::MAX, 2], None).unwrap(), 1);
    assert_eq!(
        agg::sum_masked(&[i32::MAX, i32::MAX], None).unwrap(),
        2 * i32::MAX as i64
    );
    assert_eq!(
        agg::sum_checked_masked(&[i32::MIN; 3], None).unwrap(),
        Some(3 * i32::MIN as i64)
    );
}

/// Neumaier's compensated sum in f64 (f32 inputs are exact in f64 and their
/// sum stays far inside f64's precision here).
fn compensated(xs: impl Iterator<Item = f64>) -> (f64, f64) {
    let (mut s, mut c, mut abs) = (0.0f64, 0.0f64, 0.0f64);
    for x in xs {
        let t = s + x;
        c += if s.abs() >= x.abs() {
            (s - t) + x
        } else {
            (x - t) + s
        };
        s = t;
        abs += x.abs();
    }
    (s + c, abs)
}

macro_rules! float_bound {
    ($name:ident, $t:ty) => {
        #[test]
        fn $name() {
            let u = <$t>::EPSILON as f64 / 2.0;
            let lanes = <$t as Num>::SUM_LANES;
            let mut r = Rng(50);
            let lens: &[usize] = if cfg!(miri) {
                &[0, 1, 100, 1000]
            } else {
                &[0, 1, 100, 1000, 10_000, 100_000]
            };
            for &len in lens {
                for mix in 0..3 {
                    let v: Vec<$t> = (0..len)
                        .map(|_| {
                            let m = (r.below(1 << 20) as f64 - (1 << 19) as f64) / 1024.0;
                            (match mix {
                                0 => m,
                                1 => m.abs(),
                                _ => m * 10f64.powi(r.below(12) as i32 - 6),
                            }) as $t
                        })
                        .collect();
                    let (exact, abs) = compensated(v.iter().map(|&x| x as f64));
                    // The longest lane's adds (the second run's) and the fold.
                    let h = 64 * (len / 128);
                    let kk =
                        ((len - h).div_ceil(lanes) + (2 * lanes).trailing_zeros() as usize) as f64;
                    let bound = kk * u / (1.0 - kk * u) * abs;
                    for k in Kernels::supported() {
                        let got = k.sum_masked(&v, None).unwrap() as f64;
                        assert!(
                            (got - exact).abs() <= bound,
                            "{} len {len} mix {mix}: |{got} - {exact}| > {bound}",
                            k.level()
                        );
                    }
                }
            }
        }
    };
}
float_bound!(f64_sum_within_stated_bound, f64);
float_bound!(f32_sum_within_stated_bound, f32);

/// The float sum's documented order, written from `agg`'s module docs
/// alone: rows split at `h = 64 * (n / 128)`; row `i` adds, in increasing
/// order, into lane `i % L` (first run) or `L + i % L` (second run), lanes
/// starting at `-0.0`; then `lane[j] += lane[j + w]` for `w = L, L/2, .., 1`.
fn documented_sum<T: Element<Sum = T> + Copy>(v: &[T], val: Option<&[u64]>, h: usize) -> T {
    let l = T::SUM_LANES;
    let mut lanes = vec![T::SUM_ZERO; 2 * l];
    for (i, &x) in v.iter().enumerate() {
        if val.is_none_or(|b| b[i / 64] >> (i % 64) & 1 == 1) {
            let j = if i >= h { l + i % l } else { i % l };
            lanes[j] = T::sum_add(lanes[j], x);
        }
    }
    let mut w = 2 * l;
    while w > 1 {
        w /= 2;
        for j in 0..w {
            lanes[j] = T::sum_add(lanes[j], lanes[j + w]);
        }
    }
    lanes[0]
}

fn check_documented_order<T: Element<Sum = T>>(seed: u64, from_f64: fn(f64) -> T) -> usize {
    let mut r = Rng(seed);
    let lens: &[usize] = if cfg!(miri) {
        &[0, 129, 257]
    } else {
        &[
            0, 1, 63, 64, 127, 128, 129, 191, 192, 255, 256, 300, 1000, 4103,
        ]
    };
    // Cases where the order matters: a split at 0 (one run) differs.
    let mut sensitive = 0;
    // Columns at these rows past a 64-byte line (the unmasked leaves align
    // their loads to the lines).
    let offs: &[usize] = if cfg!(miri) { &[3] } else { &[0, 1, 3, 7] };
    #[repr(align(64))]
    struct Line(#[allow(dead_code)] [u64; 8]); // read only as `T`s
    let mut buf: Vec<Line> = (0..(lens[lens.len() - 1] + 8) * 8 / 64 + 2)
        .map(|_| Line([0; 8]))
        .collect();
    for (&len, &off) in lens.iter().flat_map(|l| offs.iter().map(move |o| (l, o))) {
        // SAFETY: the lines are plain bytes, `T` (f64 or f32) is valid for
        // any bits and divides 64 bytes; the slice lies inside `buf`.
        let v: &mut [T] = unsafe {
            let p = buf.as_mut_ptr().cast::<T>().add(off);
            assert!((off + len) * size_of::<T>() <= buf.len() * 64);
            std::slice::from_raw_parts_mut(p, len)
        };
        // Full-width mantissas over magnitudes 2^-20..2^20: almost every
        // add rounds, so the order shows in the sum.
        for x in v.iter_mut() {
            let m = (r.next() >> 11) as f64 / (1u64 << 52) as f64 - 1.0;
            *x = from_f64(m * 2f64.powi(r.below(40) as i32 - 20));
        }
        let v = &*v;
        for nulls in [None, validity(Nulls::Random, len, r.next())] {
            let val = nulls.as_deref();
            let want = documented_sum(v, val, 64 * (len / 128));
            if !want.same(documented_sum(v, val, 0)) {
                sensitive += 1;
            }
            for k in Kernels::supported() {
                let got = k.sum_masked(v, val).unwrap();
                // The sum of no rows is `+0.0`.
                let want = if valid_rows(v, val).is_empty() {
                    T::EMPTY_SUM
                } else {
                    want
                };
                assert!(
                    got.same(want),
                    "{} {} len {len} off {off}: {got:?} != {want:?}",
                    k.level(),
                    T::NAME
                );
                if val.is_none() {
                    assert!(
                        k.sum(v).same(want),
                        "{} {} len {len} off {off}",
                        k.level(),
                        T::NAME
                    );
                }
            }
        }
    }
    sensitive
}

#[test]
fn float_sum_follows_documented_order() {
    let s =
        check_documented_order::<f64>(61, |x| x) + check_documented_order::<f32>(62, |x| x as f32);
    // The inputs must tell the two-run order from one run, or the test
    // checks nothing about the split.
    assert!(s > 0, "no input where the split changes the sum");
}
