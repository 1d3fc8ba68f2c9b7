//! Adoption of an abandoned heap, alone in its process so that no other test
//! adopts the heap first.
#![cfg(not(keel_loom))]

mod common;
use keel_heap::{Heap, raw};

#[test]
fn abandoned_heap_is_adopted_with_its_pending_frees() {
    // Give this thread its own heap first, so the free below goes through it
    // (a thread without one would serve the free from the fallback heap,
    // which may itself adopt the abandoned heap).
    // SAFETY: allocated and freed once.
    unsafe { raw::free(raw::alloc(1, 1)) };
    let h = Heap::new().unwrap();
    let id = h.id();
    let p = h.alloc(1000, 8);
    drop(h);
    // Free into the abandoned heap: it lands on its foreign list.
    // SAFETY: live block, freed once.
    unsafe { raw::free(p) };
    let (mine, _held) = common::adopt(id);
    let before = mine.stats().foreign_frees;
    mine.gc();
    assert_eq!(
        mine.stats().foreign_frees - before,
        1,
        "adopter drained the pending free"
    );
    mine.is_valid().unwrap();
}
