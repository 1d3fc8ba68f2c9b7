//! Cancellation: jobs and morsel loops stop claiming once the flag is set.
#![cfg(not(keel_loom))]

use keel_pool::{Cancel, Cancelled, Pool};
use std::sync::atomic::{AtomicUsize, Ordering};

#[test]
fn cancel_stops_new_jobs() {
    let pool = Pool::builder().width(3).build().unwrap();
    let cancel = Cancel::new();
    let ran = AtomicUsize::new(0);
    let k = if cfg!(miri) { 300 } else { 10_000 };
    let r = pool.batch().cancel(&cancel).run(k, |i| {
        ran.fetch_add(1, Ordering::SeqCst);
        if i == 100 {
            cancel.cancel();
        }
    });
    assert_eq!(r, Err(Cancelled));
    // Jobs are claimed in index order, and a claimed job is skipped if the
    // flag is set by the time its hand checks it: each of the other two
    // hands may hold one job below 100, claimed before the cancel and
    // checked after it. So at least 99 jobs ran, and not all of them.
    let ran = ran.load(Ordering::SeqCst);
    assert!((99..k).contains(&ran), "ran {ran}");
    // Not cancelled: Ok, every job runs.
    cancel.reset();
    let n = AtomicUsize::new(0);
    let r = pool.batch().cancel(&cancel).run(50, |_| {
        n.fetch_add(1, Ordering::SeqCst);
    });
    assert_eq!(r, Ok(()));
    assert_eq!(n.load(Ordering::SeqCst), 50);
}

#[test]
fn cancel_stops_morsels() {
    let pool = Pool::builder().width(2).build().unwrap();
    let cancel = Cancel::new();
    let seen = AtomicUsize::new(0);
    let r = pool
        .batch()
        .cancel(&cancel)
        .for_each_morsel(1 << 16, 64, |r| {
            seen.fetch_add(r.len(), Ordering::SeqCst);
            if r.start >= 64 * 10 {
                cancel.cancel();
            }
        });
    assert_eq!(r, Err(Cancelled));
    assert!(seen.load(Ordering::SeqCst) < 1 << 16);
    // Set before the batch: nothing runs.
    let r = pool
        .batch()
        .cancel(&cancel)
        .for_each_morsel(100, 10, |_| panic!("ran"));
    assert_eq!(r, Err(Cancelled));
    // Cancelled after the last morsel was claimed: the work is complete.
    cancel.reset();
    let r = pool
        .batch()
        .cancel(&cancel)
        .for_each_morsel(100, 100, |_| cancel.cancel());
    assert_eq!(r, Ok(()));
}
