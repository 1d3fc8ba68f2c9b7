//! A submit wakes exactly as many parked workers as the batch can keep busy:
//! never one per job beyond that, never every worker for a small batch.
#![cfg(not(keel_loom))]

use keel_pool::Pool;
use std::time::{Duration, Instant};

/// Waits until all `n` workers have parked (spin window 0: right after
/// start or after their last ticket).
fn wait_parked(pool: &Pool, before: u64, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while pool.stats().parks < before + n {
        assert!(
            Instant::now() < deadline,
            "workers never parked: {:?}",
            pool.stats()
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn wakes_match_the_batch() {
    let pool = Pool::builder()
        .width(5)
        .spin_window(Duration::ZERO)
        .build()
        .unwrap();
    wait_parked(&pool, 0, 4);
    for k in [2usize, 3, 5, 9] {
        let s0 = pool.stats();
        // Jobs that outlast a wakeup, so woken workers do take tickets.
        pool.run(k, |_| std::thread::sleep(Duration::from_millis(2)));
        let s1 = pool.stats();
        let want = (k.min(5) - 1) as u64;
        assert_eq!(s1.wakes - s0.wakes, want, "k {k}: {s1:?}");
        wait_parked(&pool, s0.parks, want);
    }
}
