//! Dropping the pool wakes and joins every worker: parked, spinning, or
//! still finishing the tail of a batch.
#![cfg(not(keel_loom))]

use keel_pool::Pool;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

#[test]
fn drop_parked_spinning_and_right_after_work() {
    let rounds = if cfg!(miri) { 3 } else { 200 };
    for i in 0..rounds {
        let spin = if i % 2 == 0 {
            Duration::ZERO
        } else {
            Duration::from_millis(5)
        };
        let pool = Pool::builder().width(3).spin_window(spin).build().unwrap();
        let n = AtomicUsize::new(0);
        pool.run(6, |_| {
            n.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(n.load(Ordering::Relaxed), 6);
        drop(pool); // workers are spinning, parking, or just released
    }
}

#[test]
fn drop_while_other_threads_hold_work_in_flight() {
    // The pool is shared; the last owner drops it while another thread's
    // batch has only just returned and workers are still winding down.
    let pool = Arc::new(Pool::builder().width(3).build().unwrap());
    let total = Arc::new(AtomicUsize::new(0));
    let hs: Vec<_> = (0..2)
        .map(|_| {
            let (p, t) = (pool.clone(), total.clone());
            std::thread::spawn(move || {
                for _ in 0..50 {
                    p.run(4, |_| {
                        std::thread::sleep(Duration::from_micros(20));
                        t.fetch_add(1, Ordering::Relaxed);
                    });
                }
            })
        })
        .collect();
    drop(pool);
    for h in hs {
        h.join().unwrap();
    }
    assert_eq!(total.load(Ordering::Relaxed), 400);
}

#[test]
fn last_owner_released_inside_a_job() {
    // A job releases one owner while the batch runs; the submitter then
    // drops the last one at once, while the worker that ran that job may
    // still be finishing its hand. (A pool cannot be dropped *during* its
    // own batch: every batch borrows it.)
    for _ in 0..if cfg!(miri) { 2 } else { 50 } {
        let pool = Arc::new(Pool::builder().width(2).build().unwrap());
        let slot = std::sync::Mutex::new(Some(pool.clone()));
        pool.run(2, |_| {
            let _ = slot.lock().unwrap().take();
        });
        assert_eq!(Arc::strong_count(&pool), 1);
        drop(pool);
    }
}

#[test]
fn idle_pool_parks() {
    let pool = Pool::builder()
        .width(3)
        .spin_window(Duration::from_micros(100))
        .build()
        .unwrap();
    pool.run(3, |_| {});
    // Poll rather than sleep a fixed time: on a loaded machine (or under
    // Miri's slow clock) a worker may not get the CPU to finish its 100 us
    // window for a while. The bound is generous; a worker that never parks
    // (spinning forever) still fails it.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut s = pool.stats();
    while s.parks < 2 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
        s = pool.stats();
    }
    assert!(s.parks >= 2, "both workers parked after the window: {s:?}");
}
