//! Batches submitted from inside jobs run without deadlock, at every depth.
#![cfg(not(keel_loom))]

use keel_pool::Pool;
use std::sync::atomic::{AtomicUsize, Ordering};

fn nest(pool: &Pool, depth: usize, count: &AtomicUsize) {
    if depth == 0 {
        count.fetch_add(1, Ordering::Relaxed);
        return;
    }
    pool.run(3, |_| nest(pool, depth - 1, count));
}

#[test]
fn nested_batches_complete() {
    for width in [1, 2, 4] {
        let pool = Pool::builder().width(width).build().unwrap();
        let count = AtomicUsize::new(0);
        nest(&pool, 4, &count);
        assert_eq!(count.load(Ordering::Relaxed), 81, "width {width}");
    }
}

#[test]
fn nested_morsels_and_broadcast_from_a_job() {
    let pool = Pool::builder().width(3).build().unwrap();
    let sum = AtomicUsize::new(0);
    pool.run(4, |_| {
        pool.for_each_morsel(100, 7, |r| {
            sum.fetch_add(r.len(), Ordering::Relaxed);
        });
    });
    assert_eq!(sum.load(Ordering::Relaxed), 400);
    // A broadcast from a worker runs the worker's own call inline.
    let calls = AtomicUsize::new(0);
    pool.run(1, |_| {
        pool.broadcast(|_| {
            calls.fetch_add(1, Ordering::SeqCst);
        })
    });
    assert_eq!(calls.load(Ordering::SeqCst), pool.workers());
}

#[test]
fn concurrent_submitters() {
    let pool = Pool::builder().width(3).build().unwrap();
    let total = AtomicUsize::new(0);
    let rounds = if cfg!(miri) { 5 } else { 500 };
    std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| {
                for _ in 0..rounds {
                    pool.run(5, |_| {
                        total.fetch_add(1, Ordering::Relaxed);
                    });
                }
            });
        }
    });
    assert_eq!(total.load(Ordering::Relaxed), 3 * rounds * 5);
}
