//! Aggregates: every level equals the scalar twin on every length 0..=300 at
//! every offset 0..=63, every data pattern and validity variant.

mod common;
use common::*;
use keel_kernels::{Element, Error, Kernels, agg};

fn check_type<T: Gen>(seed: u64)
where
    T::Sum: core::fmt::Debug,
{
    let s = Kernels::scalar();
    let levels = simd_levels();
    let mut cases = 0u64;
    sweep::<T>(seed, |v, val, p, nulls| {
        let want_sum = s.sum_masked(v, val).unwrap();
        let want = s.min_max_masked(v, val).unwrap();
        // The scalar twin's min and max entry points are checked against a
        // naive loop in tests/naive.rs; here min_max's halves are the oracle.
        let (want_min, want_max) = (want.map(|m| m.0), want.map(|m| m.1));
        let want_count = s.count_masked(v, val).unwrap();
        for k in &levels {
            let ctx = || format!("{} {} len {} {p:?} {nulls:?}", k.level(), T::NAME, v.len());
            let got = k.sum_masked(v, val).unwrap();
            assert!(
                sum_same::<T>(got, want_sum),
                "sum {}: {got:?} != {want_sum:?}",
                ctx()
            );
            let mm = k.min_max_masked(v, val).unwrap();
            assert!(
                opt_same(mm.map(|m| m.0), want_min),
                "min_max.0 {}: {mm:?} {want:?}",
                ctx()
            );
            assert!(
                opt_same(mm.map(|m| m.1), want_max),
                "min_max.1 {}: {mm:?} {want:?}",
                ctx()
            );
            let mn = k.min_masked(v, val).unwrap();
            assert!(
                opt_same(mn, want_min),
                "min {}: {mn:?} != {want_min:?}",
                ctx()
            );
            let mx = k.max_masked(v, val).unwrap();
            assert!(
                opt_same(mx, want_max),
                "max {}: {mx:?} != {want_max:?}",
                ctx()
            );
            assert_eq!(
                k.count_masked(v, val).unwrap(),
                want_count,
                "count {}",
                ctx()
            );
        }
        cases += 1;
    });
    assert!(cases > 0);
}

fn opt_same<T: Element>(a: Option<T>, b: Option<T>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => a.same(b),
        _ => false,
    }
}

/// Sums compare bit for bit (floats: any NaN equals any NaN).
fn sum_same<T: Element>(a: T::Sum, b: T::Sum) -> bool {
    // Every Sum type is one of i64/u64/f64/f32; compare through Debug of
    // the bits-equal form: NaN prints "NaN" regardless of payload.
    a == b || format!("{a:?}") == format!("{b:?}")
}

#[test]
fn i64_every_level_equals_scalar() {
    check_type::<i64>(1);
}
#[test]
fn u64_every_level_equals_scalar() {
    check_type::<u64>(2);
}
#[test]
fn i32_every_level_equals_scalar() {
    check_type::<i32>(3);
}
#[test]
fn u32_every_level_equals_scalar() {
    check_type::<u32>(4);
}
#[test]
fn f64_every_level_equals_scalar() {
    check_type::<f64>(5);
}
#[test]
fn f32_every_level_equals_scalar() {
    check_type::<f32>(6);
}
#[test]
fn i16_every_level_equals_scalar() {
    check_type::<i16>(90);
}
#[test]
#[cfg_attr(
    miri,
    ignore = "Miri runs the i16 and u8 sweeps: the same leaf macros as u16 and i8"
)]
fn u16_every_level_equals_scalar() {
    check_type::<u16>(91);
}
#[test]
#[cfg_attr(
    miri,
    ignore = "Miri runs the i16 and u8 sweeps: the same leaf macros as u16 and i8"
)]
fn i8_every_level_equals_scalar() {
    check_type::<i8>(92);
}
#[test]
fn u8_every_level_equals_scalar() {
    check_type::<u8>(93);
}

#[test]
fn short_validity_is_an_error() {
    let v = [1i64; 65];
    let e = agg::sum_masked(&v, Some(&[!0][..])).unwrap_err();
    assert!(
        matches!(
            e,
            Error::BitmapTooShort {
                needed: 2,
                actual: 1,
                ..
            }
        ),
        "{e}"
    );
    for k in Kernels::supported() {
        assert!(k.min_max_masked(&v, Some(&[!0][..])).is_err());
        assert!(k.count_masked(&v, Some(&[][..])).is_err());
        assert!(k.sum_checked_masked(&v, Some(&[][..])).is_err());
    }
}

