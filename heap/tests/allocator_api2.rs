//! `&Heap` as allocator-api2's `Allocator`: collections in a heap, every
//! resize, zero sizes, alignments up to 64 KiB, failures as errors.

mod common;

use allocator_api2::alloc::{AllocError, Allocator};
use allocator_api2::vec::Vec as HVec;
use common::scale;
use core::alloc::Layout;
use hashbrown::HashMap;
use keel_heap::{BadPointer, Heap, MAX_SIZE};

/// Whether `p`, a block of `heap` that was freed, reads as freed (the
/// heap's own small and medium blocks are checked; nothing allocates from
/// the heap in between, so the block cannot have been handed out again).
fn freed(heap: &Heap, p: *mut u8) -> bool {
    // SAFETY: `p` lies in keel-heap memory that stays mapped.
    let r = unsafe { heap.check_free(p) };
    matches!(r, Err(BadPointer::DoubleFree(_)))
}

#[test]
fn vec_lives_and_dies_in_its_heap() {
    let heap = Heap::new().unwrap();
    let before = heap.stats().in_use;
    let n = scale(100_000);
    let mut v: HVec<u64, &Heap> = HVec::new_in(&heap);
    let mut seen = std::vec::Vec::new();
    for i in 0..n as u64 {
        if v.len() == v.capacity() && !v.is_empty() {
            seen.push(v.as_mut_ptr().cast::<u8>());
        }
        v.push(i * 3);
    }
    assert!(seen.len() > 5, "the vector grew in place every time");
    // The last buffer is a buddy block (at most MEDIUM_MAX), counted in
    // the heap's own in-use bytes.
    assert!(v.capacity() * 8 <= keel_heap::MEDIUM_MAX);
    assert!(heap.stats().in_use >= before + 8 * v.capacity() as u64);
    assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64 * 3));
    // SAFETY: a pointer from this heap.
    assert!(unsafe { heap.check_free(v.as_mut_ptr().cast()) }.is_ok());
    // Shrink: contents kept, the block moved to a smaller size.
    v.truncate(100);
    v.shrink_to_fit();
    assert_eq!(v.capacity(), 100);
    assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64 * 3));
    let last = v.as_mut_ptr().cast::<u8>();
    // SAFETY: live block of this heap.
    assert!(unsafe { keel_heap::usable_size(last) } >= 800);
    drop(v);
    assert!(freed(&heap, last));
    // Blocks other heaps' frees may have taken back meanwhile only lower it.
    assert!(heap.stats().in_use <= before);
}

#[test]
fn hash_map_lives_and_dies_in_its_heap() {
    let heap = Heap::new().unwrap();
    let before = heap.stats().in_use;
    // Small enough that the table is a buddy block the heap counts.
    let n = scale(2_000) as u64;
    let mut m: HashMap<u64, [u64; 3], _, &Heap> = HashMap::new_in(&heap);
    for k in 0..n {
        m.insert(k, [k, k + 1, k + 2]);
    }
    assert!(heap.stats().in_use > before);
    for k in (0..n).step_by(2) {
        assert_eq!(m.remove(&k), Some([k, k + 1, k + 2]));
    }
    m.shrink_to_fit();
    assert_eq!(m.len() as u64, n / 2);
    assert!((1..n).step_by(2).all(|k| m[&k] == [k, k + 1, k + 2]));
    let mut s: hashbrown::HashSet<std::string::String, _, &Heap> =
        hashbrown::HashSet::new_in(&heap);
    s.extend((0..100).map(|i| i.to_string()));
    assert!(s.contains("42"));
    drop(s);
    drop(m);
    assert!(heap.stats().in_use <= before);
}

#[test]
fn zero_sizes_are_real_aligned_blocks() {
    let heap = Heap::new().unwrap();
    // `&&Heap`: method calls pick the trait's methods, not `Heap`'s own.
    let a = &&heap;
    let mut align = 1;
    while align <= 1 << 16 {
        let l = Layout::from_size_align(0, align).unwrap();
        let p = a.allocate(l).unwrap();
        let q = a.allocate_zeroed(l).unwrap();
        assert_eq!(p.len(), 0);
        assert_ne!(p.cast::<u8>(), q.cast::<u8>(), "two zero-size blocks alias");
        assert_eq!(p.cast::<u8>().as_ptr() as usize % align, 0);
        assert_eq!(q.cast::<u8>().as_ptr() as usize % align, 0);
        // SAFETY: both from this allocator, with this layout, freed once.
        unsafe {
            a.deallocate(p.cast(), l);
            a.deallocate(q.cast(), l);
        }
        align <<= 1;
    }
    // A vector of a zero-size type never allocates; one of bytes starts empty.
    let mut z: HVec<(), &Heap> = HVec::new_in(&heap);
    z.extend(std::iter::repeat_n((), 1000));
    assert_eq!(z.len(), 1000);
}

