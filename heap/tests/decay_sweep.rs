//! The idle decay's sweep of heaps that exited threads abandoned releases
//! their memory, and the process-wide pool of direct maps decays by age as
//! well: a map pooled for longer than `decay_ms` loses its pages, one pooled
//! just now keeps them. One test in its own process (global options and
//! pool); timing-driven, so not under Miri.
#![cfg(not(any(keel_loom, miri)))]

use keel_heap::{MEDIUM_MAX, Options, configure, raw, stats};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

#[test]
fn sweep_releases_abandoned_heaps_and_the_pool_by_age() {
    let decay = Duration::from_millis(50);
    configure(Options {
        decay_ms: decay.as_millis() as u64,
        ..Options::default()
    });
    // This thread's heap, clean: nothing for its own idle decay to release,
    // so only the sweep can release anything below.
    let mine = raw::alloc(64, 8);
    assert!(!mine.is_null());
    raw::release_pages();
    // Four threads at once (so four heaps) leave freed medium blocks behind;
    // the first also frees a large block, which goes to the pool for reuse
    // with its bytes intact unless something releases its pages.
    let threads = 4;
    let big_len = 8 * MEDIUM_MAX;
    let gate = Arc::new(Barrier::new(threads));
    let hs: Vec<_> = (0..threads)
        .map(|t| {
            let gate = gate.clone();
            std::thread::spawn(move || {
                let ps: Vec<*mut u8> = (0..8).map(|_| raw::alloc(MEDIUM_MAX / 2, 8)).collect();
                for &p in &ps {
                    assert!(!p.is_null());
                    // SAFETY: a live block of MEDIUM_MAX / 2 bytes, freed once.
                    unsafe {
                        p.write_bytes(1, MEDIUM_MAX / 2);
                        raw::free(p);
                    }
                }
                let mut big = 0;
                if t == 0 {
                    let p = raw::alloc(big_len, 8);
                    assert!(!p.is_null());
                    // SAFETY: live, written, freed once.
                    unsafe {
                        p.write_bytes(7, big_len);
                        raw::free(p);
                    }
                    big = p.addr();
                }
                gate.wait();
                big
            })
        })
        .collect();
    let big: usize = hs.into_iter().map(|h| h.join().unwrap()).sum();
    assert!(stats().abandoned >= threads as u64);
    let pooled = stats().pool_bytes;
    assert!(pooled > 0, "the freed large block is pooled");
    let r0 = stats().released;
    std::thread::sleep(decay * 3);
    raw::maybe_collect();
    let released = stats().released - r0;
    println!(
        "sweep released {released} bytes; pool {pooled} -> {}",
        stats().pool_bytes
    );
    assert!(
        released >= (threads * 8 * MEDIUM_MAX / 2) as u64 / 2,
        "the sweep released only {released} bytes of the abandoned heaps"
    );
    // The same map comes back from the pool, its pages released by age.
    let again = raw::alloc(big_len, 8);
    assert_eq!(again.addr(), big, "the pooled map is reused");
    // SAFETY: a live block of `big_len` bytes.
    let kept = unsafe { *again.add(big_len / 2) };
    assert_eq!(kept, 0, "a map pooled for 3 decay periods kept its pages");
    // Pooled again and taken back at once: young, so its pages stay. The
    // decay releases a map pooled for 7/8 of `decay_ms`; a thread stalled
    // that long between the free and the allocation (a loaded machine)
    // rightly gets released pages, so the check holds only for a shorter
    // gap, and says when it could not be made.
    // SAFETY: live, written, freed once; then a live block of `big_len` bytes.
    unsafe { again.write_bytes(9, big_len) };
    let freed_at = Instant::now();
    // SAFETY: live, freed once.
    unsafe { raw::free(again) };
    raw::maybe_collect();
    let third = raw::alloc(big_len, 8);
    let gap = freed_at.elapsed();
    assert_eq!(third.addr(), big, "the pooled map is reused");
    // SAFETY: a live block of `big_len` bytes.
    let kept = unsafe { *third.add(big_len / 2) };
    if gap < decay * 7 / 8 {
        assert_eq!(kept, 9, "a map pooled {gap:?} ago lost its pages");
    } else {
        println!(
            "stalled {gap:?} between the free and the allocation: the young map's check is not made"
        );
    }
    // SAFETY: live, freed once.
    unsafe {
        raw::free(third);
        raw::free(mine);
    }
    configure(Options::default());
}
