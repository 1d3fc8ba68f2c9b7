//! A panicking job does not kill its worker or the pool: the batch
//! completes, the first panic resumes in the caller, and the pool is reusable.
#![cfg(not(keel_loom))]

use keel_pool::Pool;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};

fn message(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

#[test]
fn panic_resumes_in_caller_after_batch_completes() {
    let pool = Pool::builder().width(3).build().unwrap();
    for round in 0..if cfg!(miri) { 2 } else { 20 } {
        let ran = AtomicUsize::new(0);
        let r = catch_unwind(AssertUnwindSafe(|| {
            pool.run(16, |i| {
                ran.fetch_add(1, Ordering::SeqCst);
                if i % 5 == 3 {
                    panic!("job {i} failed");
                }
            })
        }));
        let msg = message(r.expect_err("the batch must panic"));
        assert!(
            msg.starts_with("job ") && msg.ends_with(" failed"),
            "round {round}: {msg}"
        );
        assert_eq!(ran.load(Ordering::SeqCst), 16, "all jobs still ran");
        // Reuse: every worker is alive and takes part.
        let hits: Vec<AtomicUsize> = (0..32).map(|_| AtomicUsize::new(0)).collect();
        pool.run(32, |i| {
            hits[i].fetch_add(1, Ordering::Relaxed);
        });
        assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
    }
}

#[test]
fn panic_in_morsel_and_broadcast() {
    let pool = Pool::builder().width(2).build().unwrap();
    let covered = AtomicUsize::new(0);
    let r = catch_unwind(AssertUnwindSafe(|| {
        pool.for_each_morsel(1000, 10, |r| {
            covered.fetch_add(r.len(), Ordering::SeqCst);
            if r.start == 500 {
                panic!("morsel");
            }
        })
    }));
    assert_eq!(message(r.unwrap_err()), "morsel");
    assert_eq!(
        covered.load(Ordering::SeqCst),
        1000,
        "other morsels still ran"
    );
    let r = catch_unwind(AssertUnwindSafe(|| pool.broadcast(|_| panic!("setup"))));
    assert_eq!(message(r.unwrap_err()), "setup");
    let n = AtomicUsize::new(0);
    pool.broadcast(|_| {
        n.fetch_add(1, Ordering::SeqCst);
    });
    assert_eq!(n.load(Ordering::SeqCst), pool.workers());
}

#[test]
fn panic_on_width_one() {
    let pool = Pool::builder().width(1).build().unwrap();
    let ran = AtomicUsize::new(0);
    let r = catch_unwind(AssertUnwindSafe(|| {
        pool.run(4, |i| {
            ran.fetch_add(1, Ordering::SeqCst);
            assert_ne!(i, 0, "first");
        })
    }));
    assert!(message(r.unwrap_err()).contains("first"));
    assert_eq!(ran.load(Ordering::SeqCst), 4);
}
