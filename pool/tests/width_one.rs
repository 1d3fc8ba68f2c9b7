//! A width-1 pool starts no thread and behaves like any other.
#![cfg(not(keel_loom))]

use keel_pool::{Cancel, Cancelled, Pool};
use std::sync::atomic::{AtomicUsize, Ordering};

#[test]
fn no_threads_same_results() {
    let pool = Pool::builder().width(1).build().unwrap();
    assert_eq!(pool.workers(), 0);
    let me = std::thread::current().id();
    let hits: Vec<AtomicUsize> = (0..64).map(|_| AtomicUsize::new(0)).collect();
    pool.run(64, |i| {
        assert_eq!(std::thread::current().id(), me);
        hits[i].fetch_add(1, Ordering::Relaxed);
    });
    assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
    let sum = AtomicUsize::new(0);
    pool.for_each_morsel(1001, 100, |r| {
        sum.fetch_add(r.sum::<usize>(), Ordering::Relaxed);
    });
    assert_eq!(sum.load(Ordering::Relaxed), 1000 * 1001 / 2);
    let cancel = Cancel::new();
    let r = pool.batch().cancel(&cancel).run(10, |i| {
        if i == 3 {
            cancel.cancel();
        }
    });
    assert_eq!(r, Err(Cancelled));
    let calls = AtomicUsize::new(0);
    pool.broadcast(|_| {
        calls.fetch_add(1, Ordering::Relaxed);
    });
    assert_eq!(calls.load(Ordering::Relaxed), 0, "no workers, no calls");
    assert_eq!(pool.stats().wakes, 0);
    assert_eq!(pool.stats().parks, 0);
}
