//! A panic payload whose own `Drop` panics. The pool keeps the first panic of
//! a batch and drops the later ones; that drop runs on a hand, inside the
//! batch, so it must not unwind out of the hand: a worker would die without
//! releasing its latch hand (the submitter then waits forever), and the
//! submitter would leave `run` while workers still hold tickets for the batch
//! on its stack.
#![cfg(not(keel_loom))]

use keel_pool::Pool;
use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind, panic_any};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

/// A panic payload whose drop panics while its fuse lasts.
struct Bomb {
    fuse: Arc<AtomicUsize>,
}

impl Drop for Bomb {
    fn drop(&mut self) {
        let lit = self
            .fuse
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if lit && !std::thread::panicking() {
            panic!("payload drop");
        }
    }
}

fn is_bomb(p: &(dyn Any + Send)) -> bool {
    p.downcast_ref::<Bomb>().is_some()
}

#[test]
fn discarded_payload_that_panics_on_drop_width_one() {
    let pool = Pool::builder().width(1).build().unwrap();
    let fuse = Arc::new(AtomicUsize::new(1));
    let ran = AtomicUsize::new(0);
    let r = catch_unwind(AssertUnwindSafe(|| {
        pool.run(3, |i| {
            ran.fetch_add(1, Ordering::SeqCst);
            if i < 2 {
                panic_any(Bomb { fuse: fuse.clone() });
            }
        })
    }));
    let p = r.expect_err("the batch must panic");
    assert!(
        is_bomb(&*p),
        "the first job's panic resumes, not the drop's"
    );
    assert_eq!(ran.load(Ordering::SeqCst), 3, "every job still ran");
}

#[test]
fn discarded_payload_that_panics_on_drop_on_a_worker() {
    let pool = Arc::new(Pool::builder().width(2).build().unwrap());
    let fuse = Arc::new(AtomicUsize::new(1));
    let (tx, rx) = mpsc::channel();
    let (p, f) = (pool.clone(), fuse.clone());
    // On its own thread, so that a batch that never completes fails the test
    // instead of hanging it.
    std::thread::spawn(move || {
        let worker_in = AtomicBool::new(false);
        let first_out = AtomicBool::new(false);
        let wait = |flag: &AtomicBool| {
            let deadline = Instant::now() + Duration::from_secs(5);
            while !flag.load(Ordering::SeqCst) && Instant::now() < deadline {
                std::thread::yield_now();
            }
        };
        let r = catch_unwind(AssertUnwindSafe(|| {
            p.run(2, |_| {
                if p.current_worker().is_none() {
                    // The submitter's job panics first, once the worker holds
                    // the other job.
                    wait(&worker_in);
                    first_out.store(true, Ordering::SeqCst);
                    panic_any(Bomb { fuse: f.clone() });
                } else {
                    // The worker's panic comes second, so its payload is the
                    // one dropped.
                    worker_in.store(true, Ordering::SeqCst);
                    wait(&first_out);
                    std::thread::sleep(Duration::from_millis(50));
                    panic_any(Bomb { fuse: f.clone() });
                }
            })
        }));
        let bomb = r.as_ref().err().is_some_and(|p| is_bomb(&**p));
        let _ = tx.send(bomb);
    });
    let got = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the batch never completed: a hand unwound without releasing the latch");
    assert!(got, "the first job's panic resumes in the caller");
    // The pool still runs batches on both hands.
    let n = AtomicUsize::new(0);
    pool.run(8, |_| {
        n.fetch_add(1, Ordering::SeqCst);
    });
    assert_eq!(n.load(Ordering::SeqCst), 8);
}

#[test]
fn discarded_payload_that_panics_on_drop_on_the_submitter() {
    // The worker's job panics first and then the worker takes a slow job;
    // the submitter's job panics second, so its payload is the one dropped.
    // Had that drop unwound out of `run`, the batch would have left the
    // submitter's stack while the worker still used it (Miri reports it).
    let pool = Pool::builder().width(2).build().unwrap();
    let fuse = Arc::new(AtomicUsize::new(1));
    let worker_in = AtomicBool::new(false);
    let worker_out = AtomicBool::new(false);
    let ran = AtomicUsize::new(0);
    let wait = |flag: &AtomicBool| {
        let deadline = Instant::now() + Duration::from_secs(5);
        while !flag.load(Ordering::SeqCst) && Instant::now() < deadline {
            std::thread::yield_now();
        }
    };
    let r = catch_unwind(AssertUnwindSafe(|| {
        pool.run(3, |_| {
            ran.fetch_add(1, Ordering::SeqCst);
            if pool.current_worker().is_some() {
                if !worker_in.swap(true, Ordering::SeqCst) {
                    worker_out.store(true, Ordering::SeqCst);
                    panic_any(Bomb { fuse: fuse.clone() });
                }
                std::thread::sleep(Duration::from_millis(100));
            } else {
                wait(&worker_out);
                std::thread::sleep(Duration::from_millis(20));
                panic_any(Bomb { fuse: fuse.clone() });
            }
        })
    }));
    let p = r.expect_err("the batch must panic");
    assert!(is_bomb(&*p), "a job's panic resumes, not the drop's");
    assert_eq!(ran.load(Ordering::SeqCst), 3, "every job still ran");
}
