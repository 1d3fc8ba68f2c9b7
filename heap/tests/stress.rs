//! Seeded multi-threaded stress: threads allocate random sizes, fill them,
//! pass some to other threads, free (checking every block's contents), GC,
//! and run the heap checker.
#![cfg(not(keel_loom))]

mod common;
use common::{Rng, check, fill, scale};
use keel_heap::Heap;
use std::sync::mpsc;

struct Block(*mut u8, usize, u64);
// SAFETY: a block is owned by exactly one thread at a time.
unsafe impl Send for Block {}

fn size(rng: &mut Rng) -> usize {
    match rng.below(100) {
        0..=69 => rng.below(512) as usize,
        70..=94 => rng.below(keel_heap::SMALL_MAX as u64 * 8) as usize,
        95..=98 => rng.below(keel_heap::MEDIUM_MAX as u64) as usize,
        _ => keel_heap::MEDIUM_MAX + rng.below(1 << 20) as usize,
    }
}

fn run(seed: u64, threads: usize, ops: usize) {
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..threads).map(|_| mpsc::channel::<Block>()).unzip();
    let hs: Vec<_> = rxs
        .into_iter()
        .enumerate()
        .map(|(t, rx)| {
            let txs = txs.clone();
            std::thread::spawn(move || {
                let h = Heap::new().unwrap();
                let mut rng = Rng(seed ^ (t as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
                let mut live: Vec<Block> = Vec::new();
                for i in 0..ops {
                    while let Ok(b) = rx.try_recv() {
                        live.push(b);
                    }
                    match rng.below(10) {
                        0..=4 => {
                            let s = size(&mut rng);
                            let a = 1usize << rng.below(8);
                            let p = if rng.below(4) == 0 {
                                h.alloc_zeroed(s, a)
                            } else {
                                h.alloc(s, a)
                            };
                            assert!(!p.is_null() && (p as usize).is_multiple_of(a));
                            let tag = rng.next();
                            // SAFETY: live block of `s` bytes.
                            unsafe { fill(p, s, tag) };
                            live.push(Block(p, s, tag));
                        }
                        5..=7 if !live.is_empty() => {
                            let b = live.swap_remove(rng.below(live.len() as u64) as usize);
                            // SAFETY: live block we own; freed once.
                            unsafe {
                                assert!(
                                    check(b.0, b.1, b.2),
                                    "block contents corrupted (seed {seed})"
                                );
                                h.free(b.0);
                            }
                        }
                        8 if !live.is_empty() => {
                            let b = live.swap_remove(rng.below(live.len() as u64) as usize);
                            let to = rng.below(threads as u64) as usize;
                            let _ = txs[to].send(b);
                        }
                        _ => {
                            if i % 64 == 0 {
                                h.gc();
                                h.is_valid().unwrap();
                            }
                        }
                    }
                }
                drop(txs);
                // Keep receiving until every sender is gone, then free all.
                for b in live.drain(..).chain(rx.iter()) {
                    // SAFETY: as above.
                    unsafe {
                        assert!(
                            check(b.0, b.1, b.2),
                            "block contents corrupted (seed {seed})"
                        );
                        h.free(b.0);
                    }
                }
                h.gc();
                h.is_valid().unwrap();
            })
        })
        .collect();
    drop(txs);
    for h in hs {
        h.join().unwrap();
    }
}

#[test]
fn seeded_multithreaded_stress_checks_contents_and_validity() {
    let seed = std::env::var("KEEL_HEAP_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_1234);
    println!("seed {seed}");
    run(seed, if cfg!(miri) { 2 } else { 4 }, scale(6000));
}
