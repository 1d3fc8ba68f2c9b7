//! Broadcast runs once on every worker, with its own index.
#![cfg(not(keel_loom))]

use keel_pool::Pool;
use std::collections::HashMap;
use std::sync::Mutex;

#[test]
fn once_per_worker_on_that_worker() {
    let pool = Pool::builder().width(4).thread_name("bc").build().unwrap();
    for _ in 0..20 {
        let seen = Mutex::new(HashMap::new());
        pool.broadcast(|w| {
            let name = std::thread::current().name().map(str::to_string);
            assert_eq!(pool.current_worker(), Some(w));
            assert!(
                seen.lock().unwrap().insert(w, name).is_none(),
                "worker {w} twice"
            );
        });
        let seen = seen.into_inner().unwrap();
        assert_eq!(seen.len(), 3);
        for (w, name) in seen {
            assert_eq!(name, Some(format!("bc-{w}")));
        }
    }
    assert_eq!(pool.current_worker(), None);
}

/// Two workers broadcast from inside their jobs at the same time. Each
/// broadcast needs the other worker to take its call, so a worker waiting
/// for its own broadcast must still take the calls addressed to it.
#[test]
fn concurrent_broadcasts_from_jobs() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, mpsc};
    use std::time::{Duration, Instant};

    let pool = Arc::new(Pool::builder().width(3).build().unwrap());
    let (tx, rx) = mpsc::channel();
    let p = pool.clone();
    // On its own thread, so that a deadlock fails the test instead of
    // hanging it.
    std::thread::spawn(move || {
        let rounds = if cfg!(miri) { 2 } else { 20 };
        let mut calls_seen = Vec::new();
        for _ in 0..rounds {
            let running = AtomicUsize::new(0);
            let calls = AtomicUsize::new(0);
            p.run(3, |_| {
                // Every hand holds a job before anyone broadcasts, so both
                // workers broadcast while the other one is busy.
                running.fetch_add(1, Ordering::SeqCst);
                let deadline = Instant::now() + Duration::from_secs(5);
                while running.load(Ordering::SeqCst) < 3 && Instant::now() < deadline {
                    std::thread::yield_now();
                }
                p.broadcast(|_| {
                    calls.fetch_add(1, Ordering::SeqCst);
                });
            });
            calls_seen.push(calls.load(Ordering::SeqCst));
        }
        let _ = tx.send(calls_seen);
    });
    let calls = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("broadcasts from two jobs deadlocked");
    // Three broadcasts (one per job), each reaching both workers.
    assert!(calls.iter().all(|&c| c == 6), "{calls:?}");
}

/// A worker waits on a nested batch whose other hand, another worker,
/// broadcasts from its job: the waiting worker must take that call, or
/// neither batch ever completes.
#[test]
fn broadcast_from_a_hand_of_a_nested_batch() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, mpsc};
    use std::time::{Duration, Instant};

    let pool = Arc::new(Pool::builder().width(3).build().unwrap());
    let (tx, rx) = mpsc::channel();
    let p = pool.clone();
    std::thread::spawn(move || {
        let rounds = if cfg!(miri) { 2 } else { 20 };
        let mut seen = Vec::new();
        for _ in 0..rounds {
            let calls = AtomicUsize::new(0);
            let outer_in = AtomicUsize::new(0);
            p.run(2, |_| {
                // Both hands hold an outer job, so one of them is a worker.
                outer_in.fetch_add(1, Ordering::SeqCst);
                let deadline = Instant::now() + Duration::from_secs(5);
                while outer_in.load(Ordering::SeqCst) < 2 && Instant::now() < deadline {
                    std::thread::yield_now();
                }
                let Some(me) = p.current_worker() else {
                    return;
                };
                let inner_in = AtomicUsize::new(0);
                p.run(2, |_| {
                    inner_in.fetch_add(1, Ordering::SeqCst);
                    if p.current_worker() == Some(me) {
                        // Hold on until the other worker has the other job,
                        // then come back to wait for it.
                        let deadline = Instant::now() + Duration::from_secs(5);
                        while inner_in.load(Ordering::SeqCst) < 2 && Instant::now() < deadline {
                            std::thread::yield_now();
                        }
                    } else {
                        p.broadcast(|_| {
                            calls.fetch_add(1, Ordering::SeqCst);
                        });
                    }
                });
            });
            seen.push(calls.load(Ordering::SeqCst));
        }
        let _ = tx.send(seen);
    });
    let seen = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("a broadcast to a worker waiting on a nested batch deadlocked");
    // Each round's broadcast (when the other worker got the inner job)
    // reached both workers.
    assert!(seen.iter().all(|&c| c == 0 || c == 2), "{seen:?}");
    assert!(seen.contains(&2), "no round broadcast: {seen:?}");
}

/// A call broadcast from outside the pool never runs in the middle of a job:
/// a worker waiting inside a job for a nested batch leaves it queued until
/// the job ends (only calls broadcast from jobs are served there).
#[test]
fn outside_broadcast_waits_for_the_job() {
    use std::cell::Cell;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};

    thread_local!(static IN_JOB: Cell<bool> = const { Cell::new(false) });
    let pool = Arc::new(Pool::builder().width(3).build().unwrap());
    let rounds = if cfg!(miri) { 1 } else { 5 };
    for _ in 0..rounds {
        let nested = Arc::new(AtomicBool::new(false));
        let (p, n) = (pool.clone(), nested.clone());
        let outer = std::thread::spawn(move || {
            p.broadcast(|w| {
                if w != 0 {
                    return;
                }
                IN_JOB.with(|j| j.set(true));
                // Worker 0 waits inside its job on a batch whose other job
                // keeps the other worker busy, while the broadcast below is
                // queued.
                p.run(2, |_| {
                    if p.current_worker() == Some(0) {
                        // Leave the other job to the other worker.
                        let deadline = Instant::now() + Duration::from_secs(5);
                        while !n.load(Ordering::SeqCst) && Instant::now() < deadline {
                            std::thread::yield_now();
                        }
                    } else {
                        n.store(true, Ordering::SeqCst);
                        std::thread::sleep(Duration::from_millis(if cfg!(miri) { 5 } else { 50 }));
                    }
                });
                IN_JOB.with(|j| j.set(false));
            });
        });
        let deadline = Instant::now() + Duration::from_secs(5);
        while !nested.load(Ordering::SeqCst) && Instant::now() < deadline {
            std::thread::yield_now();
        }
        assert!(nested.load(Ordering::SeqCst), "the nested batch never ran");
        // Runs on every worker; worker 0 must not be inside its job.
        pool.broadcast(|w| {
            assert!(!IN_JOB.with(Cell::get), "worker {w} ran it mid-job");
        });
        outer.join().unwrap();
    }
}
