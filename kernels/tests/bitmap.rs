//! Bitmap kernels at every level equal the scalar twin and a naive loop
//! (at the AVX-512 level, `select` takes the byte-compress form where the
//! CPU has VBMI2; `ci/miri.sh` runs the select test with and without it).

mod common;
use common::*;
use keel_kernels::{Error, Kernels, bitmap};

#[test]
fn binops_popcount_select_every_level() {
    let s = Kernels::scalar();
    let levels = simd_levels();
    let mut r = Rng(99);
    let sizes: Vec<usize> = if cfg!(miri) {
        vec![0, 1, 2, 5]
    } else {
        (0..=40).collect()
    };
    for words in sizes {
        for dense in 0..5 {
            let gen_ = |r: &mut Rng| -> Vec<u64> {
                (0..words)
                    .map(|_| match dense {
                        0 => r.next() & r.next() & r.next(),
                        1 => r.next(),
                        2 => !0,
                        // One word in eight with one row: the empty words
                        // a compress-a-word select skips when most are.
                        4 if r.next().is_multiple_of(8) => 1 << (r.next() % 64),
                        4 => 0,
                        // About 1 row in 64, a third of the words empty:
                        // the words it compresses with the others.
                        _ if r.next().is_multiple_of(3) => 0,
                        _ => (0..6).fold(!0, |w, _| w & r.next()),
                    })
                    .collect()
            };
            let (a, b) = (gen_(&mut r), gen_(&mut r));
            let naive_and: Vec<u64> = a.iter().zip(&b).map(|(x, y)| x & y).collect();
            let naive_or: Vec<u64> = a.iter().zip(&b).map(|(x, y)| x | y).collect();
            let naive_andnot: Vec<u64> = a.iter().zip(&b).map(|(x, y)| x & !y).collect();
            for k in std::iter::once(s).chain(levels.iter().copied()) {
                let mut d = a.clone();
                k.and(&mut d, &b).unwrap();
                assert_eq!(d, naive_and, "{}", k.level());
                let mut d = a.clone();
                k.or(&mut d, &b).unwrap();
                assert_eq!(d, naive_or, "{}", k.level());
                let mut d = a.clone();
                k.andnot(&mut d, &b).unwrap();
                assert_eq!(d, naive_andnot, "{}", k.level());
                for rows in [
                    0,
                    words * 64,
                    (words * 64).saturating_sub(1),
                    (words * 64).saturating_sub(63),
                ] {
                    let want: Vec<u32> = (0..rows)
                        .filter(|&i| a[i / 64] >> (i % 64) & 1 == 1)
                        .map(|i| i as u32)
                        .collect();
                    assert_eq!(
                        k.popcount(&a, rows).unwrap(),
                        want.len(),
                        "{} rows {rows}",
                        k.level()
                    );
                    let mut out = vec![u32::MAX; want.len() + 3];
                    let n = k.select_into(&a, rows, &mut out).unwrap();
                    assert_eq!(&out[..n], &want[..], "{} rows {rows}", k.level());
                    // Nothing past the selection is written.
                    assert_eq!(&out[n..], &[u32::MAX; 3], "{} rows {rows}", k.level());
                    assert_eq!(k.select(&a, rows).unwrap(), want);
                }
            }
        }
    }
}

#[test]
fn bad_arguments_are_errors() {
    let mut a = [1u64; 3];
    assert!(matches!(
        bitmap::and(&mut a, &[1, 2]),
        Err(Error::LengthMismatch { .. })
    ));
    assert!(matches!(
        bitmap::popcount(&a, 193),
        Err(Error::BitmapTooShort { .. })
    ));
    let mut out = [0u32; 2];
    assert!(matches!(
        bitmap::select_into(&a, 192, &mut out),
        Err(Error::OutputTooShort { needed: 3, .. })
    ));
    assert_eq!(a, [1, 1, 1]);
}

