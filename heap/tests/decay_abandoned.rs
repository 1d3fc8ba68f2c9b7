//! The idle decay also returns memory held by heaps of exited threads: a
//! producer thread allocates and exits, the survivor frees everything (onto
//! the abandoned heap's foreign list) and goes quiet; with no new thread to
//! adopt that heap, the survivor's own decay must release it. One test in
//! its own process (global options, exact release figures); timing-driven,
//! so not under Miri.
#![cfg(not(any(keel_loom, miri)))]

mod common;
use common::SendPtr;
use keel_heap::{MEDIUM_MAX, Options, configure, raw, stats};
use std::time::Duration;

#[test]
fn idle_decay_releases_what_exited_threads_left() {
    let decay = Duration::from_millis(50);
    configure(Options {
        decay_ms: decay.as_millis() as u64,
        ..Options::default()
    });
    let size = MEDIUM_MAX / 2;
    let n = 64; // 32 MiB of medium blocks
    // This thread's own heap first, so that it adopts nothing later.
    let mine = raw::alloc(size, 8);
    assert!(!mine.is_null());
    let blocks: Vec<SendPtr> = std::thread::spawn(move || {
        (0..n)
            .map(|_| {
                let p = raw::alloc(size, 8);
                assert!(!p.is_null());
                // SAFETY: a live block of `size` bytes.
                unsafe { p.write_bytes(1, size) };
                SendPtr(p)
            })
            .collect()
    })
    .join()
    .unwrap();
    assert_eq!(stats().abandoned, 1, "the producer's heap is abandoned");
    // Read before the frees: once they are in, the sweep of abandoned heaps
    // may release them within a few milliseconds, before a read after them.
    let r0 = stats().released;
    for p in blocks {
        // SAFETY: live blocks of the abandoned heap, freed once.
        unsafe { raw::free(p.0) };
    }
    // SAFETY: live, freed once.
    unsafe { raw::free(mine) };
    std::thread::sleep(decay * 3);
    raw::maybe_collect();
    let released = stats().released - r0;
    println!("idle decay released {released} bytes");
    assert!(
        released >= (n * size) as u64 / 2,
        "idle decay released {released} bytes of the {} an exited thread left",
        n * size
    );
    assert_eq!(stats().abandoned, 1, "the heap is given back for adoption");

    // Heaps passed from one short-lived thread to the next: a new thread
    // adopts that heap, fills and frees 32 MiB in it and exits; the next
    // adopts it at once and keeps allocating small blocks. Under a long
    // `decay_ms` what the earlier owner left must still come back on the
    // adopted heap's shorter clock (an eighth: 0.22 s of a 2 s decay), not
    // only once it is free for the whole `decay_ms` (1.75 s: before that
    // rule the wait below, 1 s, ran out with nothing released). If the next
    // thread comes later than the abandoned heap's own clock (a 256th:
    // 8 ms), the sweep of abandoned heaps releases it first: either way it
    // must come back within the wait. The released count is read by the
    // exiting thread after its frees: nothing they freed can be released
    // before that thread exits (the heap is young, on its eighth).
    let decay = Duration::from_secs(2);
    configure(Options {
        decay_ms: decay.as_millis() as u64,
        ..Options::default()
    });
    let r0 = std::thread::spawn(move || {
        let blocks: Vec<*mut u8> = (0..n)
            .map(|_| {
                let p = raw::alloc(size, 8);
                assert!(!p.is_null());
                // SAFETY: a live block of `size` bytes.
                unsafe { p.write_bytes(1, size) };
                p
            })
            .collect();
        for p in blocks {
            // SAFETY: live, freed once.
            unsafe { raw::free(p) };
        }
        stats().released
    })
    .join()
    .unwrap();
    let (released, waited) = std::thread::spawn(move || {
        let start = std::time::Instant::now();
        let mut live = [std::ptr::null_mut::<u8>(); 64];
        let mut i = 0usize;
        loop {
            let released = stats().released - r0;
            if released >= (n * size) as u64 / 2 || start.elapsed() >= decay / 2 {
                for p in live {
                    // SAFETY: live (or null), freed once.
                    unsafe { raw::free(p) };
                }
                return (released, start.elapsed());
            }
            for _ in 0..1000 {
                let slot = &mut live[i % live.len()];
                // SAFETY: live (or null), freed once.
                unsafe { raw::free(*slot) };
                *slot = raw::alloc(16 + i % 200, 8);
                assert!(!slot.is_null());
                i += 1;
            }
        }
    })
    .join()
    .unwrap();
    println!("exited threads' memory: {released} bytes released in {waited:?}");
    assert!(
        released >= (n * size) as u64 / 2,
        "a heap adopted from exited threads released {released} of the {} bytes they \
         left within {waited:?} ({decay:?} decay)",
        n * size
    );
    configure(Options::default());
}
