//! A job that blocks until all the others have finished still completes:
//! the others must not depend on the blocked hand.
#![cfg(not(keel_loom))]

use keel_pool::Pool;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

#[test]
fn one_job_waits_for_all_others() {
    for width in [2, 3] {
        let pool = Pool::builder().width(width).build().unwrap();
        let ks: &[usize] = if cfg!(miri) { &[2, 5] } else { &[2, 5, 40] };
        for &k in ks {
            for blocker in [0, k - 1] {
                let done = AtomicUsize::new(0);
                let timed_out = AtomicUsize::new(0);
                pool.run(k, |i| {
                    if i == blocker {
                        let deadline = Instant::now() + Duration::from_secs(10);
                        while done.load(Ordering::SeqCst) < k - 1 {
                            if Instant::now() > deadline {
                                timed_out.fetch_add(1, Ordering::SeqCst);
                                break;
                            }
                            std::thread::yield_now();
                        }
                    } else {
                        done.fetch_add(1, Ordering::SeqCst);
                    }
                });
                assert_eq!(timed_out.load(Ordering::SeqCst), 0, "width {width} k {k}");
                assert_eq!(done.load(Ordering::SeqCst), k - 1);
            }
        }
    }
}
