//! The hot counters behind `Heap::stats`: small allocations are counted by
//! class and summed in bytes when published, so `in_use` must follow every
//! allocation and come back to where it was once each block is freed, and
//! `slab_hits` must count the allocations a slab already on its bin served.
#![cfg(not(keel_loom))]

use keel_heap::{Heap, MEDIUM_MAX};

#[test]
fn in_use_and_slab_hits_follow_small_and_medium_blocks() {
    let h = Heap::new().expect("a heap");
    let s0 = h.stats();
    let sizes = [16usize, 48, 300, 1000, 4000];
    let per = if cfg!(miri) { 40 } else { 1000 };
    let mut blocks = Vec::new();
    let mut asked = 0u64;
    for &size in &sizes {
        for _ in 0..per {
            let p = h.alloc(size, 8);
            assert!(!p.is_null());
            blocks.push(p);
            asked += size as u64;
        }
    }
    // A buddy block (a direct map would not count in this heap's in_use):
    // 512 KiB, or 32 KiB under Miri's smaller regions.
    let msize = MEDIUM_MAX / 2;
    let medium = h.alloc(msize, 64);
    assert!(!medium.is_null());
    let s1 = h.stats();
    let small = s1.in_use - s0.in_use;
    // Each block takes its class's size: at least what was asked, at most
    // a quarter more (the classes' spacing) plus the medium block's.
    assert!(
        small >= asked + msize as u64,
        "in use grew {small} for {asked} + {msize} asked"
    );
    assert!(
        small <= asked + asked / 4 + 2 * msize as u64,
        "in use grew {small} for {asked} asked"
    );
    let served = (sizes.len() * per) as u64;
    let hits = s1.slab_hits - s0.slab_hits;
    // A slab is 64 KiB: the allocations that took a new one are few.
    assert!(hits <= served, "{hits} slab hits for {served} allocations");
    assert!(
        hits + served / 10 >= served,
        "only {hits} slab hits of {served} allocations"
    );
    for p in blocks {
        // SAFETY: live blocks of this heap, freed once.
        unsafe { h.free(p) };
    }
    // SAFETY: as above.
    unsafe { h.free(medium) };
    let s2 = h.stats();
    assert_eq!(
        s2.in_use, s0.in_use,
        "every block freed: in use is back to where it was"
    );
    assert_eq!(s2.slab_hits, s1.slab_hits, "frees count no slab hit");
}
