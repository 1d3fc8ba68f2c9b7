//! loom models of keel-pool's public behaviour: dropping the pool.
#![cfg(keel_loom)]

use keel_pool::Pool;
use loom::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Drop right after a batch: the worker may still be releasing the latch,
/// spinning or parking; drop wakes and joins it.
#[test]
fn loom_pool_drop_after_batch() {
    loom::model(|| {
        let p = Pool::builder()
            .width(2)
            .spin_window(Duration::from_micros(1))
            .build()
            .unwrap();
        let n = AtomicUsize::new(0);
        p.run(2, |_| {
            n.fetch_add(1, Ordering::Relaxed);
        });
        drop(p);
        assert_eq!(n.load(Ordering::Relaxed), 2);
    });
}

/// Drop of a pool with two workers that never received work.
#[test]
fn loom_pool_drop_idle_two_workers() {
    loom::model(|| {
        drop(
            Pool::builder()
                .width(3)
                .spin_window(Duration::ZERO)
                .build()
                .unwrap(),
        );
    });
}
