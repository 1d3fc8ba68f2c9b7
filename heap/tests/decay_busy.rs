//! The idle decay waits for a quiet heap: a heap that keeps allocating and
//! freeing medium blocks from its own cache (no slow path at all) is busy,
//! and `maybe_collect` must not release the blocks it is reusing; once it
//! really is quiet for `decay_ms`, the decay runs. One test in its own
//! process, since it changes the global options; timing-driven, so not
//! under Miri.
#![cfg(not(any(keel_loom, miri)))]

use keel_heap::{Heap, MEDIUM_MAX, Options, configure};
use std::time::{Duration, Instant};

#[test]
fn medium_churn_is_activity_and_quiet_still_decays() {
    let decay = Duration::from_millis(100);
    configure(Options {
        decay_ms: decay.as_millis() as u64,
        // Only the idle decay's full release counts as a release pass here.
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
    let (mut iters, mut stalls) = (0u64, 0u64);
    while start.elapsed() < 4 * decay {
        let t = Instant::now();
        let p = h.alloc(size, 8);
        assert!(!p.is_null());
        // SAFETY: a live block of `size` bytes, written, then freed once.
        unsafe {
            p.write_bytes(1, size);
            h.free(p);
        }
        h.maybe_collect();
        // The machine may stall this thread between its free and the check
        // for longer than the decay; such a check may rightly decay.
        if t.elapsed() >= decay {
            stalls += 1;
        }
        iters += 1;
    }
    let busy = h.stats();
    let passes = busy.release_passes - before.release_passes;
    println!(
        "{iters} iterations over {:?}: {passes} release passes, {} bytes released, {stalls} stalls",
        4 * decay,
        busy.released - before.released
    );
    assert!(
        passes <= stalls,
        "a busy heap ran {passes} idle-decay releases in {iters} iterations"
    );

    // Quiet for longer than the decay: the next check releases.
    std::thread::sleep(decay + decay / 2);
    h.maybe_collect();
    assert_eq!(
        h.stats().release_passes,
        busy.release_passes + 1,
        "a quiet heap did not decay"
    );
    // SAFETY: live, freed once.
    unsafe { h.free(keep) };
    h.is_valid().unwrap();
    configure(Options::default());
}
