//! loom models of keel-pool's public behaviour: batch submit and wake.
#![cfg(keel_loom)]

use keel_pool::Pool;
use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

fn pool(width: usize, spin: Duration) -> Pool {
    Pool::builder()
        .width(width)
        .spin_window(spin)
        .build()
        .unwrap()
}

/// A batch of 3 on a width-3 pool whose two workers may be starting,
/// spinning or parked: every job runs exactly once and `run` returns.
#[test]
fn loom_pool_batch_exactly_once_two_workers() {
    loom::model(|| {
        let p = pool(3, Duration::ZERO);
        let hits: [AtomicUsize; 3] = Default::default();
        p.run(3, |i| {
            hits[i].fetch_add(1, Ordering::Relaxed);
        });
        for h in &hits {
            assert_eq!(h.load(Ordering::Relaxed), 1);
        }
    });
}

/// Two batches in a row: the second submit races the worker's return from
/// the first (spin window, then park).
#[test]
fn loom_pool_back_to_back_batches() {
    loom::model(|| {
        let p = pool(2, Duration::from_micros(1));
        let n = AtomicUsize::new(0);
        for _ in 0..2 {
            p.run(2, |_| {
                n.fetch_add(1, Ordering::Relaxed);
            });
        }
        assert_eq!(n.load(Ordering::Relaxed), 4);
    });
}

/// Two threads submit to the same one-worker pool at once: tickets of both
/// batches share the queue; each batch's jobs run once and both return.
#[test]
fn loom_pool_concurrent_submitters() {
    loom::model(|| {
        let p = Arc::new(pool(2, Duration::ZERO));
        let n = Arc::new(AtomicUsize::new(0));
        let (p2, n2) = (p.clone(), n.clone());
        let h = loom::thread::spawn(move || {
            p2.run(2, |_| {
                n2.fetch_add(1, Ordering::Relaxed);
            });
        });
        p.run(2, |_| {
            n.fetch_add(1, Ordering::Relaxed);
        });
        h.join().unwrap();
        assert_eq!(n.load(Ordering::Relaxed), 4);
    });
}
