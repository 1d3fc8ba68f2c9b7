//! Filters: every operator, plain and `and` forms, at every level equal the
//! scalar twin (and the scalar twin equals a naive loop) on every length
//! 0..=300 at every offset within the widest load run (0..=63 with
//! AVX-512) of edge-value data, and every length at a few offsets of the
//! other data patterns.

mod common;
use common::*;
use keel_kernels::cpu::Level;
use keel_kernels::filter::{CmpOp, Predicate};
use keel_kernels::mask::{Bits, Mask, Selection};
use keel_kernels::{Error, Kernels, filter};

fn preds<T: Gen>(v: &[T], r: &mut Rng) -> Vec<Predicate<T>> {
    let pick = |r: &mut Rng| {
        if !v.is_empty() && r.below(2) == 0 {
            v[r.below(v.len() as u64) as usize]
        } else {
            T::EDGES[r.below(T::EDGES.len() as u64) as usize]
        }
    };
    let mut out: Vec<_> = CmpOp::ALL
        .into_iter()
        .map(|op| Predicate::Cmp(op, pick(r)))
        .collect();
    let (a, b) = (pick(r), pick(r));
    out.push(Predicate::Between(a, b));
    out
}

/// The predicates one case (a column at one length and offset) runs: all
/// of them natively; under Miri three of the seven, the next three for each
/// case in turn, so that every operator still runs at every lane width and
/// a column's loads and stores (what Miri checks) are still checked at
/// every length and offset, for a third of the interpretation time.
fn case_preds<T: Gen>(v: &[T], r: &mut Rng, case: usize) -> Vec<Predicate<T>> {
    let all = preds(v, r);
    if cfg!(miri) {
        (0..3).map(|j| all[(3 * case + j) % all.len()]).collect()
    } else {
        all
    }
}

fn naive<T: Gen>(v: &[T], p: Predicate<T>) -> Vec<u64> {
    let mut w = vec![0u64; v.len().div_ceil(64)];
    for (i, &x) in v.iter().enumerate() {
        if p.eval(x) {
            w[i / 64] |= 1 << (i % 64);
        }
    }
    w
}

/// Longer columns, at a few offsets: the leaves take eight full 64-row
/// blocks a step, so these reach that loop, its end at 512 rows, and the
/// block loop after it. Under Miri, where the long column is most of the
/// work, one type per lane width the Miri build runs at that length (one-,
/// four- and eight-byte lanes, an integer and a float leaf); the others
/// take the short lengths there, and every length natively.
fn long_lens<T: Gen>() -> Vec<usize> {
    if cfg!(miri) {
        if matches!(T::NAME, "u8" | "i32" | "f64") {
            vec![577]
        } else {
            vec![]
        }
    } else {
        vec![511, 512, 513, 575, 1024, LONG_MAX]
    }
}
const LONG_MAX: usize = 1089;

/// The start offsets of the short sweep: every start within the widest
/// load of the levels run here, and the last. One-byte lanes then meet
/// every alignment of every leaf's loads: 0..=63 where AVX-512 runs,
/// 0..=31 under qemu's x86 CPUs (no AVX-512 there, and this sweep is most
/// of the suite's emulated time), 0..=15 for NEON (aarch64 runs under qemu
/// in CI too).
fn sweep_offsets(levels: &[Kernels]) -> Vec<usize> {
    let widest = levels
        .iter()
        .map(|k| match k.level() {
            Level::Avx512 => 64,
            Level::Avx2 => 32,
            Level::Neon => 16,
            Level::Scalar => 8,
        })
        .max()
        .unwrap_or(8);
    let mut offs: Vec<usize> = (0..widest.min(MAX_OFF + 1)).collect();
    if offs.last() != Some(&MAX_OFF) {
        offs.push(MAX_OFF);
    }
    offs
}

