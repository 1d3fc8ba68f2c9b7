//! Folds over morsels: one accumulator per hand that ran a morsel, made by
//! `init` once, in hand order; every morsel folded into exactly one.
#![cfg(not(keel_loom))]

use keel_pool::{Cancel, Cancelled, Pool};
use std::sync::atomic::{AtomicUsize, Ordering};

#[test]
fn one_accumulator_per_hand_in_hand_order() {
    let pool = Pool::builder().width(4).build().unwrap();
    let n = if cfg!(miri) { 500 } else { 1_000_000 };
    let widths: &[usize] = if cfg!(miri) { &[1, 4] } else { &[1, 2, 4] };
    for &width in widths {
        for morsel in [1, 7, 1000, n] {
            if cfg!(miri) && morsel < 7 {
                continue;
            }
            let inits = AtomicUsize::new(0);
            let accs = pool
                .batch()
                .width(width)
                .fold_morsels(
                    n,
                    morsel,
                    |hand| {
                        inits.fetch_add(1, Ordering::Relaxed);
                        (hand.index, 0u64, 0usize)
                    },
                    |acc, r| {
                        acc.1 += r.clone().map(|i| i as u64).sum::<u64>();
                        acc.2 += r.len();
                    },
                )
                .unwrap();
            assert_eq!(inits.into_inner(), accs.len());
            assert!(!accs.is_empty() && accs.len() <= width);
            assert!(accs.windows(2).all(|w| w[0].0 < w[1].0), "hand order");
            let total: u64 = accs.iter().map(|a| a.1).sum();
            let rows: usize = accs.iter().map(|a| a.2).sum();
            assert_eq!(rows, n, "width {width} morsel {morsel}");
            assert_eq!(total, (n as u64 - 1) * n as u64 / 2);
        }
    }
    assert!(pool.fold_morsels(0, 10, |_| 0, |_, _| ()).is_empty());
}

#[test]
fn scratch_that_is_not_sync() {
    // The accumulator is the hand's own: a RefCell or a Vec needs no lock.
    let pool = Pool::builder().width(3).build().unwrap();
    let n = if cfg!(miri) { 500 } else { 5000 };
    let words: Vec<String> = (0..n).map(|i| format!("w{}", i % 50)).collect();
    let sets = pool.fold_morsels(
        words.len(),
        64,
        |_| std::cell::RefCell::new(std::collections::HashSet::new()),
        |set, r| {
            for w in &words[r] {
                set.borrow_mut().insert(w.as_str());
            }
        },
    );
    let mut all = std::collections::HashSet::new();
    for s in sets {
        all.extend(s.into_inner());
    }
    assert_eq!(all.len(), 50);
}

#[test]
fn cancelled_fold_is_an_error() {
    let pool = Pool::builder().width(2).build().unwrap();
    let cancel = Cancel::new();
    let r = pool.batch().cancel(&cancel).fold_morsels(
        1 << 16,
        16,
        |_| 0usize,
        |n, r| {
            *n += r.len();
            if r.start >= 160 {
                cancel.cancel();
            }
        },
    );
    assert_eq!(r, Err(Cancelled));
}

#[test]
fn a_panicking_morsel_resumes_after_the_fold() {
    let pool = Pool::builder().width(2).build().unwrap();
    let folded = AtomicUsize::new(0);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pool.fold_morsels(
            100,
            10,
            |_| (),
            |_, r| {
                folded.fetch_add(1, Ordering::Relaxed);
                if r.start == 30 {
                    panic!("morsel 3");
                }
            },
        )
    }));
    assert!(r.is_err());
    // The other morsels still ran.
    assert_eq!(folded.into_inner(), 10);
}
