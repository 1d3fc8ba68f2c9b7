//! A batch of k on a pool with at least k hands has all k jobs running at
//! once: each job counts itself in, waits (with a timeout) for the rest, and
//! counts itself out. A pool that leaves a job queued while another hand runs
//! two never reaches k.
#![cfg(not(keel_loom))]

use keel_pool::Pool;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

fn high_water(pool: &Pool, k: usize) -> usize {
    let running = AtomicUsize::new(0);
    let high = AtomicUsize::new(0);
    pool.run(k, |_| {
        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
        high.fetch_max(now, Ordering::SeqCst);
        let deadline = Instant::now() + Duration::from_secs(5);
        while high.load(Ordering::SeqCst) < k && Instant::now() < deadline {
            std::thread::yield_now();
        }
        running.fetch_sub(1, Ordering::SeqCst);
    });
    high.load(Ordering::SeqCst)
}

#[test]
fn every_job_gets_its_own_hand() {
    let width = 6;
    let pool = Pool::builder().width(width).build().unwrap();
    for round in 0..3 {
        for k in 1..=width {
            assert_eq!(high_water(&pool, k), k, "k {k} round {round}");
        }
    }
}

#[test]
fn every_job_gets_its_own_hand_from_parked_workers() {
    // Spin 0: every worker is parked when the batch arrives, so this checks
    // that one submit wakes enough of them.
    let pool = Pool::builder()
        .width(4)
        .spin_window(Duration::ZERO)
        .build()
        .unwrap();
    for k in 1..=4 {
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(high_water(&pool, k), k, "k {k}");
    }
    assert!(pool.stats().wakes >= 3, "{:?}", pool.stats());
}
