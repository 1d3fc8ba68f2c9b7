//! Foreign frees of slab objects: blocks freed by another thread come back
//! to the owner's allocations (the blocks themselves, not fresh slabs), GC
//! takes every one of them, and the checker passes while they wait.
#![cfg(not(keel_loom))]

use keel_heap::Heap;
use std::collections::HashSet;

/// Blocks handed to the freeing thread.
struct Blocks(Vec<*mut u8>);
// SAFETY: the blocks are dead to the sending thread once sent.
unsafe impl Send for Blocks {}

/// Frees every block of `b` from a new thread with its own heap.
fn free_elsewhere(b: Blocks) {
    std::thread::spawn(move || {
        let b = b;
        let other = Heap::new().unwrap();
        for p in b.0 {
            // SAFETY: each block is live and freed once.
            unsafe { other.free(p) };
        }
    })
    .join()
    .unwrap();
}

/// Blocks of 64 bytes: several slabs' worth, so most slabs are full when
/// the frees arrive.
const N: usize = if cfg!(miri) { 200 } else { 5000 };
const SIZE: usize = 64;

#[test]
fn blocks_freed_by_another_thread_are_reused_by_the_owner() {
    let owner = Heap::new().unwrap();
    let first: Vec<*mut u8> = (0..N)
        .map(|i| {
            let p = owner.alloc(SIZE, 8);
            assert!(!p.is_null());
            // SAFETY: a live block of SIZE bytes.
            unsafe { p.write_bytes(i as u8, SIZE) };
            p
        })
        .collect();
    let before = owner.stats();
    let old: HashSet<usize> = first.iter().map(|p| p.addr()).collect();
    // Another thread, with its own heap, frees every block.
    free_elsewhere(Blocks(first));
    owner.is_valid().expect("valid with foreign frees waiting");
    // The owner allocates the same number again: the blocks come back from
    // the freed ones, except those of the never-used tail of the slab still
    // on the bin (bumped first) which the freed ones then make up for.
    let mut second = Vec::with_capacity(N);
    let mut reused = 0;
    for _ in 0..N {
        let p = owner.alloc(SIZE, 8);
        assert!(!p.is_null());
        reused += usize::from(old.contains(&p.addr()));
        second.push(p);
    }
    owner.is_valid().expect("valid after reuse");
    let slab_objects = 64 * 1024 / SIZE;
    assert!(
        reused >= N.saturating_sub(slab_objects),
        "only {reused} of {N} blocks came back from the foreign frees"
    );
    let distinct: HashSet<usize> = second.iter().map(|p| p.addr()).collect();
    assert_eq!(distinct.len(), N, "no block handed out twice");
    for p in second {
        // SAFETY: live, freed once.
        unsafe { owner.free(p) };
    }
    owner.gc();
    owner.is_valid().unwrap();
    assert!(
        owner.stats().foreign_frees >= before.foreign_frees + N as u64,
        "every foreign free was counted when taken"
    );
}

#[test]
fn gc_takes_every_foreign_free_of_slab_objects() {
    let owner = Heap::new().unwrap();
    let ptrs: Vec<*mut u8> = (0..N)
        .map(|_| {
            let p = owner.alloc(SIZE, 8);
            assert!(!p.is_null());
            p
        })
        .collect();
    let live_before = owner.stats().in_use;
    free_elsewhere(Blocks(ptrs));
    owner.gc();
    owner.is_valid().unwrap();
    let s = owner.stats();
    assert!(
        s.in_use + (N * SIZE) as u64 <= live_before,
        "GC took the foreign frees: in use {} before, {} after",
        live_before,
        s.in_use
    );
}
