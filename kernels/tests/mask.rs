//! Masks: a validity bitmap at a bit offset (in words or in arrow's bytes),
//! a selection bitmap, a selection vector, and both together, at every
//! level, against the same rows given as one plain bitmap at offset 0 (which
//! the other test files hold to the scalar twin and to definitions).

mod common;
use common::*;
use keel_kernels::mask::{Bits, Mask, Selection};
use keel_kernels::{Element, Error, Kernels, agg};

/// Bit offsets the bitmaps are placed at.
const OFFSETS: &[usize] = if cfg!(miri) {
    &[0, 3]
} else {
    &[0, 1, 7, 8, 31, 63, 64, 65, 130]
};

/// `bits` (row `i` = bit `i`) copied to start at bit `off` of fresh words,
/// with garbage around it.
fn shifted(bits: &[bool], off: usize, r: &mut Rng) -> Vec<u64> {
    let words = (off + bits.len()).div_ceil(64) + 1;
    let mut w: Vec<u64> = (0..words).map(|_| r.next()).collect();
    for (i, &b) in bits.iter().enumerate() {
        let (k, s) = ((off + i) / 64, (off + i) % 64);
        w[k] = (w[k] & !(1 << s)) | (u64::from(b) << s);
    }
    w
}

/// The same words as little-endian bytes, cut to the bytes the bits need.
fn as_bytes(w: &[u64], bits_needed: usize) -> Vec<u8> {
    let mut b: Vec<u8> = w.iter().flat_map(|x| x.to_le_bytes()).collect();
    b.truncate(bits_needed.div_ceil(8));
    b
}

fn plain(bits: &[bool]) -> Vec<u64> {
    let mut w = vec![0u64; bits.len().div_ceil(64)];
    for (i, &b) in bits.iter().enumerate() {
        w[i / 64] |= u64::from(b) << (i % 64);
    }
    w
}

fn sum_same<T: Element>(a: T::Sum, b: T::Sum) -> bool {
    T::sum_same(a, b)
}

fn opt_same<T: Element>(a: Option<(T, T)>, b: Option<(T, T)>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => a.0.same(b.0) && a.1.same(b.1),
        _ => false,
    }
}

/// The scalar twin's aggregates over the counted rows as a plain bitmap:
/// computed once per column and bitmap, not once per level and offset.
struct Want<T: Element> {
    sum: T::Sum,
    min_max: Option<(T, T)>,
    count: usize,
    checked: Option<T::Sum>,
}

fn want<T: Gen>(v: &[T], rows: &[u64]) -> Want<T> {
    let s = Kernels::scalar();
    let w = Some(rows);
    Want {
        sum: s.sum_masked(v, w).unwrap(),
        min_max: s.min_max_masked(v, w).unwrap(),
        count: s.count_masked(v, w).unwrap(),
        checked: s.sum_checked_masked(v, w).unwrap(),
    }
}

/// Every aggregate under `mask` equals the same aggregate over `want`, the
/// counted rows as a plain bitmap.
fn check<T: Gen>(k: Kernels, v: &[T], mask: Mask<'_>, want: &Want<T>, ctx: &dyn Fn() -> String) {
    assert!(
        sum_same::<T>(k.sum_masked(v, mask).unwrap(), want.sum),
        "sum {}",
        ctx()
    );
    assert!(
        opt_same(k.min_max_masked(v, mask).unwrap(), want.min_max),
        "min_max {}",
        ctx()
    );
    assert_eq!(
        k.count_masked(v, mask).unwrap(),
        want.count,
        "count {}",
        ctx()
    );
    let a = k.sum_checked_masked(v, mask).unwrap();
    assert_eq!(a.is_some(), want.checked.is_some(), "checked {}", ctx());
    if let (Some(a), Some(b)) = (a, want.checked) {
        assert!(sum_same::<T>(a, b), "checked {}", ctx());
    }
}

fn check_type<T: Gen>(seed: u64) {
    let mut r = Rng(seed | 1);
    let mut cases = 0;
    for n in lens() {
        let v: Vec<T> = column(Pattern::Edges, n, seed ^ n as u64);
        let valid: Vec<bool> = (0..n).map(|_| r.below(4) != 0).collect();
        let sel: Vec<bool> = (0..n).map(|_| r.below(3) == 0).collect();
        let both: Vec<bool> = valid.iter().zip(&sel).map(|(a, b)| *a && *b).collect();
        let (pv, pb) = (plain(&valid), plain(&both));
        let (wv, wb) = (want(&v, &pv), want(&v, &pb));
        for k in Kernels::supported() {
            for &off in OFFSETS {
                let vw = shifted(&valid, off, &mut r);
                let sw = shifted(&sel, off + 5, &mut r);
                let vb = as_bytes(&vw, off + n);
                let sb = as_bytes(&sw, off + 5 + n);
                let ctx = || format!("{} {} len {n} offset {off}", k.level(), T::NAME);
                check(k, &v, Mask::valid(Bits::with_offset(&vw, off)), &wv, &ctx);
                check(k, &v, Mask::valid(Bits::from_bytes(&vb, off)), &wv, &ctx);
                let both_m = Mask::valid(Bits::from_bytes(&vb, off))
                    .select(Selection::Bitmap(Bits::with_offset(&sw, off + 5)));
                check(k, &v, both_m, &wb, &ctx);
                let both_b = Mask::valid(Bits::with_offset(&vw, off))
                    .select(Selection::Bitmap(Bits::from_bytes(&sb, off + 5)));
                check(k, &v, both_b, &wb, &ctx);
                cases += 1;
            }
            // A sorted selection vector of the selected rows counts what
            // the selection bitmap does, float lanes included.
            let rows: Vec<u32> = (0..n as u32).filter(|&i| sel[i as usize]).collect();
            let ctx = || format!("{} {} len {n} rows", k.level(), T::NAME);
            let m = Mask::valid(Bits::new(&pv)).select(Selection::Rows(&rows));
            check(k, &v, m, &wb, &ctx);
        }
    }
    assert!(cases > 0);
}

