//! Edge cases, one test per case (sizes, alignments, realloc, zeroing,
//! cross-thread frees, abandonment and adoption, GC, the bad-free detector).
#![cfg(not(keel_loom))]

mod common;
use common::{SendPtr, check, fill};
use keel_heap::{BadPointer, Heap, MEDIUM_MAX, PAGE, REGION, SMALL_MAX, raw};

/// A direct-map size (smaller under Miri, where every byte is emulated).
const BIG: usize = if cfg!(miri) { MEDIUM_MAX * 3 } else { 3 << 20 };
/// The largest alignment tried.
const MAX_ALIGN: usize = if cfg!(miri) { 1 << 18 } else { 1 << 23 };

fn roundtrip(h: &Heap, size: usize, align: usize) {
    let p = h.alloc(size, align);
    assert!(!p.is_null(), "size {size} align {align}");
    assert_eq!(p as usize % align, 0, "size {size} align {align}");
    // SAFETY: `p` is live and holds `size` bytes.
    unsafe {
        assert!(keel_heap::usable_size(p) >= size);
        fill(p, size, size as u64);
        assert!(check(p, size, size as u64));
        h.free(p);
    }
}

#[test]
fn size_zero_gives_unique_non_null_pointers() {
    let h = Heap::new().unwrap();
    let a = h.alloc(0, 1);
    let b = h.alloc(0, 1);
    assert!(!a.is_null() && !b.is_null() && a != b);
    let c = raw::alloc(0, 1);
    assert!(!c.is_null() && c != a && c != b);
    // SAFETY: all live, freed once.
    unsafe {
        h.free(a);
        h.free(b);
        raw::free(c);
    }
}

#[test]
fn size_one() {
    let h = Heap::new().unwrap();
    let ps: Vec<*mut u8> = (0..100).map(|_| h.alloc(1, 1)).collect();
    for (i, &p) in ps.iter().enumerate() {
        // SAFETY: each holds one byte.
        unsafe { *p = i as u8 };
    }
    for (i, &p) in ps.iter().enumerate() {
        // SAFETY: as above; freed once.
        unsafe {
            assert_eq!(*p, i as u8);
            h.free(p);
        }
    }
}

#[test]
fn every_class_boundary_plus_minus_one() {
    let h = Heap::new().unwrap();
    let mut boundaries: Vec<usize> = Vec::new();
    let mut s = 16;
    while s <= SMALL_MAX {
        boundaries.push(s);
        // Walk the class table through usable sizes.
        let p = h.alloc(s + 1, 1);
        // SAFETY: live block.
        let next = unsafe { keel_heap::usable_size(p) };
        // SAFETY: freed once.
        unsafe { h.free(p) };
        assert!(next > s);
        s = next;
    }
    let mut b = 2 * PAGE;
    while b <= MEDIUM_MAX {
        boundaries.push(b);
        b *= 2;
    }
    boundaries.extend([SMALL_MAX, MEDIUM_MAX, 2 * MEDIUM_MAX]);
    // Under Miri every byte is emulated: every third boundary.
    let step = if cfg!(miri) { 3 } else { 1 };
    for &b in boundaries.iter().step_by(step) {
        for s in [b - 1, b, b + 1] {
            roundtrip(&h, s, 8);
        }
    }
    h.gc();
    h.is_valid().unwrap();
}

#[test]
fn near_usize_max_sizes_return_null_without_abort() {
    let h = Heap::new().unwrap();
    for s in [
        usize::MAX,
        usize::MAX - PAGE,
        isize::MAX as usize,
        isize::MAX as usize + 1,
        1 << 62,
        1 << 47,
    ] {
        assert!(h.alloc(s, 8).is_null(), "size {s:#x}");
        assert!(h.alloc_zeroed(s, 8).is_null());
        assert!(raw::alloc(s, 8).is_null());
        assert!(raw::alloc(s, 1 << 20).is_null());
    }
    assert!(h.alloc(8, 1 << 62).is_null(), "absurd alignment");
    assert!(
        h.allocate(core::alloc::Layout::from_size_align(usize::MAX / 4, 8).unwrap())
            .is_err()
    );
}

