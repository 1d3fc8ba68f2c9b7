//! Every job of a batch runs exactly once, for every batch size and width.
#![cfg(not(keel_loom))]

use keel_pool::Pool;
use std::sync::atomic::{AtomicUsize, Ordering};

fn check(pool: &Pool, k: usize) {
    let hits: Vec<AtomicUsize> = (0..k).map(|_| AtomicUsize::new(0)).collect();
    pool.run(k, |i| {
        hits[i].fetch_add(1, Ordering::Relaxed);
    });
    for (i, h) in hits.iter().enumerate() {
        assert_eq!(
            h.load(Ordering::Relaxed),
            1,
            "job {i} of {k} on width {}",
            pool.width()
        );
    }
}

#[test]
fn every_size_1_to_64() {
    // Miri interprets every step; it checks fewer sizes on two widths.
    let (widths, max_k): (&[usize], usize) = if cfg!(miri) {
        (&[1, 3], 12)
    } else {
        (&[1, 2, 3, 5], 64)
    };
    for &width in widths {
        let pool = Pool::builder().width(width).build().unwrap();
        for k in 1..=max_k {
            check(&pool, k);
        }
    }
}

#[test]
fn ten_thousand_tiny_batches() {
    let n = if cfg!(miri) { 50 } else { 10_000 };
    let pool = Pool::builder().width(3).build().unwrap();
    let total = AtomicUsize::new(0);
    for b in 0..n {
        let k = 1 + b % 4;
        let hits: [AtomicUsize; 4] = Default::default();
        pool.run(k, |i| {
            hits[i].fetch_add(1, Ordering::Relaxed);
            total.fetch_add(1, Ordering::Relaxed);
        });
        for (i, h) in hits.iter().enumerate() {
            assert_eq!(
                h.load(Ordering::Relaxed),
                usize::from(i < k),
                "batch {b} job {i}"
            );
        }
    }
    let expect: usize = (0..n).map(|b| 1 + b % 4).sum();
    assert_eq!(total.load(Ordering::Relaxed), expect);
    let s = pool.stats();
    assert_eq!(s.batches, n as u64);
    assert_eq!(s.jobs, expect as u64);
}

#[test]
fn zero_jobs_is_a_no_op() {
    let pool = Pool::builder().width(2).build().unwrap();
    pool.run(0, |_| panic!("no job should run"));
    assert_eq!(pool.stats().batches, 0);
}

#[test]
fn width_cap_limits_hands() {
    let pool = Pool::builder().width(4).build().unwrap();
    let threads = std::sync::Mutex::new(std::collections::HashSet::new());
    let running = AtomicUsize::new(0);
    let high = AtomicUsize::new(0);
    pool.run_with(2, 64, |_| {
        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
        high.fetch_max(now, Ordering::SeqCst);
        threads.lock().unwrap().insert(std::thread::current().id());
        std::thread::sleep(std::time::Duration::from_micros(50));
        running.fetch_sub(1, Ordering::SeqCst);
    });
    assert!(high.load(Ordering::SeqCst) <= 2);
    assert!(threads.lock().unwrap().len() <= 2);
}
