//! Idle decay goes by each block's age: a heap that keeps allocating and
//! freeing a medium block from its own cache reuses it long before it could
//! age, so `maybe_collect` must not release it; once it stays free for
//! `decay_ms`, the next check releases it. One test in its own process,
//! since it changes the global options; timing-driven, so not under Miri.
#![cfg(not(any(keel_loom, miri)))]

use keel_heap::{Heap, MEDIUM_MAX, Options, configure};
use std::time::{Duration, Instant};

#[test]
fn medium_churn_is_activity_and_quiet_still_decays() {
    let decay = Duration::from_millis(100);
    configure(Options {
        decay_ms: decay.as_millis() as u64,
        // Only the idle decay releases here.
        purge_every: u32::MAX,
        ..Options::default()
    });
    let h = Heap::new().unwrap();
    let size = MEDIUM_MAX / 4;
    // A live block keeps the region mapped, so no GC can unmap it and make
    // the next allocation a slow path that would mark the heap active.
    let keep = h.alloc(size, 8);
    assert!(!keep.is_null());
    let before = h.stats();
    let start = Instant::now();
    let (mut iters, mut stalls, mut lost) = (0u64, 0u64, 0u64);
    let mut last: *mut u8 = std::ptr::null_mut();
    let mut t = Instant::now();
    while start.elapsed() < 4 * decay {
        let p = h.alloc(size, 8);
        assert!(!p.is_null());
        // SAFETY: a live block of `size` bytes, read, written, then freed once.
        unsafe {
            // The same block back with its bytes gone: its pages were released.
            if p == last && *p.add(size - 1) != 1 {
                // The machine may stall this thread between its free and the
                // check for longer than the decay; such a check may rightly
                // release it.
                if t.elapsed() >= decay {
                    stalls += 1;
                } else {
                    lost += 1;
                }
            }
            p.write_bytes(1, size);
            h.free(p);
        }
        t = Instant::now();
        h.maybe_collect();
        last = p;
        iters += 1;
    }
    let busy = h.stats();
    println!(
        "{iters} iterations over {:?}: {} decay passes, {} bytes released, {lost} reuses lost their pages, {stalls} stalls",
        4 * decay,
        busy.decay_passes - before.decay_passes,
        busy.released - before.released,
    );
    assert_eq!(
        lost, 0,
        "a block reused every iteration had its pages released {lost} times"
    );

    // Free for longer than the decay: the next check releases it.
    std::thread::sleep(decay + decay / 2);
    h.maybe_collect();
    let after = h.stats();
    assert!(
        after.released >= busy.released + (size - keel_heap::PAGE) as u64,
        "a block free for {:?} was not released ({} bytes)",
        decay + decay / 2,
        after.released - busy.released
    );
    // SAFETY: live, freed once.
    unsafe { h.free(keep) };
    h.is_valid().unwrap();
    configure(Options::default());
}