/// A request no mapping can serve fails at once: it used to run the
/// out-of-memory retry's full GC first, releasing (for nothing) the free
/// memory the program was about to reuse, on every such call.
#[test]
fn impossible_requests_fail_without_collecting() {
    use keel_heap::{MAX_ALIGN, MAX_SIZE};
    assert_eq!(MAX_SIZE % PAGE, 0);
    assert!(MAX_ALIGN.is_power_of_two() && MAX_ALIGN < MAX_SIZE);
    let h = Heap::new().unwrap();
    // Free memory a collection would release.
    let p = h.alloc(MEDIUM_MAX / 2, 8);
    // SAFETY: a live block, written and freed once.
    unsafe {
        p.write_bytes(1, MEDIUM_MAX / 2);
        h.free(p);
    }
    let before = h.stats();
    for (size, align) in [
        (MAX_SIZE + 1, 8),
        (1 << 62, 8),
        (isize::MAX as usize, 1),
        (8, MAX_ALIGN * 2),
        (MEDIUM_MAX + 1, MAX_ALIGN * 4),
    ] {
        assert!(h.alloc(size, align).is_null(), "{size:#x} at {align:#x}");
        assert!(h.alloc_zeroed(size, align).is_null());
    }
    let after = h.stats();
    assert_eq!(
        after.gc_passes, before.gc_passes,
        "an impossible request ran a GC"
    );
    assert_eq!(after.released, before.released);
    h.is_valid().unwrap();
}

#[test]
fn non_power_of_two_alignment_returns_null() {
    let h = Heap::new().unwrap();
    for a in [0, 3, 12, 4097] {
        assert!(h.alloc(8, a).is_null());
        assert!(raw::alloc(8, a).is_null());
    }
}

#[test]
fn alignments_1_to_4096_for_every_class() {
    let h = Heap::new().unwrap();
    let mut a = 1;
    while a <= PAGE {
        let sizes: &[usize] = if cfg!(miri) {
            &[0, 100, SMALL_MAX + 1, MEDIUM_MAX + 1]
        } else {
            &[
                0,
                1,
                15,
                16,
                100,
                1000,
                4096,
                SMALL_MAX,
                SMALL_MAX + 1,
                100_000,
                MEDIUM_MAX,
                MEDIUM_MAX + 1,
            ]
        };
        for &s in sizes {
            roundtrip(&h, s, a);
        }
        a *= 2;
    }
    h.is_valid().unwrap();
}

#[test]
fn alignments_above_page_size() {
    let h = Heap::new().unwrap();
    let mut a = 2 * PAGE;
    while a <= MAX_ALIGN {
        for s in [1, 5000, MEDIUM_MAX, BIG] {
            roundtrip(&h, s, a);
        }
        a *= 4;
    }
}

#[test]
fn realloc_growing_and_shrinking_across_classes() {
    let h = Heap::new().unwrap();
    let sizes = [
        1usize,
        24,
        200,
        3000,
        SMALL_MAX + 1,
        70_000,
        MEDIUM_MAX + 5,
        BIG,
        50_000,
        700,
        9,
        0,
        64,
    ];
    let mut p = h.alloc(sizes[0], 8);
    let mut len = sizes[0];
    // SAFETY: `p` holds `len` bytes at each step.
    unsafe {
        fill(p, len, 7);
        for &n in &sizes[1..] {
            let q = h.realloc(p, n, 8);
            assert!(!q.is_null(), "realloc to {n}");
            let keep = len.min(n);
            assert!(check(q, keep, 7), "contents lost resizing {len} -> {n}");
            assert!(keel_heap::usable_size(q) >= n);
            fill(q, n, 7);
            p = q;
            len = n;
        }
        // Through the raw API too, from null.
        let r = raw::realloc(core::ptr::null_mut(), 100, 16);
        fill(r, 100, 3);
        let r = raw::realloc(r, 100_000, 16);
        assert!(check(r, 100, 3));
        raw::free(r);
        h.free(p);
    }
}

