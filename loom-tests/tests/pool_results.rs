//! loom models of keel-pool's results API: per-hand accumulators of a fold,
//! the fixed-order reduction tree, the first-error stop of a fallible loop,
//! and `join`'s hand-off of closures and results.
#![cfg(keel_loom)]

use keel_pool::Pool;
use loom::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

fn pool() -> Pool {
    Pool::builder()
        .width(2)
        .spin_window(Duration::ZERO)
        .build()
        .unwrap()
}

/// Three morsels on two hands: each hand's accumulator is its own (loom
/// checks every access to the slots), and together they hold each morsel
/// once.
#[test]
fn loom_pool_fold_per_hand() {
    loom::model(|| {
        let p = pool();
        let accs = p.fold_morsels(3, 1, |h| (h.index, 0usize), |a, r| a.1 += 1 << r.start);
        assert!(accs.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(accs.iter().map(|a| a.1).sum::<usize>(), 0b111);
    });
}

/// Three morsels reduced by two hands: the tree hands each value over once
/// and combines in morsel order.
#[test]
fn loom_pool_reduce_in_order() {
    loom::model(|| {
        let p = pool();
        let s = p.reduce_morsels(3, 1, |r| r.start.to_string(), |a, b| a + &b);
        assert_eq!(s.as_deref(), Some("012"));
    });
}

/// Morsel 0 fails: whichever hand runs it, the error comes back and no
/// morsel runs twice.
#[test]
fn loom_pool_try_stops_at_the_error() {
    loom::model(|| {
        let p = pool();
        let ran: [AtomicUsize; 3] = Default::default();
        let r = p.try_for_each_morsel(3, 1, |_, r| {
            ran[r.start].fetch_add(1, Ordering::Relaxed);
            if r.start == 0 { Err(r.start) } else { Ok(()) }
        });
        assert_eq!(r, Err(0));
        assert!(ran.iter().all(|n| n.load(Ordering::Relaxed) <= 1));
    });
}

/// `join` hands one closure to another hand and its result back.
#[test]
fn loom_pool_join() {
    loom::model(|| {
        let p = pool();
        let v = [1u32, 2, 3];
        let (a, b) = p.join(|| v[0] + v[1], || v[2] * 2);
        assert_eq!((a, b), (3, 6));
    });
}