#[test]
fn i64_masks() {
    check_type::<i64>(11);
}
#[test]
#[cfg_attr(
    miri,
    ignore = "Miri runs the i64, f64 and u8 sweeps: the same mask code"
)]
fn u64_masks() {
    check_type::<u64>(12);
}
#[test]
#[cfg_attr(
    miri,
    ignore = "Miri runs the i64, f64 and u8 sweeps: the same mask code"
)]
fn i32_masks() {
    check_type::<i32>(13);
}
#[test]
#[cfg_attr(
    miri,
    ignore = "Miri runs the i64, f64 and u8 sweeps: the same mask code"
)]
fn u32_masks() {
    check_type::<u32>(14);
}
#[test]
fn f64_masks() {
    check_type::<f64>(15);
}
#[test]
#[cfg_attr(
    miri,
    ignore = "Miri runs the i64, f64 and u8 sweeps: the same mask code"
)]
fn f32_masks() {
    check_type::<f32>(16);
}
#[test]
#[cfg_attr(
    miri,
    ignore = "Miri runs the i64, f64 and u8 sweeps: the same mask code"
)]
fn i16_masks() {
    check_type::<i16>(290);
}
#[test]
#[cfg_attr(
    miri,
    ignore = "Miri runs the i64, f64 and u8 sweeps: the same mask code"
)]
fn u16_masks() {
    check_type::<u16>(291);
}
#[test]
#[cfg_attr(
    miri,
    ignore = "Miri runs the i64, f64 and u8 sweeps: the same mask code"
)]
fn i8_masks() {
    check_type::<i8>(292);
}
#[test]
fn u8_masks() {
    check_type::<u8>(293);
}

/// A selection vector may repeat rows and be in any order: each entry counts
/// once, as a naive loop over the entries counts it.
#[test]
fn selection_vectors_with_repeats_count_each_entry() {
    let v: Vec<i64> = (0..200).map(|i| i * 3 - 100).collect();
    let rows: Vec<u32> = vec![5, 5, 199, 0, 7, 5, 120];
    let valid: Vec<u64> = vec![!0 ^ (1 << 7), !0, !0, !0];
    for k in Kernels::supported() {
        let m = Mask::valid(Bits::new(&valid)).select(Selection::Rows(&rows));
        let want: i64 = rows
            .iter()
            .filter(|&&r| r != 7)
            .map(|&r| v[r as usize])
            .sum();
        assert_eq!(k.sum_masked(&v, m).unwrap(), want);
        assert_eq!(k.count_masked(&v, m).unwrap(), 6);
        assert_eq!(k.min_max_masked(&v, m).unwrap(), Some((-100, 497)));
        let f: Vec<f64> = v.iter().map(|&x| x as f64).collect();
        assert_eq!(k.sum_masked(&f, m).unwrap(), want as f64);
        assert_eq!(
            k.sum_masked(&f, Selection::Rows(&[])).unwrap().to_bits(),
            0f64.to_bits()
        );
        assert_eq!(k.min_masked(&f, Selection::Rows(&[])).unwrap(), None);
    }
}

#[test]
fn bad_masks_are_errors() {
    let v = [1i64; 100];
    let short = [0u64; 2];
    for k in Kernels::supported() {
        // 100 rows at bit offset 30 need 130 bits: 3 words or 17 bytes.
        assert_eq!(
            k.sum_masked(&v, Mask::valid(Bits::with_offset(&short, 30))),
            Err(Error::BitmapTooShort {
                what: "validity",
                needed: 3,
                actual: 2
            })
        );
        assert_eq!(
            k.count_masked(&v, Selection::Bitmap(Bits::from_bytes(&[0; 16], 30))),
            Err(Error::BitmapTooShort {
                what: "selection bitmap",
                needed: 17,
                actual: 16
            })
        );
        assert_eq!(
            k.min_masked(&v, Selection::Rows(&[3, 99, 100])),
            Err(Error::OutOfRange {
                what: "selection vector row",
                position: 2,
                index: 100,
                len: 100
            })
        );
        // Exactly enough bits is fine, wherever the offset puts them.
        let bytes = [0xFFu8; 17];
        assert_eq!(
            k.count_masked(&v, Mask::valid(Bits::from_bytes(&bytes, 36))),
            Ok(100)
        );
    }
}

#[test]
fn bits_report_their_bits() {
    let w = [0b1010u64, 1];
    let b = Bits::with_offset(&w, 1);
    assert_eq!(b.len(), 127);
    assert_eq!(
        (b.get(0), b.get(1), b.get(2)),
        (Some(true), Some(false), Some(true))
    );
    assert_eq!(
        (b.get(63), b.get(126), b.get(127)),
        (Some(true), Some(false), None)
    );
    assert!(Bits::new(&[]).is_empty());
    assert_eq!(agg::sum_masked(&[1u32, 2], Mask::ALL), Ok(3));
}
