//! The direct-map reuse pool's policy: reuse for any smaller request, release
//! of a large excess, growth of a pooled map that keeps its pages, the budget
//! enforced on every free, and a repeated-query loop that settles on as many
//! maps as it keeps live. One test in its own process: the pool and the
//! fault and RSS counters are process-wide.
#![cfg(not(any(keel_loom, miri)))]

mod common;
use keel_heap::{Heap, Options, configure, stats};

const MIB: usize = 1 << 20;
const PAGE: usize = 4096;

fn minor_faults() -> u64 {
    // SAFETY: getrusage writes into the struct we own.
    unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut u);
        u.ru_minflt as u64
    }
}

/// Resident bytes from /proc/self/smaps_rollup, which walks the page tables
/// (statm's counter is cached per CPU and lags by megabytes).
fn rss_exact() -> u64 {
    let s = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap();
    let line = s.lines().find(|l| l.starts_with("Rss:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

/// Writes one byte per page of `len` bytes at `p` and returns the minor
/// faults that took.
fn touch(p: *mut u8, len: usize) -> u64 {
    let before = minor_faults();
    for off in (0..len).step_by(PAGE) {
        // SAFETY: `p` holds `len` writable bytes.
        unsafe { p.add(off).write_volatile(1) };
    }
    minor_faults() - before
}

#[test]
fn pool_reuses_grows_trims_and_settles() {
    if std::fs::read_to_string("/proc/self/smaps_rollup").is_err() {
        println!("skipped: /proc/self/smaps_rollup is not readable here");
        return;
    };
    configure(Options {
        pool_budget: 64 * MIB,
        decay_ms: 0,
        ..Options::default()
    });
    let h = Heap::new().unwrap();

    // A freed 24 MiB map serves a 14 MiB request: no new mapping, no faults
    // (the excess is not more than the request, so it stays resident).
    let a = h.alloc(24 * MIB, 8);
    assert!(!a.is_null());
    touch(a, 24 * MIB);
    // SAFETY: live, freed once.
    unsafe { h.free(a) };
    assert!(stats().pool_bytes >= 24 * MIB as u64);
    let b = h.alloc(14 * MIB, 8);
    assert_eq!(b, a, "the pooled map was not reused for a smaller request");
    assert_eq!(stats().pool_bytes, 0);
    assert!(touch(b, 14 * MIB) < 64, "reused pages faulted again");
    // SAFETY: live, freed once.
    unsafe { h.free(b) };

    // A 4 MiB request on that map: the excess (24 MiB) is more than the
    // request and more than a quarter of the budget, so its pages go back.
    let released = stats().released;
    let rss = rss_exact();
    let c = h.alloc(4 * MIB, 8);
    assert_eq!(c, a);
    let freed_now = stats().released - released;
    assert!(
        freed_now >= 16 * MIB as u64,
        "excess not released: {freed_now}"
    );
    let drop = rss.saturating_sub(rss_exact());
    assert!(drop >= 16 * MIB as u64, "RSS fell by only {drop} bytes");
    // SAFETY: live, freed once.
    unsafe { h.free(c) };

    // Growing: the pool's only map (24 MiB, first 4 MiB resident) is smaller
    // than 40 MiB, so it is moved and extended; its resident pages stay.
    let c = h.alloc(4 * MIB, 8);
    touch(c, 4 * MIB);
    // SAFETY: live, freed once.
    unsafe { h.free(c) };
    let mapped = stats().mapped;
    let d = h.alloc(40 * MIB, 8);
    assert!(!d.is_null());
    let grew = stats().mapped - mapped;
    assert!(
        grew <= 20 * MIB as u64,
        "a fresh map ({grew} bytes) instead of growing the pooled one"
    );
    assert!(touch(d, 4 * MIB) < 64, "the moved pages faulted again");
    touch(d, 40 * MIB);
    // SAFETY: `d` is live.
    assert!(unsafe { keel_heap::usable_size(d) } >= 40 * MIB);
    // SAFETY: live, freed once.
    unsafe { h.free(d) };

    // Zeroed allocation on a grown dirty map really reads zero.
    let e = h.alloc(40 * MIB, 8);
    // SAFETY: live block of 40 MiB.
    unsafe { e.write_bytes(0xa5, 40 * MIB) };
    // SAFETY: live, freed once.
    unsafe { h.free(e) };
    let z = h.alloc_zeroed(56 * MIB, 8);
    assert!(!z.is_null());
    // SAFETY: live block of 56 MiB.
    let words = unsafe { std::slice::from_raw_parts(z.cast::<u64>(), 56 * MIB / 8) };
    assert!(words.iter().all(|&w| w == 0), "alloc_zeroed on a grown map");
    // SAFETY: live, freed once.
    unsafe { h.free(z) };

    // The budget holds on every free, not only at GC.
    let live: Vec<*mut u8> = (0..3).map(|_| h.alloc(30 * MIB, 8)).collect();
    for &p in &live {
        assert!(!p.is_null());
        touch(p, 30 * MIB);
    }
    for p in live {
        // SAFETY: live, freed once.
        unsafe { h.free(p) };
        let pooled = stats().pool_bytes;
        assert!(pooled <= 64 * MIB as u64, "pool holds {pooled} bytes");
    }

    // A repeated query: two columns of 8-64 MiB per iteration. The pool
    // settles on two maps; after that nothing faults and RSS stays near
    // the two largest columns.
    configure(Options {
        decay_ms: 0,
        ..Options::default()
    });
    let mut rng = common::Rng(0x9e37_79b9_7f4a_7c15);
    let base = rss_exact();
    let mut late_faults = 0;
    let mut late_pages = 0;
    let mut peak = 0;
    for it in 0..40 {
        let sizes = [8 + rng.below(57) as usize, 8 + rng.below(57) as usize];
        let cols: Vec<*mut u8> = sizes.iter().map(|&s| h.alloc(s * MIB, 64)).collect();
        let mut faults = 0;
        for (&p, &s) in cols.iter().zip(&sizes) {
            assert!(!p.is_null());
            faults += touch(p, s * MIB);
        }
        peak = peak.max(rss_exact());
        if it >= 20 {
            late_faults += faults;
            late_pages += (sizes[0] + sizes[1]) * MIB / PAGE;
        }
        for p in cols {
            // SAFETY: live, freed once.
            unsafe { h.free(p) };
        }
        h.gc();
    }
    assert!(
        late_faults * 20 < late_pages as u64,
        "{late_faults} faults for {late_pages} pages written in the steady state"
    );
    let grown = peak.saturating_sub(base);
    assert!(
        grown <= (2 * 64 + 16) as u64 * MIB as u64,
        "peak RSS {grown} bytes above the start for two columns of at most 64 MiB"
    );

    lent_excess_goes_back_before_a_fresh_map(&h);
}

/// A freed 30 MiB buffer, then five 6 MiB ones (`sort -S 30M` before its
/// merge): the first takes the pooled map, whose 26 MiB excess goes back
/// as the next four need fresh maps; RSS grows by about
/// the 30 MiB the program writes, not the old map's pages plus four maps.
fn lent_excess_goes_back_before_a_fresh_map(h: &Heap) {
    // Empty the pool first (a GC trims it to the budget).
    configure(Options {
        pool_budget: 0,
        decay_ms: 0,
        ..Options::default()
    });
    h.gc();
    assert_eq!(stats().pool_bytes, 0);
    configure(Options {
        decay_ms: 0,
        ..Options::default()
    });
    let base = rss_exact();
    let big = h.alloc(30 * MIB, 8);
    assert!(!big.is_null());
    touch(big, 30 * MIB);
    // SAFETY: live, freed once.
    unsafe { h.free(big) };
    let mut peak = 0;
    let bufs: Vec<*mut u8> = (0..5)
        .map(|i| {
            let p = h.alloc(6 * MIB, 8);
            assert!(!p.is_null());
            if i == 0 {
                // SAFETY: `p` is live. Only the request of the lent map is
                // usable (its tail may be released).
                assert_eq!(unsafe { keel_heap::usable_size(p) }, 6 * MIB);
            }
            touch(p, 6 * MIB);
            peak = peak.max(rss_exact());
            p
        })
        .collect();
    assert_eq!(bufs[0], big, "the pooled map was not reused");
    let grown = peak.saturating_sub(base);
    println!("peak {} MiB above the start", grown >> 20);
    assert!(
        grown <= 40 * MIB as u64,
        "peak RSS {grown} bytes above the start for 30 MiB written at once"
    );
    for p in bufs {
        // SAFETY: live, freed once.
        unsafe { h.free(p) };
    }
}
