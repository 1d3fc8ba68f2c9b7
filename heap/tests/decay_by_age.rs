//! Idle decay by age, with no `gc()` or `maybe_collect()` call: memory that
//! has stayed free for `decay_ms` (empty slabs, free buddy blocks, pooled
//! direct maps) comes back to the OS from the heap's own slow paths while
//! the thread keeps allocating small blocks without pause, so the heap is
//! never quiet. One test in its own process (global options, RSS);
//! timing-driven, so not under Miri.
#![cfg(not(any(keel_loom, miri)))]

mod common;
use keel_heap::{Heap, MEDIUM_MAX, Options, configure};
use std::time::{Duration, Instant};

#[test]
fn freed_memory_returns_by_age_while_the_thread_keeps_allocating() {
    let Some(base) = common::rss() else {
        println!("skipped: neither /proc/self/smaps_rollup nor /proc/self/statm is readable here");
        return;
    };
    let decay = Duration::from_millis(100);
    configure(Options {
        decay_ms: decay.as_millis() as u64,
        // No GC release pass: only the decay may release.
        purge_every: u32::MAX,
        ..Options::default()
    });
    let h = Heap::new().unwrap();
    // 24 MiB of small objects (whole slabs), 24 MiB of medium blocks and
    // 24 MiB of direct maps, every page written.
    let mut blocks: Vec<(*mut u8, usize)> = Vec::new();
    for _ in 0..(24 << 20) / 1024 {
        blocks.push((h.alloc(1024, 8), 1024));
    }
    for _ in 0..(24 << 20) / (MEDIUM_MAX / 2) {
        blocks.push((h.alloc(MEDIUM_MAX / 2, 8), MEDIUM_MAX / 2));
    }
    for _ in 0..6 {
        blocks.push((h.alloc(4 << 20, 8), 4 << 20));
    }
    for &(p, n) in &blocks {
        assert!(!p.is_null());
        // SAFETY: a live block of `n` bytes.
        unsafe { p.write_bytes(1, n) };
    }
    let full = common::rss().unwrap();
    assert!(full >= base + (64 << 20), "loaded RSS {full}, base {base}");
    for (p, _) in blocks {
        // SAFETY: freed once.
        unsafe { h.free(p) };
    }
    let freed = Instant::now();
    // Keep allocating: a few live small objects replaced round-robin, so the
    // heap allocates all the time but needs no new memory.
    let mut live = [std::ptr::null_mut::<u8>(); 64];
    let limit = base + (8 << 20);
    let mut now = common::rss().unwrap();
    let mut calls = 0u64;
    while now > limit && freed.elapsed() < Duration::from_secs(5) {
        for i in 0..10_000 {
            let slot = &mut live[i % live.len()];
            // SAFETY: a live block of this heap (or null), freed once.
            unsafe { h.free(*slot) };
            *slot = h.alloc(16 + i % 200, 8);
            assert!(!slot.is_null());
            calls += 1;
        }
        now = common::rss().unwrap();
    }
    let waited = freed.elapsed();
    let s = h.stats();
    println!(
        "base {} MiB, full {} MiB, after {} MiB in {waited:?} and {calls} allocations; {} decay passes, {} MiB released",
        base >> 20,
        full >> 20,
        now >> 20,
        s.decay_passes,
        s.released >> 20
    );
    assert!(
        now <= limit,
        "RSS {} MiB not back within 8 MiB of {} MiB after {waited:?} of allocating",
        now >> 20,
        base >> 20
    );
    for p in live {
        // SAFETY: live, freed once.
        unsafe { h.free(p) };
    }
    h.is_valid().unwrap();
    configure(Options::default());
}
