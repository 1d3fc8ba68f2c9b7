//! The amortized release pass: once in N calls, only aged blocks, within its
//! budget. One test in its own process, since it changes the global options.
#![cfg(not(keel_loom))]

use keel_heap::{Heap, Options, configure};

fn churn(h: &Heap, n: usize, size: usize) {
    let ps: Vec<*mut u8> = (0..n).map(|_| h.alloc(size, 8)).collect();
    for &p in &ps {
        // SAFETY: live block of `size` bytes; touch every page, then free.
        unsafe {
            p.write_bytes(1, size);
            h.free(p);
        }
    }
}

#[test]
fn release_pass_runs_exactly_once_in_n_calls_honours_its_budget_and_ages() {
    let n = if cfg!(miri) { 2 } else { 8 };
    let size = keel_heap::MEDIUM_MAX / 4;
    let h = Heap::new().unwrap();

    // Once in N calls.
    configure(Options {
        purge_every: 4,
        min_free_gcs: 0,
        release_budget: usize::MAX,
        ..Options::default()
    });
    let mut passes_per_window = Vec::new();
    for _ in 0..3 {
        let before = h.stats().release_passes;
        for _ in 0..4 {
            churn(&h, n, size);
            h.gc();
        }
        passes_per_window.push(h.stats().release_passes - before);
    }
    assert_eq!(
        passes_per_window,
        vec![1, 1, 1],
        "one release pass per 4 GCs"
    );

    // The per-call budget.
    let budget = 2 * size;
    configure(Options {
        purge_every: 1,
        min_free_gcs: 0,
        release_budget: budget,
        ..Options::default()
    });
    h.release_pages();
    churn(&h, n, size);
    let r0 = h.stats().released;
    h.gc();
    let r1 = h.stats().released;
    assert!(r1 > r0, "the pass released something");
    assert!(
        r1 - r0 <= budget as u64,
        "released {} > budget {budget}",
        r1 - r0
    );
    h.gc();
    assert!(
        h.stats().released > r1,
        "the next call continues where the budget stopped"
    );

    // Only blocks free across `min_free_gcs` GCs.
    configure(Options {
        purge_every: 1,
        min_free_gcs: 3,
        release_budget: usize::MAX,
        ..Options::default()
    });
    h.release_pages();
    churn(&h, n, size);
    let r0 = h.stats().released;
    h.gc(); // the blocks become free at this GC (age 0)
    h.gc(); // age 1
    h.gc(); // age 2
    assert_eq!(h.stats().released, r0, "young blocks were released");
    h.gc(); // age 3
    assert!(h.stats().released > r0, "aged blocks were not released");
    h.is_valid().unwrap();
    configure(Options::default());
}
