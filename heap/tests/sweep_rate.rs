//! Frees that trickle into heaps of exited threads are swept in batches: a
//! free into a heap nobody owns makes the sweep of abandoned heaps due at
//! once, but sweeps run at most once per 1/256 of `decay_ms`, so a thread
//! freeing such blocks steadily (larson's new threads free what the exited
//! ones allocated) does not wake the decay thread, and send every heap's
//! slow path sweeping, after each sweep. What was freed is still drained.
//! One test in its own process (global options and counters); driven by
//! the clock, so not under Miri.
#![cfg(not(any(keel_loom, miri)))]

mod common;
use common::SendPtr;
use keel_heap::{Options, configure, raw, stats};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

#[test]
fn frees_into_abandoned_heaps_are_swept_at_a_bounded_rate() {
    // A 10 ms floor between sweeps.
    let decay_ms = 2560;
    let gap = Duration::from_millis(decay_ms / 256);
    configure(Options {
        decay_ms,
        ..Options::default()
    });
    // This thread's heap exists before the figures are taken.
    // SAFETY: allocated and freed once.
    unsafe { raw::free(raw::alloc(16, 8)) };
    let before = stats();
    // Four threads allocate and exit: their heaps are abandoned, and stay
    // so (no thread starts after them to adopt one).
    // All four run at once, so each has a heap of its own.
    let gate = Arc::new(Barrier::new(4));
    let hs: Vec<_> = (0..4)
        .map(|_| {
            let gate = gate.clone();
            std::thread::spawn(move || {
                let ps: Vec<SendPtr> = (0..20_000)
                    .map(|_| {
                        let p = raw::alloc(64, 8);
                        assert!(!p.is_null());
                        SendPtr(p)
                    })
                    .collect();
                gate.wait();
                ps
            })
        })
        .collect();
    let blocks: Vec<SendPtr> = hs.into_iter().flat_map(|h| h.join().unwrap()).collect();
    assert!(stats().abandoned >= 4);
    let sweeps0 = stats().sweeps;
    // Free them a few at a time over at least 300 ms: each batch lands
    // after the sweep the one before it made due has run.
    let t0 = Instant::now();
    let per_batch = blocks.len() / 600;
    for batch in blocks.chunks(per_batch) {
        for p in batch {
            // SAFETY: a live block of an exited thread, freed once.
            unsafe { raw::free(p.0) };
        }
        std::thread::sleep(Duration::from_micros(500));
    }
    let took = t0.elapsed();
    let sweeps = stats().sweeps - sweeps0;
    // One sweep per gap, a second where two sweepers raced for one.
    let most = 2 * (took.as_millis() / gap.as_millis()) as u64 + 4;
    println!("{sweeps} sweeps in {took:?} (at most {most})");
    assert!(
        sweeps <= most,
        "{sweeps} sweeps in {took:?}: more than one per {gap:?}"
    );
    // And what was freed is drained (counted free) all the same, and the
    // sweeps did run (the decay thread's, however starved the machine).
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let s = stats();
        if s.in_use <= before.in_use + 4096 && s.sweeps > sweeps0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "20 s after the frees: {} bytes in use (before: {}), {} sweeps since",
            s.in_use,
            before.in_use,
            s.sweeps - sweeps0
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