/// 32-bit sums keep per-lane partial sums that are flushed every 2^20 rows:
/// columns past several flushes, filled with the extremes (where a lane's
/// partial sums come closest to their bounds), equal the exact sum. At
/// 4 Mi rows (16 MiB) an unmasked sum runs the masked leaves' loop, not the
/// unmasked one (which the unit tests take past several flushes).
#[test]
#[cfg_attr(
    miri,
    ignore = "4 Mi rows per pattern: too slow for Miri (there the leaves flush every 2 blocks, so the short columns cross flushes)"
)]
fn i32_and_u32_sums_past_lane_flushes_are_exact() {
    let n: usize = 4 * (1 << 20) + 77;
    let patterns: [fn(usize) -> i32; 4] = [
        |_| i32::MIN,
        |_| i32::MAX,
        |i| if i % 3 == 0 { i32::MIN } else { -1 },
        |i| (i as i32).wrapping_mul(0x9E37_79B9_u32 as i32),
    ];
    let mut valid = vec![0u64; n.div_ceil(64)];
    for (i, w) in valid.iter_mut().enumerate() {
        *w = if i % 5 == 0 {
            0
        } else {
            !0u64 ^ (i as u64 * 0x5555)
        };
    }
    for f in patterns {
        let v: Vec<i32> = (0..n).map(f).collect();
        let u: Vec<u32> = v.iter().map(|&x| x as u32).collect();
        for val in [None, Some(&valid[..])] {
            let on = |i: usize| val.is_none_or(|b| b[i / 64] >> (i % 64) & 1 == 1);
            let want_i: i64 = (0..n).filter(|&i| on(i)).map(|i| i64::from(v[i])).sum();
            let want_u: u64 = (0..n).filter(|&i| on(i)).map(|i| u64::from(u[i])).sum();
            for k in Kernels::supported() {
                assert_eq!(
                    k.sum_masked(&v, val).unwrap(),
                    want_i,
                    "i32 at {}",
                    k.level()
                );
                assert_eq!(
                    k.sum_masked(&u, val).unwrap(),
                    want_u,
                    "u32 at {}",
                    k.level()
                );
            }
        }
    }
}

/// From 1 MiB on the AVX2 leaves prefetch ahead and walk the blocks in
/// chunks (under Miri from the smallest columns, so the sweeps above run
/// that loop): natively, a column of each width past the switch, at an odd
/// length and start, gives the scalar twin's min, max, sum and count at
/// every level, with and without validity.
#[test]
#[cfg_attr(miri, ignore = "the sweeps cover the prefetching loop under Miri")]
fn columns_past_the_prefetch_switch_equal_scalar() {
    fn check<T: Gen>(rows: usize)
    where
        T::Sum: core::fmt::Debug,
    {
        let buf: Vec<T> = column(Pattern::Any, rows + 1, 11);
        let v = &buf[1..];
        let valid: Vec<u64> = (0..rows.div_ceil(64) as u64)
            .map(|i| !0u64 ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
            .collect();
        let s = Kernels::scalar();
        for val in [None, Some(&valid[..])] {
            let want = s.min_max_masked(v, val).unwrap();
            let want_sum = s.sum_masked(v, val).unwrap();
            for k in simd_levels() {
                let got = k.min_max_masked(v, val).unwrap();
                assert!(
                    opt_same(got.map(|m| m.0), want.map(|m| m.0))
                        && opt_same(got.map(|m| m.1), want.map(|m| m.1)),
                    "min_max {} {}: {got:?} != {want:?}",
                    k.level(),
                    T::NAME
                );
                let mn = k.min_masked(v, val).unwrap();
                assert!(
                    opt_same(mn, want.map(|m| m.0)),
                    "min {} {}",
                    k.level(),
                    T::NAME
                );
                assert_eq!(
                    k.count_masked(v, val).unwrap(),
                    s.count_masked(v, val).unwrap(),
                    "count {} {}",
                    k.level(),
                    T::NAME
                );
                let got_sum = k.sum_masked(v, val).unwrap();
                assert!(
                    sum_same::<T>(got_sum, want_sum),
                    "sum {} {}: {got_sum:?} != {want_sum:?}",
                    k.level(),
                    T::NAME
                );
            }
        }
    }
    check::<i64>((1 << 17) + 77);
    check::<f64>((1 << 17) + 77);
    check::<i32>((1 << 18) + 77);
    check::<u32>((1 << 18) + 77);
}

/// The 16-bit sums flush their 32-bit lanes every 2^14 blocks (1 Mi rows):
/// extremes over 3 Mi rows cross two flushes.
#[test]
#[cfg_attr(
    miri,
    ignore = "3 Mi rows: too slow for Miri (there the leaves flush every 2 blocks)"
)]
fn sixteen_bit_sums_past_lane_flushes_are_exact() {
    let n: usize = 3 * (1 << 20) + 77;
    let valid: Vec<u64> = (0..n.div_ceil(64) as u64)
        .map(|i| if i % 7 == 0 { 0 } else { !0 ^ (i * 0x3333) })
        .collect();
    let on = |val: Option<&[u64]>, i: usize| val.is_none_or(|b| b[i / 64] >> (i % 64) & 1 == 1);
    for (lo, hi) in [
        (i16::MIN, i16::MIN),
        (i16::MAX, i16::MAX),
        (i16::MIN, i16::MAX),
    ] {
        let v: Vec<i16> = (0..n).map(|i| if i % 2 == 0 { lo } else { hi }).collect();
        let u: Vec<u16> = v.iter().map(|&x| x as u16).collect();
        for val in [None, Some(&valid[..])] {
            let want_i: i64 = (0..n)
                .filter(|&i| on(val, i))
                .map(|i| i64::from(v[i]))
                .sum();
            let want_u: u64 = (0..n)
                .filter(|&i| on(val, i))
                .map(|i| u64::from(u[i]))
                .sum();
            for k in Kernels::supported() {
                assert_eq!(
                    k.sum_masked(&v, val).unwrap(),
                    want_i,
                    "i16 at {}",
                    k.level()
                );
                assert_eq!(
                    k.sum_masked(&u, val).unwrap(),
                    want_u,
                    "u16 at {}",
                    k.level()
                );
            }
        }
    }
}