#[test]
fn realloc_failure_returns_null_and_keeps_the_block() {
    let h = Heap::new().unwrap();
    let p = h.alloc(100, 8);
    // SAFETY: `p` holds 100 bytes and stays live after the failed realloc.
    unsafe {
        fill(p, 100, 9);
        assert!(h.realloc(p, usize::MAX / 2, 8).is_null());
        assert!(raw::realloc(p, usize::MAX - 10, 8).is_null());
        assert!(check(p, 100, 9));
        h.free(p);
    }
}

static ZEROS: [u8; PAGE] = [0; PAGE];

#[test]
fn zeroed_allocation_really_zeroed_after_release_and_reuse() {
    let h = Heap::new().unwrap();
    let sizes = [
        1usize,
        48,
        500,
        4000,
        SMALL_MAX,
        20_000,
        MEDIUM_MAX / 2,
        MEDIUM_MAX,
        BIG,
    ];
    for round in 0..3 {
        let ps: Vec<_> = sizes.iter().map(|&s| (h.alloc(s, 8), s)).collect();
        for &(p, s) in &ps {
            // SAFETY: live blocks of `s` bytes; dirty them, then free.
            unsafe { p.write_bytes(0xFF, s) };
        }
        for &(p, _) in &ps {
            // SAFETY: freed once.
            unsafe { h.free(p) };
        }
        match round {
            0 => {}                 // straight reuse from slabs and the block cache
            1 => h.gc(),            // after coalescing
            _ => h.release_pages(), // after madvise
        }
        for &s in &sizes {
            let z = h.alloc_zeroed(s, 8);
            // SAFETY: live block of `s` bytes.
            unsafe {
                let bytes = std::slice::from_raw_parts(z, s);
                // Compared a page at a time (a memcmp, which Miri runs
                // natively, where a byte loop took minutes there).
                assert!(
                    bytes.chunks(PAGE).all(|c| c == &ZEROS[..c.len()]),
                    "round {round} size {s} not zeroed"
                );
                h.free(z);
            }
        }
    }
    h.is_valid().unwrap();
}

#[test]
fn free_after_the_owner_thread_exited() {
    // Sizes 8 to about 30 KB; under Miri every third of them, the same span.
    let step = if cfg!(miri) { 3 } else { 1 };
    let ps: Vec<(usize, SendPtr)> = std::thread::spawn(move || {
        (0..100)
            .step_by(step)
            .map(|i| {
                let p = raw::alloc(8 + i * 300, 8);
                // SAFETY: `p` holds the bytes asked for.
                unsafe { fill(p, 8 + i * 300, i as u64) };
                (i, SendPtr(p))
            })
            .collect()
    })
    .join()
    .unwrap();
    for (i, p) in ps {
        // SAFETY: live blocks of an abandoned heap, freed once.
        unsafe {
            assert!(check(p.0, 8 + i * 300, i as u64));
            raw::free(p.0);
        }
    }
}

#[test]
fn double_free_is_detected_and_reports_the_pointer() {
    let h = Heap::new().unwrap();
    for s in [24usize, 5000, MEDIUM_MAX / 2, BIG] {
        let p = h.alloc(s, 8);
        // SAFETY: `p` is live for the first check, then freed once; the
        // checker only inspects keel-heap metadata afterwards.
        unsafe {
            assert_eq!(h.check_free(p), Ok(()));
            h.free(p);
            assert_eq!(
                h.check_free(p),
                Err(BadPointer::DoubleFree(p as usize)),
                "size {s}"
            );
        }
    }
}

