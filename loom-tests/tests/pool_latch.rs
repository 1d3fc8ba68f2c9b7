//! loom models of keel-pool's public behaviour: the completion latch seen
//! from the submitter (results visible on return, nested batches, panics).
#![cfg(keel_loom)]

use keel_pool::Pool;
use loom::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Plain (non-atomic-RMW) writes by the worker's job are visible to the
/// submitter once `run` returns: the latch publishes them.
#[test]
fn loom_pool_latch_publishes_results() {
    loom::model(|| {
        let p = Pool::builder()
            .width(2)
            .spin_window(Duration::from_micros(1))
            .build()
            .unwrap();
        let out = [AtomicUsize::new(0), AtomicUsize::new(0)];
        p.run(2, |i| out[i].store(i + 10, Ordering::Relaxed));
        assert_eq!(out[0].load(Ordering::Relaxed), 10);
        assert_eq!(out[1].load(Ordering::Relaxed), 11);
    });
}

/// A job submits a nested batch: no deadlock whichever hand runs what.
#[test]
fn loom_pool_nested_batch() {
    loom::model(|| {
        let p = Pool::builder()
            .width(2)
            .spin_window(Duration::ZERO)
            .build()
            .unwrap();
        let n = AtomicUsize::new(0);
        p.run(2, |_| {
            p.run(2, |_| {
                n.fetch_add(1, Ordering::Relaxed);
            })
        });
        assert_eq!(n.load(Ordering::Relaxed), 4);
    });
}
