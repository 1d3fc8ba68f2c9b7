//! loom models of keel-pool's lock-free claiming: tickets claimed from the
//! offer table while the submitter withdraws, jobs that cancel the batch or
//! panic, and the cap on idle spinners against a concurrent submit and
//! park.
#![cfg(keel_loom)]

use keel_pool::{Cancel, Cancelled, MAX_SPINNERS, Pool};
use loom::sync::atomic::{AtomicUsize, Ordering};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

/// Three jobs on two workers that claim their tickets without the lock:
/// job 0 panics, job 1 cancels the batch. Whatever the interleaving, no job
/// runs twice, a panic resumes in the submitter after every hand is done
/// (and only if job 0 ran), and a job that did not run was skipped because
/// of the cancel (job 0 too: the contract lets a hand that claimed index 0
/// skip it once it sees job 1's cancel; loom reaches that case only through
/// the loom-only yield after the first claim in `BatchCore::work`).
#[test]
fn loom_pool_claims_with_cancel_and_panic() {
    std::panic::set_hook(Box::new(|_| {}));
    loom::model(|| {
        let p = Pool::builder()
            .width(3)
            .spin_window(Duration::ZERO)
            .build()
            .unwrap();
        let cancel = Cancel::new();
        let ran: [AtomicUsize; 3] = Default::default();
        let r = catch_unwind(AssertUnwindSafe(|| {
            p.batch().cancel(&cancel).run(3, |i| {
                ran[i].fetch_add(1, Ordering::Relaxed);
                match i {
                    0 => panic!("job 0"),
                    1 => cancel.cancel(),
                    _ => {}
                }
            })
        }));
        let counts: Vec<usize> = ran.iter().map(|r| r.load(Ordering::Relaxed)).collect();
        assert!(counts.iter().all(|&n| n <= 1), "{counts:?}");
        match r {
            // A panic resumed: job 0 ran, and the batch waited for it.
            Err(_) => assert_eq!(counts[0], 1, "a panic but job 0 never ran"),
            // No panic: job 0 never started, which only job 1's cancel,
            // seen by the hand that claimed index 0, can explain.
            Ok(res) => {
                assert_eq!(counts[0], 0, "job 0 ran but its panic was lost");
                assert_eq!(res, Err(Cancelled), "job 0 skipped without a cancel");
            }
        }
        if counts.contains(&0) {
            assert!(cancel.is_cancelled(), "a job was skipped without a cancel");
        }
    });
}

/// Two workers starting up, at most MAX_SPINNERS (1 here) spinning: one
/// may spin while the other parks at once, and either may be deciding
/// between the two just as the batch arrives (the submitter counts the
/// spinner and wakes one parked worker fewer). Every job runs once and
/// `run` returns; the spinner count never passed the cap.
#[test]
fn loom_pool_bounded_spinners_vs_submit_and_park() {
    loom::model(|| {
        let p = Pool::builder()
            .width(3)
            .spin_window(Duration::from_micros(1))
            .build()
            .unwrap();
        let n = AtomicUsize::new(0);
        p.run(2, |_| {
            n.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(n.load(Ordering::Relaxed), 2);
        assert!(p.stats().spinners_high_water <= MAX_SPINNERS as u64);
    });
}
