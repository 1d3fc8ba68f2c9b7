//! Quick end-to-end checks of the raw API.
#![cfg(not(keel_loom))]

use keel_heap::raw;

#[test]
fn raw_alloc_free_many_sizes() {
    let mut v = Vec::new();
    for s in [
        0usize,
        1,
        8,
        16,
        17,
        100,
        1000,
        4096,
        8192,
        8193,
        20000,
        100_000,
        1 << 20,
        (1 << 20) + 1,
        5 << 20,
    ] {
        let p = raw::alloc(s, 8);
        assert!(!p.is_null(), "size {s}");
        assert!(raw::owns(p));
        // SAFETY: `p` is live and holds `s` bytes.
        unsafe {
            assert!(raw::usable_size(p) >= s);
            p.write_bytes(0xAB, s);
        }
        v.push((p, s));
    }
    for (p, s) in v {
        // SAFETY: `p` is live, written above, freed once.
        unsafe {
            for i in 0..s {
                assert_eq!(*p.add(i), 0xAB);
            }
            raw::free(p);
        }
    }
    raw::gc();
}