#[test]
fn foreign_and_interior_pointers_are_rejected() {
    let h = Heap::new().unwrap();
    let mut on_stack = 0u64;
    let sp = (&raw mut on_stack).cast::<u8>();
    let boxed = Box::into_raw(Box::new(5u64)).cast::<u8>();
    assert!(!raw::owns(sp) && !raw::owns(boxed));
    // SAFETY: the checker never dereferences pointers it does not own.
    unsafe {
        assert_eq!(h.check_free(sp), Err(BadPointer::Foreign(sp as usize)));
        assert_eq!(keel_heap::usable_size(sp), 0);
        assert_eq!(keel_heap::usable_size(core::ptr::null()), 0);
        drop(Box::from_raw(boxed.cast::<u64>()));
    }
    let p = h.alloc(64, 8);
    // SAFETY: `p + 8` is inside a live block; only metadata is inspected.
    unsafe {
        assert_eq!(
            h.check_free(p.add(8)),
            Err(BadPointer::Interior {
                addr: p as usize + 8,
                block: p as usize,
                size: 64
            })
        );
        h.free(p);
    }
}

/// Every page of a direct map's head chunk before its data is an interior
/// pointer, the map's very first page included: with an alignment below
/// `REGION` that page starts the chunk, and the checker used to read a
/// header one page before it, outside the map (a crash, not a report).
#[test]
fn pages_of_a_direct_map_before_its_data_are_interior_pointers() {
    let h = Heap::new().unwrap();
    for align in [8, PAGE, 2 * MEDIUM_MAX, REGION, 2 * REGION] {
        let p = h.alloc(BIG, align);
        assert!(
            !p.is_null() && (p as usize).is_multiple_of(align),
            "align {align}"
        );
        let chunk = p as usize & !(REGION - 1);
        let mut q = chunk;
        while q < p as usize {
            // SAFETY: `q` is in the head chunk of a live direct map.
            let r = unsafe { h.check_free(p.with_addr(q)) };
            assert_eq!(r.map_err(|e| e.addr()), Err(q), "align {align} at {q:#x}");
            assert!(matches!(r, Err(BadPointer::Interior { .. })));
            q += PAGE;
        }
        // SAFETY: the data start is live; one page in is inside the block.
        unsafe {
            assert_eq!(h.check_free(p), Ok(()), "align {align}");
            let inner = p.add(PAGE);
            assert!(matches!(
                h.check_free(inner),
                Err(BadPointer::Interior { addr, .. }) if addr == inner as usize
            ));
            h.free(p);
        }
    }
}

/// The chunk map covers the 47-bit user address space; a pointer at its
/// last chunk or past it (the top of the user half, the first address
/// above it, non-canonical and kernel-half addresses) is none of ours,
/// read without touching it. The range test is one compare of the chunk
/// index: a bound off by one reads past the map.
#[test]
fn pointers_at_and_past_the_chunk_maps_end_are_not_ours() {
    let h = Heap::new().unwrap();
    let top = 1usize << 47;
    for addr in [
        top - 8,
        top - REGION,
        top,
        top + REGION,
        1 << 48,
        0xffff_8000_0000_0000,
        usize::MAX & !7,
    ] {
        let p = core::ptr::without_provenance_mut::<u8>(addr);
        assert!(!raw::owns(p), "{addr:#x}");
        // SAFETY: none of these is keel-heap's, so none is touched.
        unsafe {
            assert_eq!(keel_heap::usable_size(p), 0, "{addr:#x}");
            assert!(!raw::free_if_owned(p), "{addr:#x}");
            assert_eq!(h.check_free(p), Err(BadPointer::Foreign(addr)), "{addr:#x}");
        }
    }
}

#[test]
fn raw_free_of_null_is_a_no_op() {
    // SAFETY: null is allowed.
    unsafe { raw::free(core::ptr::null_mut()) };
    assert!(!raw::owns(core::ptr::null()));
}
