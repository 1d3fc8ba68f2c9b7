//! The hand context: unique within a batch, stable for it (a thread runs all
//! of its jobs of a batch as one hand), the caller is hand 0, and every
//! index is below the batch's width.
#![cfg(not(keel_loom))]

use keel_pool::Pool;
use std::collections::HashMap;
use std::sync::Mutex;
use std::thread::ThreadId;
use std::time::Duration;

/// Which hand index each thread used and vice versa, over one batch.
fn check(pool: &Pool, k: usize, width: usize, hold: Duration) {
    let seen: Mutex<Vec<(usize, usize, ThreadId)>> = Mutex::new(Vec::new());
    pool.batch()
        .width(width)
        .run_hand(k, |hand, job| {
            seen.lock()
                .unwrap()
                .push((hand.index, hand.width, std::thread::current().id()));
            let _ = job;
            std::thread::sleep(hold);
        })
        .unwrap();
    let seen = seen.into_inner().unwrap();
    assert_eq!(seen.len(), k);
    let want_width = k.min(width).min(pool.width());
    let mut by_hand: HashMap<usize, ThreadId> = HashMap::new();
    let mut by_thread: HashMap<ThreadId, usize> = HashMap::new();
    for &(index, w, t) in &seen {
        assert_eq!(w, want_width, "k {k} width {width}");
        assert!(index < w);
        assert_eq!(
            *by_hand.entry(index).or_insert(t),
            t,
            "hand {index} on two threads"
        );
        assert_eq!(
            *by_thread.entry(t).or_insert(index),
            index,
            "a thread with two hands"
        );
    }
    if let Some(&i) = by_thread.get(&std::thread::current().id()) {
        assert_eq!(i, 0, "the caller is hand 0");
    }
}

#[test]
fn unique_stable_and_below_width() {
    let pool = Pool::builder().width(4).build().unwrap();
    let rounds = if cfg!(miri) { 2 } else { 50 };
    for round in 0..rounds {
        for (k, width) in [(1, 4), (3, 4), (4, 4), (16, 4), (16, 2), (7, 1)] {
            let hold = if round % 2 == 0 {
                Duration::ZERO
            } else {
                Duration::from_micros(50)
            };
            check(&pool, k, width, hold);
        }
    }
}

#[test]
fn morsels_see_their_hand() {
    let pool = Pool::builder().width(3).build().unwrap();
    let seen: Mutex<HashMap<ThreadId, usize>> = Mutex::new(HashMap::new());
    let n = if cfg!(miri) { 2_000 } else { 100_000 };
    pool.for_each_morsel_hand(n, 100, |hand, r| {
        assert!(!r.is_empty() && hand.index < hand.width && hand.width == 3);
        let t = std::thread::current().id();
        let mut s = seen.lock().unwrap();
        assert_eq!(*s.entry(t).or_insert(hand.index), hand.index);
    });
    let seen = seen.into_inner().unwrap();
    if let Some(&i) = seen.get(&std::thread::current().id()) {
        assert_eq!(i, 0);
    }
}

#[test]
fn nested_batches_number_their_own_hands() {
    let pool = Pool::builder().width(3).build().unwrap();
    pool.run_hand(3, |outer, _| {
        pool.run_hand(2, |inner, _| {
            // The inner batch has its own hands: whoever submitted it is
            // its hand 0, whatever its hand in the outer batch.
            assert!(inner.index < inner.width && inner.width <= 2);
            assert!(outer.index < 3);
        });
    });
}
