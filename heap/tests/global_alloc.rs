//! keel-heap as the process's global allocator: the whole test harness,
//! thread start-up and tear-down (which allocate re-entrantly inside the
//! thread-local machinery) run on it.
#![cfg(not(any(keel_loom, miri)))]

use keel_heap::KeelAlloc;
use std::collections::HashMap;
use std::sync::mpsc;

#[global_allocator]
static A: KeelAlloc = KeelAlloc;

#[test]
fn threads_allocate_and_free_across_threads_under_global_allocator() {
    let (tx, rx) = mpsc::channel::<Vec<Box<[u64]>>>();
    let mut hs = Vec::new();
    for t in 0..4u64 {
        let tx = tx.clone();
        hs.push(std::thread::spawn(move || {
            let mut m = HashMap::new();
            let mut out = Vec::new();
            for i in 0..2000u64 {
                let n = ((i * 7919 + t) % 3000) as usize + 1;
                let b: Box<[u64]> = vec![i ^ t; n].into_boxed_slice();
                m.insert(i, format!("{t}-{i}"));
                if i % 3 == 0 {
                    out.push(b);
                }
            }
            assert_eq!(m.len(), 2000);
            tx.send(out).unwrap();
        }));
    }
    drop(tx);
    for h in hs {
        h.join().unwrap();
    }
    // Free on this thread every block the (now exited) threads allocated.
    let mut total = 0usize;
    for v in rx {
        for b in v {
            let x = b[0];
            assert!(b.iter().all(|&y| y == x));
            total += 1;
        }
    }
    assert_eq!(total, 4 * 667);
    keel_heap::raw::gc();
    let s = keel_heap::raw::stats();
    assert!(s.heaps >= 2, "{s:?}");
}

#[test]
fn many_short_threads_reuse_abandoned_heaps() {
    for _ in 0..50 {
        std::thread::spawn(|| {
            let v: Vec<u8> = vec![1; 10_000];
            assert_eq!(v.iter().map(|&x| x as usize).sum::<usize>(), 10_000);
        })
        .join()
        .unwrap();
    }
    let s = keel_heap::raw::stats();
    // Every exited thread's heap is adopted by the next: heaps stay few.
    assert!(s.heaps < 20, "heaps were not adopted: {s:?}");
}