/// A float sum of `-0.0`s is `-0.0` at every level, with nulls anywhere: a
/// leaf that feeds null lanes anything but `-0.0` (the exact additive
/// identity) turns some lane, and so the sum, into `+0.0`. Random data
/// rarely leaves a lane at zero, so this is checked on its own. The sum of
/// no rows (empty, or every row null) is `+0.0`.
#[test]
fn float_sums_of_negative_zeros_stay_negative_zero_under_nulls() {
    let kinds: &[Nulls] = if cfg!(miri) {
        &[Nulls::Random, Nulls::AllNull]
    } else {
        &[
            Nulls::Random,
            Nulls::Sparse,
            Nulls::AllValid,
            Nulls::AllNull,
        ]
    };
    for len in lens() {
        let v64 = vec![-0.0f64; len];
        let v32 = vec![-0.0f32; len];
        for &nulls in kinds {
            let val = validity(nulls, len, len as u64 ^ 0xD1);
            let counted = (0..len)
                .filter(|&i| val.as_ref().is_none_or(|b| b[i / 64] >> (i % 64) & 1 == 1))
                .count();
            let (w64, w32) = if counted == 0 {
                (0.0f64, 0.0f32)
            } else {
                (-0.0, -0.0)
            };
            for k in Kernels::supported() {
                let a = k.sum_masked(&v64, val.as_deref());
                let b = k.sum_masked(&v32, val.as_deref());
                let ctx = || format!("{} len {len} {nulls:?}", k.level());
                assert_eq!(a.unwrap().to_bits(), w64.to_bits(), "f64 {}", ctx());
                assert_eq!(b.unwrap().to_bits(), w32.to_bits(), "f32 {}", ctx());
                let c = k.sum_checked_masked(&v64, val.as_deref()).unwrap().unwrap();
                assert_eq!(c.to_bits(), w64.to_bits(), "checked f64 {}", ctx());
            }
        }
    }
}

/// CI's Miri run enables the AVX2 and AVX-512 target features so that
/// Miri's static detection runs the SIMD leaves; if detection ever required
/// a feature that build does not enable, every test would quietly fall back
/// to fewer levels. This fails instead.
#[cfg(all(miri, target_arch = "x86_64", target_feature = "avx2"))]
#[test]
fn miri_builds_with_simd_features_run_those_levels() {
    use keel_kernels::cpu::{Level, detected};
    let want = if cfg!(target_feature = "avx512f") {
        Level::Avx512
    } else {
        Level::Avx2
    };
    assert_eq!(
        detected(),
        want,
        "a feature detection needs is missing from the build's features"
    );
}