/// Popcount and count over bitmaps long enough that a SIMD leaf's narrow
/// per-lane counters must be folded (the NEON leaf folds 16-bit lanes every
/// 4096 words): all ones, where every lane counts as fast as it can.
#[test]
fn long_popcount_every_level() {
    let s = Kernels::scalar();
    let levels = simd_levels();
    let words_list: &[usize] = if cfg!(miri) {
        &[70]
    } else {
        &[4095, 4096, 4097, 8193, 20_001]
    };
    let mut r = Rng(7);
    for &words in words_list {
        for dense in [true, false] {
            let a: Vec<u64> = (0..words)
                .map(|_| if dense { !0 } else { r.next() })
                .collect();
            let want: usize = a.iter().map(|w| w.count_ones() as usize).sum();
            let rows = words * 64 - 5;
            let want_rows = want - (a[words - 1] >> 59).count_ones() as usize;
            let col = vec![0i32; rows];
            for k in std::iter::once(s).chain(levels.iter().copied()) {
                assert_eq!(
                    k.popcount(&a, words * 64).unwrap(),
                    want,
                    "{} {words}",
                    k.level()
                );
                assert_eq!(
                    k.popcount(&a, rows).unwrap(),
                    want_rows,
                    "{} {words}",
                    k.level()
                );
                let c = k.count_masked(&col, Some(&a[..])).unwrap();
                assert_eq!(c, want_rows, "{} {words}", k.level());
            }
        }
    }
}