#[test]
fn alignment_kept_through_grow_and_shrink() {
    let heap = Heap::new().unwrap();
    // `&&Heap`: method calls pick the trait's methods, not `Heap`'s own.
    let a = &&heap;
    // Slab, buddy and direct-map sizes (Miri's buddy range ends at 64 KiB).
    let sizes: &[usize] = if cfg!(miri) {
        &[24, 5000, 70_000]
    } else {
        &[1, 24, 700, 5000, 70_000, 600_000]
    };
    for &size in sizes {
        let mut align = 1;
        while align <= 1 << 16 {
            let l = Layout::from_size_align(size, align).unwrap();
            let p = a.allocate(l).unwrap().cast::<u8>();
            assert_eq!(p.as_ptr() as usize % align, 0, "size {size} align {align}");
            // SAFETY: `size` writable bytes.
            unsafe { common::fill(p.as_ptr(), size, size as u64) };
            let big = Layout::from_size_align(size * 3 + 100, align).unwrap();
            // SAFETY: `p` is live with layout `l`; `big` is larger.
            let g = unsafe { a.grow_zeroed(p, l, big) }.unwrap().cast::<u8>();
            assert_eq!(g.as_ptr() as usize % align, 0);
            // SAFETY: `g` holds `big.size()` bytes.
            unsafe {
                assert!(common::check(g.as_ptr(), size, size as u64));
                let tail = std::slice::from_raw_parts(g.as_ptr().add(size), big.size() - size);
                assert!(tail == vec![0; tail.len()], "grow_zeroed left garbage");
            }
            // A grow that also asks for a larger alignment.
            let wider = Layout::from_size_align(big.size() + 1, (align * 2).max(4096)).unwrap();
            // SAFETY: `g` is live with layout `big`.
            let w = unsafe { a.grow(g, big, wider) }.unwrap().cast::<u8>();
            assert_eq!(w.as_ptr() as usize % wider.align(), 0);
            // SAFETY: `w` holds at least `size` bytes of the old contents.
            assert!(unsafe { common::check(w.as_ptr(), size, size as u64) });
            let small = Layout::from_size_align(size.div_ceil(2), align).unwrap();
            // SAFETY: `w` is live with layout `wider`; `small` is smaller.
            let s = unsafe { a.shrink(w, wider, small) }.unwrap().cast::<u8>();
            assert_eq!(s.as_ptr() as usize % align, 0);
            // SAFETY: `s` holds `small.size()` bytes.
            assert!(unsafe { common::check(s.as_ptr(), small.size(), size as u64) });
            // SAFETY: live with layout `small`, freed once.
            unsafe { a.deallocate(s, small) };
            align <<= if cfg!(miri) { 8 } else { 4 };
        }
    }
    assert!(heap.is_valid().is_ok());
}

#[test]
fn failures_are_errors_not_panics() {
    let heap = Heap::new().unwrap();
    // `&&Heap`: method calls pick the trait's methods, not `Heap`'s own.
    let a = &&heap;
    let huge = Layout::from_size_align(MAX_SIZE + 4096, 4096).unwrap();
    assert_eq!(a.allocate(huge), Err(AllocError));
    assert_eq!(a.allocate_zeroed(huge), Err(AllocError));
    // A grow that cannot be served leaves the block as it was.
    let l = Layout::from_size_align(64, 8).unwrap();
    let p = a.allocate(l).unwrap().cast::<u8>();
    // SAFETY: 64 writable bytes.
    unsafe { p.as_ptr().write_bytes(9, 64) };
    // SAFETY: `p` is live with layout `l`.
    assert_eq!(unsafe { a.grow(p, l, huge) }, Err(AllocError));
    // SAFETY: still live and unchanged.
    unsafe {
        assert!(
            std::slice::from_raw_parts(p.as_ptr(), 64)
                .iter()
                .all(|&b| b == 9)
        );
        a.deallocate(p, l);
    }
    // Through the collections: an error from `try_reserve`, not an abort.
    let mut v: HVec<u8, &Heap> = HVec::new_in(&heap);
    v.push(1);
    let e = v.try_reserve(MAX_SIZE + 4096).unwrap_err();
    assert!(
        matches!(
            e.kind(),
            allocator_api2::collections::TryReserveErrorKind::AllocError { .. }
        ),
        "{e:?}"
    );
    assert_eq!(v, [1]);
    let mut m: HashMap<u64, u64, _, &Heap> = HashMap::new_in(&heap);
    assert!(m.try_reserve(MAX_SIZE / 16).is_err());
    m.insert(1, 2);
    assert_eq!(m[&1], 2);
}

#[test]
fn heap_dropped_after_its_collections() {
    let heap = Heap::new().unwrap();
    let id = heap.id();
    let mut v: HVec<std::string::String, &Heap> = HVec::new_in(&heap);
    let mut m: HashMap<u32, HVec<u8, &Heap>, _, &Heap> = HashMap::new_in(&heap);
    let n = scale(2000) as u32;
    for i in 0..n {
        v.push(format!("row {i}"));
        let mut row = HVec::with_capacity_in(i as usize % 300, &heap);
        row.extend((0..i % 300).map(|b| b as u8));
        m.insert(i, row);
    }
    assert_eq!(m.len() as u32, n);
    assert!((0..n).all(|i| m[&i].len() as u32 == i % 300 && v[i as usize] == format!("row {i}")));
    let vp = v.as_mut_ptr().cast::<u8>();
    drop(m);
    drop(v);
    assert!(freed(&heap, vp));
    assert!(heap.is_valid().is_ok());
    drop(heap);
    // The abandoned heap comes back whole to the next handle that adopts it.
    let (again, _held) = common::adopt(id);
    assert!(again.is_valid().is_ok());
    let mut w: HVec<u32, &Heap> = HVec::new_in(&again);
    w.extend(0..10);
    assert_eq!(w.iter().sum::<u32>(), 45);
}
