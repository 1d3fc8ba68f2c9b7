//! Frees from other threads and the GC that drains them, counted exactly.
//!
//! `Heap::new` adopts an abandoned heap when there is one, and blocks of an
//! abandoned heap may still be freed from other threads; so among the other
//! edge-case tests, which abandon heaps all the time, a heap's foreign-free
//! count can grow from frees this test never made. These checks count
//! exactly, so they run in their own process, one after the other.

mod common;
use common::SendPtr;
use keel_heap::{Heap, MEDIUM_MAX, raw};

#[test]
fn gc_drains_exactly_the_pending_foreign_frees() {
    free_from_another_thread();
    with_pending_foreign_frees();
    without_pending_foreign_frees();
}

fn with_pending_foreign_frees() {
    let h = Heap::new().unwrap();
    // An adopted heap may come with frees from its previous life: drain them.
    h.gc();
    let ps: Vec<SendPtr> = (0..10)
        .map(|_| SendPtr(h.alloc(MEDIUM_MAX / 2, 8)))
        .collect();
    std::thread::spawn(move || {
        let o = Heap::new().unwrap();
        for p in ps {
            // SAFETY: freed once, through another heap.
            unsafe { o.free(p.0) };
        }
    })
    .join()
    .unwrap();
    let s0 = h.stats();
    h.gc();
    let s1 = h.stats();
    assert_eq!(s1.foreign_frees - s0.foreign_frees, 10);
    assert_eq!(s1.gc_passes - s0.gc_passes, 1);
    h.is_valid().unwrap();
}

fn without_pending_foreign_frees() {
    let h = Heap::new().unwrap();
    // An adopted heap may come with frees from its previous life: drain them.
    h.gc();
    let p = h.alloc(5000, 8);
    let s0 = h.stats();
    h.gc();
    let s1 = h.stats();
    assert_eq!(s1.foreign_frees, s0.foreign_frees);
    assert_eq!(s1.gc_passes - s0.gc_passes, 1);
    // SAFETY: live, freed once.
    unsafe { h.free(p) };
    h.gc();
    h.is_valid().unwrap();
}

fn free_from_another_thread() {
    let h = Heap::new().unwrap();
    // An adopted heap may come with frees from its previous life: drain them.
    h.gc();
    let ps: Vec<SendPtr> = (0..64)
        .map(|i| SendPtr(h.alloc(16 + i * 1000, 8)))
        .collect();
    let before = h.stats();
    std::thread::spawn(move || {
        for p in ps {
            // SAFETY: live blocks of another heap, freed once.
            unsafe { raw::free(p.0) };
        }
    })
    .join()
    .unwrap();
    h.gc();
    let after = h.stats();
    assert_eq!(after.foreign_frees - before.foreign_frees, 64);
    assert!(after.in_use < before.in_use);
    h.is_valid().unwrap();
}