fn check_type<T: Gen>(seed: u64) {
    let s = Kernels::scalar();
    let levels = simd_levels();
    let mut r = Rng(seed);
    let mut case = 0;
    for (pi, &p) in PATTERNS.iter().enumerate() {
        let buf: Vec<T> = column(p, LONG_MAX + MAX_OFF + 1, seed ^ pi as u64);
        for len in lens().into_iter().chain(long_lens::<T>()) {
            let words = len.div_ceil(64);
            let offs: Vec<usize> = if matches!(p, Pattern::Edges) && len <= MAX_LEN {
                sweep_offsets(&levels)
            } else if cfg!(miri) {
                // The long column at an unaligned start only: it is most
                // of Miri's work here.
                vec![1]
            } else {
                FEW_OFFSETS.into_iter().filter(|&o| o <= MAX_OFF).collect()
            };
            for off in offs {
                let v = &buf[off..off + len];
                // Garbage in spare bits of the and-target: must come out zero.
                let init: Vec<u64> = (0..words).map(|_| r.next()).collect();
                case += 1;
                for pred in case_preds(v, &mut r, case) {
                    let mut want = vec![0u64; words];
                    s.filter(v, pred, &mut want).unwrap();
                    if off == 0 {
                        assert_eq!(want, naive(v, pred), "scalar vs naive {pred:?} len {len}");
                    }
                    let want_and: Vec<u64> = want.iter().zip(&init).map(|(a, i)| a & i).collect();
                    if off == 0 {
                        let mut got = init.clone();
                        s.filter_and(v, pred, &mut got).unwrap();
                        assert_eq!(got, want_and, "scalar and form is filter & init");
                    }
                    // The fused count: rows passing, valid and selected (the
                    // selection at bit offset 3), and through a selection
                    // vector of every third row.
                    let val = validity(Nulls::Random, len, r.next()).unwrap_or_default();
                    let sel: Vec<u64> = (0..=words).map(|_| r.next()).collect();
                    let bit = |w: &[u64], i: usize| w[i / 64] >> (i % 64) & 1 == 1;
                    let passing = |i: usize| bit(&want, i);
                    let want_all = (0..len).filter(|&i| passing(i)).count();
                    let want_masked = (0..len)
                        .filter(|&i| passing(i) && bit(&val, i) && bit(&sel, i + 3))
                        .count();
                    let rows: Vec<u32> = (0..len as u32).step_by(3).collect();
                    let want_rows = rows.iter().filter(|&&i| passing(i as usize)).count();
                    let m = Mask::valid(Bits::new(&val))
                        .select(Selection::Bitmap(Bits::with_offset(&sel, 3)));
                    for k in std::iter::once(&s).chain(&levels) {
                        let ctx = || {
                            format!(
                                "count {} {} {pred:?} len {len} off {off}",
                                k.level(),
                                T::NAME
                            )
                        };
                        assert_eq!(k.count_matching(v, pred, None), Ok(want_all), "{}", ctx());
                        assert_eq!(k.count_matching(v, pred, m), Ok(want_masked), "{}", ctx());
                        let sr = Selection::Rows(&rows);
                        assert_eq!(k.count_matching(v, pred, sr), Ok(want_rows), "{}", ctx());
                    }
                    for k in &levels {
                        let mut got = init.clone();
                        k.filter(v, pred, &mut got).unwrap();
                        assert_eq!(
                            got,
                            want,
                            "{} {} {pred:?} len {len} off {off}",
                            k.level(),
                            T::NAME
                        );
                        let mut got = init.clone();
                        k.filter_and(v, pred, &mut got).unwrap();
                        assert_eq!(
                            got,
                            want_and,
                            "and {} {} {pred:?} len {len} off {off}",
                            k.level(),
                            T::NAME
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn i64_every_level_equals_scalar() {
    check_type::<i64>(11);
}
#[test]
#[cfg_attr(
    miri,
    ignore = "Miri runs the i64 and i32 sweeps: the same leaf macros as u64 and u32"
)]
fn u64_every_level_equals_scalar() {
    check_type::<u64>(12);
}
#[test]
fn i32_every_level_equals_scalar() {
    check_type::<i32>(13);
}
#[test]
#[cfg_attr(
    miri,
    ignore = "Miri runs the i64 and i32 sweeps: the same leaf macros as u64 and u32"
)]
fn u32_every_level_equals_scalar() {
    check_type::<u32>(14);
}
#[test]
fn f64_every_level_equals_scalar() {
    check_type::<f64>(15);
}
#[test]
fn f32_every_level_equals_scalar() {
    check_type::<f32>(16);
}
#[test]
fn i16_every_level_equals_scalar() {
    check_type::<i16>(190);
}
#[test]
#[cfg_attr(
    miri,
    ignore = "Miri runs the i16 and u8 sweeps: the same leaf macros as u16 and i8"
)]
fn u16_every_level_equals_scalar() {
    check_type::<u16>(191);
}
#[test]
#[cfg_attr(
    miri,
    ignore = "Miri runs the i16 and u8 sweeps: the same leaf macros as u16 and i8"
)]
fn i8_every_level_equals_scalar() {
    check_type::<i8>(192);
}
#[test]
fn u8_every_level_equals_scalar() {
    check_type::<u8>(193);
}

