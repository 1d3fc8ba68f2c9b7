//! `release_pages` and idle decay give RSS back (read from
//! /proc/self/smaps_rollup: statm lags by megabytes on many-CPU machines).
//! One test in its own process so other tests do not move RSS meanwhile.
#![cfg(not(any(keel_loom, miri)))]

mod common;
use keel_heap::{Heap, Options, configure};

fn load(h: &Heap) -> Vec<*mut u8> {
    let mut ps = Vec::new();
    // 64 MiB of medium blocks and 64 MiB of direct maps, every page touched.
    for _ in 0..256 {
        ps.push((h.alloc(256 << 10, 8), 256 << 10));
    }
    for _ in 0..4 {
        ps.push((h.alloc(16 << 20, 8), 16 << 20));
    }
    ps.iter()
        .map(|&(p, s)| {
            // SAFETY: live block of `s` bytes.
            unsafe { p.write_bytes(1, s) };
            p
        })
        .collect()
}

#[test]
fn release_pages_and_idle_decay_return_rss() {
    let Some(base) = common::rss() else {
        println!("skipped: neither /proc/self/smaps_rollup nor /proc/self/statm is readable here");
        return;
    };
    configure(Options {
        decay_ms: 100,
        ..Options::default()
    });
    let h = Heap::new().unwrap();
    // (Emulators such as qemu-user add their own memory to the process.)
    let slack = (base / 8).max(4 << 20);
    for how in ["release_pages", "idle decay"] {
        let ps = load(&h);
        let peak = common::rss().unwrap();
        assert!(
            peak > base + (100 << 20),
            "{how}: loaded RSS {peak} vs base {base}"
        );
        for p in ps {
            // SAFETY: freed once.
            unsafe { h.free(p) };
        }
        h.gc();
        let after_gc = common::rss().unwrap();
        assert!(
            after_gc > base + (100 << 20),
            "{how}: an ordinary GC kept the pages for reuse"
        );
        if how == "release_pages" {
            h.release_pages();
        } else {
            std::thread::sleep(std::time::Duration::from_millis(250));
            h.maybe_collect();
        }
        let after = common::rss().unwrap();
        println!("{how}: base {base} peak {peak} after gc {after_gc} after release {after}");
        assert!(
            after <= base + slack,
            "{how}: RSS {after} not back near base {base}"
        );
    }
    configure(Options::default());
}
