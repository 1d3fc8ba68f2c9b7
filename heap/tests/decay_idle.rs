//! A program that stops allocating still gets its freed memory back by age:
//! a direct map freed into the pool loses its pages about `decay_ms` later
//! though no allocation, free or `gc()` follows (Linux: the decay thread
//! runs the pool's pass), and with `decay_thread` off no thread is
//! started. One test in its own process (global options, pool and thread);
//! timing-driven, so not under Miri. The wait is generous and ends
//! as soon as the pages are back, so a loaded machine only makes it slower.
#![cfg(all(target_os = "linux", not(any(keel_loom, miri))))]

mod common;
use common::decay_threads;
use keel_heap::{Options, configure, raw, stats};
use std::time::{Duration, Instant};

/// Resident bytes from /proc/self/smaps_rollup, which walks the page tables
/// (statm's counter is cached per CPU and lags by megabytes). The test
/// binary's own allocations go to the system allocator, not keel-heap.
fn rss_exact() -> u64 {
    let s = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap();
    let line = s.lines().find(|l| l.starts_with("Rss:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

#[test]
fn pooled_maps_come_back_with_no_allocator_call() {
    const LEN: usize = 32 << 20;
    let decay = Duration::from_millis(100);
    let off = Options {
        decay_ms: decay.as_millis() as u64,
        decay_thread: false,
        ..Options::default()
    };
    configure(off);
    let p = raw::alloc(LEN, 8);
    assert!(!p.is_null());
    // SAFETY: a live block of LEN bytes, freed once.
    unsafe { raw::free(p) };
    assert!(stats().pool_bytes >= LEN as u64, "the freed map is pooled");
    assert_eq!(decay_threads(), 0, "a decay thread started while off");
    configure(Options {
        decay_thread: true,
        ..off
    });
    let p = raw::alloc(LEN, 8);
    assert!(!p.is_null());
    // SAFETY: a live block of LEN bytes, written, then freed once.
    unsafe {
        p.write_bytes(0xa5, LEN);
        raw::free(p);
    }
    assert_eq!(decay_threads(), 1, "no decay thread after pooling a map");
    let full = rss_exact();
    let released = stats().released;
    assert!(stats().pool_bytes >= LEN as u64, "the freed map is pooled");
    let start = Instant::now();
    let mut back = 0;
    while start.elapsed() < Duration::from_secs(10) {
        // Fine polling, so a release before the map's age shows.
        std::thread::sleep(Duration::from_millis(5));
        back = stats().released - released;
        if back >= LEN as u64 {
            break;
        }
    }
    let waited = start.elapsed();
    let drop = full.saturating_sub(rss_exact());
    println!("released {back} bytes after {waited:?}; RSS fell by {drop} bytes");
    assert!(
        back >= LEN as u64,
        "after {waited:?} idle only {back} bytes of a pooled {LEN}-byte map came back"
    );
    // Not before 7/8 of `decay` less the coarse clock's tick (up to 10 ms).
    assert!(
        waited >= decay / 2,
        "released after {waited:?}, before the map was {decay:?} old"
    );
    assert!(drop >= (LEN / 2) as u64, "RSS fell by only {drop} bytes");
    // The map is still pooled (address space kept) and reads as zero now.
    let q = raw::alloc(LEN, 8);
    assert_eq!(q, p, "the pooled map is reused");
    // SAFETY: a live block of LEN bytes.
    assert_eq!(unsafe { *q.add(LEN / 2) }, 0, "its pages were not released");
    // SAFETY: live, freed once.
    unsafe { raw::free(q) };
}