#[test]
fn ieee_semantics_for_floats() {
    let v = [f64::NAN, -0.0, 0.0, 1.0, f64::INFINITY];
    for k in Kernels::supported() {
        let mut b = [0u64];
        k.filter(&v, Predicate::Cmp(CmpOp::Eq, 0.0), &mut b)
            .unwrap();
        assert_eq!(b[0], 0b00110, "{}: -0.0 == 0.0, NaN == nothing", k.level());
        k.filter(&v, Predicate::Cmp(CmpOp::Ne, 0.0), &mut b)
            .unwrap();
        assert_eq!(b[0], 0b11001, "{}: NaN != anything", k.level());
        k.filter(
            &v,
            Predicate::Between(f64::NEG_INFINITY, f64::INFINITY),
            &mut b,
        )
        .unwrap();
        assert_eq!(b[0], 0b11110, "{}: NaN is in no range", k.level());
    }
}

#[test]
fn short_output_is_an_error() {
    let v = [0u32; 129];
    let mut out = [0u64; 2];
    let e = filter::compare(&v, CmpOp::Eq, 0, &mut out).unwrap_err();
    assert_eq!(
        e,
        Error::BitmapTooShort {
            what: "output bitmap",
            needed: 3,
            actual: 2
        }
    );
    // A longer output is fine; words past the rows are untouched.
    let mut out = [7u64; 4];
    filter::compare(&v, CmpOp::Eq, 0, &mut out).unwrap();
    assert_eq!(out, [!0, !0, 1, 7]);
    // So does the `and` form, at every level.
    for k in Kernels::supported() {
        let mut out = [!0u64; 4];
        k.filter_and(&v, Predicate::Cmp(CmpOp::Eq, 0), &mut out)
            .unwrap();
        assert_eq!(out, [!0, !0, 1, !0], "{}", k.level());
        assert!(
            k.filter_and(&v, Predicate::Cmp(CmpOp::Eq, 0), &mut out[..2])
                .is_err()
        );
    }
}

/// Columns of 16 MiB and more write their bitmap with non-temporal stores
/// at the AVX-512 level, and from 1 MiB on the AVX2 level prefetches them
/// (under Miri both paths start at the smallest columns, so the sweeps
/// above run them): natively, one column per width just past the switches,
/// at an odd length and start, equals the scalar twin at every level, and
/// its `and` form still ands.
#[test]
#[cfg_attr(miri, ignore = "the sweeps cover the streaming path under Miri")]
fn columns_past_the_streaming_switch_equal_scalar() {
    fn check<T: Gen>(rows: usize, c: T) {
        let buf: Vec<T> = column(Pattern::Any, rows + 1, 7);
        let v = &buf[1..];
        let mut want = vec![0u64; rows.div_ceil(64)];
        Kernels::scalar()
            .filter(v, Predicate::Cmp(CmpOp::Lt, c), &mut want)
            .unwrap();
        assert!(want.iter().any(|&w| w != 0) && want.iter().any(|&w| w != !0));
        for k in simd_levels() {
            let mut got = vec![!0u64; want.len() + 1];
            k.filter(v, Predicate::Cmp(CmpOp::Lt, c), &mut got[..want.len()])
                .unwrap();
            assert!(got[..want.len()] == want[..], "{} {}", k.level(), T::NAME);
            assert_eq!(got[want.len()], !0, "a word past the bitmap was written");
            let mut and = vec![0x5555_5555_5555_5555u64; want.len()];
            k.filter_and(v, Predicate::Cmp(CmpOp::Lt, c), &mut and)
                .unwrap();
            let w: Vec<u64> = want.iter().map(|w| w & 0x5555_5555_5555_5555).collect();
            assert!(and == w, "and {} {}", k.level(), T::NAME);
        }
    }
    check::<u8>((16 << 20) + 77, 100);
    check::<u16>((8 << 20) + 77, 30_000);
    check::<i64>((2 << 20) + 77, 0);
}
