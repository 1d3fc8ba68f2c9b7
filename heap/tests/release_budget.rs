//! One GC's release pass stays within `release_budget` across the heap's
//! free blocks and the direct-map pool together. One test in its own
//! process, since it changes the global options and reads process-wide
//! release figures.
#![cfg(not(keel_loom))]

use keel_heap::{Heap, MEDIUM_MAX, Options, PAGE, REGION, configure, stats};

#[test]
fn one_gc_releases_at_most_its_budget_over_blocks_and_pool() {
    let budget = REGION;
    configure(Options {
        purge_every: 1,
        min_free_gcs: 0,
        release_budget: budget,
        ..Options::default()
    });
    let h = Heap::new().unwrap();
    // Medium blocks worth twice the budget, every page touched, then freed.
    let size = MEDIUM_MAX / 2;
    let blocks: Vec<*mut u8> = (0..2 * REGION / size).map(|_| h.alloc(size, 8)).collect();
    // A direct map of about the budget, touched, then freed into the pool.
    let big = REGION - 2 * PAGE;
    let d = h.alloc(big, 8);
    assert!(!d.is_null() && blocks.iter().all(|b| !b.is_null()));
    // SAFETY: live blocks of the sizes asked, written, then freed once.
    unsafe {
        for &b in &blocks {
            b.write_bytes(1, size);
        }
        d.write_bytes(1, big);
        for &b in &blocks {
            h.free(b);
        }
        h.free(d);
    }
    let r0 = stats().released;
    h.gc();
    let r1 = stats().released;
    println!("one gc released {} bytes, budget {budget}", r1 - r0);
    assert!(r1 > r0, "the pass released something");
    assert!(
        r1 - r0 <= budget as u64,
        "one gc released {} bytes, more than its budget {budget}",
        r1 - r0
    );
    h.is_valid().unwrap();
    configure(Options::default());
}
