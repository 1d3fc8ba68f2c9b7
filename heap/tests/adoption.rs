//! Adoption of an abandoned heap, alone in its process so that no other test
//! adopts the heap first. A free into an abandoned heap borrows the heap and
//! frees the block in place: nothing waits on its foreign list for an owner
//! that may never come, and its in-use figure drops at once.
#![cfg(not(keel_loom))]

mod common;
use keel_heap::{Heap, raw};

#[test]
fn free_into_an_abandoned_heap_lands_in_place_and_the_adopter_reuses_it() {
    // Give this thread its own heap first, so the free below goes through it
    // (a thread without one would serve the free from the fallback heap,
    // which may itself adopt the abandoned heap).
    // SAFETY: allocated and freed once.
    unsafe { raw::free(raw::alloc(1, 1)) };
    let h = Heap::new().unwrap();
    let id = h.id();
    let p = h.alloc(1000, 8);
    assert!(h.stats().in_use >= 1000);
    drop(h);
    // SAFETY: live block, freed once.
    unsafe { raw::free(p) };
    let (mine, _held) = common::adopt(id);
    let s = mine.stats();
    assert_eq!(s.in_use, 0, "the free was applied to the abandoned heap");
    let before = s.foreign_frees;
    mine.gc();
    assert_eq!(
        mine.stats().foreign_frees,
        before,
        "nothing was left on the foreign list"
    );
    mine.is_valid().unwrap();
    let q = mine.alloc(1000, 8);
    assert_eq!(q, p, "the adopter reuses the block");
    // SAFETY: live, freed once.
    unsafe { mine.free(q) };
}
