//! Adoption of an abandoned heap, alone in its process so that no other test
//! adopts the heap first. A free into an abandoned heap waits on its foreign
//! list only until the next sweep (any heap's slow path, or a statistics
//! snapshot): then it is freed in place, the heap's in-use figure drops, and
//! the adopter reuses the block.
#![cfg(not(keel_loom))]

mod common;
use keel_heap::{Heap, raw};

#[test]
fn free_into_an_abandoned_heap_is_swept_and_the_adopter_reuses_it() {
    common::decay_out_of_reach();
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
    let before = raw::stats().in_use;
    // SAFETY: live block, freed once.
    unsafe { raw::free(p) };
    // The snapshot sweeps what waits on abandoned heaps' foreign lists.
    let after = raw::stats().in_use;
    assert!(
        after + 1000 <= before,
        "the free into the abandoned heap is not counted: {before} -> {after}"
    );
    let (mine, _held) = common::adopt(id);
    assert_eq!(mine.stats().in_use, 0, "the adopted heap holds nothing");
    mine.is_valid().unwrap();
    let q = mine.alloc(1000, 8);
    assert_eq!(q, p, "the adopter reuses the block");
    // SAFETY: live, freed once.
    unsafe { mine.free(q) };
}
