//! Bitmap kernels at every level equal the scalar twin and a naive loop
//! (at the AVX-512 level, `select` takes the byte-compress form where the
//! CPU has VBMI2; `ci/miri.sh` runs these tests with and without it).

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
        for dense in 0..4 {
            let gen_ = |r: &mut Rng| -> Vec<u64> {
                (0..words)
                    .map(|_| match dense {
                        0 => r.next() & r.next() & r.next(),
                        1 => r.next(),
                        2 => !0,
                        // About 1 row in 64, a third of the words empty:
                        // the words a compress-a-word select skips.
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
