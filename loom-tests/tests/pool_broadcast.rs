//! loom models of keel-pool's broadcasts issued from inside jobs, where the
//! broadcaster's latch waits on workers that are themselves waiting.
#![cfg(keel_loom)]

use keel_pool::Pool;
use loom::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Both workers may hold a job of the same batch and broadcast from it at
/// once; each broadcast needs the other worker, so a worker waiting on its
/// own broadcast must take the call addressed to it. No interleaving may
/// deadlock, and each broadcast reaches both workers exactly once.
#[test]
fn loom_pool_broadcasts_from_two_jobs() {
    loom::model(|| {
        let p = Pool::builder()
            .width(3)
            .spin_window(Duration::ZERO)
            .build()
            .unwrap();
        let calls = AtomicUsize::new(0);
        let broadcasts = AtomicUsize::new(0);
        p.run(3, |_| {
            if p.current_worker().is_some() {
                broadcasts.fetch_add(1, Ordering::Relaxed);
                p.broadcast(|_| {
                    calls.fetch_add(1, Ordering::Relaxed);
                });
            }
        });
        assert_eq!(
            calls.load(Ordering::Relaxed),
            2 * broadcasts.load(Ordering::Relaxed)
        );
    });
}
