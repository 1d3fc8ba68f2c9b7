//! Adoption of an abandoned heap with many foreign frees of slab objects
//! waiting, alone in its process so that no other test adopts the heap
//! first.
#![cfg(not(keel_loom))]

mod common;
use keel_heap::{Heap, raw};
use std::collections::HashSet;

const N: usize = if cfg!(miri) { 120 } else { 3000 };
const SIZE: usize = 48;

#[test]
fn adopter_reuses_blocks_freed_into_the_abandoned_heap() {
    common::decay_out_of_reach();
    // Give this thread its own heap first, so the frees below go through it.
    // SAFETY: allocated and freed once.
    unsafe { raw::free(raw::alloc(1, 1)) };
    let h = Heap::new().unwrap();
    let id = h.id();
    let ptrs: Vec<*mut u8> = (0..N).map(|_| h.alloc(SIZE, 16)).collect();
    assert!(ptrs.iter().all(|p| !p.is_null()));
    let old: HashSet<usize> = ptrs.iter().map(|p| p.addr()).collect();
    drop(h);
    // Free into the abandoned heap (most of its slabs are full).
    for p in ptrs {
        // SAFETY: live blocks, freed once.
        unsafe { raw::free(p) };
    }
    let (mine, _held) = common::adopt(id);
    mine.is_valid()
        .expect("adopted heap valid with frees waiting");
    // The adopter gets the freed blocks back (but for the never-used tail
    // of the slab left on the bin, bumped first).
    let mut reused = 0;
    let again: Vec<*mut u8> = (0..N)
        .map(|_| {
            let p = mine.alloc(SIZE, 16);
            assert!(!p.is_null());
            reused += usize::from(old.contains(&p.addr()));
            p
        })
        .collect();
    let slab_objects = 64 * 1024 / SIZE;
    assert!(
        reused >= N.saturating_sub(slab_objects),
        "only {reused} of {N} blocks came back to the adopter"
    );
    mine.is_valid().unwrap();
    for p in again {
        // SAFETY: live, freed once.
        unsafe { mine.free(p) };
    }
    mine.gc();
    mine.is_valid().unwrap();
}