/// `compact` packs the source's bits at the counted rows, in order: every
/// level against a naive loop, the source in words or arrow-layout bytes
/// at bit offsets, counted by a selection bitmap, a validity and a
/// selection bitmap together, a validity alone, or a selection vector;
/// the last word has zeros above the last bit and nothing past it is
/// written. Every bitmap is cut to the words (or bytes) its offset and the
/// rows need, so a read past its end fails (and Miri sees it).
#[test]
fn compact_every_level_equals_a_naive_loop() {
    use keel_kernels::mask::{Bits, Mask, Selection};
    /// `rows` rows of `w` from bit `o`, cut to the words they need.
    fn tight(w: &[u64], o: usize, rows: usize) -> Bits<'_> {
        Bits::with_offset(&w[..(o + rows).div_ceil(64)], o)
    }
    let s = Kernels::scalar();
    let levels = simd_levels();
    let mut r = Rng(5);
    let lens: Vec<usize> = if cfg!(miri) {
        vec![0, 65, 130]
    } else {
        (0..=300).chain([1000, 4097]).collect()
    };
    let offsets: &[(usize, usize)] = if cfg!(miri) {
        &[(0, 0), (37, 64)]
    } else {
        &[(0, 0), (1, 37), (37, 64), (64, 5), (63, 65), (127, 63)]
    };
    for rows in lens {
        for dense in 0..5 {
            let words = rows.div_ceil(64) + 3;
            let mut gen_ = || -> Vec<u64> {
                (0..words)
                    .map(|_| match dense {
                        0 => r.next() & r.next(),
                        1 => r.next() | r.next(),
                        2 => !0,
                        _ if r.next().is_multiple_of(3) => 0,
                        _ => (0..5).fold(!0, |w, _| w & r.next()),
                    })
                    .collect()
            };
            let (src, sel, val) = (gen_(), gen_(), gen_());
            let src_bytes: Vec<u8> = src.iter().flat_map(|w| w.to_le_bytes()).collect();
            let bit = |w: &[u64], o: usize, i: usize| w[(o + i) / 64] >> ((o + i) % 64) & 1 == 1;
            let list: Vec<u32> = (0..rows as u32).rev().filter(|i| i % 3 != 1).collect();
            for &(so, mo) in offsets {
                let forms: [(&str, Mask<'_>, Vec<usize>); 4] = [
                    (
                        "selection",
                        Selection::Bitmap(tight(&sel, mo, rows)).into(),
                        (0..rows).filter(|&i| bit(&sel, mo, i)).collect(),
                    ),
                    (
                        "validity and selection",
                        Mask::valid(tight(&val, 3, rows))
                            .select(Selection::Bitmap(tight(&sel, mo, rows))),
                        (0..rows)
                            .filter(|&i| bit(&sel, mo, i) && bit(&val, 3, i))
                            .collect(),
                    ),
                    (
                        "validity",
                        Mask::valid(tight(&val, mo, rows)),
                        (0..rows).filter(|&i| bit(&val, mo, i)).collect(),
                    ),
                    (
                        "selection vector",
                        Mask::valid(tight(&val, mo, rows)).select(Selection::Rows(&list)),
                        list.iter()
                            .map(|&i| i as usize)
                            .filter(|&i| bit(&val, mo, i))
                            .collect(),
                    ),
                ];
                for (form, mask, counted) in forms {
                    let n = counted.len();
                    let mut want = vec![0u64; n.div_ceil(64)];
                    for (k, &i) in counted.iter().enumerate() {
                        want[k / 64] |= u64::from(bit(&src, so, i)) << (k % 64);
                    }
                    for k in std::iter::once(s).chain(levels.iter().copied()) {
                        for bytes in [false, true] {
                            let b = if bytes {
                                Bits::from_bytes(&src_bytes[..(so + rows).div_ceil(8)], so)
                            } else {
                                tight(&src, so, rows)
                            };
                            let mut out = vec![!0u64; want.len() + 2];
                            let got = k.compact(b, rows, mask, &mut out).unwrap();
                            let ctx = format!(
                                "{} {form} rows {rows} dense {dense} offsets {so}/{mo}",
                                k.level()
                            );
                            assert_eq!(got, n, "{ctx}");
                            assert_eq!(&out[..want.len()], &want[..], "{ctx}");
                            assert_eq!(&out[want.len()..], &[!0, !0], "written past: {ctx}");
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn compact_bad_arguments_are_errors() {
    use keel_kernels::mask::{Bits, Mask, Selection};
    let src = [!0u64; 2];
    let mut out = [0u64; 1];
    // The source shorter than the rows.
    assert!(matches!(
        bitmap::compact(Bits::with_offset(&src, 1), 128, Selection::All, &mut out),
        Err(Error::BitmapTooShort { .. })
    ));
    // 65 rows counted need two words.
    assert!(matches!(
        bitmap::compact(Bits::new(&src), 65, Selection::All, &mut out),
        Err(Error::OutputTooShort {
            needed: 2,
            actual: 1,
            ..
        })
    ));
    // A selection shorter than the rows, a selection vector row past them.
    assert!(matches!(
        bitmap::compact(
            Bits::new(&src),
            100,
            Selection::Bitmap(Bits::new(&[1])),
            &mut out
        ),
        Err(Error::BitmapTooShort { .. })
    ));
    assert!(matches!(
        bitmap::compact(Bits::new(&src), 10, Selection::Rows(&[3, 10]), &mut out),
        Err(Error::OutOfRange { position: 1, .. })
    ));
    assert_eq!(out, [0]);
    // Nothing counted: nothing written.
    let mut out: [u64; 0] = [];
    assert_eq!(
        bitmap::compact(Bits::new(&src), 64, Selection::Rows(&[]), &mut out),
        Ok(0)
    );
    for k in Kernels::supported() {
        // No rows, the offsets at or past the bitmaps' ends (word-aligned:
        // the words as they lie): nothing to read, nothing counted.
        for (so, mo) in [(128, 0), (192, 64), (64, 128), (129, 1)] {
            let (s, m) = (Bits::with_offset(&src, so), Bits::with_offset(&src, mo));
            assert_eq!(k.compact(s, 0, Selection::Bitmap(m), &mut out), Ok(0));
            let m = Mask::valid(m).select(Selection::Bitmap(Bits::with_offset(&[], 64)));
            assert_eq!(k.compact(s, 0, m, &mut out), Ok(0));
        }
        // An offset no bitmap can reach is an error, not an overflow.
        let mut one = [0u64; 1];
        for s in [
            Bits::with_offset(&src, usize::MAX),
            Bits::from_bytes(&[0xff], usize::MAX - 3),
        ] {
            assert!(matches!(
                k.compact(s, 1, Selection::All, &mut one),
                Err(Error::BitmapTooShort { .. })
            ));
        }
        let m = Selection::Bitmap(Bits::with_offset(&src, usize::MAX - 63));
        assert!(matches!(
            k.compact(Bits::new(&src), 100, m, &mut one),
            Err(Error::BitmapTooShort { .. })
        ));
    }
}
