//! Reductions over morsels combine in a fixed pairwise tree over morsel
//! indices: the same result, to the bit, at every width and every run.
#![cfg(not(keel_loom))]

use keel_pool::{Cancel, Cancelled, Pool};
use std::ops::Range;

/// The oracle: the same pairwise tree, serially (0+1, 2+3, ..., then
/// those pairs), over the per-morsel values in order.
fn tree<T>(mut v: Vec<T>, f: impl Fn(T, T) -> T) -> Option<T> {
    while v.len() > 1 {
        let mut next = Vec::new();
        let mut it = v.into_iter();
        while let Some(a) = it.next() {
            next.push(match it.next() {
                Some(b) => f(a, b),
                None => a,
            });
        }
        v = next;
    }
    v.pop()
}

fn morsels(len: usize, m: usize) -> Vec<Range<usize>> {
    (0..len.div_ceil(m))
        .map(|i| i * m..((i + 1) * m).min(len))
        .collect()
}

/// Values whose sum depends on the order of additions. Built from exact
/// operations only (a table, not `powi`, whose result Miri perturbs from
/// run to run): the column is the same on every run and target.
fn column(n: usize) -> Vec<f64> {
    const POW10: [f64; 9] = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8];
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x as f64 / u64::MAX as f64 - 0.5) * POW10[(x % 9) as usize]
        })
        .collect()
}

#[test]
fn float_sums_have_the_same_bits_at_every_width() {
    let n = if cfg!(miri) { 600 } else { 300_000 };
    let col = column(n);
    let widths: &[usize] = if cfg!(miri) {
        &[1, 3]
    } else {
        &[1, 2, 3, 4, 5, 8, 16]
    };
    let sizes: &[usize] = if cfg!(miri) {
        &[64, n]
    } else {
        &[64, 1000, 4096, n]
    };
    for &morsel in sizes {
        let want = tree(
            morsels(n, morsel)
                .into_iter()
                .map(|r| col[r].iter().sum::<f64>())
                .collect(),
            |a, b| a + b,
        )
        .unwrap();
        // The order matters for this data: a plain left-to-right sum
        // differs, so equal bits below are not an accident.
        let naive: f64 = col.iter().sum();
        if morsel < n {
            assert_ne!(naive.to_bits(), want.to_bits(), "morsel {morsel}");
        }
        for &w in widths {
            let pool = Pool::builder().width(w).build().unwrap();
            for _ in 0..if cfg!(miri) { 1 } else { 5 } {
                let got = pool
                    .reduce_morsels(n, morsel, |r| col[r].iter().sum::<f64>(), |a, b| a + b)
                    .unwrap();
                assert_eq!(got.to_bits(), want.to_bits(), "width {w} morsel {morsel}");
            }
        }
    }
}

#[test]
fn combine_order_is_the_morsel_order() {
    // String concatenation is associative but not commutative: any swap of
    // two values would show.
    let pool = Pool::builder().width(4).build().unwrap();
    for len in [1, 2, 3, 7, 100, 1023] {
        let got = pool
            .reduce_morsels(len, 3, |r| format!("[{}]", r.start), |a, b| a + &b)
            .unwrap();
        let want: String = morsels(len, 3)
            .iter()
            .map(|r| format!("[{}]", r.start))
            .collect();
        assert_eq!(got, want, "len {len}");
    }
    assert_eq!(pool.reduce_morsels(0, 3, |_| 1, |a, b| a + b), None);
}

#[test]
fn cancel_and_panic() {
    let pool = Pool::builder().width(2).build().unwrap();
    let cancel = Cancel::new();
    let r = pool.batch().cancel(&cancel).reduce_morsels(
        1 << 16,
        8,
        |r| {
            if r.start > 64 {
                cancel.cancel();
            }
            r.len()
        },
        |a, b| a + b,
    );
    assert_eq!(r, Err(Cancelled));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pool.reduce_morsels(
            100,
            10,
            |r| {
                assert!(r.start != 50, "morsel 5");
                vec![r.start]
            },
            |mut a, b| {
                a.extend(b);
                a
            },
        )
    }));
    assert!(r.is_err());
}
