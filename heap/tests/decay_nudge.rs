//! A heap that allocated fast and then allocates slowly from its fast path
//! gets back what it freed within `decay_ms` and a little more: the count
//! between checks grew to thousands of allocations while it ran fast, so
//! its own count would reach the next check only tens of seconds later;
//! the decay thread's nudge (`nudge.rs`) makes its next allocation check.
//! One test in its own process, since it changes the global options;
//! timing-driven and Linux-only (the decay thread), so not under Miri.
#![cfg(all(target_os = "linux", not(any(keel_loom, miri))))]

use keel_heap::{Heap, Options, configure};
use std::time::{Duration, Instant};

#[test]
fn a_slowly_allocating_heap_gets_its_freed_memory_back() {
    let decay = Duration::from_millis(200);
    configure(Options {
        decay_ms: decay.as_millis() as u64,
        // Only the idle decay releases here.
        purge_every: u32::MAX,
        ..Options::default()
    });
    let h = Heap::new().unwrap();
    // Fast: the count between checks grows to its largest.
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(300) {
        for _ in 0..1000 {
            let p = h.alloc(64, 8);
            assert!(!p.is_null());
            // SAFETY: live, freed once.
            unsafe { h.free(p) };
        }
    }
    // 48 MiB of 1 KiB blocks, touched, then freed.
    let total = 48 << 20;
    let blocks: Vec<*mut u8> = (0..total / 1024)
        .map(|_| {
            let p = h.alloc(1024, 8);
            assert!(!p.is_null());
            // SAFETY: a live block of 1024 bytes.
            unsafe { p.write_bytes(1, 1024) };
            p
        })
        .collect();
    let before = h.stats().released;
    for &p in &blocks {
        // SAFETY: live, freed once.
        unsafe { h.free(p) };
    }
    let freed = Instant::now();
    // Slow: one small block every 10 ms, from the fast path (a class that
    // is not 1 KiB, so nothing reuses what was freed).
    let mut keep = Vec::new();
    // Generous for a loaded machine; without the nudge it is about 40 s.
    let limit = decay + Duration::from_secs(5);
    let mut got = 0u64;
    while freed.elapsed() < limit {
        let p = h.alloc(64, 8);
        assert!(!p.is_null());
        keep.push(p);
        got = h.stats().released - before;
        if got >= (total / 2) as u64 {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let took = freed.elapsed();
    println!(
        "{} of {} MiB released {took:?} after the free ({} slow allocations, decay {decay:?})",
        got >> 20,
        total >> 20,
        keep.len()
    );
    assert!(
        got >= (total / 2) as u64,
        "only {} of {} MiB freed came back within {limit:?}",
        got >> 20,
        total >> 20
    );
    for p in keep {
        // SAFETY: live, freed once.
        unsafe { h.free(p) };
    }
    h.is_valid().unwrap();
    configure(Options::default());
}
